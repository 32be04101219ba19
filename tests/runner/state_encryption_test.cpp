// `runner key-provider` speaks OpenTofu's external key provider protocol: a header line, then
// the key to encrypt with (tofu sends null) or to decrypt with too (tofu sends the metadata an
// encryption left); a key file that holds no 32-byte key fails it. The configuration handed
// to tofu names the runner and the key file, never the key.
#include "runner/state_encryption.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "core/base64.h"
#include "sys/files.h"

namespace berth::runner {
namespace {

using nlohmann::json;

struct Served {
  int exit_code = 0;
  std::vector<std::string> lines;
};

Served Serve(const std::filesystem::path& key_file, const std::string& input) {
  std::FILE* in = fmemopen(const_cast<char*>(input.data()), input.size(), "r");
  char* out_buffer = nullptr;
  size_t out_size = 0;
  std::FILE* out = open_memstream(&out_buffer, &out_size);
  Served served;
  served.exit_code = ServeStateKey(key_file, in, out);
  std::fclose(in);
  std::fclose(out);
  std::istringstream text(std::string(out_buffer, out_size));
  std::free(out_buffer);
  for (std::string line; std::getline(text, line);) served.lines.push_back(line);
  return served;
}

class StateKeyProvider : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = sys::TempDir::Create("state-key");
    ASSERT_TRUE(dir);
    dir_.emplace(std::move(*dir));
    key_ = Base64Encode(std::string(32, '\x07'));
    ASSERT_TRUE(sys::WriteFileAtomic(KeyFile(), key_ + "\n"));
  }
  std::filesystem::path KeyFile() const { return dir_->Path() / "state.key"; }

  std::optional<sys::TempDir> dir_;
  std::string key_;
};

TEST_F(StateKeyProvider, GivesTheKeyToEncryptWithAndToDecryptWithWhenAskedWithMetadata) {
  auto encrypt = Serve(KeyFile(), "null");
  ASSERT_EQ(encrypt.exit_code, 0);
  ASSERT_EQ(encrypt.lines.size(), 2u);
  EXPECT_EQ(json::parse(encrypt.lines[0]),
            (json{{"magic", "OpenTofu-External-Key-Provider"}, {"version", 1}}));
  json keys = json::parse(encrypt.lines[1])["keys"];
  EXPECT_EQ(keys, (json{{"encryption_key", key_}}));

  auto decrypt = Serve(KeyFile(), R"({"external_data":{}})");
  ASSERT_EQ(decrypt.exit_code, 0);
  EXPECT_EQ(json::parse(decrypt.lines[1])["keys"],
            (json{{"encryption_key", key_}, {"decryption_key", key_}}));
}

TEST_F(StateKeyProvider, AKeyFileWithoutA32ByteKeyFailsItWithNoKeyGiven) {
  for (const std::string& bad :
       {Base64Encode(std::string(16, 'k')), std::string("not base64!"), std::string()}) {
    ASSERT_TRUE(sys::WriteFileAtomic(KeyFile(), bad));
    auto served = Serve(KeyFile(), "null");
    EXPECT_EQ(served.exit_code, 1) << bad;
    EXPECT_EQ(served.lines.size(), 1u) << "only the header: " << bad;
  }
  auto missing = Serve(dir_->Path() / "none", "null");
  EXPECT_EQ(missing.exit_code, 1);
}

TEST_F(StateKeyProvider, TheConfigurationNamesTheRunnerAndTheKeyFileNeverTheKey) {
  std::string config = EncryptionConfig("/opt/berth/runner", "/run/x\"${y}/state.key");
  EXPECT_NE(config.find(R"(command = ["/opt/berth/runner", "key-provider", )"), std::string::npos)
      << config;
  EXPECT_NE(config.find(R"("--key-file=/run/x\"$${y}/state.key"])"), std::string::npos) << config;
  EXPECT_NE(config.find("method = method.aes_gcm.berth"), std::string::npos) << config;
  EXPECT_NE(config.find("method = method.unencrypted.plaintext"), std::string::npos) << config;
  EXPECT_EQ(config.find(key_), std::string::npos);
}

}  // namespace
}  // namespace berth::runner
