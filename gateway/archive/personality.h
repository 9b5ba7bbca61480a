// How each S3 personality shows an object's archive state: storage class, x-amz-restore, the
// listing's StorageClass / RestoreStatus, and whether GET may serve it (docs/gateway.md "Archive"
// has the table). Pure functions of the catalog record, so the whole matrix is unit-tested without
// a server.
//
// Thread-safety: pure functions.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "gateway/options.h"
#include "gateway/store/catalog.h"
#include "s3/types.h"

namespace reelfs::gateway {

struct ArchiveView {
  bool offline = false;                       // GET/CopyObject answer 403 InvalidObjectState
  std::string storage_class;                  // x-amz-storage-class; "" when the header is omitted
  std::string listing_class;                  // <StorageClass> in listings
  std::optional<std::string> restore_header;  // x-amz-restore; nullopt: omitted
  std::optional<s3::RestoreInfo> restore_status;  // listing <RestoreStatus> (when asked)
};

ArchiveView ViewOf(const ObjectRecord& rec, const ArchiveOptions& options);

// versitygw's fixed "expiry" on online files.
inline constexpr std::string_view kVersitygwPlaceholderExpiry = "Fri, 2 Dec 2050 00:00:00 GMT";

// The InvalidObjectState message each personality uses (clients must key off the code only).
std::string_view InvalidObjectStateMessage(Personality personality);

// AWS expiry rule: `from` + days, rounded up to the next midnight UTC.
int64_t RestoreExpiryNs(int64_t from_ns, int days);

Result<Personality> ParsePersonality(std::string_view name);
Result<RestoreHeaderGeneration> ParseRestoreHeaderGeneration(std::string_view name);
std::string_view PersonalityName(Personality personality);

}  // namespace reelfs::gateway
