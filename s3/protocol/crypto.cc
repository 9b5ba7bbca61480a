#include "s3/protocol/crypto.h"

#include <array>
#include <cstdint>
#include <cstdlib>
#include <utility>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "common/c_handle.h"

namespace reelfs::s3 {
namespace {

using MdCtx = CHandle<EVP_MD_CTX, EVP_MD_CTX_free>;

constexpr char kHexDigits[] = "0123456789abcdef";

// Allocation failure inside OpenSSL leaves no sensible value to return from these pure
// helpers (a wrong digest would turn into a wrong signature far away), so it aborts, the way
// std::bad_alloc would terminate a noexcept caller.
[[noreturn]] void CryptoFailure() { std::abort(); }

std::string OneShotDigest(const EVP_MD* md, std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> out{};
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), out.data(), &len, md, nullptr) != 1) CryptoFailure();
  return std::string(reinterpret_cast<const char*>(out.data()), len);
}

}  // namespace

std::string HexEncode(std::span<const std::byte> bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (std::byte b : bytes) {
    const auto v = std::to_integer<uint8_t>(b);
    out.push_back(kHexDigits[v >> 4]);
    out.push_back(kHexDigits[v & 0x0f]);
  }
  return out;
}

std::string HexEncode(std::string_view bytes) {
  return HexEncode(std::as_bytes(std::span<const char>(bytes.data(), bytes.size())));
}

std::string Base64Encode(std::string_view bytes) {
  // EVP_EncodeBlock writes 4 output bytes per 3 input bytes plus a NUL.
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  if (n < 0) CryptoFailure();
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string Sha256(std::string_view data) { return OneShotDigest(EVP_sha256(), data); }

std::string Sha256Hex(std::string_view data) { return HexEncode(Sha256(data)); }

std::string Md5(std::string_view data) { return OneShotDigest(EVP_md5(), data); }

std::string Md5Hex(std::string_view data) { return HexEncode(Md5(data)); }

std::string HmacSha256(std::string_view key, std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> out{};
  size_t len = 0;
  // An empty key is legal HMAC; OpenSSL wants a non-null pointer for it.
  static constexpr unsigned char kNoKey = 0;
  const void* key_ptr = key.empty() ? &kNoKey : static_cast<const void*>(key.data());
  if (EVP_Q_mac(nullptr, "HMAC", nullptr, "SHA256", nullptr, key_ptr, key.size(),
                reinterpret_cast<const unsigned char*>(data.data()), data.size(), out.data(),
                out.size(), &len) == nullptr) {
    CryptoFailure();
  }
  return std::string(reinterpret_cast<const char*>(out.data()), len);
}

struct Digest::Impl {
  MdCtx ctx{EVP_MD_CTX_new()};
  bool finished = false;
};

Digest::Digest(Algorithm algorithm) : impl_(std::make_unique<Impl>()) {
  if (!impl_->ctx) CryptoFailure();
  const EVP_MD* md = algorithm == Algorithm::kSha256 ? EVP_sha256()
                     : algorithm == Algorithm::kSha1 ? EVP_sha1()
                                                     : EVP_md5();
  if (EVP_DigestInit_ex(impl_->ctx.get(), md, nullptr) != 1) CryptoFailure();
}

Digest::~Digest() = default;
Digest::Digest(Digest&&) noexcept = default;
Digest& Digest::operator=(Digest&&) noexcept = default;

void Digest::Update(std::span<const std::byte> data) {
  if (!impl_ || impl_->finished || data.empty()) return;
  if (EVP_DigestUpdate(impl_->ctx.get(), data.data(), data.size()) != 1) CryptoFailure();
}

void Digest::Update(std::string_view data) {
  Update(std::as_bytes(std::span<const char>(data.data(), data.size())));
}

std::string Digest::Finish() {
  if (!impl_ || impl_->finished) return {};
  std::array<unsigned char, EVP_MAX_MD_SIZE> out{};
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(impl_->ctx.get(), out.data(), &len) != 1) CryptoFailure();
  impl_->finished = true;
  return std::string(reinterpret_cast<const char*>(out.data()), len);
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  // The length is not secret (signatures are fixed-size hex); only the content comparison
  // must not leak where the first difference is.
  if (a.size() != b.size()) return false;
  if (a.empty()) return true;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace reelfs::s3
