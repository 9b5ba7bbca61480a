#include "gateway/rdma/rdma_target.h"

#include <charconv>

#include "gateway/store/key_validation.h"
#include "s3/protocol/uri.h"

namespace reelfs::gateway {

Result<RdmaTarget> ParseRdmaTarget(std::string_view target) {
  const size_t qpos = target.find('?');
  const std::string_view encoded_path = target.substr(0, qpos);
  Result<std::string> path = s3::UriDecode(encoded_path);
  if (!path.ok() || !path->starts_with('/')) {
    return Status::InvalidArgument("x-amz-rdma-target must be /bucket/key");
  }
  const size_t slash = path->find('/', 1);
  if (slash == std::string::npos || slash + 1 == path->size()) {
    return Status::InvalidArgument("x-amz-rdma-target must be /bucket/key");
  }
  RdmaTarget t;
  t.bucket = path->substr(1, slash - 1);
  t.key = path->substr(slash + 1);
  if (!ValidateBucketName(t.bucket).ok() || !ValidateObjectKey(t.key).ok()) {
    return Status::InvalidArgument("x-amz-rdma-target names no valid bucket/key");
  }
  if (qpos == std::string_view::npos) return t;

  Result<s3::QueryParams> query = s3::ParseQuery(target.substr(qpos + 1));
  if (!query.ok()) return Status::InvalidArgument("x-amz-rdma-target: malformed query");
  bool have_part = false;
  bool have_upload = false;
  for (const auto& [name, value] : *query) {
    if (name == "partNumber" && !have_part) {
      have_part = true;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), t.part_number);
      if (ec != std::errc() || p != value.data() + value.size() || t.part_number < 1 ||
          t.part_number > 10000) {
        return Status::InvalidArgument(
            "x-amz-rdma-target: partNumber must be an integer between 1 and 10000");
      }
    } else if (name == "uploadId" && !have_upload) {
      have_upload = true;
      t.upload_id = value;
    } else {
      // Anything else (a repeated name, another subresource) would be an operation we do not
      // serve over RDMA; refusing beats guessing which one was meant.
      return Status::InvalidArgument("x-amz-rdma-target: only partNumber and uploadId may follow");
    }
  }
  if (!have_part || !have_upload || t.upload_id.empty()) {
    return Status::InvalidArgument(
        "x-amz-rdma-target: a part needs both partNumber and a non-empty uploadId");
  }
  return t;
}

}  // namespace reelfs::gateway
