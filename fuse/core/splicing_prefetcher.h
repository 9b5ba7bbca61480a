// SplicingPrefetcher: a sequential reader's bytes moved from the GET's socket to /dev/fuse with
// splice(2), never copied through the daemon's memory (`reelfs mount --splice-reads`,
// docs/semantics.md "Spliced reads").
//
// A decorator over the ordinary Prefetcher of one handle. A handle's READs go to the inner
// Prefetcher until one begins where the one before it ended; from that READ on, while the handle
// reads sequentially, one ranged GET for the rest of the object stays open (s3/body_stream.h) and
// each READ at its position is answered with a pipe holding exactly its bytes (ReadData::fd),
// spliced from the socket; the FUSE reply splices the pipe on (libfuse's fuse_reply_data). READs
// the kernel sends out of order wait a moment for the one before them; a gap that does not fill
// within the reorder wait (its READ went the ordinary way, one that came before the stream was
// placed) is dropped from the stream when it is at most 8 MiB. Everything else goes to the inner
// Prefetcher, which keeps its retries, resumption, errno mapping and offline handling:
//   - a read behind the stream's position (served there, the stream goes on);
//   - for good, after a jump forward beyond the reorder window, a larger gap that does not fill,
//     a READ larger than the pipe, any failure of the stream (open, a short or failed splice
//     or read, an answer that is not the 206 asked for), or a stream slower than its reader
//     (its worker waited on the socket most of the time; SpliceOptions::slow_window): that read
//     and every later one.
// So a failure costs speed, never a wrong byte or an error the ordinary path would not give.
//
// One worker thread per spliced handle blocks in splice (bounded by the client's idle timeout);
// Read never blocks. Thread-safety: all methods may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

#include "fuse/core/options.h"
#include "fuse/core/prefetcher.h"
#include "s3/body_stream.h"

namespace reelfs::fuse {

// Mount-wide counters, shared by every SplicingPrefetcher (relaxed atomics).
struct SpliceStats {
  std::atomic<uint64_t> reads{0};         // READs answered with a spliced pipe
  std::atomic<uint64_t> bytes{0};         // bytes those replies carried
  std::atomic<uint64_t> streams{0};       // body streams opened
  std::atomic<uint64_t> fallbacks{0};     // handles that stopped splicing (see above), for good
  std::atomic<uint64_t> gaps_skipped{0};  // gaps whose READ went the ordinary way, dropped
  std::atomic<uint64_t> slow_streams{0};  // fallbacks of a stream slower than its reader
};

// `inner` serves whatever is not spliced. With a null source, or an object below
// options.min_object_size, returns `inner` itself.
std::unique_ptr<Prefetcher> CreateSplicingPrefetcher(std::unique_ptr<Prefetcher> inner,
                                                     std::shared_ptr<s3::BodySource> source,
                                                     ObjectRef object, const SpliceOptions& options,
                                                     std::shared_ptr<SpliceStats> stats);

}  // namespace reelfs::fuse
