// moto in server mode (PyPI's moto[server], installed by scripts/bootstrap): the community's
// emulator of AWS's S3 and STS APIs, on a loopback port, started once per test binary. It is
// not AWS: it answers S3's and STS's documented requests (conditional writes included, which
// tofu's use_lockfile needs) but checks no signature and trusts any web identity token, so a
// test of who may read what proves berth's side only.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "net/http_client.h"
#include "sys/files.h"
#include "sys/subprocess.h"

namespace berth::testenv {

class MotoServer {
 public:
  static Result<MotoServer*> Shared();

  std::string Url() const;  // http://127.0.0.1:PORT, its S3 and STS endpoint alike
  Result<void> CreateBucket(const std::string& bucket) const;
  // The keys of the bucket's objects under prefix, in order.
  Result<std::vector<std::string>> Keys(const std::string& bucket, const std::string& prefix) const;
  Result<void> PutObject(const std::string& bucket, const std::string& key,
                         const std::string& content) const;
  // An object's bytes; kNotFound when there is none.
  Result<std::string> Object(const std::string& bucket, const std::string& key) const;

  ~MotoServer();
  MotoServer(const MotoServer&) = delete;
  MotoServer& operator=(const MotoServer&) = delete;

 private:
  explicit MotoServer(sys::TempDir dir) : dir_(std::move(dir)) {}
  static Result<std::unique_ptr<MotoServer>> Start();
  Result<net::HttpResponse> Send(const std::string& method, const std::string& path,
                                 const std::string& body = "") const;

  sys::TempDir dir_;
  int port_ = 0;
  std::unique_ptr<sys::Subprocess> server_;
  std::unique_ptr<net::HttpClient> http_ = net::MakeCurlHttpClient();
};

}  // namespace berth::testenv
