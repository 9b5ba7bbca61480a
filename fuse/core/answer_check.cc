#include "fuse/core/answer_check.h"

#include <string>

#include "common/s3_error_table.h"

namespace reelfs::fuse::detail {

Status CheckGetAnswer(const ObjectRef& object, uint64_t offset, uint64_t asked,
                      std::string_view etag, uint64_t object_size, uint64_t bytes) {
  const std::string_view pinned = BareEtag(object.etag);
  const std::string_view got = BareEtag(etag);
  if (!pinned.empty() && !got.empty() && got != pinned) {
    return Status(StatusCode::kFailedPrecondition, StatusReason::kObjectChanged,
                  "GetObject " + object.key + " at offset " + std::to_string(offset) +
                      ": the server answered ETag \"" + std::string(got) +
                      "\" for a read pinned to \"" + std::string(pinned) +
                      "\" (it ignored If-Match); the bytes are dropped",
                  StatusDetail{.http_status = 412, .s3_code = std::string(kS3PreconditionFailed)});
  }
  if (object_size != 0 && object_size != object.size) {
    return Status::DataLoss("GetObject " + object.key + ": the answer says the object has " +
                            std::to_string(object_size) + " bytes, the handle opened " +
                            std::to_string(object.size) + "; the bytes are dropped");
  }
  if (bytes > asked) {
    return Status::DataLoss("GetObject " + object.key + " returned " + std::to_string(bytes) +
                            " bytes for a range of " + std::to_string(asked) +
                            "; the bytes are dropped");
  }
  return Status::Ok();
}

}  // namespace reelfs::fuse::detail
