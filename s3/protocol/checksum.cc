#include "s3/protocol/checksum.h"

#include <array>

#include "common/strings.h"
#include "s3/protocol/crypto.h"

namespace reelfs::s3 {
namespace {

// Reflected (LSB-first) CRC tables, one byte at a time: a reference gateway does not need the
// speed of slicing or carry-less multiplication.
template <typename T>
constexpr std::array<T, 256> CrcTable(T reflected_poly) {
  std::array<T, 256> table{};
  for (unsigned i = 0; i < 256; ++i) {
    T crc = static_cast<T>(i);
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 1) ? (crc >> 1) ^ reflected_poly : crc >> 1;
    table[i] = crc;
  }
  return table;
}

constexpr auto kCrc32Table = CrcTable<uint32_t>(0xEDB88320u);                // ISO-HDLC (zlib)
constexpr auto kCrc32cTable = CrcTable<uint32_t>(0x82F63B78u);               // Castagnoli
constexpr auto kCrc64NvmeTable = CrcTable<uint64_t>(0x9A6C9329AC4BC9B5ull);  // NVMe

template <typename T>
T CrcUpdate(const std::array<T, 256>& table, T crc, std::string_view data) {
  for (char c : data) {
    crc = table[(crc ^ static_cast<unsigned char>(c)) & 0xFF] ^ (crc >> 8);
  }
  return crc;
}

template <typename T>
std::string BigEndian(T v) {
  std::string out(sizeof(T), '\0');
  for (size_t i = 0; i < sizeof(T); ++i) {
    out[sizeof(T) - 1 - i] = static_cast<char>(v & 0xFF);
    v >>= 8;
  }
  return out;
}

}  // namespace

struct Checksum::Impl {
  Algorithm algorithm;
  uint32_t crc32 = 0xFFFFFFFFu;
  uint64_t crc64 = ~0ull;
  std::optional<Digest> digest;
};

std::optional<Checksum::Algorithm> Checksum::FromHeaderName(std::string_view name) {
  if (EqualsIgnoreCase(name, "x-amz-checksum-crc32")) return Algorithm::kCrc32;
  if (EqualsIgnoreCase(name, "x-amz-checksum-crc32c")) return Algorithm::kCrc32c;
  if (EqualsIgnoreCase(name, "x-amz-checksum-crc64nvme")) return Algorithm::kCrc64Nvme;
  if (EqualsIgnoreCase(name, "x-amz-checksum-sha1")) return Algorithm::kSha1;
  if (EqualsIgnoreCase(name, "x-amz-checksum-sha256")) return Algorithm::kSha256;
  return std::nullopt;
}

Checksum::Checksum(Algorithm algorithm) : impl_(std::make_unique<Impl>()) {
  impl_->algorithm = algorithm;
  if (algorithm == Algorithm::kSha1) impl_->digest.emplace(Digest::Algorithm::kSha1);
  if (algorithm == Algorithm::kSha256) impl_->digest.emplace(Digest::Algorithm::kSha256);
}
Checksum::~Checksum() = default;
Checksum::Checksum(Checksum&&) noexcept = default;
Checksum& Checksum::operator=(Checksum&&) noexcept = default;

void Checksum::Update(std::string_view data) {
  switch (impl_->algorithm) {
    case Algorithm::kCrc32:
      impl_->crc32 = CrcUpdate(kCrc32Table, impl_->crc32, data);
      break;
    case Algorithm::kCrc32c:
      impl_->crc32 = CrcUpdate(kCrc32cTable, impl_->crc32, data);
      break;
    case Algorithm::kCrc64Nvme:
      impl_->crc64 = CrcUpdate(kCrc64NvmeTable, impl_->crc64, data);
      break;
    case Algorithm::kSha1:
    case Algorithm::kSha256:
      impl_->digest->Update(data);
      break;
  }
}

std::string Checksum::FinishBase64() {
  switch (impl_->algorithm) {
    case Algorithm::kCrc32:
    case Algorithm::kCrc32c:
      return Base64Encode(BigEndian<uint32_t>(impl_->crc32 ^ 0xFFFFFFFFu));
    case Algorithm::kCrc64Nvme:
      return Base64Encode(BigEndian<uint64_t>(~impl_->crc64));
    case Algorithm::kSha1:
    case Algorithm::kSha256:
      break;
  }
  return Base64Encode(impl_->digest->Finish());
}

}  // namespace reelfs::s3
