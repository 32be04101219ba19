// `berth deployment ID --timings`: where a deployment's time went, from what berthd answers
// for it. Its spans are the times between its transitions (queued, the launch of its runner,
// each run, the wait for approval); each run lists its TF steps as its runner timed them and
// the rest of the time from its launch to its end ("(outside TF)": starting the runner,
// fetching the module and inputs, reporting).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace berth::cli {

// {"state", "total_seconds", "spans": [{"name", "seconds", "steps": [{"name", "seconds"}]}]};
// a deployment still going has its last span up to now_ms ("so_far": true).
nlohmann::json DeploymentTimings(const nlohmann::json& deployment, int64_t now_ms);
// The same as a table, a line per span and step.
std::string RenderTimings(const nlohmann::json& timings);

}  // namespace berth::cli
