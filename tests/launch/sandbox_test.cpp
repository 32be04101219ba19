// The local sandbox's bwrap command line, run for real: what a run sees, and no bind bwrap
// need not make.
#include "launch/local/sandbox.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <thread>

#include "fork_scripts.h"
#include "sys/fd.h"
#include "sys/files.h"
#include "sys/subprocess.h"

namespace berth::launch {
namespace {

namespace fs = std::filesystem;

// Where a root test's run users are looked for from (berthd's default --local-runner-uid).
constexpr uid_t kRunUid = 60100;

// The user a sandbox's runs drop to: the first it holds when the test is root, ours otherwise.
uid_t RunUser(const Sandbox& sandbox) {
  return sandbox.RunUids().empty() ? geteuid() : sandbox.RunUids().front();
}

// How often path follows a bind option in args (each bind names it twice: source, target).
long Binds(const std::vector<std::string>& args, const std::string& path) {
  long binds = 0;
  for (size_t i = 1; i + 1 < args.size(); ++i) {
    if (args[i - 1].find("bind") != std::string::npos && args[i] == path && args[i + 1] == path)
      ++binds;
  }
  return binds;
}

// command's output and exit code, run in a sandbox with nothing but its own /tmp.
sys::Completed InBareSandbox(const std::vector<std::string>& command) {
  auto sandbox = Sandbox::Probe({.first = kRunUid, .count = 1});
  EXPECT_TRUE(sandbox) << sandbox.error().ToString();
  auto filter = DangerousCallsFilter();
  EXPECT_TRUE(filter) << filter.error().ToString();
  auto dir = sys::TempDir::Create("sandbox");
  EXPECT_TRUE(dir);
  if (!sandbox || !filter || !dir) return {.exit_code = -1};
  fs::create_directories(dir->Path() / "tmp");
  fs::permissions(dir->Path(), fs::perms::all, fs::perm_options::add);
  fs::permissions(dir->Path() / "tmp", fs::perms::all, fs::perm_options::add);
  SandboxMounts mounts{.tmp = dir->Path() / "tmp", .working_dir = "/"};
  sys::SpawnOptions spawn{
      .argv = sandbox->Wrap(mounts, command, filter->Get(), RunUser(*sandbox), 1024),
      .env = std::vector<std::string>{}};
  spawn.inherited_fds = {filter->Get()};
  auto done = sys::RunToCompletion(std::move(spawn));
  EXPECT_TRUE(done) << done.error().ToString();
  return done ? *done : sys::Completed{.exit_code = -1};
}

TEST(SandboxTest, FoldersInsideTheSystemsReadOnlyOnesAreSeenWithoutBindsOfTheirOwn) {
  auto dir = sys::TempDir::Create("sandbox");
  ASSERT_TRUE(dir);
  const fs::path root = dir->Path();
  for (const char* sub : {"ro", "rw", "tmp"}) fs::create_directories(root / sub);
  ASSERT_TRUE(sys::WriteFileAtomic(root / "ro/file", "x"));
  // The run's user (not the test's, when the test is root) must reach and write them.
  for (const fs::path& p : {root, root / "ro", root / "ro/file", root / "rw", root / "tmp"})
    fs::permissions(p, fs::perms::all, fs::perm_options::add);
  auto sandbox = Sandbox::Probe({.first = kRunUid, .count = 1});
  ASSERT_TRUE(sandbox) << sandbox.error().ToString();
  auto filter = DangerousCallsFilter();
  ASSERT_TRUE(filter) << filter.error().ToString();

  SandboxMounts mounts{.read_write = {root / "rw"},
                       // PATH's folders as a launcher gives them: system ones among the run's own.
                       .read_only = {"/usr/bin", "/usr/local/bin", "/bin", "/sbin", root / "ro"},
                       .tmp = root / "tmp",
                       .working_dir = root / "rw"};
  auto args =
      sandbox->Wrap(mounts,
                    {"/bin/sh", "-c",
                     "test -x /usr/bin/env && test -d /usr/local/bin && test -f ../ro/file && "
                     "! touch ../ro/new 2>/dev/null && ! touch /usr/bin/new 2>/dev/null && "
                     "touch made"},
                    filter->Get(), RunUser(*sandbox), 1024);

  EXPECT_EQ(Binds(args, "/usr/bin"), 0);
  EXPECT_EQ(Binds(args, "/usr/local/bin"), 0);
  EXPECT_EQ(Binds(args, "/bin"), 1);  // the system folder's own bind, once
  EXPECT_EQ(Binds(args, "/sbin"), 1);
  EXPECT_EQ(Binds(args, (root / "ro").string()), 1);
  EXPECT_EQ(Binds(args, (root / "rw").string()), 1);

  sys::SpawnOptions spawn{.argv = args, .env = std::vector<std::string>{}};
  spawn.inherited_fds = {filter->Get()};
  auto done = sys::RunToCompletion(std::move(spawn));
  ASSERT_TRUE(done) << done.error().ToString();
  EXPECT_EQ(done->exit_code, 0) << done->output;
  EXPECT_TRUE(fs::exists(root / "rw/made"));
  EXPECT_FALSE(fs::exists(root / "ro/new"));
}

// The seccomp filter refuses pushing keystrokes into a terminal and console commands, also
// with the high bits of the request set; other ioctls reach the kernel (which says ENOTTY, as
// for any request on /dev/null).
TEST(SandboxTest, KeystrokeInjectionIsRefusedWhateverTheRequestsHighBits) {
  // errno of each request on stdin (/dev/null): TIOCSTI, TIOCLINUX, TIOCSTI | 1 << 32,
  // TIOCGWINSZ.
  const std::string probe = R"py(
import ctypes, errno, termios
libc = ctypes.CDLL(None, use_errno=True)
buffer = ctypes.create_string_buffer(8)
out = []
for request in (termios.TIOCSTI, 0x541C, termios.TIOCSTI | (1 << 32), termios.TIOCGWINSZ):
    failed = libc.ioctl(0, ctypes.c_ulong(request), buffer) != 0
    out.append(errno.errorcode[ctypes.get_errno()] if failed else "ok")
print(" ".join(out))
)py";
  const sys::Completed done = InBareSandbox({"/usr/bin/python3", "-c", probe});
  ASSERT_EQ(done.exit_code, 0) << done.output;
  EXPECT_EQ(done.output, "EPERM EPERM EPERM ENOTTY\n");
}

// Of /etc a run sees what tofu and its tools read (TLS roots, users, name resolution, the
// loader's cache), and nothing else: not the shadow file, not a secret of berthd's beside them.
TEST(SandboxTest, OfEtcARunSeesOnlyWhatTofuAndItsToolsRead) {
  ASSERT_TRUE(fs::exists("/etc/shadow") && fs::exists("/etc/ssl/certs"));
  const sys::Completed done = InBareSandbox(
      {"/bin/sh", "-c",
       "for f in /etc/passwd /etc/ssl/certs /etc/resolv.conf /etc/ld.so.cache /etc/shadow "
       "/etc/fstab /etc/machine-id; do test -e $f && echo seen $f; done; true"});
  ASSERT_EQ(done.exit_code, 0) << done.output;
  for (const char* seen : {"/etc/passwd", "/etc/ssl/certs", "/etc/ld.so.cache"})
    EXPECT_NE(done.output.find(std::string("seen ") + seen), std::string::npos) << done.output;
  for (const char* hidden : {"/etc/shadow", "/etc/fstab", "/etc/machine-id"})
    EXPECT_EQ(done.output.find(std::string("seen ") + hidden), std::string::npos) << done.output;
}

TEST(SandboxTest, ASecretUnderAFolderEveryRunSeesIsFoundWithThatFolder) {
  const std::vector<fs::path> mirrors = {"/srv/berth/mirror"};
  EXPECT_EQ(SeenByEveryRun("/etc/ssl/private/berthd.key", mirrors), fs::path("/etc/ssl"));
  EXPECT_EQ(SeenByEveryRun("/usr/local/lib/berth/keys", mirrors), fs::path("/usr"));
  EXPECT_EQ(SeenByEveryRun("/srv/berth/mirror/../mirror/token", mirrors),
            fs::path("/srv/berth/mirror"));
  EXPECT_EQ(SeenByEveryRun("/etc/berth/tls.key", mirrors), std::nullopt);
  EXPECT_EQ(SeenByEveryRun("/var/lib/berth", mirrors), std::nullopt);
  EXPECT_EQ(SeenByEveryRun("/srv/berth/mirror-keys", mirrors), std::nullopt);
}

// A root berthd's runs drop to users of their own, one per parallel run; a range that holds a
// user the machine has (whose processes would count against the runs' limit, and whose files
// they could write) or one another berthd holds is refused when named, naming the uid, and
// passed over when not. The run's user is in the passwd and group files its sandbox is given.
TEST(SandboxTest, RunUsersAreARangeNobodyOnTheMachineHasAndNoOtherBerthdHolds) {
  if (geteuid() != 0) GTEST_SKIP() << "only a root berthd drops runs to users of their own";
  constexpr uid_t kFirst = 60500;  // no other test's: holds are machine-wide
  auto four = Sandbox::Probe({.first = kFirst, .count = 4, .exact = true});
  ASSERT_TRUE(four) << four.error().ToString();
  EXPECT_EQ(four->RunUids(), (std::vector<uid_t>{kFirst, kFirst + 1, kFirst + 2, kFirst + 3}));
  auto overlapping = Sandbox::Probe({.first = kFirst + 2, .count = 4, .exact = true});
  ASSERT_FALSE(overlapping) << "two berthds would share run users";
  EXPECT_NE(overlapping.error().message.find("uid 60502 is a run user of another berthd on this "
                                             "machine (pid " +
                                             std::to_string(getpid()) + ")"),
            std::string::npos)
      << overlapping.error().message;
  auto next_free = Sandbox::Probe({.first = kFirst + 2, .count = 4});
  ASSERT_TRUE(next_free) << next_free.error().ToString();
  EXPECT_EQ(next_free->RunUids().front(), kFirst + 4) << "the first range past the held one";
  std::optional<Sandbox> held(std::move(*four));
  std::optional<Sandbox> copy = held;  // as a launcher's: the users stay held while one lives
  held.reset();
  EXPECT_FALSE(Sandbox::Probe({.first = kFirst, .count = 1, .exact = true}));
  copy.reset();
  auto freed = Sandbox::Probe({.first = kFirst, .count = 4, .exact = true});
  EXPECT_TRUE(freed) << "the users of a berthd gone are free: " << freed.error().ToString();

  // A berthd restarted takes its users of before again (its runs may still be going as them);
  // a search passes over users whose processes still run (a run of a berthd gone).
  constexpr uid_t kLeftRunning = 60700;
  sys::SpawnOptions left{
      .argv = {"/bin/sleep", "30"}, .run_as_uid = kLeftRunning, .run_as_gid = kLeftRunning};
  auto run_left = sys::Subprocess::Spawn(left);
  ASSERT_TRUE(run_left) << run_left.error().ToString();
  auto runs_as_its_user = [&] {  // the child drops to it a moment after it is forked
    struct stat st {};
    return stat(("/proc/" + std::to_string(run_left->Pid())).c_str(), &st) == 0 &&
           st.st_uid == kLeftRunning;
  };
  for (int i = 0; i < 200 && !runs_as_its_user(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(runs_as_its_user());
  {
    auto searched = Sandbox::Probe({.first = kLeftRunning, .count = 2});
    ASSERT_TRUE(searched) << searched.error().ToString();
    EXPECT_EQ(searched->RunUids().front(), kLeftRunning + 1) << "its user runs a process";
  }
  {
    auto again = Sandbox::Probe({.first = kFirst, .count = 2, .preferred = kLeftRunning});
    ASSERT_TRUE(again) << again.error().ToString();
    EXPECT_EQ(again->RunUids().front(), kLeftRunning) << "its own users of before";
  }
  run_left->Signal(SIGKILL);
  run_left->Wait();

  {
    auto with_nobody = Sandbox::Probe({.first = 65530, .count = 4, .exact = true});
    ASSERT_TRUE(with_nobody) << "65530 to 65533 are nobody's here";
  }
  auto taken = Sandbox::Probe({.first = 65531, .count = 4, .exact = true});
  ASSERT_FALSE(taken);
  EXPECT_NE(taken.error().message.find("uid 65534 is the user nobody's"), std::string::npos)
      << taken.error().message;
  EXPECT_FALSE(Sandbox::Probe({.first = 65531, .count = 4})) << "no free range up to 65534";
  EXPECT_FALSE(Sandbox::Probe({.first = kRunUid, .count = 0}))
      << "no user to drop to: runs would be root";
  auto root = Sandbox::Probe({.first = 0, .count = 1, .exact = true});
  ASSERT_FALSE(root);
  EXPECT_NE(root.error().message.find("--local-runner-uid"), std::string::npos);

  const std::string passwd =
      WithRunUser("root:x:0:0:root:/root:/bin/sh", kRunUid, "/r/home", false);
  EXPECT_EQ(passwd,
            "root:x:0:0:root:/root:/bin/sh\nberth-run:x:60100:60100:berth run:/r/home:"
            "/usr/sbin/nologin\n");
  EXPECT_EQ(WithRunUser("root:x:0:\n", kRunUid, "/r/home", true),
            "root:x:0:\nberth-run:x:60100:\n");
}

// A berthd that is not root runs each run in a user namespace of its own, where the kernel
// counts the run's processes against the limit set inside it (by prlimit, in the sandbox): a
// fork bomb holding nearly all of one run's limit leaves another run all of its own. Run as a
// user that is not root (the test runs itself again as one when it is root).
TEST(SandboxTest, AnUnprivilegedBerthdsRunsEachCountTheirOwnProcesses) {
  if (geteuid() == 0) {
    auto self = sys::SelfExecutable();
    ASSERT_TRUE(self);
    sys::SpawnOptions again{
        .argv = {"/usr/bin/setpriv", "--reuid=60400", "--regid=60400", "--clear-groups",
                 self->string(),
                 "--gtest_filter=SandboxTest.AnUnprivilegedBerthdsRunsEachCountTheirOwnProcesses"}};
    auto done = sys::RunToCompletion(std::move(again));
    ASSERT_TRUE(done) << done.error().ToString();
    EXPECT_EQ(done->exit_code, 0) << done->output;
    EXPECT_NE(done->output.find("[  PASSED  ] 1 test"), std::string::npos) << done->output;
    return;
  }
  auto sandbox = Sandbox::Probe({.first = kRunUid, .count = 2});
  ASSERT_TRUE(sandbox) << sandbox.error().ToString();
  ASSERT_TRUE(sandbox->RunUids().empty());
  auto dir = sys::TempDir::Create("sandbox-unprivileged");
  ASSERT_TRUE(dir);
  std::vector<sys::Fd> filters;  // one per run: bwrap reads its program to the end
  auto run = [&](const std::string& name, const std::string& script) {
    auto filter = DangerousCallsFilter();
    EXPECT_TRUE(filter) << filter.error().ToString();
    filters.push_back(filter ? std::move(*filter) : sys::Fd());
    for (const char* sub : {"", "/tmp"}) fs::create_directories(dir->Path() / (name + sub));
    SandboxMounts mounts{.read_write = {dir->Path() / name},
                         .tmp = dir->Path() / name / "tmp",
                         .working_dir = dir->Path() / name};
    sys::SpawnOptions spawn{.argv = sandbox->Wrap(mounts, {"/usr/bin/python3", "-c", script},
                                                  filters.back().Get(), 0, 64),
                            .env = std::vector<std::string>{}};
    spawn.inherited_fds = {filters.back().Get()};
    spawn.new_process_group = true;
    return spawn;
  };
  auto bomb = sys::Subprocess::Spawn(run("bomb", HeldForkBomb(8)));
  ASSERT_TRUE(bomb) << bomb.error().ToString();
  struct StopsTheBomb {
    sys::Subprocess& bomb;
    ~StopsTheBomb() {
      kill(-bomb.Pid(), SIGKILL);
      bomb.Wait();
    }
  } stops_the_bomb{*bomb};
  std::string held;
  for (int i = 0; i < 600 && held.empty(); ++i) {
    auto read = sys::ReadFile(dir->Path() / "bomb/held");
    if (read) held = *read;
    if (held.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_FALSE(held.empty()) << "the bomb never said how many it holds";
  EXPECT_LT(std::stoi(held), 64) << "the limit set inside the sandbox did not hold it";
  EXPECT_GT(std::stoi(held), 40);

  auto other = sys::RunToCompletion(run("other", ForksAtOnce(32)));
  ASSERT_TRUE(other) << other.error().ToString();
  EXPECT_EQ(other->exit_code, 0) << other->output;
  EXPECT_NE(other->output.find("forked 32"), std::string::npos) << other->output;
}

}  // namespace
}  // namespace berth::launch
