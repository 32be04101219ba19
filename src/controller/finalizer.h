// berth-controller's finalizer: on a Terraform object exactly while its deletionPolicy is
// destroy, so that deleting the object first destroys what it made (docs/controller.md,
// "Deleting an object").
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/error.h"
#include "kube/kube_api.h"

namespace berth::controller {

inline constexpr std::string_view kDestroyFinalizer = "berth.dev/destroy";

bool HasDestroyFinalizer(const nlohmann::json& object);

// Adds or removes the finalizer, keeping every other one. When object (as read) says a change
// is needed, the object is read again and the patch carries that resourceVersion: a concurrent
// change is a conflict, and the next reconcile tries again.
Result<void> SetDestroyFinalizer(kube::KubeApi& api, const nlohmann::json& object, bool wanted,
                                 std::string_view field_manager);

// Whether the namespace is being deleted: nothing new can be made in it (no runner Pod), and
// its Secrets, state included, are going.
Result<bool> NamespaceTerminating(kube::KubeApi& api, const std::string& ns);

}  // namespace berth::controller
