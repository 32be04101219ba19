// The result document a runner writes when a run ends (docs/runner.md, "Result document"):
// its model, the error kinds, and a serializer that always fits a byte budget with valid JSON.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace berth {

enum class RunErrorKind {
  kInvalidFlags,
  kSourceUnavailable,
  kInputsMismatch,
  kInit,
  kForceUnlock,
  kStateLocked,
  kValidate,
  kPlan,
  kDestructivePlan,
  kPlanNotApproved,
  kPlanStale,
  kApply,
  kRestore,
  kOutput,
  kStatePersist,
  kCancelled,
  kTimeout,
  kInternal,
};

std::string_view RunErrorKindName(RunErrorKind kind);
std::optional<RunErrorKind> ParseRunErrorKind(std::string_view name);

struct RunStep {
  std::string name;
  int exit = 0;
  double seconds = 0;

  bool operator==(const RunStep&) const = default;
};

struct PlanSummary {
  std::string hash;  // "sha256:HEX" of the plan's effect
  bool keyed = false;
  int add = 0, change = 0, destroy = 0, replace = 0, import = 0;
  bool has_changes = false;

  bool operator==(const PlanSummary&) const = default;
};

struct OutputInfo {
  std::string name;
  bool sensitive = false;

  bool operator==(const OutputInfo&) const = default;
};

struct DriftReport {
  bool drifted = false;
  std::vector<std::string> resources;  // addresses whose real state moved

  bool operator==(const DriftReport&) const = default;
};

struct RunError {
  RunErrorKind kind = RunErrorKind::kInternal;
  std::string step;
  std::string message;
  int exit_code = 0;
  std::string tail;  // masked, bounded end of the failing step's output

  bool operator==(const RunError&) const = default;
};

struct RunResult {
  std::string op;
  std::string binary_name;
  std::string binary_version;
  std::string image;
  std::string inputs_hash;
  std::string started_at;  // RFC 3339
  std::string finished_at;
  std::vector<RunStep> steps;
  std::optional<PlanSummary> plan;
  std::optional<std::vector<OutputInfo>> outputs;
  std::optional<DriftReport> drift;
  std::optional<RunError> error;  // nullopt: success, written as "error": null

  bool operator==(const RunResult&) const = default;
};

// The runner's exit code for a run that ended with result (docs/runner.md, "Exit codes"):
// 0 on success, 2 when its flags were refused, 1 for every other failure.
int RunnerExitCode(const RunResult& result);

// A result document as a runner wrote it, checked field by field (the runner shares its Pod
// with a hostile module): an error names the first field that is wrong. Unknown fields are
// left out, so a newer runner's additions do not fail an older berthd.
Result<RunResult> ParseRunResult(std::string_view text);

// The whole document, nothing cut: what berthd keeps of a parsed result.
nlohmann::json RunResultToJson(const RunResult& result);
// A result's plan alone, as the document has it, and read back as ParseRunResult reads it.
nlohmann::json PlanSummaryToJson(const PlanSummary& plan);
Result<PlanSummary> ParsePlanSummary(const nlohmann::json& plan);

// The smallest budget the serializer accepts: the identity, the op and the error kind always fit.
inline constexpr size_t kMinResultBytes = 512;

// JSON of result in at most max_bytes (>= kMinResultBytes): first the tail shrinks, then
// optional fields go in a fixed order (drift resources, outputs, steps, image, inputs hash,
// then the message is cut). The output is always one valid JSON object.
std::string SerializeRunResult(const RunResult& result, size_t max_bytes);

}  // namespace berth
