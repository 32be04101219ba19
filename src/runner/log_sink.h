// Where the run's log lines go (stdout, which the kubelet or launcher collects), in the format
// --logging-format asks for: "[step] line", or one JSON object per line.
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <string_view>

namespace berth::runner {

class LogSink {
 public:
  explicit LogSink(std::FILE* out, bool json = false) : out_(out), json_(json) {}
  // text must already be masked.
  void Line(std::string_view step, std::string_view text);
  void Flush() { std::fflush(out_); }
  // Every line also goes here, formatted, without its newline (the gateway's log).
  void Tee(std::function<void(std::string_view)> tee) { tee_ = std::move(tee); }

 private:
  std::FILE* out_;
  bool json_;
  std::function<void(std::string_view)> tee_;
};

}  // namespace berth::runner
