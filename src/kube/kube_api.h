// The Kubernetes API as berth uses it: typed verbs over JSON objects, watches, and a client on
// HttpClient with a client-side rate limit and request counts. Errors from the API's Status
// objects become berth's error kinds, with the Status reason kept in Error::reason.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "kube/kube_config.h"
#include "kube/resource.h"
#include "net/http_client.h"

namespace berth::kube {

using nlohmann::json;

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  int64_t page_size = 500;  // pages are followed with `continue` until the list is whole
  // Applied to each item as its page arrives: an informer's transform, so that the whole list
  // is never held as it came.
  std::function<void(json& item)> each_item;
};

struct ObjectList {
  std::vector<json> items;
  std::string resource_version;  // where a watch of this list starts
};

struct DeleteOptions {
  std::optional<int64_t> grace_period_seconds;  // 0 with force: gone now
  std::string precondition_uid;                 // delete only this incarnation
  std::string propagation_policy;               // Background, Foreground, Orphan; empty: default
};

enum class PatchType {
  kMerge,  // RFC 7386 JSON merge patch
  kApply,  // server-side apply: the body is the field manager's whole intent
};

struct WatchOptions {
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;  // from the list; the watch sends what changed after it
  int timeout_seconds = 300;     // the server ends the watch then; the caller watches again
};

struct WatchEvent {
  std::string type;  // ADDED, MODIFIED, DELETED, BOOKMARK
  json object;
};

// Error::reason for a watch whose resourceVersion is too old: list again.
inline constexpr std::string_view kReasonExpired = "Expired";
// Error::reason for a 403 of a ResourceQuota: full now, may pass later.
inline constexpr std::string_view kReasonQuotaExceeded = "QuotaExceeded";
// Error::reason for a 403 of a ResourceQuota that needs requests or limits the object lacks.
inline constexpr std::string_view kReasonQuotaNeedsResources = "QuotaNeedsResources";

class KubeApi {
 public:
  virtual ~KubeApi() = default;

  virtual Result<json> Create(const ResourceKind& kind, std::string_view ns,
                              const json& object) = 0;
  // POST to a subresource (pods/NAME/binding, pods/NAME/eviction).
  virtual Result<json> CreateSubresource(const ResourceKind& kind, std::string_view ns,
                                         std::string_view name, std::string_view subresource,
                                         const json& object) = 0;
  virtual Result<json> Get(const ResourceKind& kind, std::string_view ns,
                           std::string_view name) = 0;
  virtual Result<ObjectList> List(const ResourceKind& kind, std::string_view ns,
                                  const ListOptions& options) = 0;
  // subresource: empty, or "status".
  virtual Result<json> Patch(const ResourceKind& kind, std::string_view ns, std::string_view name,
                             PatchType type, const json& patch, std::string_view field_manager,
                             std::string_view subresource = {}) = 0;
  virtual Result<void> Delete(const ResourceKind& kind, std::string_view ns, std::string_view name,
                              const DeleteOptions& options) = 0;
  // Blocks, handing each event to on_event, until the server ends the watch (success),
  // on_event returns false or cancelled() turns true (kCancelled), or the stream fails. An ERROR
  // event is returned as an error (reason kReasonExpired for 410).
  virtual Result<void> Watch(const ResourceKind& kind, std::string_view ns,
                             const WatchOptions& options,
                             const std::function<bool(WatchEvent)>& on_event,
                             const std::function<bool()>& cancelled) = 0;
};

struct KubeClientOptions {
  double qps = 50;     // client-side rate limit (client-go's defaults are 5 and 10; berth's
  double burst = 100;  // watches make reads rare, writes are few per run)
  std::string user_agent = "berth";
};

// Requests sent, by "VERB RESOURCE" (VERB: create, get, list, patch, delete, watch).
using RequestCounts = std::map<std::string, uint64_t>;

class KubeClient : public KubeApi {
 public:
  virtual RequestCounts Counts() const = 0;
  // The counts in the Prometheus text format, as berth_kube_requests_total{verb,resource}.
  virtual std::string MetricsText() const = 0;
};

std::unique_ptr<KubeClient> MakeKubeClient(KubeConfig config, KubeClientOptions options = {});

// The error of a non-2xx response: its Status object decoded (reason, message, causes).
Error DecodeStatusError(int http_status, std::string_view body, std::string context);

}  // namespace berth::kube
