// Operation: names the ObjectStore methods, so the fakes can count calls and inject faults per
// operation.
//
// Thread-safety: plain enum and pure functions.
#pragma once

#include <cstddef>
#include <string_view>

namespace reelfs::s3 {

enum class Operation {
  kListBuckets,
  kCreateBucket,
  kDeleteBucket,
  kListObjects,
  kHeadObject,
  kGetObject,
  kPutObject,
  kCreateMultipartUpload,
  kUploadPart,
  kCompleteMultipartUpload,
  kAbortMultipartUpload,
  kDeleteObject,
  kDeleteObjects,
  kCopyObject,
  kRestoreObject,
  kListMultipartUploads,
  kListParts,
  kUploadPartCopy,
};
inline constexpr size_t kOperationCount = static_cast<size_t>(Operation::kUploadPartCopy) + 1;

inline constexpr std::string_view OperationName(Operation op) {
  constexpr std::string_view kNames[kOperationCount] = {"ListBuckets",
                                                        "CreateBucket",
                                                        "DeleteBucket",
                                                        "ListObjects",
                                                        "HeadObject",
                                                        "GetObject",
                                                        "PutObject",
                                                        "CreateMultipartUpload",
                                                        "UploadPart",
                                                        "CompleteMultipartUpload",
                                                        "AbortMultipartUpload",
                                                        "DeleteObject",
                                                        "DeleteObjects",
                                                        "CopyObject",
                                                        "RestoreObject",
                                                        "ListMultipartUploads",
                                                        "ListParts",
                                                        "UploadPartCopy"};
  return kNames[static_cast<size_t>(op)];
}

}  // namespace reelfs::s3
