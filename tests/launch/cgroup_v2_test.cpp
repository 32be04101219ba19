// cgroup v2's file protocol, on a folder laid out as the kernel shows a delegated group: this
// machine's memory and pids controllers are bound to cgroup v1, so no real v2 group can hold a
// limit here (local_launcher_test holds them for real on v1).
#include <gtest/gtest.h>

#include "launch/local/run_limits.h"
#include "sys/files.h"

namespace berth::launch {
namespace {

namespace fs = std::filesystem;

std::string Read(const fs::path& file) {
  auto text = sys::ReadFile(file);
  return text ? *text : "(missing: " + file.string() + ")";
}

class CgroupV2Test : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = sys::TempDir::Create("cgroup-v2");
    ASSERT_TRUE(dir);
    dir_.emplace(std::move(*dir));
    own_ = dir_->Path() / "system.slice/berthd.service";
    fs::create_directories(own_);
  }
  void Delegate(const std::string& controllers) {
    ASSERT_TRUE(sys::WriteFileAtomic(own_ / "cgroup.controllers", controllers + "\n"));
  }
  Result<CgroupHost> Probe() {
    return CgroupHost::ProbeUnified(dir_->Path(), "/system.slice/berthd.service", 4242);
  }
  std::optional<sys::TempDir> dir_;
  fs::path own_;
};

TEST_F(CgroupV2Test, BerthdMovesToALeafAndItsRunsGroupsHoldTheirLimitsInOneFolder) {
  Delegate("cpuset cpu io memory pids");
  auto host = Probe();
  ASSERT_TRUE(host) << host.error().ToString();
  EXPECT_TRUE(host->Unified());
  EXPECT_EQ(Read(own_ / "berthd/cgroup.procs"), "4242") << "berthd itself, in a leaf";
  EXPECT_EQ(Read(own_ / "cgroup.subtree_control"), "+memory +pids");
  EXPECT_EQ(Read(own_ / "berth-runs/cgroup.subtree_control"), "+memory +pids");

  const fs::path run = own_ / "berth-runs/run-1";
  fs::create_directories(run);  // as the kernel makes it: with its control files
  for (const char* file : {"memory.swap.max", "cgroup.kill"})
    ASSERT_TRUE(sys::WriteFileAtomic(run / file, "max\n"));
  auto group = host->Create(
      "run-1", {.memory_bytes = int64_t{512} << 20, .cpu_seconds = 60, .processes = 100});
  ASSERT_TRUE(group) << group.error().ToString();
  EXPECT_EQ(Read(run / "memory.max"), "536870912");
  EXPECT_EQ(Read(run / "memory.swap.max"), "0") << "a run may not page past its memory";
  EXPECT_EQ(Read(run / "pids.max"), "100");
  EXPECT_EQ(group->ProcsFiles(), std::vector<fs::path>{run / "cgroup.procs"});

  ASSERT_TRUE(sys::WriteFileAtomic(run / "cpu.stat", "usage_usec 2500000\nuser_usec 2000000\n"));
  EXPECT_EQ(group->CpuSeconds(), 2.5);
  ASSERT_TRUE(sys::WriteFileAtomic(run / "memory.events",
                                   "low 0\nhigh 0\nmax 4\noom 2\noom_group_kill 7\noom_kill 1\n"));
  EXPECT_EQ(group->OomKills(), 1);
  group->KillAll();
  EXPECT_EQ(Read(run / "cgroup.kill"), "1") << "the whole group at once";

  EXPECT_TRUE(host->Existing("run-2", {.disk_bytes = 1 << 30}).ProcsFiles().empty())
      << "a disk limit needs no group";
  EXPECT_EQ(host->Existing("run-3", {.processes = 10}).ProcsFiles(),
            std::vector<fs::path>{own_ / "berth-runs/run-3/cgroup.procs"});
}

TEST_F(CgroupV2Test, AGroupWithoutMemoryOrPidsDelegatedIsRefusedSayingWhatToDelegate) {
  Delegate("cpu io pids");
  auto host = Probe();
  ASSERT_FALSE(host);
  EXPECT_NE(host.error().message.find("the memory controller is not delegated"), std::string::npos)
      << host.error().message;
  EXPECT_NE(host.error().message.find("Delegate=yes"), std::string::npos);
  EXPECT_FALSE(fs::exists(own_ / "berthd")) << "berthd moved before it knew it could use it";
}

TEST_F(CgroupV2Test, AGroupBerthdCannotWriteIsRefusedNamingIt) {
  Delegate("memory pids");
  fs::create_directories(own_ / "cgroup.subtree_control");  // a folder: no write goes in
  auto host = Probe();
  ASSERT_FALSE(host);
  EXPECT_NE(host.error().message.find("cannot enable memory and pids for the groups under " +
                                      own_.string()),
            std::string::npos)
      << host.error().message;
}

}  // namespace
}  // namespace berth::launch
