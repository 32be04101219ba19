// `berth logs --identity=KEY`: a log whose runners encrypted each chunk to the environment's
// log_recipient (docs/agents.md) arrives as armored age files between berthd's own plain lines;
// this turns each back into its text as it arrives (a followed log too: a file split across
// reads is held until its end line is in).
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace berth::cli {

class LogDecryption {
 public:
  using Write = std::function<void(std::string_view)>;
  LogDecryption(std::string identity, Write write)
      : identity_(std::move(identity)), write_(std::move(write)) {}
  void Feed(std::string_view piece);
  void Finish();  // writes what is left as it is

 private:
  const std::string identity_;
  const Write write_;
  std::string pending_;
  bool in_file_ = false;
};

}  // namespace berth::cli
