// spec.git: a repository berth-controller fetches itself with libgit2 (the runner never reaches
// Git), checked out at a branch, a tag or a commit, for the controller to pack and send.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

#include "core/error.h"

namespace berth::controller {

struct GitRef {  // at most one is set; none: the remote's default branch
  std::string branch;
  std::string tag;
  std::string commit;  // a full SHA-1
};

// From spec.git.secretRef (Flux's keys): username and password for HTTP(S) basic auth;
// identity (a private key, OpenSSH or PEM), identity.pub and known_hosts for ssh://, where
// password is the key's passphrase. An ssh:// server whose host key known_hosts does not list
// is refused: there is no trust on first use.
struct GitCredentials {
  std::string username;
  std::string password;
  std::string identity;
  std::string identity_pub;
  std::string known_hosts;
};

struct FetchedGit {
  std::string commit;    // the full SHA-1 checked out
  std::string revision;  // "<branch or tag>@sha1:<commit>", or "sha1:<commit>" (Flux's form)
};

// Clones url into dest (a folder that must not exist yet) and checks out ref. A clone that
// would receive more than max_bytes is stopped (ResourceExhausted); refused credentials, and an
// SSH host key known_hosts does not list, are Unauthenticated; a ref that is not there is
// NotFound.
Result<FetchedGit> FetchGit(const std::string& url, const GitRef& ref,
                            const GitCredentials& credentials, const std::filesystem::path& dest,
                            size_t max_bytes);

}  // namespace berth::controller
