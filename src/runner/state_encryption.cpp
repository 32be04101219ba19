#include "runner/state_encryption.h"

#include <nlohmann/json.hpp>

#include "core/base64.h"
#include "core/bounded_json.h"
#include "sys/files.h"

namespace berth::runner {
namespace {

using nlohmann::json;

constexpr size_t kKeyBytes = 32;  // AES-256
constexpr size_t kMaxInput = size_t{64} * 1024;

// HCL strings: the paths are the runner's own, but quoted as HCL wants all the same.
std::string Quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '$' || c == '%') out += c;  // ${ and %{ start templates: doubled, they are literal
    out += c;
  }
  return out + "\"";
}

}  // namespace

Result<std::string> ReadStateKey(const std::filesystem::path& key_file) {
  auto text = sys::ReadFile(key_file);
  if (!text) return text.error();
  std::string key = *text;
  while (!key.empty() && (key.back() == '\n' || key.back() == '\r')) key.pop_back();
  auto bytes = Base64Decode(key);
  if (!bytes || bytes->size() != kKeyBytes)
    return MakeError(ErrorKind::kInvalidArgument,
                     key_file.string() + ": must hold a 32-byte key, base64");
  return key;
}

std::string EncryptionConfig(const std::filesystem::path& runner,
                             const std::filesystem::path& key_file) {
  std::string command = "[" + Quoted(runner.string()) + ", \"key-provider\", " +
                        Quoted("--key-file=" + key_file.string()) + "]";
  std::string fallback = "  fallback {\n    method = method.unencrypted.plaintext\n  }\n";
  return "key_provider \"external\" \"berth\" {\n  command = " + command +
         "\n}\n"
         "method \"aes_gcm\" \"berth\" {\n  keys = key_provider.external.berth\n}\n"
         "method \"unencrypted\" \"plaintext\" {}\n"
         "state {\n  method = method.aes_gcm.berth\n" +
         fallback + "}\nplan {\n  method = method.aes_gcm.berth\n" + fallback + "}\n";
}

int ServeStateKey(const std::filesystem::path& key_file, std::FILE* in, std::FILE* out) {
  std::fprintf(out, "%s\n",
               json{{"magic", "OpenTofu-External-Key-Provider"}, {"version", 1}}.dump().c_str());
  std::fflush(out);
  std::string input;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, in)) > 0;) {
    input.append(buffer, n);
    if (input.size() > kMaxInput) {
      std::fprintf(stderr, "runner key-provider: the input is larger than %zu bytes\n", kMaxInput);
      return 1;
    }
  }
  auto key = ReadStateKey(key_file);
  if (!key) {
    std::fprintf(stderr, "runner key-provider: %s\n", key.error().message.c_str());
    return 1;
  }
  // null: tofu encrypts; metadata (what an earlier encryption left): tofu decrypts.
  json metadata = ParseBoundedJsonOrNull(input);
  json keys = {{"encryption_key", *key}};
  if (!metadata.is_null()) keys["decryption_key"] = *key;
  std::fprintf(out, "%s\n",
               json{{"keys", keys}, {"meta", {{"external_data", json::object()}}}}.dump().c_str());
  return std::fflush(out) == 0 ? 0 : 1;
}

}  // namespace berth::runner
