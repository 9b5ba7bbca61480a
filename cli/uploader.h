// UploadSources: the upload direction of `reelfs cp` (LOCAL -> s3://), files streamed through
// the mount's own multipart code, fuse::Upload (fuse/core/upload.h): a file under one part is
// one PutObject, a larger one a multipart upload whose part sizes grow to fit 5 TiB, with
// `parts_in_flight` UploadParts at once per file and every part buffer counted in one
// MemoryBudget of `max_memory` (back-pressure as in the mount). `files_in_flight` files are
// uploaded at once, each read sequentially by a thread of its own.
//
// A failed file's multipart upload is aborted (Upload does it; this adds Abort for a local read
// error or a file that changed while it was read), so an object is either complete or absent.
// Each failure is one line through Progress::Note ("PATH -> s3://bucket/key: why"). The first
// failure that will fail every other file too (bad credentials, access denied, no such bucket,
// the server unreachable after the client's retries) stops new files from starting, as does
// `cancel`, which also aborts the uploads in flight (each then fails with kCancelled).
//
// RDMA (`reelfs cp --rdma`): with a registered `pool` and a channel's `sender`
// (fuse/core/part_sender.h), part buffers come from the pool and each part goes as the mount's
// do: the server RDMA-reads it, falling back to HTTP per endpoint; the report then carries the
// sender's counters. Without them part buffers are heap memory and every part is an HTTP body.
//
// Thread-safety: one call at a time; blocks the calling thread until every file has an answer
// (never call from an ObjectStore callback).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cli/local_sources.h"
#include "cli/progress.h"
#include "common/cancel.h"
#include "fuse/core/buffer_pool.h"
#include "fuse/core/part_sender.h"
#include "s3/object_store.h"

namespace reelfs::cli {

struct UploaderOptions {
  uint64_t part_size = 8ull << 20;  // first part size (fuse::PartSize grows it)
  uint32_t parts_in_flight = 8;     // per file
  uint32_t files_in_flight = 4;
  uint64_t max_memory = 1ull << 30;  // part buffers of all files together
  // Optional: cancelled (Ctrl-C), every upload in flight is aborted and no file starts.
  std::shared_ptr<CancellationToken> cancel;
  // Optional, together (see RDMA above): part buffers and how each part is sent.
  std::shared_ptr<fuse::BufferPool> pool;
  std::shared_ptr<fuse::PartSender> sender;
};

// A part transport for UploadSources (`reelfs cp --rdma`, cli/rdma_open.h) with what it runs
// on; all null: heap buffers, every part through the store.
struct UploadTransport {
  std::shared_ptr<void> owner;  // the data path under `pool` and `sender`; declared first, so
                                // destroyed last
  std::shared_ptr<fuse::BufferPool> pool;
  std::shared_ptr<fuse::PartSender> sender;
};

struct UploadReport {
  uint64_t uploaded = 0;     // files whose object is complete
  uint64_t failed = 0;       // files that were tried and are not in S3
  uint64_t not_started = 0;  // files left after a failure (or a cancel) that stopped the copy
  uint64_t bytes = 0;        // bytes of the uploaded files
  uint64_t peak_memory = 0;  // the MemoryBudget's peak (part buffers)
  fuse::PutCounters puts;    // the sender's (zero without one): which path each part took
};

UploadReport UploadSources(std::shared_ptr<s3::ObjectStore> store, const std::string& bucket,
                           const std::vector<LocalSource>& sources, const UploaderOptions& options,
                           Progress& progress);

}  // namespace reelfs::cli
