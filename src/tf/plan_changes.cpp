#include "tf/plan_changes.h"

#include <set>
#include <vector>

#include "core/masker.h"
#include "tf/cty_msgpack.h"
#include "tf/plan_file_contents.h"
#include "tf/proto_wire.h"

namespace berth::tf {
namespace {

using nlohmann::json;

constexpr size_t kMaxShown = 4096;  // characters of one value's text; longer ends in "..."
constexpr uint32_t kPathSteps = 1, kStepAttribute = 1, kStepElementKey = 2, kDynamicMsgpack = 1;

Error Malformed(const std::string& rule) {
  return MakeError(ErrorKind::kInvalidArgument, "plan file: " + rule);
}

// A Path message's steps: attribute names (strings) and element keys (decoded: a map's string
// key, a list's index, a set's element).
Result<std::vector<json>> PathSteps(std::string_view message) {
  std::vector<json> steps;
  ProtoReader path(message);
  ProtoField step;
  while (path.Next(&step)) {
    if (step.number != kPathSteps || !step.is_bytes) continue;
    ProtoReader selector(step.bytes);
    ProtoField f;
    while (selector.Next(&f)) {
      if (f.number == kStepAttribute && f.is_bytes) steps.emplace_back(std::string(f.bytes));
      if (f.number != kStepElementKey || !f.is_bytes) continue;
      ProtoReader dynamic(f.bytes);
      ProtoField value;
      while (dynamic.Next(&value)) {
        if (value.number != kDynamicMsgpack || !value.is_bytes) continue;
        auto key = DecodeCtyMsgpack(value.bytes);
        if (!key) return key.error();
        steps.push_back(std::move(*key));
      }
    }
    if (selector.Failed()) return Malformed("a sensitive path's step is not valid protobuf");
  }
  if (path.Failed()) return Malformed("a sensitive path is not valid protobuf");
  return steps;
}

// Every string and number inside a value, for the masker: a value the plan marks sensitive
// in one place is hidden wherever else it appears (a provider may copy it into an attribute
// whose schema does not say it is sensitive).
void CollectLeaves(const json& value, Masker& secrets) {
  if (value.is_object() || value.is_array()) {
    for (const json& element : value) CollectLeaves(element, secrets);
  } else if (value.is_string()) {
    secrets.Add(value.get<std::string>());
  } else if (value.is_number()) {
    secrets.Add(value.dump());
  }
}

// Hides the value at the path's end, and gives it to secrets. Where a step cannot be followed
// (a set's element, a shape the value does not have), what was reached is hidden whole: more
// hidden, never less.
void HideAt(json& value, const std::vector<json>& steps, Masker& secrets) {
  json* at = &value;
  for (const json& step : steps) {
    if (at->is_object() && step.is_string() && at->contains(step.get<std::string>())) {
      at = &(*at)[step.get<std::string>()];
    } else if (at->is_array() && step.is_number_unsigned() && step.get<size_t>() < at->size()) {
      at = &(*at)[step.get<size_t>()];
    } else {
      break;
    }
  }
  CollectLeaves(*at, secrets);
  *at = SensitiveMarker();
}

Result<void> HidePaths(json& value, const std::vector<std::string_view>& paths, Masker& secrets) {
  for (std::string_view message : paths) {
    auto steps = PathSteps(message);
    if (!steps) return steps.error();
    HideAt(value, *steps, secrets);
  }
  return {};
}

void Render(const json& v, std::string& out) {
  if (out.size() > kMaxShown) return;
  if (IsUnknownMarker(v)) {
    out += "(known after apply)";
  } else if (IsSensitiveMarker(v)) {
    out += "(sensitive value)";
  } else if (v.is_object()) {
    out += '{';
    bool first = true;
    for (const auto& [key, element] : v.items()) {
      out += first ? "" : ", ";
      first = false;
      out += json(key).dump(-1, ' ', false, json::error_handler_t::replace) + ": ";
      Render(element, out);
    }
    out += '}';
  } else if (v.is_array()) {
    out += '[';
    for (size_t i = 0; i < v.size(); ++i) {
      out += i ? ", " : "";
      Render(v[i], out);
    }
    out += ']';
  } else {
    out += v.dump(-1, ' ', false, json::error_handler_t::replace);
  }
}

bool Has(const std::optional<json>& side) { return side && !side->is_null(); }
bool IsPlainObject(const json& v) {
  return v.is_object() && !IsUnknownMarker(v) && !IsSensitiveMarker(v);
}

// A change decoded, its sensitive values hidden; the values as the plan has them too, to tell
// what differs (a hidden value that changed is listed, as "(sensitive value)").
struct Decoded {
  const PlanFileChange* change = nullptr;
  std::optional<json> before, after;          // hidden
  std::optional<json> raw_before, raw_after;  // never shown
};

// One row per attribute that differs (every one with a value, when the object is created or
// deleted); a value that is not an object (an output's) is one row named "value".
json Rows(const Decoded& d, const std::function<json(const json&)>& shown) {
  json rows = json::array();
  auto row = [&](const std::string& name, const json* b, const json* a) {
    json r = {{"name", name},
              {"sensitive", (b && IsSensitiveMarker(*b)) || (a && IsSensitiveMarker(*a))},
              {"unknown", a && IsUnknownMarker(*a)}};
    if (b && !b->is_null()) r["before"] = shown(*b);
    if (a && !a->is_null()) r["after"] = shown(*a);
    rows.push_back(std::move(r));
  };
  const auto& [change, before, after, raw_before, raw_after] = d;
  const bool objects =
      (!Has(raw_before) || IsPlainObject(*raw_before)) &&
      (!Has(raw_after) || IsPlainObject(*raw_after)) && (Has(raw_before) || Has(raw_after)) &&
      (!Has(before) || IsPlainObject(*before)) && (!Has(after) || IsPlainObject(*after));
  if (!objects) {
    if (!(Has(raw_before) && Has(raw_after) && *raw_before == *raw_after))
      row("value", Has(before) ? &*before : nullptr, Has(after) ? &*after : nullptr);
    return rows;
  }
  std::set<std::string> names;
  for (const auto* side : {&before, &after})
    if (Has(*side))
      for (const auto& [key, _] : (*side)->items()) names.insert(key);
  auto at = [](const std::optional<json>& side, const std::string& name) -> const json* {
    return Has(side) && side->contains(name) ? &(*side)[name] : nullptr;
  };
  for (const std::string& name : names) {
    const json *b = at(before, name), *a = at(after, name);
    const json *raw_b = at(raw_before, name), *raw_a = at(raw_after, name);
    if ((!raw_b || raw_b->is_null()) && (!raw_a || raw_a->is_null())) continue;
    if (raw_b && raw_a && *raw_b == *raw_a) continue;
    row(name, b, a);
  }
  return rows;
}

Result<Decoded> Decode(const PlanFileChange& change, Masker& secrets) {
  std::vector<json> values;
  for (std::string_view bytes : change.values) {
    auto value = DecodeCtyMsgpack(bytes);
    if (!value) return Malformed(change.address + ": " + value.error().message);
    values.push_back(std::move(*value));
  }
  Decoded d{.change = &change};
  if (values.size() >= 2) {
    d.before = std::move(values[0]);
    d.after = std::move(values[1]);
  } else if (values.size() == 1) {
    (change.actions.front() == "create" ? d.after : d.before) = std::move(values[0]);
  }
  d.raw_before = d.before;
  d.raw_after = d.after;
  for (auto [side, paths] : {std::pair{&d.before, &change.before_sensitive},
                             std::pair{&d.after, &change.after_sensitive}}) {
    if (!*side) continue;
    if (change.sensitive) {
      HideAt(**side, {}, secrets);
    } else if (auto hidden = HidePaths(**side, *paths, secrets); !hidden) {
      return hidden.error();
    }
  }
  return d;
}

Result<std::vector<Decoded>> DecodeAll(const std::vector<PlanFileChange>& changes,
                                       Masker& secrets) {
  std::vector<Decoded> decoded;
  for (const PlanFileChange& change : changes) {
    if (change.actions == std::vector<std::string>{"no-op"} && !change.importing) continue;
    auto d = Decode(change, secrets);
    if (!d) return d.error();
    decoded.push_back(std::move(*d));
  }
  return decoded;
}

json Described(const std::vector<Decoded>& decoded, const std::function<json(const json&)>& shown) {
  json out = json::array();
  for (const Decoded& d : decoded) {
    json described = {{"address", d.change->address},
                      {"actions", d.change->actions},
                      {"attributes", Rows(d, shown)}};
    if (d.change->importing) described["importing"] = true;
    out.push_back(std::move(described));
  }
  return out;
}

}  // namespace

Result<json> ReadPlanChanges(std::string_view plan_file, const TextMask& mask) {
  auto contents = ReadPlanFileContents(plan_file);
  if (!contents) return contents.error();
  return DescribePlanChanges(*contents, mask);
}

Result<json> DescribePlanChanges(const PlanFileContents& contents, const TextMask& mask) {
  // Every change is decoded before any is shown: a value hidden in one is masked in all.
  Masker secrets;
  auto resources = DecodeAll(contents.resources, secrets);
  if (!resources) return resources.error();
  auto outputs = DecodeAll(contents.outputs, secrets);
  if (!outputs) return outputs.error();
  auto shown = [&](const json& v) -> json {
    std::string text;
    Render(v, text);
    if (text.size() > kMaxShown) text = text.substr(0, kMaxShown) + "...";
    return mask(secrets.Mask(text));
  };
  return Ok(json{{"resource_changes", Described(*resources, shown)},
                 {"output_changes", Described(*outputs, shown)}});
}

}  // namespace berth::tf
