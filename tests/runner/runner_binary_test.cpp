// The runner binary itself: copy places a runnable copy (repeatedly, even over a running one),
// version prints its build, a bare call is usage, and the release build is static: it runs in
// an empty root with no libraries at all.
#include <elf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "runner_harness.h"
#include "sys/files.h"
#include "sys/subprocess.h"

namespace berth::testing {
namespace {

namespace fs = std::filesystem;

sys::Completed Exec(std::vector<std::string> argv) {
  sys::SpawnOptions options;
  options.argv = std::move(argv);
  options.env = std::vector<std::string>{"PATH=/usr/bin:/bin"};
  auto done = sys::RunToCompletion(options);
  EXPECT_TRUE(done) << done.error().ToString();
  return done ? *done : sys::Completed{-1, ""};
}

TEST(RunnerBinary, BareIsUsageOnStderrWithExitTwo) {
  auto done = Exec({RunnerBinary().string()});
  EXPECT_EQ(done.exit_code, 2);
  EXPECT_NE(done.output.find("runner [global flags] run --op=<op> [flags]"), std::string::npos);
  EXPECT_EQ(Exec({RunnerBinary().string(), "nope"}).exit_code, 2);
}

TEST(RunnerBinary, VersionFormsPrintTheBuild) {
  auto short_form = Exec({RunnerBinary().string(), "--version"});
  EXPECT_EQ(short_form.exit_code, 0);
  EXPECT_TRUE(short_form.output.starts_with("runner ")) << short_form.output;
  auto raw = Exec({RunnerBinary().string(), "--version=raw"});
  auto doc = nlohmann::json::parse(raw.output, nullptr, false);
  ASSERT_TRUE(doc.is_object()) << raw.output;
  EXPECT_EQ(doc["name"], "runner");
  EXPECT_FALSE(doc["gitCommit"].get<std::string>().empty());
  auto sub = Exec({RunnerBinary().string(), "version"});
  EXPECT_NE(sub.output.find("compiler: "), std::string::npos) << sub.output;
}

TEST(RunnerBinary, CopyPlacesARunnableCopyEvenOverOneThatIsRunning) {
  auto dir = sys::TempDir::Create("runner-copy");
  ASSERT_TRUE(dir);
  fs::path dest = dir->Path() / "bin/runner";
  fs::create_directories(dest.parent_path());
  ASSERT_EQ(Exec({RunnerBinary().string(), "copy", dest.string()}).exit_code, 0);
  EXPECT_EQ(fs::status(dest).permissions(), static_cast<fs::perms>(0755));
  EXPECT_EQ(*sys::ReadFile(dest), *sys::ReadFile(RunnerBinary()));

  // The copy runs from outside the build tree (a slow apply with the real tofu), and is
  // running while it is copied again: no "text file busy".
  auto harness = RunnerHarness::Create();
  ASSERT_TRUE(harness);
  auto module = harness->Module("slow");
  sys::SpawnOptions slow;
  slow.argv = {dest.string(),
               "run",
               "--op=apply",
               "--module=" + module.string(),
               "--workdir=" + (harness->Root() / "work").string(),
               "--result=" + (harness->Root() / "result.json").string()};
  slow.env = harness->Environment({});
  slow.pipe_output = true;
  auto running = sys::Subprocess::Spawn(slow);
  ASSERT_TRUE(running) << running.error().ToString();
  std::string seen;
  ASSERT_TRUE(RunnerHarness::WaitForOutput(*running, "berth-slow-started", &seen)) << seen;
  auto again = Exec({RunnerBinary().string(), "copy", dest.string()});
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(Exec({dest.string(), "--version"}).exit_code, 0);

  EXPECT_EQ(Exec({RunnerBinary().string(), "copy"}).exit_code, 2);
  EXPECT_EQ(Exec({RunnerBinary().string(), "copy", "a", "b"}).exit_code, 2);
  EXPECT_EQ(Exec({RunnerBinary().string(), "copy", "/nonexistent/dir/runner"}).exit_code, 1);
}

// True when the ELF file asks for no program interpreter (the dynamic loader).
bool IsStatic(const std::string& elf) {
  if (elf.size() < sizeof(Elf64_Ehdr) || elf.compare(0, 4, ELFMAG) != 0) return false;
  const auto* header = reinterpret_cast<const Elf64_Ehdr*>(elf.data());
  for (int i = 0; i < header->e_phnum; ++i) {
    size_t at = header->e_phoff + static_cast<size_t>(i) * header->e_phentsize;
    if (at + sizeof(Elf64_Phdr) > elf.size()) return false;
    if (reinterpret_cast<const Elf64_Phdr*>(elf.data() + at)->p_type == PT_INTERP) return false;
  }
  return true;
}

TEST(RunnerBinary, TheReleaseBuildIsStaticAndRunsWithNoLibrariesAtAll) {
  const char* path = std::getenv("BERTH_STATIC_RUNNER");
  if (path == nullptr || *path == '\0') {
    GTEST_SKIP() << "BERTH_STATIC_RUNNER is not set (scripts/test sets it to the release build)";
  }
  auto elf = sys::ReadFile(path);
  ASSERT_TRUE(elf) << elf.error().ToString();
  ASSERT_TRUE(IsStatic(*elf)) << path << " needs a dynamic loader";
  EXPECT_FALSE(IsStatic(*sys::ReadFile("/bin/sh"))) << "the check cannot tell the difference";
  if (geteuid() != 0) GTEST_SKIP() << "an empty root needs chroot, which needs root";

  // An empty root: no libc, no loader, nothing but the copied runner.
  auto root = sys::TempDir::Create("runner-empty-root");
  ASSERT_TRUE(root);
  ASSERT_EQ(Exec({path, "copy", (root->Path() / "runner").string()}).exit_code, 0);
  pid_t pid = fork();
  if (pid == 0) {
    if (chroot(root->Path().c_str()) != 0 || chdir("/") != 0) _exit(120);
    int devnull = open("/dev/null", O_WRONLY);  // no /dev in there: discard via the old fd
    if (devnull >= 0) dup2(devnull, STDOUT_FILENO);
    execl("/runner", "runner", "--version", static_cast<char*>(nullptr));
    _exit(121);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "120: chroot failed, 121: exec failed";
}

}  // namespace
}  // namespace berth::testing
