#include "launch/kubernetes/cluster_check.h"

namespace berth::launch {
namespace {

using nlohmann::json;

constexpr kube::ResourceKind kSelfSubjectReviews{"authentication.k8s.io/v1", "SelfSubjectReview",
                                                 "selfsubjectreviews", false};
constexpr kube::ResourceKind kSelfSubjectAccessReviews{
    "authorization.k8s.io/v1", "SelfSubjectAccessReview", "selfsubjectaccessreviews", false};

json Review(const kube::ResourceKind& kind, json spec) {
  json review = {{"apiVersion", kind.api_version}, {"kind", kind.kind}};
  if (!spec.is_null()) review["spec"] = std::move(spec);
  return review;
}

// A review has no effect but its answer: one whose answer did not arrive whole (an API server
// may answer a refused request before it has read the body, and close the stream) is asked
// once more. Cut short twice, a request without a body says whether the server knows the
// caller at all (CI saw a stranger's token refused so, twice in a row, under load).
Result<json> Ask(kube::KubeApi& api, const kube::ResourceKind& kind, json spec) {
  const json review = Review(kind, std::move(spec));
  auto answer = api.Create(kind, "", review);
  if (!answer && answer.error().kind == ErrorKind::kUnavailable)
    answer = api.Create(kind, "", review);
  if (!answer && answer.error().kind == ErrorKind::kUnavailable) {
    auto known = api.Get(kube::kNamespaces, "", "default");
    if (!known && known.error().kind == ErrorKind::kUnauthenticated) return known.error();
  }
  return answer;
}

}  // namespace

std::string LauncherRight::Name() const {
  std::string name = verb + " " + resource;
  if (!subresource.empty()) name += "/" + subresource;
  if (!group.empty()) name += "." + group;
  return name;
}

const std::vector<LauncherRight>& LauncherRights() {
  static const std::vector<LauncherRight> kRights = [] {
    std::vector<LauncherRight> rights;
    auto add = [&rights](const std::string& group, const std::string& resource,
                         const std::string& subresource, std::initializer_list<const char*> verbs) {
      for (const char* verb : verbs) rights.push_back({group, resource, subresource, verb});
    };
    add("", "pods", "", {"get", "list", "watch", "create", "delete"});
    add("", "pods", "status", {"get"});
    add("", "secrets", "", {"create", "delete"});
    add("batch", "jobs", "", {"get", "create", "delete"});
    add("", "events", "", {"create"});
    add("events.k8s.io", "events", "", {"create"});
    return rights;
  }();
  return kRights;
}

void CheckCluster(kube::KubeApi& api, ClusterCheck& check) {
  auto who = Ask(api, kSelfSubjectReviews, nullptr);
  if (!who) {
    check.error = who.error().ToString();
    return;
  }
  const json info = who->value("status", json::object()).value("userInfo", json::object());
  check.user = info.value("username", "");
  if (auto groups = info.find("groups"); groups != info.end() && groups->is_array())
    for (const json& group : *groups)
      if (group.is_string()) check.groups.push_back(group.get<std::string>());
  for (const LauncherRight& right : LauncherRights()) {
    json attributes = {{"namespace", check.ns},
                       {"verb", right.verb},
                       {"group", right.group},
                       {"resource", right.resource}};
    if (!right.subresource.empty()) attributes["subresource"] = right.subresource;
    auto review = Ask(api, kSelfSubjectAccessReviews, {{"resourceAttributes", attributes}});
    if (!review) {
      check.error = review.error().ToString();
      return;
    }
    if (!review->value("status", json::object()).value("allowed", false))
      check.missing.push_back(right.Name());
  }
}

}  // namespace berth::launch
