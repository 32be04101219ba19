#include "kube/watch_stream.h"

namespace berth::kube {
namespace {

int CodeOf(const json& status) {
  const auto it = status.find("code");
  return it != status.end() && it->is_number_integer() ? it->get<int>() : 500;
}

}  // namespace

bool WatchStreamDecoder::Feed(std::string_view piece,
                              const std::function<bool(WatchEvent)>& on_event) {
  if (error_) return false;
  pending_.append(piece);
  size_t start = 0;
  bool go_on = true;
  for (size_t eol; go_on && (eol = pending_.find('\n', start)) != std::string::npos;
       start = eol + 1) {
    std::string_view line(pending_.data() + start, eol - start);
    if (line.empty() || line == "\r") continue;
    json event = json::parse(line, nullptr, false);
    if (!event.is_object()) {
      error_ = MakeError(ErrorKind::kUnavailable, "malformed watch event", context_);
      return false;
    }
    if (event.value("kind", json()) == "Status") {  // a refused watch
      error_ = DecodeStatusError(CodeOf(event), line, context_);
      return false;
    }
    auto type = event.find("type");
    auto object = event.find("object");
    if (type == event.end() || !type->is_string() || object == event.end() ||
        !object->is_object()) {
      error_ = MakeError(ErrorKind::kUnavailable, "malformed watch event", context_);
      return false;
    }
    if (*type == "ERROR") {
      error_ = DecodeStatusError(CodeOf(*object), object->dump(), context_);
      return false;
    }
    go_on = on_event(WatchEvent{type->get<std::string>(), std::move(*object)});
  }
  pending_.erase(0, start);
  return go_on;
}

}  // namespace berth::kube
