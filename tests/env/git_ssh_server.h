// A real OpenSSH server on a loopback port for the controller's ssh:// Git sources: sshd
// itself, one client key allowed, git-upload-pack run by the account the tests run as. Test
// infrastructure, started once per test binary; the repositories are folders made with `git`.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "core/error.h"
#include "sys/files.h"
#include "sys/subprocess.h"

namespace berth::testenv {

class GitSshServer {
 public:
  static Result<std::unique_ptr<GitSshServer>> Start();
  // ssh://USER@127.0.0.1:PORT/<absolute path of a repository>
  std::string Url(const std::filesystem::path& repository) const;
  // The client key the server accepts (OpenSSH format) and its public half.
  const std::string& Identity() const { return identity_; }
  const std::string& IdentityPub() const { return identity_pub_; }
  // A known_hosts line for this server's host key, as `ssh-keyscan -p PORT 127.0.0.1` prints.
  const std::string& KnownHosts() const { return known_hosts_; }
  // Another key pair, which this server does not know: as an identity (a stranger's) and as a
  // known_hosts line for this server (a man in the middle's host key).
  Result<std::string> ForeignIdentity() const;
  Result<std::string> ForeignKnownHosts() const;

 private:
  explicit GitSshServer(sys::TempDir dir) : dir_(std::move(dir)) {}
  Result<std::filesystem::path> ForeignKey() const;  // made on first use

  sys::TempDir dir_;
  std::unique_ptr<sys::Subprocess> sshd_;
  std::string user_;
  int port_ = 0;
  std::string identity_;
  std::string identity_pub_;
  std::string known_hosts_;
};

}  // namespace berth::testenv
