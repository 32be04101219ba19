// Real berthd processes for end-to-end tests, and their API as one token sees it: each berthd
// has a data folder and a loopback port of its own (the same port at every start: running
// runners know its URL) and its log in the test's folder.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "net/http_client.h"
#include "sys/subprocess.h"

namespace berth::server {

class BerthdProcess {
 public:
  // Data folder dir/name, log dir/name-N.log for its Nth start.
  BerthdProcess(std::filesystem::path dir, std::string name);
  ~BerthdProcess();
  BerthdProcess(const BerthdProcess&) = delete;
  BerthdProcess& operator=(const BerthdProcess&) = delete;

  // Starts it with the local runner, tofu on PATH, flags and env ("NAME=value" on top of
  // PATH and HOME); returns once it serves.
  Result<void> Start(const std::vector<std::string>& flags = {},
                     const std::vector<std::string>& env = {});
  // SIGTERM; its exit status.
  int Stop();
  // SIGKILL, as a crash.
  void Kill();
  bool Running();

  const std::string& Url() const { return url_; }
  const std::filesystem::path& DataDir() const { return data_; }
  std::filesystem::path LogPath(int start) const;
  int Starts() const { return starts_; }
  // The admin token it wrote at its first start ("" when it did not make the organization).
  std::string AdminToken() const;

 private:
  std::filesystem::path dir_, data_;
  std::string name_, url_;
  int starts_ = 0;
  std::optional<sys::Subprocess> process_;
};

// A berthd's API for organization default, as token sees it.
struct BerthdClient {
  std::string url, token;
  net::HttpClient* http;

  net::HttpResponse Call(const std::string& method, const std::string& path,
                         const std::string& body = "",
                         const std::string& type = "application/json") const;
  // Bundles the module folder and queues a deployment of it in environment env
  // ("project/env"); its id.
  std::string Deploy(const std::filesystem::path& module, nlohmann::json spec,
                     const std::string& env = "web/dev") const;
  nlohmann::json Get(const std::string& id) const;
  // Polls until the deployment is in one of states, for two minutes at most.
  nlohmann::json WaitFor(const std::string& id, const std::vector<std::string>& states) const;
  std::string Log(const std::string& id) const;
  // Until the deployment's log holds text, for two minutes at most; whether it did.
  bool WaitForLog(const std::string& id, const std::string& text) const;
  // What a deployment to web/dev needs: runner `here` of runner_configuration (berth's own
  // state storage), a rule sending every environment to it, project web, environment type
  // development and environment web/dev. A refused call fails the test, naming it.
  void CreateWebDev(const nlohmann::json& runner_configuration) const;
};

// A module folder dir/module whose one resource runs command (local-exec) at apply.
std::filesystem::path LocalExecModule(const std::filesystem::path& dir, const std::string& command);

// How often what occurs in text.
int Occurrences(const std::string& text, const std::string& what);

}  // namespace berth::server
