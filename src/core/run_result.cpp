// Serializing the result document within its budget.
#include "core/run_result.h"

#include <array>
#include <nlohmann/json.hpp>
#include <utility>

#include "core/enum_names.h"
#include "core/exit_codes.h"

namespace berth {
namespace {

using nlohmann::json;

constexpr EnumNames<RunErrorKind, 18> kKindNames{{
    {RunErrorKind::kInvalidFlags, "InvalidFlags"},
    {RunErrorKind::kSourceUnavailable, "SourceUnavailable"},
    {RunErrorKind::kInputsMismatch, "InputsMismatch"},
    {RunErrorKind::kInit, "Init"},
    {RunErrorKind::kForceUnlock, "ForceUnlock"},
    {RunErrorKind::kStateLocked, "StateLocked"},
    {RunErrorKind::kValidate, "Validate"},
    {RunErrorKind::kPlan, "Plan"},
    {RunErrorKind::kDestructivePlan, "DestructivePlan"},
    {RunErrorKind::kPlanNotApproved, "PlanNotApproved"},
    {RunErrorKind::kPlanStale, "PlanStale"},
    {RunErrorKind::kApply, "Apply"},
    {RunErrorKind::kRestore, "Restore"},
    {RunErrorKind::kOutput, "Output"},
    {RunErrorKind::kStatePersist, "StatePersist"},
    {RunErrorKind::kCancelled, "Cancelled"},
    {RunErrorKind::kTimeout, "Timeout"},
    {RunErrorKind::kInternal, "Internal"},
}};

// What the serializer may leave out, in the order it gives things up.
struct Trim {
  size_t tail_bytes = std::string::npos;
  bool drift_resources = true;
  bool outputs = true;
  bool steps = true;
  bool image = true;
  bool inputs_hash = true;
  size_t message_bytes = std::string::npos;
  size_t short_bytes = 128;
};

// Cuts s to at most n bytes without splitting a UTF-8 sequence; keep_end keeps the last bytes.
std::string Cut(const std::string& s, size_t n, bool keep_end) {
  if (s.size() <= n) return s;
  size_t start = keep_end ? s.size() - n : 0;
  size_t end = keep_end ? s.size() : n;
  auto continuation = [&s](size_t i) {
    return i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80;
  };
  if (keep_end) {
    while (start < end && continuation(start)) ++start;
  } else {
    while (end > 0 && continuation(end)) --end;
  }
  return s.substr(start, end - start);
}

json ToJson(const RunResult& r, const Trim& trim) {
  // Short identity fields are capped too, and cut further as a last resort: escaping can make
  // each of their bytes cost six.
  auto cut_short = [&trim](const std::string& s) { return Cut(s, trim.short_bytes, false); };
  json doc = {{"apiVersion", "berth.dev/v1"}, {"kind", "RunResult"}, {"op", cut_short(r.op)}};
  doc["binary"] = {{"name", cut_short(r.binary_name)}, {"version", cut_short(r.binary_version)}};
  if (trim.image && !r.image.empty()) doc["image"] = cut_short(r.image);
  if (trim.inputs_hash && !r.inputs_hash.empty()) doc["inputsHash"] = cut_short(r.inputs_hash);
  doc["startedAt"] = cut_short(r.started_at);
  doc["finishedAt"] = cut_short(r.finished_at);
  if (trim.steps) {
    json steps = json::array();
    for (const auto& s : r.steps) {
      steps.push_back({{"name", s.name}, {"exit", s.exit}, {"seconds", s.seconds}});
    }
    doc["steps"] = std::move(steps);
  }
  if (r.plan) {
    doc["plan"] = PlanSummaryToJson(*r.plan);
    doc["plan"]["hash"] = cut_short(r.plan->hash);
  }
  if (trim.outputs && r.outputs) {
    json outputs = json::array();
    for (const auto& o : *r.outputs) {
      outputs.push_back({{"name", o.name}, {"sensitive", o.sensitive}});
    }
    doc["outputs"] = std::move(outputs);
  }
  if (r.drift) {
    doc["drift"] = {{"drifted", r.drift->drifted}};
    if (trim.drift_resources) doc["drift"]["resources"] = r.drift->resources;
  }
  if (r.error) {
    const auto& e = *r.error;
    doc["error"] = {{"kind", RunErrorKindName(e.kind)},
                    {"step", cut_short(e.step)},
                    {"message", Cut(e.message, trim.message_bytes, false)},
                    {"exitCode", e.exit_code},
                    {"tail", Cut(e.tail, trim.tail_bytes, true)}};
  } else {
    doc["error"] = nullptr;
  }
  return doc;
}

std::string Dump(const json& doc) {
  // Invalid UTF-8 from a tool's output is replaced, never allowed to break the document.
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

std::string_view RunErrorKindName(RunErrorKind kind) {
  return NameOf(kKindNames, kind, "Internal");
}

std::optional<RunErrorKind> ParseRunErrorKind(std::string_view name) {
  return ValueOf(kKindNames, name);
}

json PlanSummaryToJson(const PlanSummary& p) {
  return {{"hash", p.hash},     {"keyed", p.keyed},           {"add", p.add},
          {"change", p.change}, {"destroy", p.destroy},       {"replace", p.replace},
          {"import", p.import}, {"hasChanges", p.has_changes}};
}

json RunResultToJson(const RunResult& result) {
  Trim whole;
  whole.short_bytes = std::string::npos;
  return ToJson(result, whole);
}

int RunnerExitCode(const RunResult& result) {
  if (!result.error) return exit_code::kOk;
  if (result.error->kind == RunErrorKind::kInvalidFlags) return exit_code::kRunnerUsage;
  return exit_code::kRunnerFailed;
}

std::string SerializeRunResult(const RunResult& result, size_t max_bytes) {
  if (max_bytes < kMinResultBytes) max_bytes = kMinResultBytes;
  Trim trim;
  std::string out = Dump(ToJson(result, trim));
  if (out.size() <= max_bytes) return out;

  // The tail shrinks first: by as much as the document is over, then in halves (escaping
  // can make a byte of tail cost up to six bytes of JSON).
  if (result.error && !result.error->tail.empty()) {
    size_t tail = result.error->tail.size();
    while (out.size() > max_bytes && tail > 0) {
      size_t over = out.size() - max_bytes;
      tail = over < tail / 2 ? tail - over : tail / 2;
      trim.tail_bytes = tail;
      out = Dump(ToJson(result, trim));
    }
    if (out.size() <= max_bytes) return out;
  }
  for (bool Trim::*field :
       {&Trim::drift_resources, &Trim::outputs, &Trim::steps, &Trim::image, &Trim::inputs_hash}) {
    trim.*field = false;
    out = Dump(ToJson(result, trim));
    if (out.size() <= max_bytes) return out;
  }
  if (result.error) {
    size_t message = result.error->message.size();
    while (out.size() > max_bytes && message > 0) {
      message /= 2;
      trim.message_bytes = message;
      out = Dump(ToJson(result, trim));
    }
  }
  while (out.size() > max_bytes && trim.short_bytes > 0) {
    trim.short_bytes /= 2;
    out = Dump(ToJson(result, trim));
  }
  // With every field empty the document is about 300 bytes, below kMinResultBytes.
  return out;
}

}  // namespace berth
