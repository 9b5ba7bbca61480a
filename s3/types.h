// Plain value types of the S3 data model, shared by the client, the fakes and the gateway.
//
// Thread-safety: plain structs.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace reelfs::s3 {

using WallTime = std::chrono::system_clock::time_point;

enum class RestoreTier { kStandard, kBulk, kExpedited };

// What a server said about restore state (x-amz-restore header or a listing's RestoreStatus).
struct RestoreInfo {
  bool ongoing = false;                // a restore is running
  std::optional<WallTime> expiry;      // when the restored copy goes away, if given
  bool expiry_is_placeholder = false;  // versitygw's fixed "2 Dec 2050": not a real expiry
  bool operator==(const RestoreInfo&) const = default;
};

struct ObjectInfo {
  std::string key;
  uint64_t size = 0;
  std::string etag;  // as the server sent it, quotes stripped
  WallTime last_modified{};
  std::string storage_class = "STANDARD";  // S3 omits the header for STANDARD
  std::optional<RestoreInfo> restore;      // absent: the server said nothing
  // The x-amz-restore value exactly as received (HEAD/GET), "" when absent: for
  // user.s3.restore, which shows what the server said, not our reading of it.
  std::string restore_header;
  std::string content_type;
  std::map<std::string, std::string> user_metadata;  // x-amz-meta-NAME -> value (NAME lowercase)
  // Optional server hints (e.g. x-reelfs-tape-cartridge), lowercase header name -> value.
  std::map<std::string, std::string> hints;
};

struct BucketInfo {
  std::string name;
  WallTime creation_date{};
};

// A byte range as offset + length (HTTP's inclusive "first-last" lives in protocol/range.h).
struct ByteRange {
  uint64_t offset = 0;
  uint64_t length = 0;
  bool operator==(const ByteRange&) const = default;
};

struct ListObjectsRequest {
  std::string bucket;
  std::string prefix;
  std::string delimiter;
  std::string continuation_token;
  std::string start_after;
  int max_keys = 1000;
  // Sends x-amz-optional-object-attributes: RestoreStatus (AWS answers; others ignore it).
  bool fetch_restore_status = false;
  // Sends x-reelfs-tape-hints: 1 so reelfs-gateway adds <ReelfsTape> to archived entries
  // (docs/protocols/tape-hints.md); other servers ignore it. Parsed into ObjectInfo::hints.
  bool fetch_tape_hints = false;
};

struct ListObjectsPage {
  std::vector<ObjectInfo> objects;
  std::vector<std::string> common_prefixes;
  bool is_truncated = false;
  std::string next_continuation_token;
};

struct CompletedPart {
  int part_number = 0;
  std::string etag;
};

struct DeleteError {
  std::string key;
  std::string code;
  std::string message;
};

struct DeleteObjectsResult {
  std::vector<std::string> deleted;
  std::vector<DeleteError> errors;
};

// How a RestoreObject request ended when it did not fail.
enum class RestoreOutcome {
  kAccepted,  // 202: a restore was queued
  // 200: AWS means "already restored, only the expiry moved"; versitygw answers 200 to a freshly
  // accepted restore too. The caller must HEAD (x-amz-restore) to know which.
  kOk,
  kAlreadyInProgress  // 409 RestoreAlreadyInProgress
};

}  // namespace reelfs::s3
