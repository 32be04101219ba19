#include "tf/plan_file.h"

#include <optional>

#include "core/zip_entry.h"
#include "tf/plan_file_contents.h"
#include "tf/proto_wire.h"

namespace berth::tf {
namespace {

constexpr uint64_t kFormatVersion = 3;
constexpr uint64_t kMaxPlanBytes = 1ull << 30;

// Field numbers of planfile.proto.
namespace field {
constexpr uint32_t kPlanVersion = 1, kPlanResourceChanges = 3, kPlanOutputChanges = 4,
                   kPlanTfVersion = 14, kPlanUiMode = 17, kPlanResourceDrift = 18;
constexpr uint32_t kResourceDeposedKey = 7, kResourceChange = 9, kResourceAddr = 13;
constexpr uint32_t kOutputName = 1, kOutputChange = 2, kOutputSensitive = 3;
constexpr uint32_t kChangeAction = 1, kChangeValues = 2, kChangeBeforeSensitive = 3,
                   kChangeAfterSensitive = 4, kChangeImporting = 5;
constexpr uint32_t kDynamicValueMsgpack = 1;
}  // namespace field
constexpr uint64_t kRefreshOnlyMode = 2;

Error Malformed(const std::string& rule) {
  return MakeError(ErrorKind::kInvalidArgument, "plan file: " + rule);
}

// The JSON format's names of planproto's Action values.
std::optional<std::vector<std::string>> ActionNames(uint64_t action) {
  switch (action) {
    case 0:
      return std::vector<std::string>{"no-op"};
    case 1:
      return std::vector<std::string>{"create"};
    case 2:
      return std::vector<std::string>{"read"};
    case 3:
      return std::vector<std::string>{"update"};
    case 5:
      return std::vector<std::string>{"delete"};
    case 6:
      return std::vector<std::string>{"delete", "create"};
    case 7:
      return std::vector<std::string>{"create", "delete"};
    case 8:
      return std::vector<std::string>{"forget"};
    case 10:
      return std::vector<std::string>{"forget", "create"};
    default:
      return std::nullopt;
  }
}

void AppendPrefixed(std::string* out, std::string_view bytes) {
  *out += std::to_string(bytes.size()) + ":";
  *out += bytes;
}

// A DynamicValue message's msgpack.
std::string_view Msgpack(std::string_view dynamic_value) {
  ProtoReader reader(dynamic_value);
  ProtoField f;
  while (reader.Next(&f))
    if (f.number == field::kDynamicValueMsgpack && f.is_bytes) return f.bytes;
  return {};
}

Result<void> ReadChange(std::string_view message, PlanFileChange* change) {
  uint64_t action = 0;
  ProtoReader reader(message);
  ProtoField f;
  while (reader.Next(&f)) {
    if (f.number == field::kChangeAction && !f.is_bytes) {
      action = f.varint;
    } else if (f.number == field::kChangeValues && f.is_bytes) {
      AppendPrefixed(&change->hashed, f.bytes);  // a DynamicValue: its msgpack and nothing else
      change->values.push_back(Msgpack(f.bytes));
    } else if (f.number == field::kChangeBeforeSensitive && f.is_bytes) {
      change->before_sensitive.push_back(f.bytes);
    } else if (f.number == field::kChangeAfterSensitive && f.is_bytes) {
      change->after_sensitive.push_back(f.bytes);
    } else if (f.number == field::kChangeImporting && f.is_bytes) {
      change->importing = true;
      change->hashed += "import:";
      AppendPrefixed(&change->hashed, f.bytes);
    }
  }
  if (reader.Failed()) return Malformed(change->address + ": its change is not valid protobuf");
  auto names = ActionNames(action);
  if (!names) return Malformed(change->address + ": unknown action " + std::to_string(action));
  change->actions = std::move(*names);
  return {};
}

// A ResourceInstanceChange's address (with its deposed key) and change.
Result<PlanFileChange> ReadResource(std::string_view message) {
  PlanFileChange change;
  std::string deposed;
  std::string_view body;
  ProtoReader reader(message);
  ProtoField f;
  while (reader.Next(&f)) {
    if (!f.is_bytes) continue;
    if (f.number == field::kResourceAddr) change.address = f.bytes;
    if (f.number == field::kResourceDeposedKey) deposed = f.bytes;
    if (f.number == field::kResourceChange) body = f.bytes;
  }
  if (reader.Failed() || change.address.empty())
    return Malformed("a resource change has no address");
  if (!deposed.empty()) change.address += " (deposed object " + deposed + ")";
  if (auto read = ReadChange(body, &change); !read) return read.error();
  return change;
}

Result<PlanFileChange> ReadOutput(std::string_view message) {
  PlanFileChange change;
  std::string_view body;
  ProtoReader reader(message);
  ProtoField f;
  while (reader.Next(&f)) {
    if (f.number == field::kOutputName && f.is_bytes)
      change.address = "output." + std::string(f.bytes);
    if (f.number == field::kOutputChange && f.is_bytes) body = f.bytes;
    if (f.number == field::kOutputSensitive && !f.is_bytes) change.sensitive = f.varint != 0;
  }
  if (reader.Failed() || change.address.empty()) return Malformed("an output change has no name");
  if (auto read = ReadChange(body, &change); !read) return read.error();
  return change;
}

}  // namespace

Result<PlanFileContents> ReadPlanFileContents(std::string_view file) {
  auto plan = ReadZipEntry(file, "tfplan", kMaxPlanBytes);
  if (!plan) {
    return MakeError(ErrorKind::kFailedPrecondition,
                     "not a plan file this reads: " + plan.error().message);
  }
  PlanFileContents contents;
  contents.tfplan = std::make_unique<const std::string>(std::move(*plan));
  std::optional<uint64_t> version;
  std::vector<std::string_view> resources, outputs, drift;
  ProtoReader reader(*contents.tfplan);
  ProtoField f;
  while (reader.Next(&f)) {
    if (f.number == field::kPlanVersion && !f.is_bytes) version = f.varint;
    if (f.number == field::kPlanUiMode && !f.is_bytes)
      contents.refresh_only = f.varint == kRefreshOnlyMode;
    if (!f.is_bytes) continue;
    if (f.number == field::kPlanResourceChanges) resources.push_back(f.bytes);
    if (f.number == field::kPlanOutputChanges) outputs.push_back(f.bytes);
    if (f.number == field::kPlanResourceDrift) drift.push_back(f.bytes);
    if (f.number == field::kPlanTfVersion) contents.tf_version = f.bytes;
  }
  if (reader.Failed()) return Malformed("tfplan is not valid protobuf");
  if (version != kFormatVersion) {
    return MakeError(ErrorKind::kFailedPrecondition,
                     "not a plan file this reads: format version " +
                         (version ? std::to_string(*version) : std::string("missing")) + ", not " +
                         std::to_string(kFormatVersion));
  }
  for (auto message : resources) {
    auto read = ReadResource(message);
    if (!read) return read.error();
    contents.resources.push_back(std::move(*read));
  }
  for (auto message : outputs) {
    auto read = ReadOutput(message);
    if (!read) return read.error();
    contents.outputs.push_back(std::move(*read));
  }
  for (auto message : drift) {
    auto read = ReadResource(message);
    if (!read) return read.error();
    contents.drift.push_back(std::move(*read));
  }
  return contents;
}

PlanAnalysis AnalysePlanContents(const PlanFileContents& contents, std::string_view key) {
  PlanEffects effects(key);
  effects.WrittenBy(contents.tf_version);
  for (const PlanFileChange& c : contents.resources)
    effects.Add(c.address, c.actions, c.importing, false, c.hashed);
  for (const PlanFileChange& c : contents.outputs)
    effects.Add(c.address, c.actions, c.importing, true, c.hashed);
  // As `show -json`: a refresh-only plan lists every drifted object, others only real changes.
  for (const PlanFileChange& c : contents.drift)
    if (contents.refresh_only || c.actions != std::vector<std::string>{"no-op"})
      effects.Drifted(c.address);
  return std::move(effects).Finish();
}

Result<PlanAnalysis> AnalysePlanFile(std::string_view file, std::string_view key) {
  auto contents = ReadPlanFileContents(file);
  if (!contents) return contents.error();
  return AnalysePlanContents(*contents, key);
}

}  // namespace berth::tf
