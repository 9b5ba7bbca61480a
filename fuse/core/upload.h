// Upload: one new object written sequentially through the mount, streamed to S3 while it is
// written (docs/semantics.md "Writes").
//
// Bytes are copied into a part buffer as each write arrives. A full part is sent at once as an
// UploadPart of a multipart upload that the first full part creates; several parts are in flight
// together (Options::max_in_flight). Finish sends what is left: a file that never filled a part
// is one PutObject, a larger one its last part and CompleteMultipartUpload. Nothing is visible
// to readers before Finish succeeds, and the object appears whole (S3's atomic PUT / COMPLETE).
//
// Part sizes grow so that a file up to S3's 5 TiB limit fits in 10 000 parts: PartSize(n) is
// Options::part_size for parts 1..1000 and doubles every 1000 parts after that (8 MiB: 7.8 GiB
// at 8 MiB parts, then 16 MiB parts, ..., 4 GiB parts for the last thousand; 8 TiB in all), never
// over 5 GiB. S3 allows parts of different sizes; only the last may be under 5 MiB.
//
// Transport: each full part (and the single PutObject) is handed to a PartSender (part_sender.h):
// through the store (HTTP), or with `reelfs mount --rdma` through the data channel, where the
// gateway RDMA-reads the part out of its buffer. Part buffers then come from the mount's
// BufferPool, whose buffers are registered once when first allocated and recycled, so no write
// registers anything. The sender's answer (ETag, path) is all the Upload sees of it: the schedule,
// errors and the COMPLETE are the same either way, and COMPLETE names the ETag each part's answer
// gave, over RDMA or HTTP.
//
// Memory: every part buffer is counted in the shared MemoryBudget (ReserveForDemand, released when
// its UploadPart answers). Back-pressure keeps it bounded: a Write whose bytes filled a part is
// answered only once fewer than max_in_flight parts are in flight and, when the budget is over its
// limit, once none of this upload's parts is; replies wait (asynchronously), threads do not.
//
// Errors: the first failure (an UploadPart, the create or the final request failing after the
// store's own retries) sticks: every later Write and the Finish answer it, and the multipart
// upload is aborted (AbortMultipartUpload, once the parts in flight have answered) so nothing is
// left half-done. Abort() does the same on request (the handle was released without a Finish).
//
// Lifetime: create with Create(); every callback handed to the store holds the Upload, so it
// lives until the last answer has arrived.
//
// Thread-safety: every method may be called from any thread; callers keep Write calls of one
// upload in order (the FUSE write path does: one handle, sequential offsets). Callbacks run
// without the internal lock held, on the caller's thread or the store's.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "common/clock.h"
#include "common/result.h"
#include "common/status.h"
#include "fuse/core/buffer_pool.h"
#include "fuse/core/memory_budget.h"
#include "fuse/core/part_sender.h"
#include "s3/object_store.h"

namespace reelfs::fuse {

// S3's limits on a multipart upload.
inline constexpr uint32_t kMaxParts = 10'000;
inline constexpr uint64_t kMaxPartSize = 5ull << 30;    // 5 GiB
inline constexpr uint64_t kMinPartSize = 5ull << 20;    // 5 MiB, all parts but the last
inline constexpr uint64_t kMaxObjectSize = 5ull << 40;  // 5 TiB

// The size of part `part_number` (1-based) for a base part size (see above).
uint64_t PartSize(uint32_t part_number, uint64_t base_part_size);

class Upload : public std::enable_shared_from_this<Upload> {
 public:
  struct Options {
    uint64_t part_size = 8ull << 20;  // base part size, at least kMinPartSize
    uint32_t max_in_flight = 4;       // UploadParts in flight at once, at least 1
    std::string content_type;         // empty: none sent
  };

  // Where part buffers come from and how parts travel (see Transport above).
  struct Transport {
    std::shared_ptr<BufferPool> pool;    // null: plain heap memory, never registered
    std::shared_ptr<PartSender> sender;  // null: every part through the store
  };

  // `clock` gives the last-modified time reported by Finish; it must outlive the Upload. The
  // store sends the create, the COMPLETE and the abort, and the parts unless `transport` names a
  // sender.
  static std::shared_ptr<Upload> Create(std::shared_ptr<s3::ObjectStore> store,
                                        std::shared_ptr<MemoryBudget> budget, std::string bucket,
                                        std::string key, Options options, Clock& clock,
                                        Transport transport = {});
  ~Upload();

  // Appends `data` at `offset`, which must be size() (kInvalidArgument naming both offsets, and
  // nothing is written, otherwise). The bytes are copied before Write returns; `done` runs when
  // the write may be answered (at once, or when back-pressure lets it), with OK or the upload's
  // sticky error. After Finish or Abort: kFailedPrecondition / kBadHandle ("upload finished").
  // A write past kMaxObjectSize or past part 10 000: kOutOfRange, reason kFileTooLarge.
  void Write(uint64_t offset, std::span<const std::byte> data, std::function<void(Status)> done);

  // Truncates to `size`: only to the current size (a no-op) or to 0 while no part has been sent
  // (the buffered bytes are dropped); otherwise kInvalidArgument.
  Status Truncate(uint64_t size);

  // Sends what is left and completes the object. `done` gets the new object (key, size, ETag,
  // last_modified from the clock) or the upload's error, after aborting. Called once; a second
  // call answers the first one's result.
  void Finish(s3::Callback<s3::ObjectInfo> done);

  // Drops the upload: buffered bytes are released and a started multipart upload is aborted.
  // Idempotent; no-op after a Finish that succeeded.
  void Abort();

  const std::string& key() const;  // the object's key (immutable)
  uint64_t size() const;           // bytes written so far
  uint32_t parts_started() const;  // UploadParts sent so far (0: still one buffer)
  bool finished() const;           // Finish or Abort was called

 private:
  struct State;
  Upload(std::shared_ptr<s3::ObjectStore> store, std::shared_ptr<MemoryBudget> budget,
         std::string bucket, std::string key, Options options, Clock& clock, Transport transport);
  std::unique_ptr<State> state_;
};

}  // namespace reelfs::fuse
