#include "crypto/age.h"

#include <openssl/evp.h>
#include <openssl/kdf.h>

#include <array>
#include <memory>
#include <vector>

#include "core/base64.h"
#include "crypto/random.h"

namespace berth::crypto {
namespace {

constexpr std::string_view kVersionLine = "age-encryption.org/v1";
constexpr std::string_view kArmorBegin = "-----BEGIN AGE ENCRYPTED FILE-----";
constexpr std::string_view kArmorEnd = "-----END AGE ENCRYPTED FILE-----";
constexpr std::string_view kX25519Info = "age-encryption.org/v1/X25519";
constexpr size_t kChunk = size_t{64} * 1024;
constexpr size_t kTag = 16;

Error Invalid(const std::string& message) {
  return MakeError(ErrorKind::kInvalidArgument, message);
}

// Bech32 (BIP 173), as age's keys use it.
constexpr std::string_view kBech32Charset = "qpzry9x8gf2tvdw0s3jn54khce6mua7l";

uint32_t Polymod(const std::vector<uint8_t>& values) {
  constexpr uint32_t kGenerator[] = {0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3};
  uint32_t chk = 1;
  for (uint8_t v : values) {
    uint32_t top = chk >> 25;
    chk = ((chk & 0x1ffffff) << 5) ^ v;
    for (int i = 0; i < 5; ++i) chk ^= ((top >> i) & 1) ? kGenerator[i] : 0;
  }
  return chk;
}

// The bytes a Bech32 string with human-readable part hrp (lower case) holds.
Result<std::string> Bech32Decode(std::string_view text, std::string_view hrp) {
  std::string lower(text);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  size_t split = lower.rfind('1');
  if (split == std::string::npos || lower.substr(0, split) != hrp || lower.size() - split < 7)
    return Invalid("must be a Bech32 string starting " + std::string(hrp) + "1");
  std::vector<uint8_t> values;
  for (char c : hrp) values.push_back(static_cast<uint8_t>(static_cast<unsigned char>(c) >> 5));
  values.push_back(0);
  for (char c : hrp) values.push_back(static_cast<uint8_t>(c & 31));
  std::vector<uint8_t> data;
  for (char c : lower.substr(split + 1)) {
    size_t at = kBech32Charset.find(c);
    if (at == std::string_view::npos) return Invalid("has a character Bech32 does not use");
    data.push_back(static_cast<uint8_t>(at));
  }
  values.insert(values.end(), data.begin(), data.end());
  if (Polymod(values) != 1) return Invalid("has a bad Bech32 checksum");
  data.resize(data.size() - 6);
  std::string bytes;
  uint32_t acc = 0;
  int bits = 0;
  for (uint8_t v : data) {
    acc = (acc << 5) | v;
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      bytes.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  if (bits >= 5 || (acc & ((1u << bits) - 1)) != 0) return Invalid("has Bech32 padding left over");
  return bytes;
}

std::string B64(std::string_view bytes) {
  std::string text = Base64Encode(bytes);
  while (!text.empty() && text.back() == '=') text.pop_back();
  return text;
}

Result<std::string> UnB64(std::string_view text) {
  std::string padded(text);
  while (padded.size() % 4 != 0) padded += '=';
  auto bytes = Base64Decode(padded);
  if (!bytes || B64(*bytes) != text) return Invalid("age: a base64 field is malformed");
  return bytes;
}

struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct PkeyCtxFree {
  void operator()(EVP_PKEY_CTX* p) const { EVP_PKEY_CTX_free(p); }
};
struct CipherCtxFree {
  void operator()(EVP_CIPHER_CTX* p) const { EVP_CIPHER_CTX_free(p); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;

Error OpenSsl(const std::string& what) {
  return MakeError(ErrorKind::kInternal, "age: " + what + " failed in OpenSSL");
}

Result<std::string> X25519(const EVP_PKEY* own, std::string_view peer_public) {
  Pkey peer(EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, nullptr,
                                        reinterpret_cast<const unsigned char*>(peer_public.data()),
                                        peer_public.size()));
  std::unique_ptr<EVP_PKEY_CTX, PkeyCtxFree> ctx(
      EVP_PKEY_CTX_new(const_cast<EVP_PKEY*>(own), nullptr));
  std::string shared(32, '\0');
  size_t length = shared.size();
  if (!peer || !ctx || EVP_PKEY_derive_init(ctx.get()) != 1 ||
      EVP_PKEY_derive_set_peer(ctx.get(), peer.get()) != 1 ||
      EVP_PKEY_derive(ctx.get(), reinterpret_cast<unsigned char*>(shared.data()), &length) != 1 ||
      length != 32)
    return OpenSsl("X25519");
  // An all-zero secret means a low-order peer key: age refuses it.
  if (shared == std::string(32, '\0')) return Invalid("age: the X25519 share is not valid");
  return shared;
}

std::string PublicOf(const EVP_PKEY* key) {
  std::string raw(32, '\0');
  size_t length = raw.size();
  EVP_PKEY_get_raw_public_key(key, reinterpret_cast<unsigned char*>(raw.data()), &length);
  return raw;
}

Result<std::string> Hkdf(std::string_view key, std::string_view salt, std::string_view info) {
  std::unique_ptr<EVP_PKEY_CTX, PkeyCtxFree> ctx(EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nullptr));
  std::string out(32, '\0');
  size_t length = out.size();
  auto bytes = [](std::string_view s) { return reinterpret_cast<const unsigned char*>(s.data()); };
  if (!ctx || EVP_PKEY_derive_init(ctx.get()) != 1 ||
      EVP_PKEY_CTX_set_hkdf_md(ctx.get(), EVP_sha256()) != 1 ||
      (!salt.empty() &&
       EVP_PKEY_CTX_set1_hkdf_salt(ctx.get(), bytes(salt), static_cast<int>(salt.size())) != 1) ||
      EVP_PKEY_CTX_set1_hkdf_key(ctx.get(), bytes(key), static_cast<int>(key.size())) != 1 ||
      EVP_PKEY_CTX_add1_hkdf_info(ctx.get(), bytes(info), static_cast<int>(info.size())) != 1 ||
      EVP_PKEY_derive(ctx.get(), reinterpret_cast<unsigned char*>(out.data()), &length) != 1)
    return OpenSsl("HKDF");
  return out;
}

Result<std::string> HmacSha256(std::string_view key, std::string_view data) {
  std::string out(32, '\0');
  size_t length = 0;
  if (EVP_Q_mac(nullptr, "HMAC", nullptr, "SHA256", nullptr, key.data(), key.size(),
                reinterpret_cast<const unsigned char*>(data.data()), data.size(),
                reinterpret_cast<unsigned char*>(out.data()), out.size(), &length) == nullptr ||
      length != 32)
    return OpenSsl("HMAC");
  return out;
}

// ChaCha20-Poly1305 with a 12-byte nonce: ciphertext and tag, or the plaintext when it opens.
Result<std::string> Seal(std::string_view key, std::string_view nonce, std::string_view in,
                         bool encrypt) {
  if (!encrypt && in.size() < kTag) return Invalid("age: a sealed piece is too short");
  std::unique_ptr<EVP_CIPHER_CTX, CipherCtxFree> ctx(EVP_CIPHER_CTX_new());
  auto u = [](std::string_view s) { return reinterpret_cast<const unsigned char*>(s.data()); };
  std::string_view body = encrypt ? in : in.substr(0, in.size() - kTag);
  std::string out(body.size() + kTag, '\0');
  int length = 0, final_length = 0;
  auto* o = reinterpret_cast<unsigned char*>(out.data());
  if (!ctx ||
      EVP_CipherInit_ex(ctx.get(), EVP_chacha20_poly1305(), nullptr, u(key), u(nonce),
                        encrypt ? 1 : 0) != 1 ||
      EVP_CipherUpdate(ctx.get(), o, &length, u(body), static_cast<int>(body.size())) != 1)
    return OpenSsl("ChaCha20-Poly1305");
  if (!encrypt) {
    std::string tag(in.substr(in.size() - kTag));
    if (EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_AEAD_SET_TAG, kTag, tag.data()) != 1)
      return OpenSsl("ChaCha20-Poly1305");
  }
  if (EVP_CipherFinal_ex(ctx.get(), o + length, &final_length) != 1)
    return Invalid("age: a sealed piece does not open with this key (wrong key, or changed)");
  if (encrypt && EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_AEAD_GET_TAG, kTag, o + body.size()) != 1)
    return OpenSsl("ChaCha20-Poly1305");
  out.resize(encrypt ? body.size() + kTag : body.size());
  return out;
}

std::string StreamNonce(uint64_t counter, bool last) {
  std::string nonce(12, '\0');
  for (size_t i = 0; i < 8; ++i) nonce[10 - i] = static_cast<char>((counter >> (8 * i)) & 0xff);
  nonce[11] = last ? '\x01' : '\0';
  return nonce;
}

// The STREAM payload (age's spec, "Payload") under file_key with nonce.
Result<std::string> Payload(std::string_view file_key, std::string_view nonce, std::string_view in,
                            bool encrypt) {
  auto key = Hkdf(file_key, nonce, "payload");
  if (!key) return key.error();
  const size_t piece = encrypt ? kChunk : kChunk + kTag;
  std::string out;
  uint64_t counter = 0;
  size_t at = 0;
  do {
    std::string_view part = in.substr(at, piece);
    bool last = at + part.size() >= in.size();
    auto sealed = Seal(*key, StreamNonce(counter++, last), part, encrypt);
    if (!sealed) return sealed.error();
    if (!encrypt && sealed->empty() && counter > 1)
      return Invalid("age: the payload ends with an empty chunk");
    out += *sealed;
    at += part.size();
  } while (at < in.size());
  return out;
}

std::string Armor(std::string_view binary) {
  std::string text = Base64Encode(binary);
  std::string out = std::string(kArmorBegin) + "\n";
  for (size_t i = 0; i < text.size(); i += 64) out += text.substr(i, 64) + "\n";
  return out + std::string(kArmorEnd) + "\n";
}

Result<std::string> Dearmor(std::string_view armored) {
  size_t begin = armored.find(kArmorBegin);
  size_t end = armored.find(kArmorEnd);
  if (begin == std::string_view::npos || end == std::string_view::npos || end < begin)
    return Invalid("age: not an armored age file");
  std::string text;
  for (char c : armored.substr(begin + kArmorBegin.size(), end - begin - kArmorBegin.size())) {
    if (c != '\n' && c != '\r') text += c;
  }
  auto binary = Base64Decode(text);
  if (!binary) return Invalid("age: the armor's base64 is malformed");
  return binary;
}

}  // namespace

Result<std::string> ParseAgeRecipient(std::string_view recipient) {
  std::string lower(recipient.substr(0, 15));
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower.starts_with("age-secret-key-"))
    return Invalid("is an age secret key: give its recipient (age1...), and keep the key");
  if (recipient.size() > 100) return Invalid("must be an age X25519 recipient (age1...)");
  auto key = Bech32Decode(recipient, "age");
  if (!key) return Invalid("must be an age X25519 recipient (age1...): " + key.error().message);
  if (key->size() != 32) return Invalid("must be an age X25519 recipient (age1...) of 32 bytes");
  return key;
}

Result<std::string> AgeEncryptArmored(std::string_view plaintext, std::string_view recipient) {
  auto recipient_key = ParseAgeRecipient(recipient);
  if (!recipient_key) return recipient_key.error();
  Pkey ephemeral(EVP_PKEY_Q_keygen(nullptr, nullptr, "X25519"));
  if (!ephemeral) return OpenSsl("X25519 key generation");
  std::string share = PublicOf(ephemeral.get());
  auto shared = X25519(ephemeral.get(), *recipient_key);
  if (!shared) return shared.error();
  auto wrap_key = Hkdf(*shared, share + *recipient_key, kX25519Info);
  if (!wrap_key) return wrap_key.error();
  std::string file_key = RandomBytes(16);
  auto wrapped = Seal(*wrap_key, std::string(12, '\0'), file_key, true);
  if (!wrapped) return wrapped.error();
  std::string header =
      std::string(kVersionLine) + "\n-> X25519 " + B64(share) + "\n" + B64(*wrapped) + "\n---";
  auto mac_key = Hkdf(file_key, "", "header");
  if (!mac_key) return mac_key.error();
  auto mac = HmacSha256(*mac_key, header);
  if (!mac) return mac.error();
  std::string nonce = RandomBytes(16);
  auto payload = Payload(file_key, nonce, plaintext, true);
  if (!payload) return payload.error();
  return Armor(header + " " + B64(*mac) + "\n" + nonce + *payload);
}

Result<std::string> AgeDecryptArmored(std::string_view armored, std::string_view identity) {
  std::string secret;
  for (size_t at = 0; at < identity.size();) {
    size_t end = identity.find('\n', at);
    std::string_view line = identity.substr(at, end == std::string_view::npos ? end : end - at);
    if (line.starts_with("AGE-SECRET-KEY-1")) secret = std::string(line);
    at = end == std::string_view::npos ? identity.size() : end + 1;
  }
  auto key = Bech32Decode(secret, "age-secret-key-");
  if (!key || key->size() != 32) return Invalid("the identity must be an AGE-SECRET-KEY-1... line");
  Pkey own(EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, nullptr,
                                        reinterpret_cast<const unsigned char*>(key->data()), 32));
  if (!own) return OpenSsl("X25519 identity");
  auto binary = Dearmor(armored);
  if (!binary) return binary.error();
  std::string_view file = *binary;
  auto next_line = [&](std::string_view& line) {
    size_t end = file.find('\n');
    if (end == std::string_view::npos) return false;
    line = file.substr(0, end);
    file.remove_prefix(end + 1);
    return true;
  };
  std::string_view line;
  if (!next_line(line) || line != kVersionLine) return Invalid("age: not an age v1 file");
  std::string header = std::string(kVersionLine) + "\n";
  std::string file_key;
  while (true) {
    if (!next_line(line)) return Invalid("age: the header has no end");
    if (line.starts_with("--- ")) break;
    if (!line.starts_with("-> ")) return Invalid("age: a header line is malformed");
    header += std::string(line) + "\n";
    std::string_view stanza = line.substr(3);
    // The body: lines of 64 characters, ended by a shorter one.
    std::string body_text;
    std::string_view body_line;
    do {
      if (!next_line(body_line) || body_line.size() > 64)
        return Invalid("age: a stanza's body is malformed");
      header += std::string(body_line) + "\n";
      body_text += body_line;
    } while (body_line.size() == 64);
    if (!file_key.empty() || !stanza.starts_with("X25519 ")) continue;
    auto share = UnB64(stanza.substr(7));
    auto body = UnB64(body_text);
    if (!share || share->size() != 32 || !body || body->size() != 32)
      return Invalid("age: an X25519 stanza is malformed");
    auto shared = X25519(own.get(), *share);
    if (!shared) continue;
    auto wrap_key = Hkdf(*shared, *share + PublicOf(own.get()), kX25519Info);
    if (!wrap_key) return wrap_key.error();
    if (auto opened = Seal(*wrap_key, std::string(12, '\0'), *body, false)) file_key = *opened;
  }
  if (file_key.empty()) return Invalid("age: the file is not for this identity");
  header += "---";
  auto mac_key = Hkdf(file_key, "", "header");
  if (!mac_key) return mac_key.error();
  auto mac = HmacSha256(*mac_key, header);
  auto given = UnB64(line.substr(4));
  if (!mac || !given || *mac != *given) return Invalid("age: the header's MAC does not match");
  if (file.size() < 16) return Invalid("age: the payload has no nonce");
  return Payload(file_key, file.substr(0, 16), file.substr(16), false);
}

}  // namespace berth::crypto
