// The result document a runner writes when a run ends (docs/runner.md, "Result document"):
// its model, the error kinds, and a serializer that always fits a byte budget with valid JSON.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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
};

struct PlanSummary {
  std::string hash;  // "sha256:HEX" of the plan's effect
  bool keyed = false;
  int add = 0, change = 0, destroy = 0, replace = 0, import = 0;
  bool has_changes = false;
};

struct OutputInfo {
  std::string name;
  bool sensitive = false;
};

struct DriftReport {
  bool drifted = false;
  std::vector<std::string> resources;  // addresses whose real state moved
};

struct RunError {
  RunErrorKind kind = RunErrorKind::kInternal;
  std::string step;
  std::string message;
  int exit_code = 0;
  std::string tail;  // masked, bounded end of the failing step's output
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
};

// The smallest budget the serializer accepts: the identity, the op and the error kind always fit.
inline constexpr size_t kMinResultBytes = 512;

// JSON of result in at most max_bytes (>= kMinResultBytes): first the tail shrinks, then
// optional fields go in a fixed order (drift resources, outputs, steps, image, inputs hash,
// then the message is cut). The output is always one valid JSON object.
std::string SerializeRunResult(const RunResult& result, size_t max_bytes);

}  // namespace berth
