#include "controller/git_source.h"

#include <git2.h>

#include <memory>

#include "controller/known_hosts.h"

namespace berth::controller {
namespace {

template <class T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using Repository = std::unique_ptr<git_repository, Deleter<git_repository, git_repository_free>>;
using Object = std::unique_ptr<git_object, Deleter<git_object, git_object_free>>;

// What the callbacks of one clone share.
struct CloneState {
  const GitCredentials* credentials = nullptr;
  size_t max_bytes = 0;
  int ssh_port = 22;
  bool credentials_tried = false;  // libgit2 asks again after a refusal: answer once
  bool too_big = false;
  bool host_key_refused = false;
};

// The port of an ssh://[user@]host[:port]/path URL.
int SshPort(std::string_view url) {
  std::string_view rest = url.substr(url.find("://") + 3);
  rest = rest.substr(0, rest.find('/'));
  rest = rest.substr(rest.find('@') == std::string_view::npos ? 0 : rest.find('@') + 1);
  const size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos || rest.ends_with(']')) return 22;
  try {
    return std::stoi(std::string(rest.substr(colon + 1)));
  } catch (const std::exception&) {
    return 22;
  }
}

const char* OrNull(const std::string& text) { return text.empty() ? nullptr : text.c_str(); }

int Credentials(git_credential** out, const char* /*url*/, const char* user_from_url,
                unsigned int allowed, void* payload) {
  auto* state = static_cast<CloneState*>(payload);
  const GitCredentials& given = *state->credentials;
  const char* ssh_user = user_from_url != nullptr ? user_from_url : "git";
  if ((allowed & GIT_CREDENTIAL_USERNAME) != 0) return git_credential_username_new(out, ssh_user);
  if (state->credentials_tried) return GIT_PASSTHROUGH;
  if ((allowed & GIT_CREDENTIAL_SSH_MEMORY) != 0 && !given.identity.empty()) {
    state->credentials_tried = true;
    return git_credential_ssh_key_memory_new(out, ssh_user, OrNull(given.identity_pub),
                                             given.identity.c_str(), OrNull(given.password));
  }
  if ((allowed & GIT_CREDENTIAL_USERPASS_PLAINTEXT) != 0 && !given.username.empty()) {
    state->credentials_tried = true;
    return git_credential_userpass_plaintext_new(out, given.username.c_str(),
                                                 given.password.c_str());
  }
  return GIT_PASSTHROUGH;
}

// An SSH server is trusted only by its host key in known_hosts; HTTPS keeps libgit2's own
// certificate check.
int CheckHostKey(git_cert* cert, int /*valid*/, const char* host, void* payload) {
  auto* state = static_cast<CloneState*>(payload);
  if (cert->cert_type != GIT_CERT_HOSTKEY_LIBSSH2) return GIT_PASSTHROUGH;
  const auto* key = reinterpret_cast<const git_cert_hostkey*>(cert);
  const bool listed = (key->type & GIT_CERT_SSH_RAW) != 0 &&
                      KnownHostsAccept(state->credentials->known_hosts, host, state->ssh_port,
                                       std::string_view(key->hostkey, key->hostkey_len));
  state->host_key_refused = !listed;
  return listed ? 0 : GIT_ECERTIFICATE;
}

int Progress(const git_indexer_progress* progress, void* payload) {
  auto* state = static_cast<CloneState*>(payload);
  if (progress->received_bytes > state->max_bytes) {
    state->too_big = true;
    return -1;  // stops the transfer
  }
  return 0;
}

Error GitError(ErrorKind kind, const std::string& what) {
  const git_error* last = git_error_last();
  return MakeError(kind, what + ": " + (last != nullptr ? last->message : "unknown error"));
}

// The object the ref names, peeled to its commit.
Result<Object> Resolve(git_repository* repo, const GitRef& ref) {
  std::string spec = "HEAD";
  if (!ref.commit.empty()) spec = ref.commit;
  if (!ref.tag.empty()) spec = "refs/tags/" + ref.tag;
  if (!ref.branch.empty()) spec = "refs/remotes/origin/" + ref.branch;
  git_object* found = nullptr;
  if (git_revparse_single(&found, repo, (spec + "^{commit}").c_str()) != 0)
    return GitError(ErrorKind::kNotFound, "git ref " + spec);
  return Object(found);
}

}  // namespace

Result<FetchedGit> FetchGit(const std::string& url, const GitRef& ref,
                            const GitCredentials& credentials, const std::filesystem::path& dest,
                            size_t max_bytes) {
  static const int kLibgit2Ready = git_libgit2_init();  // once per process, never shut down
  (void)kLibgit2Ready;
  CloneState state{.credentials = &credentials, .max_bytes = max_bytes};
  if (url.starts_with("ssh://")) {
    if (credentials.identity.empty() || credentials.known_hosts.empty())
      return MakeError(ErrorKind::kInvalidArgument,
                       "spec.git.secretRef: an ssh:// URL needs a Secret with identity and "
                       "known_hosts");
    state.ssh_port = SshPort(url);
  }
  git_clone_options options;
  git_clone_options_init(&options, GIT_CLONE_OPTIONS_VERSION);
  options.checkout_opts.checkout_strategy = GIT_CHECKOUT_NONE;  // after the ref is resolved
  options.fetch_opts.callbacks.credentials = Credentials;
  options.fetch_opts.callbacks.transfer_progress = Progress;
  options.fetch_opts.callbacks.certificate_check = CheckHostKey;
  options.fetch_opts.callbacks.payload = &state;
  options.fetch_opts.proxy_opts.type = GIT_PROXY_AUTO;
  options.fetch_opts.download_tags = GIT_REMOTE_DOWNLOAD_TAGS_ALL;
  git_repository* cloned = nullptr;
  if (git_clone(&cloned, url.c_str(), dest.c_str(), &options) != 0) {
    if (state.too_big) {
      return MakeError(ErrorKind::kResourceExhausted, "git clone of " + url + ": more than " +
                                                          std::to_string(max_bytes) + " bytes");
    }
    if (state.host_key_refused) {
      return MakeError(
          ErrorKind::kUnauthenticated,
          "git clone of " + url + ": the server's host key is not in the secretRef's known_hosts");
    }
    const git_error* last = git_error_last();
    const std::string_view message = last != nullptr ? last->message : "";
    const bool refused = last != nullptr &&
                         (last->klass == GIT_ERROR_HTTP || last->klass == GIT_ERROR_SSH) &&
                         (message.find("auth") != std::string_view::npos);
    return GitError(refused ? ErrorKind::kUnauthenticated : ErrorKind::kUnavailable,
                    "git clone of " + url);
  }
  Repository repo(cloned);
  auto target = Resolve(repo.get(), ref);
  if (!target) return target.error();
  git_checkout_options checkout;
  git_checkout_options_init(&checkout, GIT_CHECKOUT_OPTIONS_VERSION);
  checkout.checkout_strategy = GIT_CHECKOUT_FORCE;
  const git_oid* id = git_object_id(target->get());
  if (git_checkout_tree(repo.get(), target->get(), &checkout) != 0 ||
      git_repository_set_head_detached(repo.get(), id) != 0)
    return GitError(ErrorKind::kInternal, "git checkout");
  FetchedGit fetched;
  fetched.commit = git_oid_tostr_s(id);
  const std::string& name = !ref.branch.empty() ? ref.branch : ref.tag;
  fetched.revision = (name.empty() ? "" : name + "@") + "sha1:" + fetched.commit;
  return fetched;
}

}  // namespace berth::controller
