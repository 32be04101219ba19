// spec.git fetched with libgit2 from real Git servers on loopback (git's own smart-HTTP
// backend, and OpenSSH's sshd): every kind of ref, basic auth, SSH keys with known_hosts, and
// the limits that keep a hostile remote small.
#include "controller/git_source.h"

#include <gtest/gtest.h>

#include "git_http_server.h"
#include "git_ssh_server.h"
#include "sys/files.h"

namespace berth::controller {
namespace {

namespace fs = std::filesystem;
using testenv::Git;

class GitSource : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto dir = sys::TempDir::Create("git-source");
    ASSERT_TRUE(dir);
    root = new sys::TempDir(std::move(*dir));
    const fs::path work = root->Path() / "work";
    fs::create_directories(work);
    ASSERT_TRUE(Git(work, {"init", "-q", "-b", "main"}));
    ASSERT_TRUE(sys::WriteFileAtomic(work / "main.tf", "# one\n"));
    ASSERT_TRUE(Git(work, {"add", "."}));
    ASSERT_TRUE(Git(work, {"commit", "-q", "-m", "one"}));
    ASSERT_TRUE(Git(work, {"tag", "v1"}));
    first_commit = new std::string(Head(work));
    ASSERT_TRUE(sys::WriteFileAtomic(work / "main.tf", "# two\n"));
    ASSERT_TRUE(Git(work, {"commit", "-q", "-am", "two"}));
    second_commit = new std::string(Head(work));
    ASSERT_TRUE(Git(root->Path(), {"clone", "-q", "--bare", "work", "srv/infra.git"}));
    auto open = testenv::GitHttpServer::Start({.root = root->Path() / "srv"});
    ASSERT_TRUE(open) << open.error().ToString();
    open_server = open->release();
    auto guarded = testenv::GitHttpServer::Start(
        {.root = root->Path() / "srv", .username = "deployer", .password = "s3cret"});
    ASSERT_TRUE(guarded) << guarded.error().ToString();
    guarded_server = guarded->release();
    auto ssh = testenv::GitSshServer::Start();
    ASSERT_TRUE(ssh) << ssh.error().ToString();
    ssh_server = ssh->release();
  }

  static void TearDownTestSuite() {
    delete open_server;
    delete guarded_server;
    delete ssh_server;
    delete first_commit;
    delete second_commit;
    delete root;
  }

  static std::string Head(const fs::path& work) {
    auto head = Git(work, {"rev-parse", "HEAD"});
    EXPECT_TRUE(head);
    return head->substr(0, 40);
  }

  fs::path Dest() { return root->Path() / ("dest-" + std::to_string(++fetches)); }

  static std::string Content(const fs::path& dest) {
    return sys::ReadFile(dest / "main.tf").value();
  }

  static inline sys::TempDir* root = nullptr;
  static inline testenv::GitHttpServer* open_server = nullptr;
  static inline testenv::GitHttpServer* guarded_server = nullptr;
  static inline testenv::GitSshServer* ssh_server = nullptr;
  static inline std::string* first_commit = nullptr;
  static inline std::string* second_commit = nullptr;
  static inline int fetches = 0;
  static constexpr size_t kPlenty = size_t{64} << 20;
};

TEST_F(GitSource, ChecksOutTheBranchTheTagOrTheCommitAsked) {
  const std::string url = open_server->Url("infra.git");
  auto dest = Dest();
  auto branch = FetchGit(url, {.branch = "main"}, {}, dest, kPlenty);
  ASSERT_TRUE(branch) << branch.error().ToString();
  EXPECT_EQ(branch->commit, *second_commit);
  EXPECT_EQ(branch->revision, "main@sha1:" + *second_commit);
  EXPECT_EQ(Content(dest), "# two\n");

  dest = Dest();
  auto tag = FetchGit(url, {.tag = "v1"}, {}, dest, kPlenty);
  ASSERT_TRUE(tag) << tag.error().ToString();
  EXPECT_EQ(tag->commit, *first_commit);
  EXPECT_EQ(tag->revision, "v1@sha1:" + *first_commit);
  EXPECT_EQ(Content(dest), "# one\n");

  dest = Dest();
  auto commit = FetchGit(url, {.commit = *first_commit}, {}, dest, kPlenty);
  ASSERT_TRUE(commit) << commit.error().ToString();
  EXPECT_EQ(commit->revision, "sha1:" + *first_commit);
  EXPECT_EQ(Content(dest), "# one\n");

  dest = Dest();
  auto default_branch = FetchGit(url, {}, {}, dest, kPlenty);
  ASSERT_TRUE(default_branch) << default_branch.error().ToString();
  EXPECT_EQ(default_branch->commit, *second_commit);
}

TEST_F(GitSource, ARefThatIsNotThereIsNotFound) {
  auto missing = FetchGit(open_server->Url("infra.git"), {.branch = "nope"}, {}, Dest(), kPlenty);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().kind, ErrorKind::kNotFound) << missing.error().ToString();
  auto no_repo = FetchGit(open_server->Url("absent.git"), {}, {}, Dest(), kPlenty);
  ASSERT_FALSE(no_repo);
}

TEST_F(GitSource, BasicAuthComesFromTheCredentialsAndAWrongOneIsRefused) {
  const std::string url = guarded_server->Url("infra.git");
  auto anonymous = FetchGit(url, {}, {}, Dest(), kPlenty);
  ASSERT_FALSE(anonymous);
  auto wrong = FetchGit(url, {}, {.username = "deployer", .password = "guess"}, Dest(), kPlenty);
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().kind, ErrorKind::kUnauthenticated) << wrong.error().ToString();
  EXPECT_NE(wrong.error().message.find(url), std::string::npos) << wrong.error().message;
  EXPECT_EQ(wrong.error().message.find("guess"), std::string::npos) << "no password in errors";
  auto right = FetchGit(url, {}, {.username = "deployer", .password = "s3cret"}, Dest(), kPlenty);
  ASSERT_TRUE(right) << right.error().ToString();
  EXPECT_EQ(right->commit, *second_commit);
}

TEST_F(GitSource, SshUsesTheIdentityAndTrustsOnlyTheHostKeysOfKnownHosts) {
  const std::string url = ssh_server->Url(root->Path() / "srv/infra.git");
  const GitCredentials right = {.identity = ssh_server->Identity(),
                                .identity_pub = ssh_server->IdentityPub(),
                                .known_hosts = ssh_server->KnownHosts()};
  const fs::path dest = Dest();
  auto fetched = FetchGit(url, {.tag = "v1"}, right, dest, kPlenty);
  ASSERT_TRUE(fetched) << fetched.error().ToString();
  EXPECT_EQ(fetched->commit, *first_commit);
  EXPECT_EQ(Content(dest), "# one\n");

  // known_hosts as `ssh-keygen -H` hashes it, and the private key alone (no .pub).
  const fs::path hashed = root->Path() / "known_hosts";
  ASSERT_TRUE(sys::WriteFileAtomic(hashed, right.known_hosts));
  auto hashing =
      sys::RunToCompletion({.argv = {"/usr/bin/ssh-keygen", "-q", "-H", "-f", hashed.string()}});
  ASSERT_TRUE(hashing && hashing->exit_code == 0);
  GitCredentials hashed_hosts = right;
  hashed_hosts.known_hosts = sys::ReadFile(hashed).value();
  hashed_hosts.identity_pub.clear();
  ASSERT_TRUE(hashed_hosts.known_hosts.starts_with("|1|")) << hashed_hosts.known_hosts;
  auto by_hash = FetchGit(url, {}, hashed_hosts, Dest(), kPlenty);
  ASSERT_TRUE(by_hash) << by_hash.error().ToString();

  GitCredentials impostor = right;
  impostor.known_hosts = ssh_server->ForeignKnownHosts().value();
  auto spoofed = FetchGit(url, {}, impostor, Dest(), kPlenty);
  ASSERT_FALSE(spoofed);
  EXPECT_EQ(spoofed.error().kind, ErrorKind::kUnauthenticated);
  EXPECT_NE(spoofed.error().message.find("host key"), std::string::npos) << spoofed.error().message;

  GitCredentials stranger = right;
  stranger.identity = ssh_server->ForeignIdentity().value();
  stranger.identity_pub.clear();
  auto refused = FetchGit(url, {}, stranger, Dest(), kPlenty);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, ErrorKind::kUnauthenticated) << refused.error().ToString();
  EXPECT_EQ(refused.error().message.find("PRIVATE KEY"), std::string::npos) << "no key in errors";

  GitCredentials trusting = right;
  trusting.known_hosts.clear();
  auto unverified = FetchGit(url, {}, trusting, Dest(), kPlenty);
  ASSERT_FALSE(unverified);
  EXPECT_EQ(unverified.error().kind, ErrorKind::kInvalidArgument);
  EXPECT_NE(unverified.error().message.find("known_hosts"), std::string::npos);
}

TEST_F(GitSource, ARemoteThatSendsTooMuchIsStopped) {
  const fs::path dest = Dest();
  auto big = FetchGit(open_server->Url("infra.git"), {}, {}, dest, 64);
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().kind, ErrorKind::kResourceExhausted) << big.error().ToString();
}

}  // namespace
}  // namespace berth::controller
