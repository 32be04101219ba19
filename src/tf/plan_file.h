// Reading tofu's saved plan file itself, without starting tofu: a zip whose "tfplan" entry is a
// protobuf (format version 3, internal/plans/internal/planproto/planfile.proto in OpenTofu).
// Its values are msgpack that need no provider schema to hash, so the plan's summary, guard
// and effect hash cost no load of every provider's schema (which `show -json` pays).
#pragma once

#include <string_view>

#include "core/error.h"
#include "tf/plan.h"
#include "tf/plan_file_contents.h"

namespace berth::tf {

// The hash hashes each change's msgpack values (before, after, and an import's ID). It is not
// the hash AnalysePlan gives for the same plan's JSON: one environment reads its plans one way.
// kFailedPrecondition when the file is not a plan this reads (encrypted, another format version,
// Terraform's): the caller falls back to `show -json`; kInvalidArgument when it is malformed.
Result<PlanAnalysis> AnalysePlanFile(std::string_view file, std::string_view key);
// The same, of a plan file read already (ReadPlanFileContents), for a caller that reads more
// of it: the file is unzipped and parsed once.
PlanAnalysis AnalysePlanContents(const PlanFileContents& contents, std::string_view key);

}  // namespace berth::tf
