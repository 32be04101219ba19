// The plan files the real, pinned tofu writes, read without tofu: the same counts, destructive
// addresses and drift as `show -json` of the same file, and a hash that follows the effect; and
// the lock file it writes, whose package hash berth computes alike.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/base64.h"
#include "crypto/digest.h"
#include "runner/state_encryption.h"
#include "sys/files.h"
#include "sys/subprocess.h"
#include "tf/encrypted_payload.h"
#include "tf/plan.h"
#include "tf/plan_changes.h"
#include "tf/plan_file.h"
#include "tf/provider_packages.h"
#include "tofu_test_env.h"

namespace berth::tf {
namespace {

namespace fs = std::filesystem;

// Two files of berth's test provider and an output: enough for every kind of change.
constexpr const char* kModule = R"(
terraform {
  required_providers {
    berthtest = { source = "berth/berthtest", version = "0.1.0" }
  }
}
variable "dir" { type = string }
variable "a_content" { default = "a" }
variable "b_name" { default = "b.txt" }
resource "berthtest_file" "a" {
  path    = "${var.dir}/a.txt"
  content = var.a_content
}
resource "berthtest_file" "b" {
  path    = "${var.dir}/${var.b_name}"
  content = "b"
}
output "a_id" { value = berthtest_file.a.id }
)";

class TofuPlans : public ::testing::Test {
 protected:
  void SetUp() override {
    auto env = testenv::TofuTestEnv::Shared();
    ASSERT_TRUE(env) << env.error().ToString();
    env_ = *env;
    auto dir = sys::TempDir::Create("berth-plan-file");
    ASSERT_TRUE(dir) << dir.error().ToString();
    dir_.emplace(std::move(*dir));
    fs::create_directories(Work());
    std::ofstream(Work() / "main.tf") << kModule;
    fs::create_directories(World());
    Tofu({"init", "-input=false", "-no-color"});
  }

  fs::path Work() const { return dir_->Path() / "work"; }
  fs::path World() const { return dir_->Path() / "world"; }

  // Runs tofu in the work folder; its stdout.
  std::string Tofu(std::vector<std::string> args) {
    args.insert(args.begin(), env_->Tofu().string());
    auto env = env_->Environment(dir_->Path());
    env.insert(env.end(), extra_env_.begin(), extra_env_.end());
    sys::SpawnOptions options{.argv = args,
                              .env = env,
                              .working_dir = Work().string(),
                              .output_path = (dir_->Path() / "tofu.log").string(),
                              .stdout_path = (dir_->Path() / "stdout").string()};
    auto child = sys::Subprocess::Spawn(options);
    EXPECT_TRUE(child) << child.error().ToString();
    if (!child) return {};
    int exit_code = child->Wait();
    EXPECT_EQ(exit_code, 0) << *sys::ReadFile(dir_->Path() / "tofu.log");
    return *sys::ReadFile(dir_->Path() / "stdout");
  }

  // Plans with the given extra arguments; the file's analysis and show -json's.
  std::pair<PlanAnalysis, PlanAnalysis> Plan(std::vector<std::string> extra,
                                             const std::string& key = "k") {
    std::vector<std::string> args{"plan", "-input=false", "-no-color", "-out=p.tfplan",
                                  "-var=dir=" + World().string()};
    args.insert(args.end(), extra.begin(), extra.end());
    Tofu(args);
    auto file = sys::ReadFile(Work() / "p.tfplan");
    EXPECT_TRUE(file);
    auto from_file = AnalysePlanFile(file ? *file : "", key);
    EXPECT_TRUE(from_file) << from_file.error().ToString();
    auto shown = AnalysePlan(Tofu({"show", "-json", "p.tfplan"}), key);
    EXPECT_TRUE(shown) << shown.error().ToString();
    if (!from_file || !shown) return {};
    return {*from_file, *shown};
  }

  void Apply() { Tofu({"apply", "-input=false", "-no-color", "-auto-approve", "p.tfplan"}); }

  // tofu's "h1:" hash of an unpacked package, as berth computes it.
  static std::string H1Of(const fs::path& package) {
    PackageHasher hasher;
    const fs::path root = fs::canonical(package);
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
      if (!entry.is_regular_file()) continue;
      auto bytes = sys::ReadFile(entry.path());
      EXPECT_TRUE(bytes);
      hasher.AddFile(entry.path().lexically_relative(root).generic_string(),
                     crypto::Sha256Hex(bytes ? *bytes : ""));
    }
    return hasher.Finish();
  }

  static void ExpectSameReading(const PlanAnalysis& file, const PlanAnalysis& shown) {
    auto counts = [](const PlanSummary& s) {
      return std::vector<int>{s.add, s.change, s.destroy, s.replace, s.import, s.has_changes};
    };
    EXPECT_EQ(counts(file.summary), counts(shown.summary));
    EXPECT_EQ(file.destructive, shown.destructive);
    EXPECT_EQ(file.drifted, shown.drifted);
  }

  testenv::TofuTestEnv* env_ = nullptr;
  std::vector<std::string> extra_env_;
  std::optional<sys::TempDir> dir_;
};

TEST_F(TofuPlans, EveryKindOfChangeReadsAsShowJsonReadsIt) {
  auto [created, created_shown] = Plan({});
  ExpectSameReading(created, created_shown);
  EXPECT_EQ(created.summary.add, 2);
  Apply();

  auto [none, none_shown] = Plan({});
  ExpectSameReading(none, none_shown);
  EXPECT_FALSE(none.summary.has_changes);

  auto [changed, changed_shown] = Plan({"-var=a_content=A", "-var=b_name=b2.txt"});
  ExpectSameReading(changed, changed_shown);
  EXPECT_EQ(changed.summary.change, 1);
  EXPECT_EQ(changed.summary.replace, 1);
  EXPECT_EQ(changed.destructive, std::vector<std::string>{"berthtest_file.b"});

  fs::remove(World() / "a.txt");  // the real world changes behind tofu's back
  auto [drift, drift_shown] = Plan({"-refresh-only"});
  ExpectSameReading(drift, drift_shown);
  EXPECT_EQ(drift.drifted, std::vector<std::string>{"berthtest_file.a"});

  auto [destroy, destroy_shown] = Plan({"-destroy"});
  ExpectSameReading(destroy, destroy_shown);
  EXPECT_EQ(destroy.summary.destroy, 1);  // a.txt is gone already
  EXPECT_EQ(destroy.destructive, std::vector<std::string>{"berthtest_file.b"});
}

// The change list people read: what each change does to each attribute, an unknown value as
// such, and no sensitive value anywhere (a sensitive variable inside an object, a sensitive
// output), before or after, through create and update.
TEST_F(TofuPlans, TheChangeListShowsEachChangedAttributeAndNoSensitiveValue) {
  std::ofstream(Work() / "main.tf") << R"(
terraform {
  required_providers {
    berthtest = { source = "berth/berthtest", version = "0.1.0" }
  }
}
variable "dir" { type = string }
variable "size" { default = 1 }
variable "token" {
  default   = "tok-0123456789"
  sensitive = true
}
resource "berthtest_file" "a" {
  path    = "${var.dir}/a.txt"
  content = "size ${var.size}"
}
resource "terraform_data" "t" {
  input = { size = var.size, token = var.token, id = berthtest_file.a.id }
}
output "token" {
  value     = var.token
  sensitive = true
}
output "size" { value = var.size }
)";
  auto changes = [&](std::vector<std::string> extra, const TextMask& mask) {
    Plan(std::move(extra));
    auto file = sys::ReadFile(Work() / "p.tfplan");
    auto read = file ? ReadPlanChanges(*file, mask) : Result<nlohmann::json>(file.error());
    EXPECT_TRUE(read) << read.error().ToString();
    return read ? *read : nlohmann::json();
  };
  auto same = [](std::string_view text) { return std::string(text); };
  auto find = [](const nlohmann::json& list, const std::string& address) {
    for (const auto& change : list)
      if (change["address"] == address) return change;
    ADD_FAILURE() << address << " not in " << list.dump();
    return nlohmann::json();
  };
  auto attribute = [](const nlohmann::json& change, const std::string& name) {
    for (const auto& a : change["attributes"])
      if (a["name"] == name) return a;
    return nlohmann::json();
  };

  nlohmann::json created = changes({}, same);
  EXPECT_EQ(created.dump().find("tok-0123456789"), std::string::npos) << created.dump(2);
  auto file = find(created["resource_changes"], "berthtest_file.a");
  EXPECT_EQ(file["actions"], nlohmann::json::array({"create"}));
  EXPECT_EQ(attribute(file, "content")["after"], "\"size 1\"");
  EXPECT_FALSE(attribute(file, "content").contains("before"));
  EXPECT_EQ(attribute(file, "id")["unknown"], true) << file.dump(2);
  auto data = find(created["resource_changes"], "terraform_data.t");
  std::string input = attribute(data, "input")["after"];
  EXPECT_NE(input.find("\"size\": 1"), std::string::npos) << input;
  EXPECT_NE(input.find("\"token\": (sensitive value)"), std::string::npos) << input;
  EXPECT_NE(input.find("\"id\": (known after apply)"), std::string::npos) << input;
  auto token = find(created["output_changes"], "output.token");
  EXPECT_EQ(attribute(token, "value")["sensitive"], true);
  EXPECT_EQ(attribute(token, "value")["after"], "(sensitive value)");
  EXPECT_EQ(attribute(find(created["output_changes"], "output.size"), "value")["after"], "1");
  Apply();

  // An update lists only what changes, each side masked as the log is.
  auto masked = [](std::string_view text) {
    std::string out(text);
    for (size_t at; (at = out.find("size 2")) != std::string::npos;) out.replace(at, 6, "***");
    return out;
  };
  nlohmann::json updated = changes({"-var=size=2", "-var=token=tok-9876543210"}, masked);
  EXPECT_EQ(updated.dump().find("tok-"), std::string::npos) << updated.dump(2);
  auto changed = find(updated["resource_changes"], "berthtest_file.a");
  EXPECT_EQ(attribute(changed, "content")["before"], "\"size 1\"");
  EXPECT_EQ(attribute(changed, "content")["after"], "\"***\"");
  EXPECT_TRUE(attribute(changed, "path").is_null()) << "an unchanged attribute is not listed";
  // terraform_data copies its input to its output, whose schema marks nothing sensitive: the
  // value hidden in the input is masked in the output too.
  std::string copied =
      attribute(find(updated["resource_changes"], "terraform_data.t"), "output")["before"];
  EXPECT_NE(copied.find(R"("token": "***")"), std::string::npos) << copied;
  auto rotated = attribute(find(updated["output_changes"], "output.token"), "value");
  EXPECT_EQ(rotated["sensitive"], true) << "a sensitive value that changed is listed, hidden";
  EXPECT_EQ(rotated["before"], "(sensitive value)");
}

TEST_F(TofuPlans, TheSameEffectPlannedTwiceHashesAlikeAndAnotherValueDoesNot) {
  auto first = Plan({"-var=a_content=one"}).first;
  auto again = Plan({"-var=a_content=one"}).first;
  auto other = Plan({"-var=a_content=two"}).first;
  auto other_key = Plan({"-var=a_content=one"}, "another key").first;
  EXPECT_EQ(first.summary.hash, again.summary.hash);
  EXPECT_NE(first.summary.hash, other.summary.hash);
  EXPECT_NE(first.summary.hash, other_key.summary.hash);
}

// An environment with state_encryption: tofu seals its plans with AES-GCM, berth's runner its
// key provider: the key opens the plan and it reads as show -json reads it; another key does
// not open it.
TEST_F(TofuPlans, AnEncryptedPlanOpensWithItsKeyAndReadsAsShowJsonReadsIt) {
  const std::string key(32, 'K');
  fs::path key_file = dir_->Path() / "state.key";
  ASSERT_TRUE(sys::WriteFileAtomic(key_file, Base64Encode(key)));
  extra_env_ = {"TF_ENCRYPTION=" + runner::EncryptionConfig(BERTH_RUNNER_BIN, key_file)};
  Tofu({"plan", "-input=false", "-no-color", "-out=p.tfplan", "-var=dir=" + World().string()});
  auto file = sys::ReadFile(Work() / "p.tfplan");
  ASSERT_TRUE(file);
  auto unopened = AnalysePlanFile(*file, "k");
  ASSERT_FALSE(unopened);
  EXPECT_EQ(unopened.error().kind, ErrorKind::kFailedPrecondition) << unopened.error().ToString();

  auto opened = OpenAesGcmPayload(*file, key);
  ASSERT_TRUE(opened) << opened.error().ToString();
  auto from_file = AnalysePlanFile(*opened, "k");
  ASSERT_TRUE(from_file) << from_file.error().ToString();
  auto shown = AnalysePlan(Tofu({"show", "-json", "p.tfplan"}), "k");
  ASSERT_TRUE(shown) << shown.error().ToString();
  ExpectSameReading(*from_file, *shown);
  EXPECT_EQ(from_file->summary.add, 2);

  auto wrong = OpenAesGcmPayload(*file, std::string(32, 'L'));
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().kind, ErrorKind::kInvalidArgument);
}

// What a runner's shared provider cache rests on: the lock file init wrote lists, for the
// package init installed, the very hash berth computes of its files.
TEST_F(TofuPlans, TheLockFileInitWroteListsTheHashBerthComputesForThePackage) {
  auto lock = sys::ReadFile(Work() / ".terraform.lock.hcl");
  ASSERT_TRUE(lock) << lock.error().ToString();
  auto providers = ParseLockFile(*lock);
  ASSERT_EQ(providers.size(), 1u);
  const LockedProvider& berthtest = providers[0];
  EXPECT_EQ(berthtest.ns + "/" + berthtest.type + " " + berthtest.version, "berth/berthtest 0.1.0");
  const fs::path package = Work() / ".terraform/providers" / berthtest.host / berthtest.ns /
                           berthtest.type / berthtest.version / std::string(ThisPlatform());
  const std::string h1 = H1Of(package);
  EXPECT_NE(std::find(berthtest.h1_hashes.begin(), berthtest.h1_hashes.end(), h1),
            berthtest.h1_hashes.end())
      << h1 << " is not in\n"
      << *lock;
}

}  // namespace
}  // namespace berth::tf
