// Child processes: exit codes, signals, environment, folder, output, and start failures.
#include "sys/subprocess.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "sys/files.h"

namespace berth::sys {
namespace {

SpawnOptions Shell(std::string script) {
  SpawnOptions options;
  options.argv = {"/bin/sh", "-c", std::move(script)};
  return options;
}

TEST(Subprocess, ReportsTheExitCode) {
  auto done = RunToCompletion(Shell("exit 7"));
  ASSERT_TRUE(done);
  EXPECT_EQ(done->exit_code, 7);
}

TEST(Subprocess, CapturesStdoutAndStderrTogether) {
  auto done = RunToCompletion(Shell("echo out; echo err >&2"));
  ASSERT_TRUE(done);
  EXPECT_EQ(done->output, "out\nerr\n");
}

TEST(Subprocess, TheChildInheritsNoDescriptorOfTheParentBeyondTheStandardThree) {
  // As a library would open one: without O_CLOEXEC (and far from what ls itself opens).
  int opened = open("/dev/null", O_RDONLY);
  ASSERT_GE(opened, 0);
  constexpr int kLeaky = 57;
  ASSERT_EQ(dup2(opened, kLeaky), kLeaky);
  close(opened);
  auto done = RunToCompletion(Shell("ls /proc/self/fd"));
  close(kLeaky);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->output.find("57\n"), std::string::npos) << done->output;
  EXPECT_EQ(done->output.substr(0, 6), "0\n1\n2\n") << done->output;
}

TEST(Subprocess, GivesTheChildExactlyTheEnvironmentAndFolderAsked) {
  auto dir = TempDir::Create("subprocess-test");
  ASSERT_TRUE(dir);
  auto options = Shell("pwd; env | sort");
  options.env = std::vector<std::string>{"ONLY=this"};
  options.working_dir = dir->Path().string();
  auto done = RunToCompletion(options);
  ASSERT_TRUE(done);
  // sh adds PWD (and sometimes SHLVL, _) itself; nothing of ours leaks in.
  EXPECT_NE(done->output.find(dir->Path().string() + "\n"), std::string::npos);
  EXPECT_NE(done->output.find("ONLY=this\n"), std::string::npos);
  EXPECT_EQ(done->output.find("HOME="), std::string::npos) << done->output;
}

TEST(Subprocess, EveryVariableOfALargeEnvironmentArrives) {
  std::vector<std::string> env;
  env.reserve(64);
  for (int i = 0; i < 64; ++i)
    env.push_back("BERTH_VAR_" + std::to_string(i) + "=value-" + std::to_string(i));
  auto options = Shell("env");
  options.env = env;
  auto done = RunToCompletion(options);
  ASSERT_TRUE(done);
  for (const auto& entry : env)
    EXPECT_NE(done->output.find(entry + "\n"), std::string::npos) << entry;
}

TEST(Subprocess, AProgramThatCannotStartIsAnErrorNamingIt) {
  SpawnOptions options;
  options.argv = {"/nonexistent/program"};
  auto child = Subprocess::Spawn(options);
  ASSERT_FALSE(child);
  EXPECT_NE(child.error().message.find("No such file"), std::string::npos);
  EXPECT_EQ(child.error().context, "/nonexistent/program");
}

TEST(Subprocess, ASignalReachesTheWholeProcessGroup) {
  auto dir = TempDir::Create("subprocess-test");
  ASSERT_TRUE(dir);
  auto marker = dir->Path() / "grandchild-survived";
  // The grandchild would write the marker a while after the parent is gone, unless the
  // signal reached it too.
  auto options = Shell("(sleep 2; touch " + marker.string() + ") & wait");
  auto child = Subprocess::Spawn(options);
  ASSERT_TRUE(child);
  child->Signal(SIGKILL);
  EXPECT_EQ(child->Wait(), 128 + SIGKILL);
  // Reap-free check: the group is empty once kill(-pgid, 0) fails.
  for (int i = 0; i < 100 && kill(-child->Pid(), 0) == 0; ++i) usleep(20000);
  EXPECT_NE(kill(-child->Pid(), 0), 0);
  EXPECT_FALSE(std::filesystem::exists(marker));
}

// A child in a session of its own has no terminal of ours: nothing it runs can open /dev/tty and
// push keystrokes into the shell that started berthd (`berth up` in a terminal).
TEST(Subprocess, AChildInASessionOfItsOwnCannotReachOurTerminal) {
  int master = posix_openpt(O_RDWR | O_NOCTTY);
  ASSERT_GE(master, 0);
  ASSERT_EQ(grantpt(master), 0);
  ASSERT_EQ(unlockpt(master), 0);
  const std::string terminal = ptsname(master);
  // From a process whose controlling terminal is the pty, as a shell's: the child's exit code
  // says whether it opened /dev/tty.
  auto child_of_a_terminal = [&](bool new_session) {
    pid_t pid = fork();
    if (pid == 0) {
      if (setsid() < 0) _exit(90);
      int fd = open(terminal.c_str(), O_RDWR);  // a session leader's first terminal is its own
      if (fd < 0 || ioctl(fd, TIOCSCTTY, 0) != 0) _exit(91);
      SpawnOptions options = Shell("exec 3</dev/tty");
      options.new_session = new_session;
      auto child = Subprocess::Spawn(options);
      _exit(child ? child->Wait() : 92);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  EXPECT_EQ(child_of_a_terminal(false), 0);  // the terminal is there to be taken
  const int isolated = child_of_a_terminal(true);
  EXPECT_NE(isolated, 0);
  EXPECT_LT(isolated, 90) << "the test's own set-up failed";
  close(master);
}

TEST(Subprocess, OutputCanBeAppendedToAFile) {
  auto dir = TempDir::Create("subprocess-test");
  ASSERT_TRUE(dir);
  auto log = dir->Path() / "log";
  for (const char* word : {"one", "two"}) {
    auto options = Shell(std::string("echo ") + word);
    options.output_path = log.string();
    auto child = Subprocess::Spawn(options);
    ASSERT_TRUE(child);
    EXPECT_EQ(child->Wait(), 0);
  }
  EXPECT_EQ(*ReadFile(log), "one\ntwo\n");
}

TEST(Subprocess, DestroyingARunningChildKillsIt) {
  pid_t pid;
  {
    auto child = Subprocess::Spawn(Shell("sleep 60"));
    ASSERT_TRUE(child);
    pid = child->Pid();
  }
  EXPECT_NE(kill(pid, 0), 0);  // killed and reaped, so the pid no longer exists
}

// Every signal is blocked around the child's start (it begins in our memory): the program gets
// none of that mask, and what we ignore it ignores too, as exec keeps.
TEST(Subprocess, TheProgramStartsWithNoSignalBlockedAndOurIgnoredOnesIgnored) {
  struct sigaction handler {};
  handler.sa_handler = [](int) {};
  struct sigaction old_usr1 {};
  struct sigaction old_usr2 {};
  ASSERT_EQ(sigaction(SIGUSR1, &handler, &old_usr1), 0);
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGUSR2, &ignore, &old_usr2), 0);
  // The shell signals itself: SIGUSR2 is ignored (it goes on), SIGUSR1 at its default kills it.
  auto done = RunToCompletion(Shell("kill -USR2 $$; echo alive; kill -USR1 $$; echo not reached"));
  sigaction(SIGUSR1, &old_usr1, nullptr);
  sigaction(SIGUSR2, &old_usr2, nullptr);
  ASSERT_TRUE(done) << done.error().ToString();
  EXPECT_EQ(done->output, "alive\n");
  EXPECT_EQ(done->exit_code, 128 + SIGUSR1);
}

// The uid of a thread of ours, from /proc.
std::string ThreadUid(pid_t tid) {
  auto status = ReadFile("/proc/self/task/" + std::to_string(tid) + "/status");
  if (!status) return "?";
  auto at = status->find("\nUid:");
  return at == std::string::npos ? "?"
                                 : status->substr(at + 5, status->find('\n', at + 1) - at - 5);
}

// The child drops to another user; its parent's threads, which it shares memory with until its
// exec, keep theirs.
TEST(Subprocess, AChildDropsToItsUserWhileWeAndEveryThreadOfOursStayOurs) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to change users";
  std::atomic<pid_t> other_tid{0};
  std::atomic<bool> stop{false};
  std::thread other([&] {
    other_tid = static_cast<pid_t>(syscall(SYS_gettid));
    while (!stop) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  while (other_tid == 0) std::this_thread::yield();
  const std::string before = ThreadUid(other_tid);
  SpawnOptions options = Shell("id -u; id -g");
  options.run_as_uid = 65534;
  options.run_as_gid = 65534;
  auto done = RunToCompletion(options);
  const std::string after = ThreadUid(other_tid);
  stop = true;
  other.join();
  ASSERT_TRUE(done) << done.error().ToString();
  EXPECT_EQ(done->output, "65534\n65534\n");
  EXPECT_EQ(geteuid(), 0u);
  EXPECT_EQ(getegid(), 0u);
  EXPECT_EQ(after, before);
}

}  // namespace
}  // namespace berth::sys
