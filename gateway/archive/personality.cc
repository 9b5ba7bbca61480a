#include "gateway/archive/personality.h"

#include "common/time_format.h"

namespace reelfs::gateway {
namespace {

constexpr int64_t kNsPerDay = 86'400LL * 1'000'000'000LL;

s3::WallTime ToWallTime(int64_t ns) {
  return s3::WallTime(
      std::chrono::duration_cast<s3::WallTime::duration>(std::chrono::nanoseconds(ns)));
}

std::string AwsRestoredHeader(int64_t expiry_ns) {
  return "ongoing-request=\"false\", expiry-date=\"" + FormatHttpDate(ToWallTime(expiry_ns)) + "\"";
}

ArchiveView VersitygwView(const ObjectRecord& rec, const ArchiveOptions& options) {
  ArchiveView v;
  const bool offline = rec.archive && rec.archive->state == ArchiveState::kOffline;
  const bool staging = offline && rec.archive->staging;
  const auto gen = options.versitygw_restore_header;
  v.offline = offline;
  // versitygw reports the ScoutFS file state, never the class given at PUT (docs/gateway.md
  // "Archive").
  v.storage_class = offline ? "GLACIER" : "STANDARD";
  v.listing_class = v.storage_class;
  if (!offline) {
    switch (gen) {
      case RestoreHeaderGeneration::kCurrent:
        v.restore_header = "ongoing-request=\"false\", expiry-date=\"" +
                           std::string(kVersitygwPlaceholderExpiry) + "\"";
        break;
      case RestoreHeaderGeneration::k202603:
        v.restore_header = "ongoing-request=\"false\"";
        break;
      case RestoreHeaderGeneration::kLegacy:
        v.restore_header = "false";
        break;
    }
  } else if (staging) {
    v.restore_header =
        gen == RestoreHeaderGeneration::kLegacy ? "true" : "ongoing-request=\"true\"";
  } else if (gen == RestoreHeaderGeneration::k202603) {
    v.restore_header = "ongoing-request=\"false\"";  // issue #2030: said so of offline files
  } else if (gen == RestoreHeaderGeneration::kLegacy) {
    v.restore_header = "false";
  }
  return v;  // no RestoreStatus in listings (docs/gateway.md "Archive")
}

// aws and plain share the headers; they differ in the class of archived-but-online objects.
ArchiveView AwsLikeView(const ObjectRecord& rec, bool aws) {
  ArchiveView v;
  const std::optional<ArchiveRecord>& a = rec.archive;
  v.offline = a && a->state == ArchiveState::kOffline;
  std::string cls = rec.storage_class.empty() ? "STANDARD" : rec.storage_class;
  // aws: an archived object is GLACIER in every state (restoring makes a temporary copy, the
  // class stays); plain: only an offline one.
  if (a && (aws || v.offline)) cls = "GLACIER";
  v.listing_class = cls;
  v.storage_class = cls == "STANDARD" ? "" : cls;  // S3 omits the header for STANDARD
  if (!a) return v;
  if (a->staging) {
    v.restore_header = "ongoing-request=\"true\"";
    v.restore_status = s3::RestoreInfo{.ongoing = true};
  } else if (a->state == ArchiveState::kPremigrated && a->restored_ns > 0 && a->expiry_ns > 0) {
    v.restore_header = AwsRestoredHeader(a->expiry_ns);
    v.restore_status = s3::RestoreInfo{.ongoing = false, .expiry = ToWallTime(a->expiry_ns)};
  }
  return v;
}

}  // namespace

ArchiveView ViewOf(const ObjectRecord& rec, const ArchiveOptions& options) {
  switch (options.personality) {
    case Personality::kVersitygw:
      return VersitygwView(rec, options);
    case Personality::kAws:
      return AwsLikeView(rec, /*aws=*/true);
    case Personality::kPlain:
      break;
  }
  return AwsLikeView(rec, /*aws=*/false);
}

std::string_view InvalidObjectStateMessage(Personality personality) {
  if (personality == Personality::kVersitygw) {
    return "The operation is not valid for the current state of the object.";
  }
  return "The action is not valid for the object's storage class";
}

int64_t RestoreExpiryNs(int64_t from_ns, int days) {
  const int64_t t = from_ns + static_cast<int64_t>(days) * kNsPerDay;
  return (t / kNsPerDay + 1) * kNsPerDay;  // next midnight UTC (a time at midnight moves a day)
}

Result<Personality> ParsePersonality(std::string_view name) {
  if (name == "plain") return Personality::kPlain;
  if (name == "versitygw") return Personality::kVersitygw;
  if (name == "aws") return Personality::kAws;
  return Status::InvalidArgument("personality must be plain, versitygw or aws, got '" +
                                 std::string(name) + "'");
}

Result<RestoreHeaderGeneration> ParseRestoreHeaderGeneration(std::string_view name) {
  if (name == "current") return RestoreHeaderGeneration::kCurrent;
  if (name == "2026-03") return RestoreHeaderGeneration::k202603;
  if (name == "legacy") return RestoreHeaderGeneration::kLegacy;
  return Status::InvalidArgument(
      "versitygw_restore_header must be current, 2026-03 or legacy, got '" + std::string(name) +
      "'");
}

std::string_view PersonalityName(Personality personality) {
  switch (personality) {
    case Personality::kPlain:
      return "plain";
    case Personality::kVersitygw:
      return "versitygw";
    case Personality::kAws:
      return "aws";
  }
  return "plain";
}

}  // namespace reelfs::gateway
