// The runner's side of berthd's runner gateway (--gateway): every request carries the run's
// token, and one that meets no gateway, or a gateway that answers 5xx, 408 or 429, is retried
// with growing pauses until the retry budget is spent, so that a gateway down for a while
// costs the run nothing.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "core/error.h"
#include "net/http_client.h"

namespace berth::runner {

struct GatewayOptions {
  std::string url;  // berthd's base URL
  std::string run_id;
  std::string token;
  std::chrono::milliseconds retry_for{std::chrono::minutes(10)};
  std::chrono::milliseconds first_pause{250};
  std::chrono::milliseconds max_pause{std::chrono::seconds(5)};
};

class GatewayClient {
 public:
  GatewayClient(GatewayOptions options, std::unique_ptr<net::HttpClient> http);

  // The body of GET /runs/v1/{run}/{what} (bundle, inputs, plan).
  Result<std::string> Fetch(const std::string& what);
  // POST /runs/v1/{run}/logs?seq=N.
  Result<void> AppendLog(int64_t seq, const std::string& chunk);
  // PUT /runs/v1/{run}/artifacts/{name}.
  Result<void> PutArtifact(const std::string& name, const std::string& content);
  // POST /runs/v1/{run}/result.
  Result<void> PostResult(const std::string& result_json);

  // Ends the retries of requests in flight (the run is being stopped).
  void GiveUp() { gave_up_ = true; }

 private:
  Result<std::string> Send(const std::string& method, const std::string& path, std::string body,
                           const std::string& content_type);

  GatewayOptions options_;
  std::unique_ptr<net::HttpClient> http_;
  std::atomic<bool> gave_up_{false};
};

}  // namespace berth::runner
