#include "git_ssh_server.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loopback.h"

namespace berth::testenv {
namespace {

namespace fs = std::filesystem;

// A new ed25519 key pair at path (and path.pub), no passphrase.
Result<void> KeyPair(const fs::path& path) {
  auto made = sys::RunToCompletion(
      {.argv = {"/usr/bin/ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", path.string()}});
  if (!made) return made.error();
  if (made->exit_code != 0) return MakeError(ErrorKind::kInternal, "ssh-keygen: " + made->output);
  return {};
}

std::string KeyOfPub(const std::string& pub) {  // "type base64" without the comment
  const size_t second = pub.find(' ', pub.find(' ') + 1);
  return pub.substr(0, second);
}

}  // namespace

Result<std::unique_ptr<GitSshServer>> GitSshServer::Start() {
  auto dir = sys::TempDir::Create("git-sshd");
  if (!dir) return dir.error();
  std::unique_ptr<GitSshServer> server(new GitSshServer(std::move(*dir)));
  const fs::path root = server->dir_.Path();
  for (const char* key : {"host_ed25519", "client"})
    if (auto made = KeyPair(root / key); !made) return made.error();
  auto identity = sys::ReadFile(root / "client");
  auto identity_pub = sys::ReadFile(root / "client.pub");
  auto host_pub = sys::ReadFile(root / "host_ed25519.pub");
  if (!identity || !identity_pub || !host_pub)
    return MakeError(ErrorKind::kInternal, "ssh-keygen left no keys");
  server->identity_ = *identity;
  server->identity_pub_ = *identity_pub;
  if (auto ok = sys::WriteFileAtomic(root / "authorized_keys", *identity_pub); !ok)
    return ok.error();
  auto port = FreeLoopbackPort();
  if (!port) return port.error();
  server->port_ = *port;
  server->known_hosts_ = "[127.0.0.1]:" + std::to_string(*port) + " " + KeyOfPub(*host_pub) + "\n";
  const passwd* account = getpwuid(getuid());
  if (account == nullptr) return MakeError(ErrorKind::kInternal, "no passwd entry for our uid");
  server->user_ = account->pw_name;
  const std::string config = "Port " + std::to_string(*port) +
                             "\nListenAddress 127.0.0.1\nHostKey " +
                             (root / "host_ed25519").string() + "\nAuthorizedKeysFile " +
                             (root / "authorized_keys").string() +
                             "\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
                             "PermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\n"
                             "PidFile " +
                             (root / "sshd.pid").string() + "\n";
  if (auto ok = sys::WriteFileAtomic(root / "sshd_config", config); !ok) return ok.error();
  ::mkdir("/run/sshd", 0755);  // sshd's privilege-separation folder; exists on a real host
  sys::SpawnOptions options;
  options.argv = {"/usr/sbin/sshd", "-D", "-e", "-f", (root / "sshd_config").string()};
  options.output_path = (root / "sshd.log").string();
  auto sshd = sys::Subprocess::Spawn(options);
  if (!sshd) return sshd.error();
  server->sshd_ = std::make_unique<sys::Subprocess>(std::move(*sshd));
  if (auto ready = WaitUntilReady(
          "sshd", *server->sshd_, [&] { return AcceptsTcp("127.0.0.1", server->port_); },
          std::chrono::seconds(20), options.output_path);
      !ready)
    return ready.error();
  return server;
}

std::string GitSshServer::Url(const fs::path& repository) const {
  return "ssh://" + user_ + "@127.0.0.1:" + std::to_string(port_) + repository.string();
}

Result<fs::path> GitSshServer::ForeignKey() const {
  fs::path other = dir_.Path() / "foreign";
  if (!fs::exists(other))
    if (auto made = KeyPair(other); !made) return made.error();
  return other;
}

Result<std::string> GitSshServer::ForeignIdentity() const {
  auto key = ForeignKey();
  if (!key) return key.error();
  return sys::ReadFile(*key);
}

Result<std::string> GitSshServer::ForeignKnownHosts() const {
  auto key = ForeignKey();
  if (!key) return key.error();
  auto pub = sys::ReadFile(key->string() + ".pub");
  if (!pub) return pub.error();
  return "[127.0.0.1]:" + std::to_string(port_) + " " + KeyOfPub(*pub) + "\n";
}

}  // namespace berth::testenv
