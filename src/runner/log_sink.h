// Where the run's log lines go (stdout, which the kubelet or launcher collects), in the format
// --logging-format asks for: "[step] line", or one JSON object per line.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace berth::runner {

class LogSink {
 public:
  explicit LogSink(std::FILE* out, bool json = false) : out_(out), json_(json) {}
  // text must already be masked.
  void Line(std::string_view step, std::string_view text);
  void Flush() { std::fflush(out_); }

 private:
  std::FILE* out_;
  bool json_;
};

}  // namespace berth::runner
