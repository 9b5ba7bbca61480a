// The S3 additional checksums (x-amz-checksum-crc32, -crc32c, -crc64nvme, -sha1, -sha256):
// incremental, with the value S3 puts in the header or trailer (base64 of the big-endian CRC or
// of the digest).
//
// Thread-safety: a Checksum has a single owner.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace reelfs::s3 {

class Checksum {
 public:
  enum class Algorithm { kCrc32, kCrc32c, kCrc64Nvme, kSha1, kSha256 };
  // "x-amz-checksum-crc32" (any case) -> kCrc32; nullopt for any other name.
  static std::optional<Algorithm> FromHeaderName(std::string_view name);

  explicit Checksum(Algorithm algorithm);
  ~Checksum();
  Checksum(Checksum&&) noexcept;
  Checksum& operator=(Checksum&&) noexcept;
  Checksum(const Checksum&) = delete;
  Checksum& operator=(const Checksum&) = delete;

  void Update(std::string_view data);
  // Base64 of the checksum; the object cannot be updated afterwards.
  std::string FinishBase64();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace reelfs::s3
