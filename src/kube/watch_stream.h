// The body of a watch response, decoded piece by piece as it arrives: one JSON event per line
// (Kubernetes API concepts, "Efficient detection of changes"), an ERROR event or a bare Status
// ending it with the error it carries.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"
#include "kube/kube_api.h"

namespace berth::kube {

class WatchStreamDecoder {
 public:
  explicit WatchStreamDecoder(std::string context) : context_(std::move(context)) {}

  // Hands each whole event in piece (and what was left of the last one) to on_event. False
  // when the stream must end: on_event said so, or the stream carried an error (StreamError).
  bool Feed(std::string_view piece, const std::function<bool(WatchEvent)>& on_event);
  const std::optional<Error>& StreamError() const { return error_; }
  // Bytes of a line not yet ended (a refused watch's Status body has no newline).
  const std::string& Pending() const { return pending_; }

 private:
  std::string context_;
  std::string pending_;
  std::optional<Error> error_;
};

}  // namespace berth::kube
