// Lock files, package hashes and the shared cache's layout.
#include "tf/provider_packages.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include "core/base64.h"
#include "crypto/digest.h"

namespace berth::tf {
namespace {

constexpr std::string_view kH1 = "h1:";
constexpr size_t kSha256Bytes = 32;

// The 32 bytes of an "h1:" hash; empty when it is not one.
std::string H1Bytes(std::string_view h1) {
  if (!h1.starts_with(kH1)) return {};
  auto bytes = Base64Decode(h1.substr(kH1.size()));
  return bytes && bytes->size() == kSha256Bytes ? *bytes : std::string();
}

// The lock file's tokens that matter here: words (provider, version, hashes), quoted strings,
// braces and '='. Comments are skipped; escapes in strings are kept as written (no address,
// version or hash has one).
std::vector<std::string_view> Tokens(std::string_view text) {
  std::vector<std::string_view> tokens;
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (c == '#' || (c == '/' && i + 1 < text.size() && text[i + 1] == '/')) {
      i = std::min(text.find('\n', i), text.size());
    } else if (c == '"') {
      size_t end = i + 1;
      while (end < text.size() && text[end] != '"' && text[end] != '\n')
        end += text[end] == '\\' ? size_t{2} : size_t{1};
      tokens.push_back(text.substr(i, std::min(end + 1, text.size()) - i));
      i = end + 1;
    } else if (c == '{' || c == '}' || c == '=' || c == '[' || c == ']' || c == ',') {
      tokens.push_back(text.substr(i++, 1));
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      size_t end = i;
      while (end < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_'))
        ++end;
      tokens.push_back(text.substr(i, end - i));
      i = end;
    } else {
      ++i;
    }
  }
  return tokens;
}

// A quoted token's text, or nullopt for anything else.
std::optional<std::string_view> Quoted(std::string_view token) {
  if (token.size() < 2 || token.front() != '"' || token.back() != '"') return std::nullopt;
  return token.substr(1, token.size() - 2);
}

// "host/ns/type" into provider; false when it is not three folder names.
bool SetAddress(std::string_view address, LockedProvider& provider) {
  std::vector<std::string> parts;
  for (size_t start = 0; start <= address.size();) {
    size_t end = std::min(address.find('/', start), address.size());
    parts.emplace_back(address.substr(start, end - start));
    start = end + 1;
  }
  if (parts.size() != 3 || !std::all_of(parts.begin(), parts.end(), IsPackagePathPart))
    return false;
  provider.host = parts[0];
  provider.ns = parts[1];
  provider.type = parts[2];
  return true;
}

}  // namespace

bool IsPackagePathPart(std::string_view name) {
  if (name.empty() || name.size() > 255 || !std::isalnum(static_cast<unsigned char>(name[0])))
    return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' ||
           c == '+';
  });
}

std::vector<LockedProvider> ParseLockFile(std::string_view text) {
  text = text.substr(0, std::min(text.size(), kMaxLockFileBytes));
  std::vector<std::string_view> tokens = Tokens(text);
  std::vector<LockedProvider> providers;
  // provider "ADDRESS" { ... }: a block's attributes are its tokens up to the brace that
  // closes it; nested blocks do not exist in a lock file, and a '}' ends the block.
  for (size_t i = 0; i + 2 < tokens.size(); ++i) {
    if (tokens[i] != "provider" || !Quoted(tokens[i + 1]) || tokens[i + 2] != "{") continue;
    LockedProvider provider;
    bool addressed = SetAddress(*Quoted(tokens[i + 1]), provider);
    size_t j = i + 3;
    for (; j < tokens.size() && tokens[j] != "}"; ++j) {
      if (tokens[j] == "version" && j + 2 < tokens.size() && tokens[j + 1] == "=" &&
          Quoted(tokens[j + 2]) && IsPackagePathPart(*Quoted(tokens[j + 2])))
        provider.version = *Quoted(tokens[j + 2]);
      auto hash = Quoted(tokens[j]);
      if (hash && !H1Bytes(*hash).empty()) provider.h1_hashes.emplace_back(*hash);
    }
    if (addressed && !provider.version.empty()) providers.push_back(std::move(provider));
    i = j;
  }
  return providers;
}

void PackageHasher::AddFile(std::string path, std::string sha256_hex) {
  files_.emplace_back(std::move(path), std::move(sha256_hex));
}

std::string PackageHasher::Finish() const {
  auto files = files_;
  std::sort(files.begin(), files.end());
  std::string summary;
  for (const auto& [path, hex] : files) summary += hex + "  " + path + "\n";
  return std::string(kH1) + Base64Encode(crypto::Sha256Bytes(summary));
}

std::string_view ThisPlatform() {
#if defined(__aarch64__)
  return "linux_arm64";
#else
  return "linux_amd64";
#endif
}

std::filesystem::path SharedPackagePath(const std::filesystem::path& shared,
                                        const LockedProvider& provider, std::string_view platform,
                                        std::string_view h1) {
  std::string bytes = H1Bytes(h1);
  if (bytes.empty()) return {};
  return shared / provider.host / provider.ns / provider.type / provider.version /
         std::string(platform) / crypto::HexEncode(bytes);
}

}  // namespace berth::tf
