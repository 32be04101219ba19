#include "cli/log_decryption.h"

#include "crypto/age.h"

namespace berth::cli {
namespace {

constexpr std::string_view kBegin = "-----BEGIN AGE ENCRYPTED FILE-----";
constexpr std::string_view kEnd = "-----END AGE ENCRYPTED FILE-----";

// How much of text's end could be the start of marker (to hold back until more arrives).
size_t PartialMarkerAtEnd(std::string_view text, std::string_view marker) {
  for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n) {
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  }
  return 0;
}

}  // namespace

void LogDecryption::Feed(std::string_view piece) {
  pending_ += piece;
  while (true) {
    if (!in_file_) {
      size_t begin = pending_.find(kBegin);
      if (begin == std::string::npos) {
        size_t keep = PartialMarkerAtEnd(pending_, kBegin);
        write_(std::string_view(pending_).substr(0, pending_.size() - keep));
        pending_.erase(0, pending_.size() - keep);
        return;
      }
      write_(std::string_view(pending_).substr(0, begin));
      pending_.erase(0, begin);
      in_file_ = true;
    }
    size_t end = pending_.find(kEnd);
    if (end == std::string::npos || end + kEnd.size() >= pending_.size()) return;
    size_t after = end + kEnd.size() + (pending_[end + kEnd.size()] == '\n' ? 1 : 0);
    auto text = crypto::AgeDecryptArmored(std::string_view(pending_).substr(0, after), identity_);
    write_(text ? *text
                : "[berth] a log chunk did not decrypt with this identity: " +
                      text.error().message + "\n");
    pending_.erase(0, after);
    in_file_ = false;
  }
}

void LogDecryption::Finish() {
  if (pending_.empty()) return;
  if (in_file_) {
    auto text = crypto::AgeDecryptArmored(pending_, identity_);
    write_(text ? *text : pending_);
  } else {
    write_(pending_);
  }
  pending_.clear();
  in_file_ = false;
}

}  // namespace berth::cli
