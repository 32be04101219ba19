// Label keys follow the Kubernetes API reference ("Labels and Selectors": an optional DNS
// subdomain prefix of at most 253 characters and '/', then a name of at most 63).
#include "core/run_labels.h"

#include <cctype>

#include "core/schema.h"

namespace berth {
namespace {

constexpr size_t kMaxLabels = 64;
constexpr size_t kMaxValueCharacters = 1024;

bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?, 63 at most.
bool IsLabelName(std::string_view s) {
  if (s.empty() || s.size() > 63 || !IsAlnum(s.front()) || !IsAlnum(s.back())) return false;
  for (char c : s) {
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

// Lower-case DNS labels joined by dots, 253 at most.
bool IsDnsSubdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (start <= s.size()) {
    size_t dot = s.find('.', start);
    std::string_view label = s.substr(start, dot == std::string_view::npos ? s.npos : dot - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-')
      return false;
    for (char c : label) {
      if (!(std::islower(static_cast<unsigned char>(c)) ||
            std::isdigit(static_cast<unsigned char>(c)) || c == '-'))
        return false;
    }
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return true;
}

}  // namespace

bool IsLabelKey(std::string_view key) {
  size_t slash = key.find('/');
  if (slash == std::string_view::npos) return IsLabelName(key);
  return IsDnsSubdomain(key.substr(0, slash)) && IsLabelName(key.substr(slash + 1));
}

bool IsLabelValue(std::string_view value) { return value.empty() || IsLabelName(value); }

namespace {

std::string LabelPath(const std::string& path, const std::string& key) {
  return path + "['" + key + "']";
}

}  // namespace

Result<RunOverrides> RunOverrides::FromLabels(const Labels& labels) {
  RunOverrides overrides;
  FieldErrors errors;
  for (const auto& [label, value] : labels) {
    if (!label.starts_with(kRunnerSpecLabelPrefix)) continue;
    std::string key = label.substr(kRunnerSpecLabelPrefix.size());
    if (key == "kubernetes_image") {
      overrides.image = value;
      continue;
    }
    std::optional<Quantity>* target = key == "kubernetes_request_cpu" ? &overrides.request_cpu
                                      : key == "kubernetes_limit_cpu" ? &overrides.limit_cpu
                                      : key == "kubernetes_request_memory"
                                          ? &overrides.request_memory
                                      : key == "kubernetes_limit_memory" ? &overrides.limit_memory
                                                                         : nullptr;
    if (target == nullptr) {
      errors.push_back({label,
                        "is not a runner-spec label: kubernetes_image, "
                        "kubernetes_request_cpu, kubernetes_limit_cpu, "
                        "kubernetes_request_memory, kubernetes_limit_memory"});
      continue;
    }
    auto quantity = Quantity::Parse(value);
    if (!quantity) {
      errors.push_back({label, "must be a Kubernetes quantity such as 500m or 512Mi: " +
                                   quantity.error().message});
    } else if (quantity->IsNegative()) {
      errors.push_back({label, "must not be negative"});
    } else {
      *target = *quantity;
    }
  }
  auto check = [&](const char* resource, const std::optional<Quantity>& request,
                   const std::optional<Quantity>& limit) {
    if (!request || !limit || *request <= *limit) return;
    std::string prefix(kRunnerSpecLabelPrefix);
    errors.push_back({prefix + "kubernetes_request_" + resource,
                      "must not exceed " + prefix + "kubernetes_limit_" + resource + " (" +
                          request->ToString() + " > " + limit->ToString() + ")"});
  };
  check("cpu", overrides.request_cpu, overrides.limit_cpu);
  check("memory", overrides.request_memory, overrides.limit_memory);
  if (errors.empty()) return overrides;
  return InvalidFields("invalid run labels", std::move(errors));
}

Result<Labels> ParseLabels(const nlohmann::json& value, const std::string& path) {
  if (!value.is_object())
    return InvalidFields("invalid labels", {{path, "must be an object of strings"}});
  FieldErrors errors;
  if (value.size() > kMaxLabels)
    errors.push_back({path, "has at most " + std::to_string(kMaxLabels) + " labels"});
  Labels labels;
  for (const auto& [key, v] : value.items()) {
    if (!IsLabelKey(key)) {
      errors.push_back({LabelPath(path, key),
                        "must be a label key: [prefix/]name, the name 63 characters at most of "
                        "letters, digits, '-', '_' and '.', starting and ending alphanumeric"});
    } else if (key.starts_with("berth.dev/") && !key.starts_with(kRunnerSpecLabelPrefix)) {
      errors.push_back({LabelPath(path, key), "berth.dev/ is reserved for berth's own labels"});
    } else if (!v.is_string()) {
      errors.push_back({LabelPath(path, key), "must be a string"});
    } else if (CodePoints(v.get_ref<const std::string&>()) > kMaxValueCharacters) {
      errors.push_back({LabelPath(path, key),
                        "has at most " + std::to_string(kMaxValueCharacters) + " characters"});
    } else {
      labels[key] = v.get<std::string>();
    }
  }
  if (errors.empty()) {
    if (auto overrides = RunOverrides::FromLabels(labels); !overrides) {
      for (FieldError& e : overrides.error().fields)
        errors.push_back({LabelPath(path, e.path), e.rule});
    }
  }
  if (!errors.empty()) return InvalidFields("invalid labels", std::move(errors));
  return labels;
}

Result<Labels> EffectiveLabels(const nlohmann::json& project_labels, const Labels& environment) {
  Labels merged;
  if (project_labels.is_object()) {
    for (const auto& [key, value] : project_labels.items()) {
      if (value.is_string()) merged[key] = value.get<std::string>();
    }
  }
  for (const auto& [key, value] : environment) merged[key] = value;
  auto overrides = RunOverrides::FromLabels(merged);
  if (!overrides) {
    FieldErrors errors;
    for (FieldError& e : overrides.error().fields)
      errors.push_back({LabelPath("$.labels", e.path), e.rule + ", with the project's labels"});
    return InvalidFields("invalid labels", std::move(errors));
  }
  return merged;
}

nlohmann::json LabelsJson(const Labels& labels) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, value] : labels) out[key] = value;
  return out;
}

}  // namespace berth
