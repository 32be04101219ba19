#include "controller/leader_election.h"

#include "core/time_format.h"

namespace berth::controller {

using nlohmann::json;

LeaderElector::~LeaderElector() {
  stopping_ = true;
  if (renewer_.joinable()) renewer_.join();
}

Result<bool> LeaderElector::TryAcquireOrRenew() {
  const auto now = clock_.Wall();
  const std::string stamp = FormatRfc3339(now, 6);
  json spec = {{"holderIdentity", options_.identity},
               {"leaseDurationSeconds", options_.lease_duration.count()},
               {"renewTime", stamp}};
  auto lease = api_.Get(kube::kLeases, options_.ns, options_.name);
  if (!lease) {
    if (lease.error().kind != ErrorKind::kNotFound) return lease.error();
    spec["acquireTime"] = stamp;
    spec["leaseTransitions"] = 0;
    auto created = api_.Create(kube::kLeases, options_.ns,
                               {{"apiVersion", "coordination.k8s.io/v1"},
                                {"kind", "Lease"},
                                {"metadata", {{"name", options_.name}}},
                                {"spec", spec}});
    if (created) return true;
    if (created.error().kind == ErrorKind::kAlreadyExists) return false;  // another won
    return created.error();
  }
  const json held = lease->value("spec", json::object());
  const std::string holder = held.value("holderIdentity", "");
  const bool mine = holder == options_.identity;
  if (!mine && !holder.empty()) {
    const auto renewed = ParseRfc3339Millis(held.value("renewTime", ""));
    const auto duration = std::chrono::seconds(held.value("leaseDurationSeconds", int64_t{0}));
    const auto expires =
        std::chrono::system_clock::time_point(std::chrono::milliseconds(renewed.value_or(0))) +
        duration;
    if (renewed && now < expires) return false;  // held, and fresh
  }
  spec["acquireTime"] = mine ? held.value("acquireTime", stamp) : stamp;
  spec["leaseTransitions"] = held.value("leaseTransitions", 0) + (mine ? 0 : 1);
  // The resourceVersion read: a replica that wrote in between makes this a conflict.
  auto written = api_.Patch(
      kube::kLeases, options_.ns, options_.name, kube::PatchType::kMerge,
      {{"metadata", {{"resourceVersion", (*lease)["metadata"].value("resourceVersion", "")}}},
       {"spec", spec}},
      "berth-controller");
  if (written) return true;
  if (written.error().kind == ErrorKind::kConflict) return false;
  return written.error();
}

bool LeaderElector::AcquireAndKeep(const std::function<bool()>& stop,
                                   std::function<void()> on_lost) {
  while (!stop()) {
    auto led = TryAcquireOrRenew();
    if (led && *led) break;
    std::this_thread::sleep_for(options_.retry_period);
  }
  if (stop()) return false;
  renewer_ = std::thread([this, on_lost = std::move(on_lost)] {
    auto last_renewal = std::chrono::steady_clock::now();
    while (!stopping_) {
      std::this_thread::sleep_for(options_.retry_period);
      auto renewed = TryAcquireOrRenew();
      if (renewed && *renewed) {
        last_renewal = std::chrono::steady_clock::now();
        continue;
      }
      // Lost to another, or not renewed for a whole lease: another may lead by now.
      if ((renewed && !*renewed) ||
          std::chrono::steady_clock::now() - last_renewal > options_.lease_duration) {
        on_lost();
        return;
      }
    }
  });
  return true;
}

}  // namespace berth::controller
