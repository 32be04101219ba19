// berth's images as scripts/images builds them (OCI layouts in build/images, or
// BERTH_IMAGES_DIR): what their configs promise, that they rebuild to the same digests, and that
// the runner image and an image derived from it run a real plan under a real container runtime
// (Debian's runc), read-only, as UID 65532, with no network.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "oci_layout.h"
#include "sys/files.h"
#include "sys/subprocess.h"
#include "test_tools.h"

namespace berth {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
// What the image's user (65532) reads: mode 0644.
constexpr fs::perms kReadable =
    fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read;

fs::path FromEnvOr(const char* variable, const fs::path& fallback) {
  const char* set = std::getenv(variable);
  return set && *set ? fs::path(set) : fallback;
}

using testenv::ImagesDir;

sys::Completed Shell(const std::string& command) {
  auto done = sys::RunToCompletion({.argv = {"/bin/sh", "-c", command}});
  EXPECT_TRUE(static_cast<bool>(done)) << command;
  return static_cast<bool>(done) ? *done : sys::Completed{.exit_code = -1};
}

json ReadJson(const fs::path& path) {
  auto text = sys::ReadFile(path);
  EXPECT_TRUE(static_cast<bool>(text)) << path;
  return static_cast<bool>(text) ? json::parse(*text) : json();
}

json Blob(const fs::path& layout, const std::string& digest) {
  return ReadJson(layout / "blobs/sha256" / digest.substr(std::string("sha256:").size()));
}

testenv::LayoutManifest Manifest(const fs::path& layout) {
  auto manifest = testenv::ReadLayoutManifest(layout);
  EXPECT_TRUE(manifest) << manifest.error().ToString();
  return manifest ? *manifest : testenv::LayoutManifest{};
}

std::string ManifestDigest(const fs::path& layout) { return Manifest(layout).digest; }

json ImageConfig(const fs::path& layout) {
  json manifest = Blob(layout, ManifestDigest(layout));
  return Blob(layout, manifest["config"]["digest"].get<std::string>());
}

std::string Tag(const fs::path& layout) { return Manifest(layout).tag; }

class Images : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    for (const char* name : {"runner", "berthd"}) {
      if (!fs::exists(ImagesDir() / name / "index.json")) {
        GTEST_FAIL() << (ImagesDir() / name) << " is missing: run scripts/images";
      }
    }
  }
  void SetUp() override {
    scratch_ = fs::temp_directory_path() / ("berth-images-" + std::to_string(getpid()));
    fs::remove_all(scratch_);
    fs::create_directories(scratch_);
  }
  void TearDown() override { fs::remove_all(scratch_); }

  // Unpacks the image at layout:tag into a runc bundle and runs it read-only with the module
  // folder at /module, the output folder at /out and fresh tmpfs at /tmp and /home/runner;
  // args replace the entrypoint's arguments.
  sys::Completed RunUnderRunc(const fs::path& layout, const fs::path& module, const fs::path& out,
                              const json& args) {
    fs::path bundle = scratch_ / "bundle";
    fs::remove_all(bundle);
    sys::Completed unpacked = Shell("umoci unpack --image '" + layout.string() + ":" + Tag(layout) +
                                    "' '" + bundle.string() + "' 2>&1");
    EXPECT_EQ(unpacked.exit_code, 0) << unpacked.output;
    json config = ReadJson(bundle / "config.json");
    config["root"]["readonly"] = true;
    config["process"]["terminal"] = false;
    config["process"]["noNewPrivileges"] = true;
    config["process"]["args"] = args;
    auto tmpfs = [](const std::string& at, const std::string& mode) {
      return json{{"destination", at},
                  {"type", "tmpfs"},
                  {"source", "tmpfs"},
                  {"options", {"nosuid", "nodev", "mode=" + mode, "uid=65532", "gid=65532"}}};
    };
    auto bind = [](const fs::path& from, const std::string& at, const std::string& mode) {
      return json{{"destination", at},
                  {"type", "bind"},
                  {"source", from.string()},
                  {"options", {"rbind", mode}}};
    };
    config["mounts"].push_back(tmpfs("/tmp", "1777"));
    config["mounts"].push_back(tmpfs("/home/runner", "0750"));
    config["mounts"].push_back(bind(module, "/module", "ro"));
    config["mounts"].push_back(bind(out, "/out", "rw"));
    EXPECT_TRUE(sys::WriteFileAtomic(bundle / "config.json", config.dump(), kReadable));
    std::string id = "berth-images-test-" + std::to_string(getpid());
    return Shell("runc --root '" + (scratch_ / "runc").string() + "' run --bundle '" +
                 bundle.string() + "' " + id + " 2>&1");
  }

  fs::path scratch_;
};

TEST_F(Images, TheRunnerImageIsTheHardenedBaseThePodBuilderExpects) {
  json config = ImageConfig(ImagesDir() / "runner");
  EXPECT_EQ(config["config"]["User"], "65532:65532");
  EXPECT_EQ(config["config"]["Entrypoint"], json::array({"/runner"}));
  EXPECT_EQ(config["config"]["WorkingDir"], "/home/runner");
  json labels = config["config"]["Labels"];
  for (const char* label : {"org.opencontainers.image.source", "org.opencontainers.image.revision",
                            "org.opencontainers.image.version"}) {
    EXPECT_FALSE(labels.value(label, "").empty()) << label;
  }
  // What it holds, with the hashes of the very files the build put in.
  json contents = ReadJson(ImagesDir() / "runner.contents.json");
  std::map<std::string, json> files;
  for (const json& file : contents["files"]) files[file["path"]] = file;
  ASSERT_TRUE(files.contains("/runner"));
  ASSERT_TRUE(files.contains("/usr/local/bin/tofu"));
  EXPECT_NE(files["/usr/local/bin/tofu"]["origin"].get<std::string>().find("OpenTofu v"),
            std::string::npos);
  EXPECT_EQ(Tag(ImagesDir() / "runner"),
            labels["org.opencontainers.image.version"].get<std::string>());
}

TEST_F(Images, TheBerthdImageHoldsEveryLibraryBerthdLoadsAndRunsAsNonRoot) {
  fs::path layout = ImagesDir() / "berthd";
  json config = ImageConfig(layout);
  EXPECT_EQ(config["config"]["User"], "65532:65532");
  EXPECT_EQ(config["config"]["Entrypoint"], json::array({"/usr/bin/berthd"}));
  // Run from the image itself, with nothing of this machine's: each program starts and answers.
  fs::path none = scratch_ / "none";
  fs::create_directories(none);
  for (const char* program : {"/usr/bin/berthd", "/usr/bin/berth", "/usr/bin/berth-controller"}) {
    sys::Completed help = RunUnderRunc(layout, none, none, {program, "--help"});
    EXPECT_EQ(help.exit_code, 0) << help.output;
    EXPECT_NE(help.output.find("Usage:"), std::string::npos) << help.output;
  }
}

TEST_F(Images, TheImagesRebuildToTheSameDigests) {
  fs::path build = FromEnvOr("BERTH_RELEASE_BUILD", testenv::SourceDir() / "build/release");
  fs::path again = scratch_ / "again";
  sys::Completed rebuilt =
      Shell("'" + (testenv::SourceDir() / "scripts/images").string() + "' --build-dir '" +
            build.string() + "' --out '" + again.string() + "' 2>&1");
  ASSERT_EQ(rebuilt.exit_code, 0) << rebuilt.output;
  for (const char* name : {"runner", "berthd"}) {
    EXPECT_EQ(ManifestDigest(again / name), ManifestDigest(ImagesDir() / name))
        << name << ": rebuilt at revision "
        << ImageConfig(again / name)["config"]["Labels"]["org.opencontainers.image.revision"]
        << ", the layout under test is of "
        << ImageConfig(ImagesDir() / name)["config"]["Labels"]["org.opencontainers.image.revision"]
        << " (after a change, run scripts/images)";
    EXPECT_NE(rebuilt.output.find(ManifestDigest(again / name)), std::string::npos)
        << "scripts/images prints each digest";
  }
}

// docs/images.md: a derived image is the runner image plus a layer (here: a provider mirror, so
// that runs need no registry, named by BERTH_PROVIDERS in its config). It plans examples/file
// with no network, read-only, as 65532.
TEST_F(Images, ADerivedImageWithBakedProvidersPlansAModuleUnderRunc) {
  auto mirror = testenv::TestTool("BERTH_TEST_PROVIDER_MIRROR");
  ASSERT_TRUE(static_cast<bool>(mirror)) << mirror.error().message;
  fs::path derived = scratch_ / "derived";
  fs::copy(ImagesDir() / "runner", derived, fs::copy_options::recursive);
  std::string ref = derived.string() + ":" + Tag(derived);
  sys::Completed inserted = Shell("umoci insert --image '" + ref + "' '" + mirror->string() +
                                  "' /usr/share/berth/providers 2>&1");
  ASSERT_EQ(inserted.exit_code, 0) << inserted.output;
  sys::Completed configured =
      Shell("umoci config --image '" + ref +
            "' --config.env BERTH_PROVIDERS=/usr/share/berth/providers 2>&1");
  ASSERT_EQ(configured.exit_code, 0) << configured.output;
  EXPECT_NE(ManifestDigest(derived), ManifestDigest(ImagesDir() / "runner"));

  fs::path out = scratch_ / "out";
  fs::create_directories(out);
  ASSERT_EQ(chown(out.c_str(), 65532, 65532), 0);
  ASSERT_TRUE(sys::WriteFileAtomic(out / "vars.json", R"({"path": "/tmp/greeting"})", kReadable));
  sys::Completed plan =
      RunUnderRunc(derived, testenv::SourceDir() / "examples/file", out,
                   {"/runner", "run", "--op=plan", "--module=/module", "--config=/out/vars.json",
                    "--plan-file=/out/plan", "--result=/out/result.json"});
  ASSERT_EQ(plan.exit_code, 0) << plan.output;
  json result = ReadJson(out / "result.json");
  EXPECT_TRUE(result["error"].is_null()) << result.dump();
  EXPECT_EQ(result["plan"]["add"], 1) << result.dump();
  struct stat written {};
  ASSERT_EQ(stat((out / "plan").c_str(), &written), 0);
  EXPECT_EQ(written.st_uid, 65532U) << "the run wrote as the image's user";
}

// scripts/images --with-terraform: Terraform v1.5.7 (MPL-2.0) beside tofu, listed with its
// licence, and it runs in the image.
TEST_F(Images, WithTerraformTheRunnerImageHoldsTerraformToo) {
  fs::path build = FromEnvOr("BERTH_RELEASE_BUILD", testenv::SourceDir() / "build/release");
  fs::path out = scratch_ / "with-terraform";
  sys::Completed built =
      Shell("'" + (testenv::SourceDir() / "scripts/images").string() + "' --with-terraform " +
            "--build-dir '" + build.string() + "' --out '" + out.string() + "' 2>&1");
  ASSERT_EQ(built.exit_code, 0) << built.output;
  json contents = ReadJson(out / "runner.contents.json");
  std::string origin;
  for (const json& file : contents["files"]) {
    if (file["path"] == "/usr/local/bin/terraform") origin = file["origin"];
  }
  EXPECT_NE(origin.find("Terraform v1.5.7 (MPL-2.0)"), std::string::npos) << origin;
  EXPECT_NE(ManifestDigest(out / "runner"), ManifestDigest(ImagesDir() / "runner"));
  fs::path none = scratch_ / "none";
  fs::create_directories(none);
  sys::Completed version =
      RunUnderRunc(out / "runner", none, none, {"/usr/local/bin/terraform", "version"});
  EXPECT_EQ(version.exit_code, 0) << version.output;
  EXPECT_NE(version.output.find("Terraform v1.5.7"), std::string::npos) << version.output;
}

}  // namespace
}  // namespace berth
