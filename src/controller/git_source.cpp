#include "controller/git_source.h"

#include <git2.h>

#include <memory>

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
  bool credentials_tried = false;  // libgit2 asks again after a refusal: answer once
  bool too_big = false;
};

int Credentials(git_credential** out, const char* /*url*/, const char* /*user_from_url*/,
                unsigned int allowed, void* payload) {
  auto* state = static_cast<CloneState*>(payload);
  if (state->credentials->username.empty() || state->credentials_tried ||
      (allowed & GIT_CREDENTIAL_USERPASS_PLAINTEXT) == 0)
    return GIT_PASSTHROUGH;
  state->credentials_tried = true;
  return git_credential_userpass_plaintext_new(out, state->credentials->username.c_str(),
                                               state->credentials->password.c_str());
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
  git_clone_options options;
  git_clone_options_init(&options, GIT_CLONE_OPTIONS_VERSION);
  options.checkout_opts.checkout_strategy = GIT_CHECKOUT_NONE;  // after the ref is resolved
  options.fetch_opts.callbacks.credentials = Credentials;
  options.fetch_opts.callbacks.transfer_progress = Progress;
  options.fetch_opts.callbacks.payload = &state;
  options.fetch_opts.proxy_opts.type = GIT_PROXY_AUTO;
  options.fetch_opts.download_tags = GIT_REMOTE_DOWNLOAD_TAGS_ALL;
  git_repository* cloned = nullptr;
  if (git_clone(&cloned, url.c_str(), dest.c_str(), &options) != 0) {
    if (state.too_big) {
      return MakeError(ErrorKind::kResourceExhausted, "git clone of " + url + ": more than " +
                                                          std::to_string(max_bytes) + " bytes");
    }
    const git_error* last = git_error_last();
    const bool refused = last != nullptr && last->klass == GIT_ERROR_HTTP &&
                         std::string_view(last->message).find("auth") != std::string_view::npos;
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
