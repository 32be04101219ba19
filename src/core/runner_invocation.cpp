// The flags of `runner run`, rendered.
#include "core/runner_invocation.h"

namespace berth {

std::vector<std::string> RunnerInvocation::Args() const {
  std::vector<std::string> args = {"run", "--op=" + op};
  auto value = [&args](const char* flag, const std::string& v) {
    if (!v.empty()) args.push_back(std::string("--") + flag + "=" + v);
  };
  value("gateway", gateway);
  value("run-id", run_id);
  value("inputs-hash", inputs_hash);
  value("state-backend", state_backend);
  for (const std::string& entry : backend_config) value("backend-config", entry);
  if (!lock) args.emplace_back("--lock=false");
  value("providers", providers);
  value("module", module);
  value("config", config);
  value("bin", bin);
  value("approved-plan", approved_plan);
  value("approved-plan-sha256", approved_plan_sha256);
  if (plan_destroy) args.emplace_back("--plan-destroy");
  if (allow_destroy) args.emplace_back("--allow-destroy");
  if (state_encryption) args.emplace_back("--state-encryption");
  value("log-recipient", log_recipient);
  if (await_apply_seconds > 0) value("await-apply", std::to_string(await_apply_seconds) + "s");
  value("namespace", ns);
  value("name", name);
  value("workdir", workdir);
  if (prepared) args.emplace_back("--prepared");
  value("result", result);
  if (result_max_bytes) value("result-max-bytes", std::to_string(*result_max_bytes));
  value("binary", binary);
  value("image", image);
  value("event-object", event_object);
  value("berthd-relay", berthd_relay);
  return args;
}

}  // namespace berth
