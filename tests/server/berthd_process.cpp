#include "berthd_process.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "sys/files.h"
#include "sys/module_bundle.h"
#include "test_tools.h"

namespace berth::server {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A loopback port nobody listens on now.
int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof(address);
  bool bound = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
               getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) == 0;
  close(fd);
  return bound ? ntohs(address.sin_port) : 0;
}

}  // namespace

BerthdProcess::BerthdProcess(fs::path dir, std::string name)
    : dir_(std::move(dir)),
      data_(dir_ / name),
      name_(std::move(name)),
      url_("http://127.0.0.1:" + std::to_string(FreePort())) {}

BerthdProcess::~BerthdProcess() {
  if (process_) Kill();
}

Result<void> BerthdProcess::Start(const std::vector<std::string>& flags,
                                  const std::vector<std::string>& env) {
  sys::SpawnOptions options;
  options.argv = {BERTHD_BIN, "--data-dir=" + data_.string(), "--listen=" + url_.substr(7),
                  std::string("--runner-binary=") + RUNNER_BIN, "--log-format=json"};
  options.argv.insert(options.argv.end(), flags.begin(), flags.end());
  options.output_path = LogPath(++starts_).string();
  auto tofu = testenv::TestTool("BERTH_TEST_TOFU");
  if (!tofu) return tofu.error();
  options.env = std::vector<std::string>{"PATH=" + tofu->parent_path().string() + ":/usr/bin:/bin",
                                         "HOME=" + dir_.string()};
  options.env->insert(options.env->end(), env.begin(), env.end());
  std::error_code ec;
  fs::remove(data_ / "berthd.url", ec);
  auto started = sys::Subprocess::Spawn(options);
  if (!started) return started.error();
  process_.emplace(std::move(*started));
  for (int i = 0; i < 400 && !fs::exists(data_ / "berthd.url"); ++i) {
    if (!process_->Running()) {
      process_.reset();
      auto log = sys::ReadFile(options.output_path);
      return MakeError(ErrorKind::kUnavailable,
                       "berthd " + name_ + " exited at its start: " + (log ? *log : ""));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!fs::exists(data_ / "berthd.url"))
    return MakeError(ErrorKind::kUnavailable, "berthd " + name_ + " did not start serving");
  return {};
}

int BerthdProcess::Stop() {
  if (!process_) return -1;
  process_->Signal(SIGTERM);
  int status = process_->Wait();
  process_.reset();
  return status;
}

void BerthdProcess::Kill() {
  if (!process_) return;
  process_->Signal(SIGKILL);
  process_->Wait();
  process_.reset();
}

bool BerthdProcess::Running() { return process_ && process_->Running(); }

fs::path BerthdProcess::LogPath(int start) const {
  return dir_ / (name_ + "-" + std::to_string(start) + ".log");
}

std::string BerthdProcess::AdminToken() const {
  auto token = sys::ReadFile(data_ / "admin-token");
  if (!token || token->empty()) return "";
  token->pop_back();  // its newline
  return *token;
}

net::HttpResponse BerthdClient::Call(const std::string& method, const std::string& path,
                                     const std::string& body, const std::string& type) const {
  net::HttpRequest request{.method = method, .url = url + "/orgs/default" + path, .body = body};
  request.headers = {{"Authorization", "Bearer " + token}};
  if (!body.empty()) request.headers.emplace_back("Content-Type", type);
  auto response = http->Send(request);
  EXPECT_TRUE(response) << response.error().ToString();
  return response ? *response : net::HttpResponse{};
}

std::string BerthdClient::Deploy(const fs::path& module, json spec, const std::string& env) const {
  auto bundle = sys::PackModule(module);
  EXPECT_TRUE(bundle);
  auto uploaded = Call("POST", "/bundles", *bundle, "application/gzip");
  EXPECT_EQ(uploaded.status, 201) << uploaded.body;
  spec["source"] = {{"bundle", json::parse(uploaded.body)["id"]}};
  std::string project = env.substr(0, env.find('/')), name = env.substr(env.find('/') + 1);
  auto created =
      Call("POST", "/projects/" + project + "/envs/" + name + "/deployments", spec.dump());
  EXPECT_EQ(created.status, 201) << created.body;
  return json::parse(created.body, nullptr, false).value("id", "");
}

json BerthdClient::Get(const std::string& id) const {
  return json::parse(Call("GET", "/deployments/" + id).body, nullptr, false);
}

json BerthdClient::WaitFor(const std::string& id, const std::vector<std::string>& states) const {
  json d;
  for (int i = 0; i < 1200; ++i) {
    d = Get(id);
    if (d.is_object() &&
        std::find(states.begin(), states.end(), d.value("state", "")) != states.end())
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return d;
}

std::string BerthdClient::Log(const std::string& id) const {
  return Call("GET", "/deployments/" + id + "/logs").body;
}

bool BerthdClient::WaitForLog(const std::string& id, const std::string& text) const {
  for (int i = 0; i < 1200; ++i) {
    if (Log(id).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

void BerthdClient::CreateWebDev(const json& runner_configuration) const {
  for (const auto& [path, body] : std::vector<std::pair<std::string, json>>{
           {"/runners",
            {{"id", "here"},
             {"runner_configuration", runner_configuration},
             {"state_storage_configuration", {{"type", "berth"}}}}},
           {"/runner-rules", {{"id", "all"}, {"runner_id", "here"}}},
           {"/projects", {{"id", "web"}}},
           {"/env-types", {{"id", "development"}}},
           {"/projects/web/envs", {{"id", "dev"}, {"env_type_id", "development"}}}}) {
    auto created = Call("POST", path, body.dump());
    EXPECT_EQ(created.status, 201) << path << ": " << created.body;
  }
}

fs::path LocalExecModule(const fs::path& dir, const std::string& command) {
  fs::path module = dir / "module";
  fs::create_directories(module);
  std::string tf = "resource \"terraform_data\" \"lines\" {\n  provisioner \"local-exec\" {\n" +
                   std::string("    command = ") + json(command).dump() + "\n  }\n}\n";
  EXPECT_TRUE(sys::WriteFileAtomic(
      module / "main.tf", tf,
      fs::perms::owner_read | fs::perms::owner_write | fs::perms::others_read));
  return module;
}

int Occurrences(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = 0; (at = text.find(what, at)) != std::string::npos; ++at) ++n;
  return n;
}

}  // namespace berth::server
