#include "core/state_storage.h"

#include "core/overloaded.h"

namespace berth {

using nlohmann::json;

Result<StateStorage> ParseStateStorage(const json& saved) {
  constexpr std::string_view kRoot = "$.state_storage_configuration";
  const auto type_field = saved.is_object() ? saved.find("type") : saved.end();
  auto type = type_field != saved.end() && type_field->is_string()
                  ? ParseStateStorageType(type_field->get<std::string>())
                  : std::nullopt;
  if (!type)
    return InvalidFields("invalid state storage",
                         {{std::string(kRoot) + ".type", "must name a state storage type"}});
  json document = saved;
  FieldErrors errors;
  StateStorageSchema(*type).Validate(document, std::string(kRoot), errors);
  if (!errors.empty()) return InvalidFields("invalid state storage", std::move(errors));
  auto text = [&document](const char* field) { return document.value(field, std::string()); };
  switch (*type) {
    case StateStorageType::kBerth:
      return StateStorage(BerthStateStorage{});
    case StateStorageType::kKubernetes:
      return StateStorage(KubernetesStateStorage{.ns = text("namespace")});
    case StateStorageType::kS3:
      return StateStorage(S3StateStorage{.bucket = text("bucket"),
                                         .region = text("region"),
                                         .path_prefix = text("path_prefix"),
                                         .endpoint = text("endpoint"),
                                         .sts_endpoint = text("sts_endpoint"),
                                         .use_path_style = document.value("use_path_style", false),
                                         .role_arn = text("role_arn")});
    case StateStorageType::kGcs:
      return StateStorage(
          GcsStateStorage{.bucket = text("bucket"), .path_prefix = text("path_prefix")});
    case StateStorageType::kAzurerm:
      return StateStorage(AzurermStateStorage{.storage_account_name = text("storage_account_name"),
                                              .container_name = text("container_name"),
                                              .resource_group_name = text("resource_group_name"),
                                              .subscription_id = text("subscription_id"),
                                              .path_prefix = text("path_prefix")});
  }
  return MakeError(ErrorKind::kInternal, "unhandled state storage type");
}

StateStorageType TypeOf(const StateStorage& storage) {
  return std::visit(Overloaded{
                        [](const BerthStateStorage&) { return StateStorageType::kBerth; },
                        [](const KubernetesStateStorage&) { return StateStorageType::kKubernetes; },
                        [](const S3StateStorage&) { return StateStorageType::kS3; },
                        [](const GcsStateStorage&) { return StateStorageType::kGcs; },
                        [](const AzurermStateStorage&) { return StateStorageType::kAzurerm; },
                    },
                    storage);
}

std::string PrefixedKey(const std::string& path_prefix, const std::string& environment_key) {
  std::string prefix = path_prefix;  // relative (the schema's rule), maybe ending in slashes
  while (prefix.ends_with('/')) prefix.pop_back();
  return prefix.empty() ? environment_key : prefix + "/" + environment_key;
}

}  // namespace berth
