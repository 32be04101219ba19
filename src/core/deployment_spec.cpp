#include "core/deployment_spec.h"

#include "core/enum_names.h"
#include "core/schema.h"

namespace berth {
namespace {

using nlohmann::json;

constexpr EnumNames<DeploymentOp, 3> kOpNames{{
    {DeploymentOp::kPlan, "plan"},
    {DeploymentOp::kApply, "apply"},
    {DeploymentOp::kDestroy, "destroy"},
}};

bool IsVariableName(const std::string& name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_'))
    return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  }
  return true;
}

const Schema& RequestSchema() {
  static const Schema kSchema = Schema::Object({
      Required("op", std::move(Schema::String().OneOf({"plan", "apply", "destroy"}))),
      Required(
          "source",
          Schema::Object(
              {Optional("path", std::move(Schema::String().Pattern("/.*", "an absolute path"))),
               Optional("bundle",
                        std::move(Schema::String().Pattern("b-[0-9a-f]{32}", "a bundle id")))})),
      Optional("variables", Schema::FreeObject()),
      Optional("plan_only", Schema::Bool()),
      Optional("approval", Schema::Object({Optional("required", Schema::Bool())})),
      Optional("allow_destroy", Schema::Bool()),
  });
  return kSchema;
}

// The checked document as a spec, with the rules between fields.
Result<DeploymentSpec> FromValid(const json& valid) {
  DeploymentSpec spec;
  spec.op = *ValueOf(kOpNames, valid["op"].get<std::string>());
  const json& source = valid["source"];
  spec.source_path = source.value("path", "");
  spec.source_bundle = source.value("bundle", "");
  spec.variables = valid.value("variables", json::object());
  spec.plan_only = valid.value("plan_only", false);
  spec.approval_required = valid.value("approval", json::object()).value("required", false);
  spec.allow_destroy = valid.value("allow_destroy", false);
  FieldErrors errors;
  if (spec.source_path.empty() == spec.source_bundle.empty())
    errors.push_back({"$.source", "must have exactly one of path and bundle"});
  for (const auto& [name, value] : spec.variables.items()) {
    if (!IsVariableName(name))
      errors.push_back({"$.variables." + name.substr(0, 128), "must be a TF variable name"});
  }
  if (spec.approval_required && spec.op == DeploymentOp::kPlan)
    errors.push_back(
        {"$.approval.required", "is for op apply or destroy (a plan changes nothing)"});
  if (spec.plan_only && spec.op == DeploymentOp::kDestroy)
    errors.push_back({"$.plan_only", "is for op plan or apply"});
  if (!errors.empty()) return InvalidFields("invalid deployment", std::move(errors));
  return spec;
}

}  // namespace

std::string_view DeploymentOpName(DeploymentOp op) { return NameOf(kOpNames, op, "plan"); }

Result<DeploymentSpec> DeploymentSpec::FromRequest(const json& body) {
  json valid = body;
  FieldErrors errors;
  RequestSchema().Validate(valid, "$", errors);
  if (!errors.empty()) return InvalidFields("invalid deployment", std::move(errors));
  return FromValid(valid);
}

Result<DeploymentSpec> DeploymentSpec::FromStored(const json& stored) {
  if (!stored.is_object())
    return MakeError(ErrorKind::kInternal, "a stored deployment spec is not an object");
  json request = stored;
  json labels = request.value("labels", json::object());
  json created_by = request.value("created_by", json(""));
  request.erase("labels");
  request.erase("created_by");
  auto spec = FromRequest(request);
  if (!spec)
    return MakeError(ErrorKind::kInternal,
                     "a stored deployment spec is not valid: " + spec.error().message);
  auto parsed = ParseLabels(labels, "$.labels");
  if (!parsed)
    return MakeError(ErrorKind::kInternal,
                     "stored deployment labels are not valid: " + parsed.error().message);
  spec->labels = std::move(*parsed);
  if (!created_by.is_string())
    return MakeError(ErrorKind::kInternal, "a stored deployment's created_by is not a string");
  spec->created_by = created_by.get<std::string>();
  return spec;
}

json DeploymentSpec::ToJson() const {
  json source = json::object();
  if (!source_path.empty()) source["path"] = source_path;
  if (!source_bundle.empty()) source["bundle"] = source_bundle;
  return {{"op", DeploymentOpName(op)},
          {"source", source},
          {"variables", variables},
          {"plan_only", plan_only},
          {"approval", {{"required", approval_required}}},
          {"allow_destroy", allow_destroy},
          {"labels", LabelsJson(labels)},
          {"created_by", created_by}};
}

std::vector<std::string> DeploymentSpec::VariableNames() const {
  std::vector<std::string> names;
  for (const auto& [name, value] : variables.items()) names.push_back(name);
  return names;
}

}  // namespace berth
