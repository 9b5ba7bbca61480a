// RdmaTarget: what a hipobj-rc-v2 PREPARE's x-amz-rdma-target names, parsed and checked.
//
// "/bucket/key" (an object: GET or PutObject) or "/bucket/key?partNumber=N&uploadId=U" (one part
// of a multipart upload: UploadPart), URI-encoded as in a request path (docs/protocols/
// rdma-put.md). The bucket and key pass the same validation as a plain S3 request's
// (key_validation.h), since READY works on the store directly; partNumber is 1..10000 and comes
// with a non-empty uploadId, or neither is present. Whether the op (GET / PUT) may have a part is
// the caller's call: a GET of a part is refused by RcServer.
//
// Pure (no rdma-core), so it builds into reelfs_gateway and is unit-tested everywhere.
// Thread-safety: a value type and a pure function.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace reelfs::gateway {

struct RdmaTarget {
  std::string bucket;
  std::string key;
  int part_number = 0;    // 0: the whole object
  std::string upload_id;  // set exactly when part_number is

  bool is_part() const { return part_number != 0; }
};

// kInvalidArgument with the reason for anything else than the two forms above.
Result<RdmaTarget> ParseRdmaTarget(std::string_view target);

}  // namespace reelfs::gateway
