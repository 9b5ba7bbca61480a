// PageUploads and PageParts: one page of a ListMultipartUploads / ListParts answer cut from the
// whole sorted list, with AWS's marker and delimiter rules. Shared by the servers that hold the
// uploads themselves (reelfs-gateway's Store, s3/fake's FakeObjectStore), so both page alike.
//
// Thread-safety: pure functions.
#pragma once

#include <vector>

#include "s3/upload_types.h"

namespace reelfs::s3 {

// `uploads`: every upload of the bucket under req.prefix, sorted by key, then initiation time.
// A page starts after (key_marker, upload_id_marker), or after every upload of key_marker when
// upload_id_marker is empty or unknown; keys that share a prefix up to req.delimiter roll up
// into one CommonPrefix, which counts toward max_uploads like an upload. req.bucket is unused;
// max_uploads is taken as given (0 or less: an empty page).
ListMultipartUploadsPage PageUploads(std::vector<MultipartUploadInfo> uploads,
                                     const ListMultipartUploadsRequest& req);

// `parts`: every part of the upload, in ascending part number. The page holds those after
// part_number_marker, at most max_parts of them.
ListPartsPage PageParts(std::vector<PartInfo> parts, int part_number_marker, int max_parts);

}  // namespace reelfs::s3
