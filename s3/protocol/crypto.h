// Hashing and encoding helpers for SigV4, ETags and Content-MD5 (OpenSSL 3 one-shot APIs).
//
// Thread-safety: pure functions, except Sha256Stream which is a single-owner object.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace reelfs::s3 {

std::string HexEncode(std::span<const std::byte> bytes);
std::string HexEncode(std::string_view bytes);
std::string Base64Encode(std::string_view bytes);

// Raw 32-byte digests / MACs, as std::string of bytes.
std::string Sha256(std::string_view data);
std::string HmacSha256(std::string_view key, std::string_view data);
std::string Sha256Hex(std::string_view data);
std::string Md5(std::string_view data);
std::string Md5Hex(std::string_view data);

// Incremental hasher (SHA-256, MD5 or SHA-1: x-amz-checksum-sha1) for bodies streamed to disk.
class Digest {
 public:
  enum class Algorithm { kSha256, kMd5, kSha1 };
  explicit Digest(Algorithm algorithm);
  ~Digest();
  Digest(const Digest&) = delete;
  Digest& operator=(const Digest&) = delete;
  Digest(Digest&&) noexcept;
  Digest& operator=(Digest&&) noexcept;

  void Update(std::span<const std::byte> data);
  void Update(std::string_view data);
  // Raw digest; the object cannot be updated afterwards.
  std::string Finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Compares in time independent of where the inputs differ (signature checks).
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace reelfs::s3
