// Posting events.k8s.io/v1 Events (Kubernetes API reference, "Event v1 events.k8s.io").
#include "runner/run_events.h"

#include <atomic>
#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>

#include "core/time_format.h"
#include "runner/work_dir.h"
#include "sys/files.h"

namespace berth::runner {
namespace {

constexpr auto kRequestTimeout = std::chrono::seconds(2);
constexpr auto kFlushTimeout = std::chrono::seconds(5);
constexpr size_t kMaxNote = 1024;  // the API refuses longer notes

std::string EventName(const std::string& object) {
  static std::atomic<unsigned> counter{0};
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                std::chrono::system_clock::now().time_since_epoch())
                .count();
  char suffix[40];
  std::snprintf(suffix, sizeof suffix, ".%llx%x", static_cast<unsigned long long>(ns),
                counter++ & 0xfff);
  return object + suffix;
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

KubeRunEvents::KubeRunEvents(EventTarget target, InClusterApi api, std::string job_name,
                             std::function<void(const std::string&)> warn)
    : target_(std::move(target)),
      api_(std::move(api)),
      job_name_(std::move(job_name)),
      warn_(std::move(warn)) {
  auto ca = sys::ReadFile(api_.account_dir + "/ca.crt");
  http_ = net::MakeOpenSslHttpClient({.ca_pem = ca ? *ca : ""});
  thread_ = std::thread([this] { Loop(); });
}

KubeRunEvents::~KubeRunEvents() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void KubeRunEvents::Record(const std::string& reason, const std::string& note, bool warning) {
  MutexLock lock(mutex_);
  if (stopping_ || queue_.size() >= kMaxQueued) return;
  queue_.push_back({reason, note.substr(0, kMaxNote), warning,
                    FormatRfc3339(std::chrono::system_clock::now(), 6)});
  wake_.notify_one();
}

void KubeRunEvents::Loop() {
  auto flush_deadline = std::chrono::steady_clock::time_point::max();
  mutex_.lock();
  for (;;) {
    while (!stopping_ && queue_.empty()) wake_.wait(mutex_);
    if (stopping_ && flush_deadline == std::chrono::steady_clock::time_point::max()) {
      flush_deadline = std::chrono::steady_clock::now() + kFlushTimeout;
    }
    if (queue_.empty() || std::chrono::steady_clock::now() > flush_deadline) break;
    Pending event = std::move(queue_.front());
    queue_.pop_front();
    mutex_.unlock();  // posting takes up to kRequestTimeout: never under the lock
    bool posted = failures_ < kMaxConsecutiveFailures && Post(event);
    mutex_.lock();
    if (posted) {
      failures_ = 0;
    } else if (failures_ < kMaxConsecutiveFailures) {
      ++failures_;
      if (failures_ == kMaxConsecutiveFailures) {
        warn_("events: giving up after " + std::to_string(kMaxConsecutiveFailures) +
              " failed posts (last: " + last_failure_ + "); the run goes on without them");
      }
    }
  }
  mutex_.unlock();
}

bool KubeRunEvents::Post(const Pending& e) {
  auto token = sys::ReadFile(api_.account_dir + "/token");  // re-read: it rotates
  if (!token) {
    last_failure_ = token.error().ToString();
    return false;
  }
  nlohmann::json event = {
      {"apiVersion", "events.k8s.io/v1"},
      {"kind", "Event"},
      // Named as client-go's recorder names them: the object, a dot, a unique hex suffix
      // (generateName ending in "." is not a valid name prefix).
      {"metadata", {{"name", EventName(target_.name)}, {"namespace", target_.ns}}},
      {"eventTime", e.time},
      {"reportingController", "berth.dev/runner"},
      {"reportingInstance", api_.instance.substr(0, 128)},
      {"action", job_name_.empty() ? "Run" : "Run " + job_name_},
      {"reason", e.reason},
      {"note", e.note},
      {"type", e.warning ? "Warning" : "Normal"},
      {"regarding", {{"kind", target_.kind}, {"namespace", target_.ns}, {"name", target_.name}}},
  };
  net::HttpRequest request{
      .method = "POST",
      .url = api_.url + "/apis/events.k8s.io/v1/namespaces/" + target_.ns + "/events",
      .headers = {{"Authorization", "Bearer " + Trim(*token)},
                  {"Content-Type", "application/json"},
                  {"Accept", "application/json"}},
      .body = event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
      .timeout = kRequestTimeout};
  auto response = http_->Send(request);
  if (!response) {
    last_failure_ = response.error().ToString();
    return false;
  }
  if (response->status != 201) {
    // The Status object's message says why (forbidden, invalid field).
    auto status = nlohmann::json::parse(response->body, nullptr, false);
    last_failure_ = "HTTP " + std::to_string(response->status) +
                    (status.is_object() && status.contains("message")
                         ? ": " + status["message"].get<std::string>()
                         : "");
    return false;
  }
  return true;
}

std::unique_ptr<RunEvents> MakeRunEvents(const std::string& event_object,
                                         const std::string& job_name,
                                         const std::vector<std::string>& environment,
                                         std::function<void(const std::string&)> warn) {
  if (event_object.empty()) return std::make_unique<NoRunEvents>();
  EventTarget target;
  size_t a = event_object.find('/'), b = event_object.find('/', a + 1);
  target.kind = event_object.substr(0, a);
  target.ns = event_object.substr(a + 1, b - a - 1);
  target.name = event_object.substr(b + 1);
  std::string host = Lookup(environment, "KUBERNETES_SERVICE_HOST");
  std::string port = Lookup(environment, "KUBERNETES_SERVICE_PORT");
  if (host.empty() || port.empty()) {
    warn("events: KUBERNETES_SERVICE_HOST/PORT are not set; no events will be posted");
    return std::make_unique<NoRunEvents>();
  }
  InClusterApi api;
  api.url =
      "https://" + (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + port;
  api.account_dir = Lookup(environment, "BERTH_SERVICE_ACCOUNT_DIR");
  if (api.account_dir.empty()) api.account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
  api.instance = Lookup(environment, "POD_NAME");
  if (api.instance.empty()) api.instance = "runner";
  return std::make_unique<KubeRunEvents>(std::move(target), std::move(api), job_name,
                                         std::move(warn));
}

}  // namespace berth::runner
