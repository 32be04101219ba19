// Reading a result document a runner wrote. The runner runs next to a hostile module: its
// result is checked field by field, and what berthd keeps is only what this parser typed.
#include <limits>
#include <nlohmann/json.hpp>

#include "core/bounded_json.h"
#include "core/run_result.h"

namespace berth {
namespace {

using nlohmann::json;

// Reads one object's fields; the first field that is wrong is the error.
class Fields {
 public:
  Fields(const json& object, std::string path) : object_(object), path_(std::move(path)) {}

  const json* Find(const char* key) const {
    auto it = object_.find(key);
    return it == object_.end() || it->is_null() ? nullptr : &*it;
  }
  void Text(const char* key, std::string& out, bool required = false) {
    const json* v = Find(key);
    if (v == nullptr) {
      if (required) Fail(key, "is required");
    } else if (!v->is_string()) {
      Fail(key, "must be a string");
    } else {
      out = v->get<std::string>();
    }
  }
  void Flag(const char* key, bool& out) {
    const json* v = Find(key);
    if (v == nullptr) return;
    if (!v->is_boolean()) return Fail(key, "must be true or false");
    out = v->get<bool>();
  }
  void Int(const char* key, int& out, int min = std::numeric_limits<int>::min()) {
    const json* v = Find(key);
    if (v == nullptr) return;
    // An unsigned JSON number above 2^63 would wrap when read as signed: compare it as it is.
    bool fits = v->is_number_unsigned()
                    ? v->get<uint64_t>() <= uint64_t{std::numeric_limits<int>::max()}
                    : v->is_number_integer() && v->get<int64_t>() >= min &&
                          v->get<int64_t>() <= std::numeric_limits<int>::max();
    if (!fits)
      return Fail(key, min == 0 ? "must be a whole number from 0" : "must be a whole number");
    out = static_cast<int>(v->get<int64_t>());
  }
  void Number(const char* key, double& out) {
    const json* v = Find(key);
    if (v == nullptr) return;
    if (!v->is_number()) return Fail(key, "must be a number");
    out = v->get<double>();
  }
  // The array at key (an empty one when absent), or null after failing when it is no array.
  const json* Array(const char* key) {
    static const json kEmpty = json::array();
    const json* v = Find(key);
    if (v == nullptr) return &kEmpty;
    if (!v->is_array()) {
      Fail(key, "must be an array");
      return nullptr;
    }
    return v;
  }
  std::string Path(const std::string& key) const { return path_ + "." + key; }
  void Fail(const std::string& key, std::string rule) {
    if (!error_) error_ = FieldError{Path(key), std::move(rule)};
  }
  void Adopt(const std::optional<FieldError>& inner) {
    if (!error_ && inner) error_ = inner;
  }
  const std::optional<FieldError>& FirstError() const { return error_; }

 private:
  const json& object_;
  std::string path_;
  std::optional<FieldError> error_;
};

// Each element of the array at key, as an object, handed to read with its own Fields.
template <class Read>
void EachObject(Fields& parent, const char* key, Read read) {
  const json* items = parent.Array(key);
  if (items == nullptr) return;
  for (size_t i = 0; i < items->size(); ++i) {
    std::string path = parent.Path(key) + "[" + std::to_string(i) + "]";
    if (!(*items)[i].is_object()) {
      parent.Adopt(FieldError{path, "must be an object"});
      return;
    }
    Fields item((*items)[i], path);
    read(item);
    parent.Adopt(item.FirstError());
  }
}

// The object at key read by read; absent stays nullopt.
template <class T, class Read>
void Optional(Fields& parent, const char* key, std::optional<T>& out, Read read) {
  const json* v = parent.Find(key);
  if (v == nullptr) return;
  if (!v->is_object()) return parent.Fail(key, "must be an object or null");
  Fields inner(*v, parent.Path(key));
  out.emplace();
  read(inner, *out);
  parent.Adopt(inner.FirstError());
}

void ReadPlan(Fields& f, PlanSummary& p) {
  f.Text("hash", p.hash, true);
  f.Flag("keyed", p.keyed);
  f.Int("add", p.add, 0);
  f.Int("change", p.change, 0);
  f.Int("destroy", p.destroy, 0);
  f.Int("replace", p.replace, 0);
  f.Int("import", p.import, 0);
  f.Flag("hasChanges", p.has_changes);
}

void ReadError(Fields& f, RunError& e) {
  std::string kind;
  f.Text("kind", kind, true);
  if (auto parsed = ParseRunErrorKind(kind)) {
    e.kind = *parsed;
  } else if (!kind.empty()) {
    f.Fail("kind", "must be one of the result's error kinds (docs/runner.md)");
  }
  f.Text("step", e.step);
  f.Text("message", e.message);
  f.Int("exitCode", e.exit_code);
  f.Text("tail", e.tail);
}

}  // namespace

Result<RunResult> ParseRunResult(std::string_view text) {
  auto parsed = ParseBoundedJson(text);
  if (!parsed)
    return MakeError(ErrorKind::kInvalidArgument,
                     "the run result is refused: " + parsed.error().message);
  json doc = std::move(*parsed);
  if (!doc.is_object())
    return MakeError(ErrorKind::kInvalidArgument, "the run result is not a JSON object");
  Fields f(doc, "$");
  std::string api_version, kind;
  f.Text("apiVersion", api_version, true);
  f.Text("kind", kind, true);
  if (!f.FirstError() && (api_version != "berth.dev/v1" || kind != "RunResult"))
    f.Fail("kind", "must be RunResult of apiVersion berth.dev/v1");
  if (!doc.contains("error")) f.Fail("error", "is required (null on success)");
  RunResult r;
  f.Text("op", r.op, true);
  std::optional<std::pair<std::string, std::string>> binary;
  Optional(f, "binary", binary, [](Fields& b, std::pair<std::string, std::string>& out) {
    b.Text("name", out.first);
    b.Text("version", out.second);
  });
  if (binary) std::tie(r.binary_name, r.binary_version) = *binary;
  f.Text("image", r.image);
  f.Text("inputsHash", r.inputs_hash);
  f.Text("startedAt", r.started_at);
  f.Text("finishedAt", r.finished_at);
  EachObject(f, "steps", [&r](Fields& s) {
    RunStep& step = r.steps.emplace_back();
    s.Text("name", step.name, true);
    s.Int("exit", step.exit);
    s.Number("seconds", step.seconds);
  });
  Optional(f, "plan", r.plan, ReadPlan);
  if (f.Find("outputs") != nullptr) {
    r.outputs.emplace();
    EachObject(f, "outputs", [&r](Fields& o) {
      OutputInfo& output = r.outputs->emplace_back();
      o.Text("name", output.name, true);
      o.Flag("sensitive", output.sensitive);
    });
  }
  Optional(f, "drift", r.drift, [](Fields& d, DriftReport& drift) {
    d.Flag("drifted", drift.drifted);
    const json* resources = d.Array("resources");
    if (resources == nullptr) return;
    for (const json& address : *resources) {
      if (!address.is_string()) return d.Fail("resources", "must be an array of strings");
      drift.resources.push_back(address.get<std::string>());
    }
  });
  Optional(f, "error", r.error, ReadError);
  if (f.FirstError()) return InvalidFields("the run result is not valid", {*f.FirstError()});
  return r;
}

Result<PlanSummary> ParsePlanSummary(const json& plan) {
  if (!plan.is_object())
    return InvalidFields("the plan is not valid", {{"$", "must be an object"}});
  Fields f(plan, "$");
  PlanSummary p;
  ReadPlan(f, p);
  if (f.FirstError()) return InvalidFields("the plan is not valid", {*f.FirstError()});
  return p;
}

}  // namespace berth
