// Masking by plain search: the number of secrets per run is small.
#include "core/masker.h"

#include <algorithm>

namespace berth {

void Masker::Add(std::string value) {
  if (value.find('\n') != std::string::npos) {
    size_t start = 0;
    while (start <= value.size()) {
      size_t end = std::min(value.find('\n', start), value.size());
      std::string line = value.substr(start, end - start);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      AddOne(std::move(line));
      start = end + 1;
    }
  }
  std::string escaped =
      nlohmann::json(value).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  escaped = escaped.substr(1, escaped.size() - 2);  // without its quotes
  if (escaped != value) AddOne(std::move(escaped));
  AddOne(std::move(value));
}

void Masker::AddValue(const nlohmann::json& value) {
  if (value.is_structured())
    AddOne(value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  // Its leaves, walked with a stack: the value came from outside.
  std::vector<const nlohmann::json*> pending = {&value};
  while (!pending.empty()) {
    const nlohmann::json* v = pending.back();
    pending.pop_back();
    if (v->is_string()) {
      Add(v->get<std::string>());
    } else if (v->is_number()) {
      AddOne(v->dump());
    } else if (v->is_structured()) {
      for (const auto& element : *v) pending.push_back(&element);
    }
  }
}

void Masker::AddOne(std::string value) {
  if (value.size() < kMinLength) return;
  if (std::find(values_.begin(), values_.end(), value) != values_.end()) return;
  values_.push_back(std::move(value));
  std::stable_sort(values_.begin(), values_.end(),
                   [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
}

std::string Masker::Mask(std::string_view text) const {
  std::string out(text);
  for (const auto& value : values_) {
    size_t at = 0;
    while ((at = out.find(value, at)) != std::string::npos) {
      out.replace(at, value.size(), kMask);
      at += kMask.size();
    }
  }
  return out;
}

size_t Masker::SafeCut(std::string_view text) const {
  size_t cut = text.size();
  // A value that starts before the cut and does not end before it (whole, or the text runs
  // out first) moves the cut to its start; that may split another value, so again.
  for (bool moved = true; moved;) {
    moved = false;
    for (const std::string& value : values_) {
      size_t from = cut > value.size() ? cut - value.size() + 1 : 0;
      for (size_t at = from; at < cut; ++at) {
        size_t overlap = std::min(value.size(), text.size() - at);
        if (text.compare(at, overlap, value, 0, overlap) == 0) {
          cut = at;
          moved = true;
          break;
        }
      }
    }
  }
  return cut;
}

}  // namespace berth
