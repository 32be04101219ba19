// libFuzzer target: watch response bodies, cut into pieces at arbitrary points (the first byte
// picks the piece size). Whatever arrives, the decoder delivers objects or ends with an error,
// and the same bytes decode the same way whatever the cuts.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "kube/watch_stream.h"

namespace {

std::vector<std::string> Decode(std::string_view body, size_t piece, std::string& error) {
  berth::kube::WatchStreamDecoder decoder("fuzz");
  std::vector<std::string> events;
  auto on_event = [&](const berth::kube::WatchEvent& event) {
    events.push_back(event.type + event.object.dump());
    return true;
  };
  for (size_t at = 0; at < body.size(); at += piece) {
    if (!decoder.Feed(body.substr(at, piece), on_event)) break;
  }
  if (decoder.StreamError()) error = decoder.StreamError()->message;
  return events;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  std::string whole_error, cut_error;
  auto whole = Decode(body, body.size() + 1, whole_error);
  auto cut = Decode(body, 1 + data[0] % 64, cut_error);
  if (whole != cut || whole_error != cut_error) std::abort();
  return 0;
}
