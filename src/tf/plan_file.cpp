#include "tf/plan_file.h"

#include <optional>

#include "core/zip_entry.h"
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
constexpr uint32_t kOutputName = 1, kOutputChange = 2;
constexpr uint32_t kChangeAction = 1, kChangeValues = 2, kChangeImporting = 5;
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

struct Change {
  std::vector<std::string> actions;
  bool importing = false;
  std::string values;  // each msgpack value and the import, length-prefixed
};

void AppendPrefixed(std::string* out, std::string_view bytes) {
  *out += std::to_string(bytes.size()) + ":";
  *out += bytes;
}

Result<Change> ReadChange(std::string_view message, const std::string& address) {
  Change change;
  uint64_t action = 0;
  ProtoReader reader(message);
  ProtoField f;
  while (reader.Next(&f)) {
    if (f.number == field::kChangeAction && !f.is_bytes) {
      action = f.varint;
    } else if (f.number == field::kChangeValues && f.is_bytes) {
      AppendPrefixed(&change.values, f.bytes);  // a DynamicValue: its msgpack and nothing else
    } else if (f.number == field::kChangeImporting && f.is_bytes) {
      change.importing = true;
      change.values += "import:";
      AppendPrefixed(&change.values, f.bytes);
    }
  }
  if (reader.Failed()) return Malformed(address + ": its change is not valid protobuf");
  auto names = ActionNames(action);
  if (!names) return Malformed(address + ": unknown action " + std::to_string(action));
  change.actions = std::move(*names);
  return change;
}

// A ResourceInstanceChange's address (with its deposed key) and change.
Result<std::pair<std::string, Change>> ReadResource(std::string_view message) {
  std::string address, deposed;
  std::string_view change;
  ProtoReader reader(message);
  ProtoField f;
  while (reader.Next(&f)) {
    if (!f.is_bytes) continue;
    if (f.number == field::kResourceAddr) address = f.bytes;
    if (f.number == field::kResourceDeposedKey) deposed = f.bytes;
    if (f.number == field::kResourceChange) change = f.bytes;
  }
  if (reader.Failed() || address.empty()) return Malformed("a resource change has no address");
  if (!deposed.empty()) address += " (deposed object " + deposed + ")";
  auto read = ReadChange(change, address);
  if (!read) return read.error();
  return std::make_pair(std::move(address), std::move(*read));
}

Result<std::pair<std::string, Change>> ReadOutput(std::string_view message) {
  std::string name;
  std::string_view change;
  ProtoReader reader(message);
  ProtoField f;
  while (reader.Next(&f)) {
    if (f.number == field::kOutputName && f.is_bytes) name = f.bytes;
    if (f.number == field::kOutputChange && f.is_bytes) change = f.bytes;
  }
  if (reader.Failed() || name.empty()) return Malformed("an output change has no name");
  std::string address = "output." + name;
  auto read = ReadChange(change, address);
  if (!read) return read.error();
  return std::make_pair(std::move(address), std::move(*read));
}

}  // namespace

Result<PlanAnalysis> AnalysePlanFile(std::string_view file, std::string_view key) {
  auto plan = ReadZipEntry(file, "tfplan", kMaxPlanBytes);
  if (!plan) {
    return MakeError(ErrorKind::kFailedPrecondition,
                     "not a plan file this reads: " + plan.error().message);
  }
  std::optional<uint64_t> version;
  uint64_t mode = 0;
  std::string tf_version;
  std::vector<std::string_view> resources, outputs, drift;
  ProtoReader reader(*plan);
  ProtoField f;
  while (reader.Next(&f)) {
    if (f.number == field::kPlanVersion && !f.is_bytes) version = f.varint;
    if (f.number == field::kPlanUiMode && !f.is_bytes) mode = f.varint;
    if (!f.is_bytes) continue;
    if (f.number == field::kPlanResourceChanges) resources.push_back(f.bytes);
    if (f.number == field::kPlanOutputChanges) outputs.push_back(f.bytes);
    if (f.number == field::kPlanResourceDrift) drift.push_back(f.bytes);
    if (f.number == field::kPlanTfVersion) tf_version = f.bytes;
  }
  if (reader.Failed()) return Malformed("tfplan is not valid protobuf");
  if (version != kFormatVersion) {
    return MakeError(ErrorKind::kFailedPrecondition,
                     "not a plan file this reads: format version " +
                         (version ? std::to_string(*version) : std::string("missing")) + ", not " +
                         std::to_string(kFormatVersion));
  }
  PlanEffects effects(key);
  effects.WrittenBy(std::move(tf_version));
  for (auto message : resources) {
    auto read = ReadResource(message);
    if (!read) return read.error();
    const auto& [address, change] = *read;
    effects.Add(address, change.actions, change.importing, false, change.values);
  }
  for (auto message : outputs) {
    auto read = ReadOutput(message);
    if (!read) return read.error();
    const auto& [address, change] = *read;
    effects.Add(address, change.actions, change.importing, true, change.values);
  }
  // As `show -json`: a refresh-only plan lists every drifted object, others only real changes.
  for (auto message : drift) {
    auto read = ReadResource(message);
    if (!read) return read.error();
    if (mode == kRefreshOnlyMode || read->second.actions != std::vector<std::string>{"no-op"})
      effects.Drifted(read->first);
  }
  return std::move(effects).Finish();
}

}  // namespace berth::tf
