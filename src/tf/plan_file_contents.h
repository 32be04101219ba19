// What berth reads of tofu's plan file (a zip whose "tfplan" entry is a protobuf, format
// version 3: internal/plans/internal/planproto/planfile.proto in OpenTofu): each change of a
// resource or an output, with its msgpack values and the paths of its sensitive values.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace berth::tf {

struct PlanFileChange {
  std::string address;               // a resource's (with its deposed key) or "output.NAME"
  std::vector<std::string> actions;  // as `show -json` names them
  bool importing = false;
  bool sensitive = false;  // an output declared sensitive
  // The msgpack values (planfile.proto: create and delete give one, update and replace two).
  std::vector<std::string_view> values;
  // Path messages into the value before and after whose values are sensitive.
  std::vector<std::string_view> before_sensitive, after_sensitive;
  // Each value and an import's ID, length-prefixed: what the effect hash takes.
  std::string hashed;
};

struct PlanFileContents {
  std::unique_ptr<const std::string> tfplan;  // the protobuf the views above point into
  std::string tf_version;
  bool refresh_only = false;
  std::vector<PlanFileChange> resources, outputs, drift;
};

// kFailedPrecondition when the file is not a plan this reads (encrypted, another format
// version, Terraform's); kInvalidArgument when it is malformed.
Result<PlanFileContents> ReadPlanFileContents(std::string_view file);

}  // namespace berth::tf
