// The stream model (after mountpoint-s3's prefetch.rs, see prefetcher.h for the contract):
//
// A stream is a set of parts: disjoint byte ranges of the object, each one ranged GET into one
// pool buffer, kept in a map by offset. A read is answered once every part covering it is ready,
// with one ReadData piece per part (no copy); the reply's keepalive holds those parts.
//
//  - Start (first read, or a read that is neither near the stream nor covered by retained data):
//    one small GET at the read's offset, initial_request bytes or the read if larger, or the
//    whole object if it is no larger than a part. It is accounted as demand: the reader waits.
//  - Continue (a read within [pos - seek_tolerance, requested + seek_tolerance]): pos is the
//    highest byte read, requested the end of what has been requested. The band is that wide
//    because the kernel's async readahead sends several READs at once (one per max_pages, up to
//    read_ahead_kb) and FUSE worker threads hand them to us in any order: a stream whose reads
//    arrive as 3 MiB, 1 MiB, 2 MiB, 0 is sequential, and so is a read that lands past what has
//    been requested so far. Nothing in the band ever cancels a GET. Each time the reader has
//    consumed half the window since it last grew, the window doubles (up to max_window); every
//    read tops requested up to pos + window, rounded up to a part boundary, one GET per part,
//    each reserved in the MemoryBudget first; a refusal halves the window and stops issuing
//    until the next read. A read past requested thus pulls the gap, its
//    own bytes and the window in part-aligned GETs. Any hole the read still needs (a refusal, a
//    read behind what is retained) gets a demand GET of exactly that hole.
//  - Consumption: a part is dropped once it ends more than backward_tolerance behind pos and
//    every byte of it has been served, or once it ends more than seek_tolerance behind pos (an
//    out-of-order read may still come for an unserved part; past the band none will). Buffers
//    and reservations go when the last reply holding them is sent.
//  - Reset: a read outside the band (and not covered by retained data) drops every part no
//    pending read needs, cancelling the GETs in flight, and starts small at the new offset. A
//    failed GET fails the reads waiting on it and resets the same way, so the next read retries.
//
// The first read of a stream never extends the window: a random reader then pays exactly one
// small GET per read. When a stream is abandoned after serving just its first read, the handle
// reads randomly: the next stream starts at exactly the read's size instead of initial_request,
// so a random reader fetches only what it reads (fio's 256 KiB random reads fetched 1.125 MiB
// each before); a reader that turns sequential again grows the window from its second read as
// before, and a stream abandoned after several reads (a seek) starts the next one as usual.
//
// Prefetch() (at open) starts the whole-object GET of an object no larger than a part, so the
// first READ joins a GET already in flight: a small file costs LOOKUP + OPEN + READ round trips
// with the GET overlapping the last two instead of following them.
//
// A part the DataChannel refuses with kFailedPrecondition and no HTTP status (WindowFence: the
// window is quarantined, since a fence on that buffer failed earlier) retires its buffer (it is
// kept, never reused or freed: the server may still write there) and is fetched again over HTTP
// into a fresh one; the reads waiting on it never see the refusal.
#include "fuse/core/prefetcher.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "common/log.h"
#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "common/units.h"
#include "fuse/core/answer_check.h"

namespace reelfs::fuse {
namespace {

// The channel would not use the window at all (WindowFence: quarantined, or another request in
// it), as the fence's reason says; the object's own kFailedPrecondition (kArchived,
// kObjectChanged) is not a refusal.
bool IsWindowRefusal(const Status& status) {
  return status.reason() == StatusReason::kWindowQuarantined ||
         status.reason() == StatusReason::kWindowBusy;
}

// Buffers retired because their window is quarantined, process-wide (logged on the first one).
std::atomic<uint64_t> retired_buffers{0};

// Bytes accounted in the MemoryBudget for as long as the part's buffer lives.
class Reservation {
 public:
  Reservation(std::shared_ptr<MemoryBudget> budget, uint64_t bytes)
      : budget_(std::move(budget)), bytes_(bytes) {}
  ~Reservation() { budget_->Release(bytes_); }
  Reservation(const Reservation&) = delete;
  Reservation& operator=(const Reservation&) = delete;

 private:
  const std::shared_ptr<MemoryBudget> budget_;
  const uint64_t bytes_;
};

// One ranged GET and its buffer. Destroyed when the stream has dropped it, its GET has completed
// and every reply that points into it has been sent; that returns the buffer and the reservation.
struct Part {
  Part(uint64_t offset_in, uint64_t length_in, std::unique_ptr<Buffer> buffer_in,
       std::shared_ptr<MemoryBudget> budget)
      : offset(offset_in),
        length(length_in),
        buffer(std::move(buffer_in)),
        reservation(std::move(budget), length_in) {}

  uint64_t end() const { return offset + length; }

  const uint64_t offset;
  const uint64_t length;
  // Not const only so that a buffer whose window is quarantined can be retired (released and
  // never freed: Stream::OnWindowRefused); nothing else ever replaces it.
  std::unique_ptr<Buffer> buffer;
  const Reservation reservation;
  // Fetched through the ObjectStore even with a channel (the replacement of a refused part).
  bool http_only = false;
  const std::shared_ptr<CancellationToken> cancel = CancellationToken::Create();
  bool ready = false;  // guarded by Stream::mutex_ (the body is written before it becomes true)
  // Bytes handed to replies from this part (guarded by Stream::mutex_). Reads do not overlap in
  // the kernel's page-cache traffic, so served >= length means every byte has been read.
  uint64_t served = 0;
};

using PartPtr = std::shared_ptr<Part>;

// A part's answer against what the handle pinned (answer_check.h).
Status CheckAnswer(const ObjectRef& object, const Part& part, std::string_view etag,
                   uint64_t object_size, uint64_t bytes) {
  return detail::CheckGetAnswer(object, part.offset, part.length, etag, object_size, bytes);
}

struct PendingRead {
  uint64_t offset;
  uint64_t end;
  Callback<ReadData> done;
};

// A reply to run once the lock is released.
struct Reply {
  Callback<ReadData> done;
  Result<ReadData> result;
};

// The state the Prefetcher and its in-flight GET callbacks share. It holds neither the store nor
// the channel: only Read() issues GETs (with the Prefetcher's reference), so a completion can never
// end up destroying the store on the store's own thread.
class Stream : public std::enable_shared_from_this<Stream> {
 public:
  Stream(ObjectRef object, const PrefetchOptions& options, std::shared_ptr<MemoryBudget> budget,
         std::shared_ptr<BufferPool> pool, std::weak_ptr<s3::ObjectStore> fallback_store)
      : object_(std::move(object)),
        options_(options),
        budget_(std::move(budget)),
        pool_(std::move(pool)),
        fallback_store_(std::move(fallback_store)) {}

  void Read(s3::ObjectStore& store, rdmaio::DataChannel* channel, uint64_t offset, size_t size,
            Callback<ReadData> done);
  void Prefetch(s3::ObjectStore& store, rdmaio::DataChannel* channel);
  void Close();
  PrefetchCounters counters() const {
    MutexLock lock(mutex_);
    return counters_;
  }

 private:
  // Decides how the queued read `[offset, end)` relates to the stream and creates the parts it
  // needs, appending the GETs to issue once the lock is released to `issue`.
  Status PlanReadLocked(uint64_t offset, uint64_t end, std::vector<PartPtr>* issue)
      REQUIRES(mutex_);
  void StartStreamLocked(uint64_t offset, uint64_t end, std::vector<PartPtr>* issue)
      REQUIRES(mutex_);
  // Creates demand parts for every hole in [begin, end), split at part boundaries.
  Status FillHolesLocked(uint64_t begin, uint64_t end, std::vector<PartPtr>* issue)
      REQUIRES(mutex_);
  void ExtendWindowLocked(std::vector<PartPtr>* issue) REQUIRES(mutex_);
  // A part for [offset, offset + length), or null when the budget (prefetch) or pool refuses.
  Result<PartPtr> AddPartLocked(uint64_t offset, uint64_t length, bool prefetch) REQUIRES(mutex_);
  bool CoveredLocked(uint64_t offset, uint64_t end) const REQUIRES(mutex_);
  bool NeededByPendingLocked(const Part& part) const REQUIRES(mutex_);
  // Drops parts for which `drop(part)` holds and no pending read needs, cancelling their GETs.
  template <class Pred>
  void DropPartsLocked(Pred drop) REQUIRES(mutex_);
  void ResetLocked() REQUIRES(mutex_);
  // Moves every pending read whose parts are all ready into `replies`.
  void CollectReadyLocked(std::vector<Reply>* replies) REQUIRES(mutex_);
  std::optional<ReadData> TryBuildLocked(uint64_t offset, uint64_t end) REQUIRES(mutex_);

  // Each part through `channel` when there is one and the part's buffer is registered, else
  // through `store`.
  void Issue(s3::ObjectStore& store, rdmaio::DataChannel* channel,
             const std::vector<PartPtr>& parts);
  // A part's fetch ended with `bytes` in its buffer (`rdma`: written by the server).
  void OnPartDone(const PartPtr& part, Result<uint64_t> bytes, bool rdma);
  // The channel refused the part's window (IsWindowRefusal): retire the buffer, fetch over HTTP.
  void OnWindowRefused(const PartPtr& part, Status refusal);
  // Fails the reads waiting on `it`'s part with `status`, drops it and resets the stream.
  void FailPartLocked(std::map<uint64_t, PartPtr>::iterator it, const Status& status,
                      std::vector<Reply>* replies) REQUIRES(mutex_);
  static void RunReplies(std::vector<Reply> replies);

  const ObjectRef object_;
  const PrefetchOptions options_;
  const std::shared_ptr<MemoryBudget> budget_;
  const std::shared_ptr<BufferPool> pool_;
  // The store for re-fetching a refused part over HTTP from a channel's completion. Weak: the
  // Prefetcher owns the store reference (see above); a completion after the Prefetcher is gone
  // that still finds the store alive may end up dropping the last reference (the S3 client
  // allows that even on its own thread).
  const std::weak_ptr<s3::ObjectStore> fallback_store_;

  // Leaf lock: never held while calling the store, the pool's callers' callbacks or a reply.
  // (BufferPool::Allocate and MemoryBudget are called under it; they take only their own leaf
  // locks.)
  mutable Mutex mutex_;
  bool closed_ GUARDED_BY(mutex_) = false;
  std::map<uint64_t, PartPtr> parts_ GUARDED_BY(mutex_);  // by offset, disjoint
  std::deque<PendingRead> pending_ GUARDED_BY(mutex_);
  bool active_ GUARDED_BY(mutex_) = false;  // a stream position exists (pos_, requested_)
  bool random_ GUARDED_BY(mutex_) = false;  // the last stream served one read: start at its size
  uint64_t pos_ GUARDED_BY(mutex_) = 0;     // highest byte read in this stream (any order)
  uint64_t requested_ GUARDED_BY(mutex_) = 0;
  uint64_t window_ GUARDED_BY(mutex_) = 0;
  uint64_t grown_at_ GUARDED_BY(mutex_) = 0;  // pos_ when window_ last doubled
  uint64_t reads_in_stream_ GUARDED_BY(mutex_) = 0;
  PrefetchCounters counters_ GUARDED_BY(mutex_);
};

void Stream::Read(s3::ObjectStore& store, rdmaio::DataChannel* channel, uint64_t offset,
                  size_t size, Callback<ReadData> done) {
  std::vector<PartPtr> issue;
  std::vector<Reply> replies;
  {
    MutexLock lock(mutex_);
    if (closed_) {
      replies.push_back({std::move(done), Status::Cancelled("read on a closed file handle")});
    } else if (offset >= object_.size || size == 0) {
      replies.push_back({std::move(done), ReadData{}});  // at or past EOF: an empty reply
    } else {
      const uint64_t end = offset + std::min<uint64_t>(size, object_.size - offset);
      // Queued first, so that dropping consumed parts while planning keeps the ones it needs.
      pending_.push_back({offset, end, std::move(done)});
      Status status = PlanReadLocked(offset, end, &issue);
      if (!status.ok()) {
        // Not even a demand buffer: this read has a hole that will never fill.
        replies.push_back({std::move(pending_.back().done), std::move(status)});
        pending_.pop_back();
      }
      CollectReadyLocked(&replies);
    }
  }
  Issue(store, channel, issue);
  RunReplies(std::move(replies));
}

void Stream::Prefetch(s3::ObjectStore& store, rdmaio::DataChannel* channel) {
  std::vector<PartPtr> issue;
  {
    MutexLock lock(mutex_);
    if (closed_ || active_ || object_.size == 0 || object_.size > options_.part_size) return;
    // As prefetch: under memory pressure the budget may refuse, and the read fetches it instead.
    Result<PartPtr> part = AddPartLocked(0, object_.size, /*prefetch=*/true);
    if (!part.ok()) {
      ++counters_.prefetch_refused;
      return;
    }
    // The stream StartStreamLocked would set up for a first read at 0 of a one-part object.
    active_ = true;
    pos_ = 0;
    requested_ = object_.size;
    window_ = options_.initial_request;
    grown_at_ = 0;
    reads_in_stream_ = 1;
    ++counters_.open_prefetches;
    issue.push_back(*part);
  }
  Issue(store, channel, issue);
}

Status Stream::PlanReadLocked(uint64_t offset, uint64_t end, std::vector<PartPtr>* issue) {
  // Backward reach is seek_tolerance, not backward_tolerance: reordered READs land as far behind
  // the highest one as the kernel's readahead window, which read_ahead_kb sets (4 MiB on our
  // mounts, more if the admin raises it). backward_tolerance only bounds what stays retained
  // once read.
  const bool near = active_ && offset + options_.seek_tolerance >= pos_ &&
                    offset <= requested_ + options_.seek_tolerance;
  if (near) {
    pos_ = std::max(pos_, end);
    ++reads_in_stream_;
  } else if (!CoveredLocked(offset, end)) {
    if (active_) {
      ++counters_.resets;
      random_ = reads_in_stream_ <= 1;
    }
    ResetLocked();
    StartStreamLocked(offset, end, issue);
  }
  // Prefetch first, so that a sequential read's own tail rides in the next part-aligned GET.
  if (near && reads_in_stream_ > 1) ExtendWindowLocked(issue);
  // Holes: a stream under memory pressure, a forward skip past what arrived, a failed part.
  Status status = FillHolesLocked(offset, end, issue);
  if (near) requested_ = std::max(requested_, end);
  DropPartsLocked([&](const Part& p) REQUIRES(mutex_) {
    if (p.end() + options_.backward_tolerance > pos_) return false;
    // Unserved parts behind pos are still awaited by reads the kernel sent earlier but that
    // reach us later: dropping one would cancel its GET only to fetch it again.
    return p.served >= p.length || p.end() + options_.seek_tolerance <= pos_;
  });
  return status;
}

void Stream::StartStreamLocked(uint64_t offset, uint64_t end, std::vector<PartPtr>* issue) {
  active_ = true;
  pos_ = end;
  reads_in_stream_ = 1;
  window_ = options_.initial_request;
  grown_at_ = offset;
  uint64_t begin = offset;
  // A random reader: fetch what this read needs, no more.
  const uint64_t first = random_ ? end - offset : std::max(end - offset, options_.initial_request);
  uint64_t first_end = std::min(object_.size, offset + first);
  if (object_.size <= options_.part_size) {
    begin = 0;  // objects smaller than a part are fetched whole, in one GET
    first_end = object_.size;
  }
  requested_ = first_end;
  // A failure leaves a hole; the caller's FillHolesLocked for the read itself reports it.
  FillHolesLocked(begin, first_end, issue).IgnoreError();
}

Status Stream::FillHolesLocked(uint64_t begin, uint64_t end, std::vector<PartPtr>* issue) {
  uint64_t at = begin;
  while (at < end) {
    auto next = parts_.upper_bound(at);
    if (next != parts_.begin() && std::prev(next)->second->end() > at) {
      at = std::prev(next)->second->end();  // already requested
      continue;
    }
    uint64_t piece_end = std::min(end, AlignUp(at + 1, options_.part_size));
    if (next != parts_.end()) piece_end = std::min(piece_end, next->second->offset);
    Result<PartPtr> part = AddPartLocked(at, piece_end - at, /*prefetch=*/false);
    if (!part.ok()) return part.status();
    issue->push_back(*part);
    at = piece_end;
  }
  return Status::Ok();
}

void Stream::ExtendWindowLocked(std::vector<PartPtr>* issue) {
  if (requested_ >= object_.size) return;
  // Double each time the reader has consumed half the window since it last grew (mountpoint-s3's
  // rule: extend when half the window is left unread)...
  if (pos_ >= grown_at_ + window_ / 2) {
    window_ = std::min(window_ * 2, options_.max_window);
    grown_at_ = pos_;
  }
  // ...but keep it topped up one part at a time in between, rather than refilling half a window
  // (up to 128 MiB) in one burst: a part freed by the reader is then reused at once by the next
  // GET from the BufferPool's free list (which keeps only 64 MiB idle), instead of the burst
  // taking fresh memory whose page faults cost more than the copy into it.
  const uint64_t target = std::min(object_.size, AlignUp(pos_ + window_, options_.part_size));
  while (requested_ < target) {
    auto next = parts_.upper_bound(requested_);
    if (next != parts_.begin() && std::prev(next)->second->end() > requested_) {
      requested_ = std::prev(next)->second->end();  // kept for a pending read, or a demand part
      continue;
    }
    uint64_t piece_end = std::min(target, AlignUp(requested_ + 1, options_.part_size));
    if (next != parts_.end()) piece_end = std::min(piece_end, next->second->offset);
    Result<PartPtr> part = AddPartLocked(requested_, piece_end - requested_, /*prefetch=*/true);
    if (!part.ok()) {
      // Over the budget (or out of memory): shrink, and let demand reads carry the reader until
      // memory frees up; the next sequential read tries again with the smaller window.
      ++counters_.prefetch_refused;
      window_ = std::max(window_ / 2, options_.initial_request);
      return;
    }
    issue->push_back(*part);
    requested_ = piece_end;
  }
}

Result<PartPtr> Stream::AddPartLocked(uint64_t offset, uint64_t length, bool prefetch) {
  if (prefetch) {
    if (!budget_->TryReserveForPrefetch(length)) {
      return Status::ResourceExhausted("prefetch over the memory budget");
    }
  } else {
    budget_->ReserveForDemand(length);
  }
  Result<std::unique_ptr<Buffer>> buffer = pool_->Allocate(length);
  if (!buffer.ok()) {
    budget_->Release(length);
    return buffer.status();
  }
  // The Part's Reservation takes over the bytes reserved above.
  auto part = std::make_shared<Part>(offset, length, std::move(*buffer), budget_);
  parts_.emplace(offset, part);
  ++counters_.requests;
  return part;
}

bool Stream::CoveredLocked(uint64_t offset, uint64_t end) const {
  auto it = parts_.upper_bound(offset);
  if (it == parts_.begin()) return false;
  --it;
  uint64_t at = offset;
  for (; it != parts_.end() && it->second->offset <= at && at < end; ++it) {
    at = std::max(at, it->second->end());
  }
  return at >= end;
}

bool Stream::NeededByPendingLocked(const Part& part) const {
  for (const PendingRead& read : pending_) {
    if (read.offset < part.end() && part.offset < read.end) return true;
  }
  return false;
}

template <class Pred>
void Stream::DropPartsLocked(Pred drop) {
  for (auto it = parts_.begin(); it != parts_.end();) {
    const Part& part = *it->second;
    if (drop(part) && !NeededByPendingLocked(part)) {
      if (!part.ready) part.cancel->Cancel();  // its completion finds it gone and is ignored
      it = parts_.erase(it);
    } else {
      ++it;
    }
  }
}

void Stream::ResetLocked() {
  DropPartsLocked([](const Part&) { return true; });
  active_ = false;
  requested_ = 0;
  reads_in_stream_ = 0;
}

void Stream::CollectReadyLocked(std::vector<Reply>* replies) {
  for (auto it = pending_.begin(); it != pending_.end();) {
    std::optional<ReadData> data = TryBuildLocked(it->offset, it->end);
    if (!data) {
      ++it;
      continue;
    }
    counters_.bytes_served += data->size();
    replies->push_back({std::move(it->done), std::move(*data)});
    it = pending_.erase(it);
  }
}

std::optional<ReadData> Stream::TryBuildLocked(uint64_t offset, uint64_t end) {
  auto it = parts_.upper_bound(offset);
  if (it == parts_.begin()) return std::nullopt;
  --it;
  auto holders = std::make_shared<std::vector<PartPtr>>();
  ReadData data;
  for (uint64_t at = offset; at < end; ++it) {
    if (it == parts_.end() || it->second->offset > at || it->second->end() <= at ||
        !it->second->ready) {
      return std::nullopt;
    }
    const Part& part = *it->second;
    const uint64_t piece_end = std::min(end, part.end());
    data.pieces.push_back(part.buffer->bytes().subspan(at - part.offset, piece_end - at));
    holders->push_back(it->second);
    at = piece_end;
  }
  // Only once the whole read is built: a partial build above is retried later.
  for (size_t i = 0; i < holders->size(); ++i) (*holders)[i]->served += data.pieces[i].size();
  data.keepalive = std::move(holders);
  return data;
}

void Stream::Issue(s3::ObjectStore& store, rdmaio::DataChannel* channel,
                   const std::vector<PartPtr>& parts) {
  for (const PartPtr& part : parts) {
    if (channel != nullptr && !part->http_only) {
      rdmaio::RegisteredWindow window = part->buffer->registered_window();
      if (window.region != nullptr) {
        window.length = part->length;
        {
          MutexLock lock(mutex_);
          ++counters_.channel_requests;
        }
        rdmaio::FetchRequest req{.bucket = object_.bucket,
                                 .key = object_.key,
                                 .object_offset = part->offset,
                                 .window = std::move(window),
                                 .if_match = object_.etag,
                                 .cancel = part->cancel};
        // As below: the callback holds the part, whose window the server may write until the
        // channel calls back (the channel fences it first after a failure), and the stream.
        channel->Fetch(
            std::move(req), [self = shared_from_this(), part](Result<rdmaio::FetchResult> result) {
              if (!result.ok() && IsWindowRefusal(result.status())) {
                return self->OnWindowRefused(part, std::move(result).status());
              }
              if (!result.ok()) return self->OnPartDone(part, std::move(result).status(), false);
              if (Status bad = CheckAnswer(self->object_, *part, result->etag, result->object_size,
                                           result->bytes);
                  !bad.ok()) {
                return self->OnPartDone(part, std::move(bad), false);
              }
              self->OnPartDone(part, result->bytes, result->via == rdmaio::DataPath::kRdma);
            });
        continue;
      }
    }
    s3::GetObjectRequest req;
    req.bucket = object_.bucket;
    req.key = object_.key;
    req.range = s3::ByteRange{part->offset, part->length};
    req.buffer = part->buffer->bytes().first(part->length);
    req.if_match = object_.etag;  // pins the stream to the object the handle opened
    req.cancel = part->cancel;
    // The callback holds the part (the store writes into its buffer until the callback runs) and
    // the stream (the Prefetcher may be gone by then).
    store.GetObject(req, [self = shared_from_this(), part](Result<s3::GetObjectResult> result) {
      if (!result.ok()) return self->OnPartDone(part, std::move(result).status(), false);
      if (Status bad = CheckAnswer(self->object_, *part, result->info.etag, result->object_size,
                                   result->bytes);
          !bad.ok()) {
        return self->OnPartDone(part, std::move(bad), false);
      }
      self->OnPartDone(part, result->bytes, false);
    });
  }
}

void Stream::OnPartDone(const PartPtr& part, Result<uint64_t> bytes, bool rdma) {
  std::vector<Reply> replies;
  {
    MutexLock lock(mutex_);
    auto it = parts_.find(part->offset);
    if (it == parts_.end() || it->second != part) return;  // dropped (cancelled) or closed
    Status status;
    if (!bytes.ok()) {
      status = std::move(bytes).status();
    } else {
      counters_.bytes_fetched += *bytes;
      if (rdma) counters_.rdma_bytes += *bytes;
      if (*bytes < part->length) {
        // The size came from the listing and the ETag pins the object, so a short body is a
        // broken response, not a shorter object: fail rather than hand the kernel a silent
        // hole (docs/semantics.md "Reads").
        status = Status::DataLoss("GetObject " + object_.key + " returned " +
                                  std::to_string(*bytes) + " of " + std::to_string(part->length) +
                                  " bytes at offset " + std::to_string(part->offset));
      }
    }
    if (status.ok()) {
      part->ready = true;
    } else {
      FailPartLocked(it, status, &replies);
    }
    CollectReadyLocked(&replies);
  }
  RunReplies(std::move(replies));
}

void Stream::FailPartLocked(std::map<uint64_t, PartPtr>::iterator it, const Status& status,
                            std::vector<Reply>* replies) {
  const PartPtr part = it->second;
  for (auto r = pending_.begin(); r != pending_.end();) {
    if (r->offset < part->end() && part->offset < r->end) {
      replies->push_back({std::move(r->done), status});
      r = pending_.erase(r);
    } else {
      ++r;
    }
  }
  parts_.erase(it);
  ResetLocked();  // the next read starts afresh, which retries
}

void Stream::OnWindowRefused(const PartPtr& part, Status refusal) {
  // Whatever happens to the part, its buffer never goes back to the pool: the window is
  // quarantined because a fence on it failed, so the server may still write into these bytes.
  // Keeping it forever (the registration included) is the only safe end for it.
  if (part->buffer != nullptr) {
    RetireForever(std::move(part->buffer));
    if (retired_buffers.fetch_add(1, std::memory_order_relaxed) == 0) {
      REELFS_LOG_WARN("fuse",
                      "{}: the data channel refused a quarantined window ({}); its {}-byte buffer "
                      "is retired and the part is read over HTTP",
                      object_.key, refusal.ToString(), part->length);
    }
  }
  std::vector<Reply> replies;
  PartPtr fresh;
  std::shared_ptr<s3::ObjectStore> store;
  {
    MutexLock lock(mutex_);
    ++counters_.quarantined_windows;
    auto it = parts_.find(part->offset);
    if (it == parts_.end() || it->second != part) return;  // dropped (cancelled) or closed
    store = fallback_store_.lock();
    if (store != nullptr) {
      // Demand: a reader may be waiting on these bytes. The refused part's own reservation goes
      // when it is destroyed, right after this callback.
      budget_->ReserveForDemand(part->length);
      Result<std::unique_ptr<Buffer>> buffer = pool_->Allocate(part->length);
      if (buffer.ok()) {
        fresh = std::make_shared<Part>(part->offset, part->length, std::move(*buffer), budget_);
        fresh->http_only = true;
        it->second = fresh;
        ++counters_.requests;
      } else {
        budget_->Release(part->length);
        refusal = buffer.status();
      }
    }
    if (fresh == nullptr) FailPartLocked(it, refusal, &replies);
  }
  if (fresh != nullptr) Issue(*store, nullptr, {fresh});
  RunReplies(std::move(replies));
}

void Stream::Close() {
  std::vector<Reply> replies;
  {
    MutexLock lock(mutex_);
    if (closed_) return;
    closed_ = true;
    for (PendingRead& read : pending_) {
      replies.push_back({std::move(read.done), Status::Cancelled("file handle closed")});
    }
    pending_.clear();
    ResetLocked();
  }
  RunReplies(std::move(replies));
}

void Stream::RunReplies(std::vector<Reply> replies) {
  for (Reply& reply : replies) reply.done(std::move(reply.result));
}

class PrefetcherImpl final : public Prefetcher {
 public:
  PrefetcherImpl(std::shared_ptr<s3::ObjectStore> store,
                 std::shared_ptr<rdmaio::DataChannel> channel, std::shared_ptr<Stream> stream)
      : store_(std::move(store)), channel_(std::move(channel)), stream_(std::move(stream)) {}
  ~PrefetcherImpl() override { stream_->Close(); }

  void Read(uint64_t offset, size_t size, Callback<ReadData> done) override {
    stream_->Read(*store_, channel_.get(), offset, size, std::move(done));
  }
  void Prefetch() override { stream_->Prefetch(*store_, channel_.get()); }
  void Close() override { stream_->Close(); }
  PrefetchCounters counters() const override { return stream_->counters(); }

 private:
  const std::shared_ptr<s3::ObjectStore> store_;
  const std::shared_ptr<rdmaio::DataChannel> channel_;  // null: every part over the store
  const std::shared_ptr<Stream> stream_;
};

}  // namespace

std::unique_ptr<Prefetcher> CreatePrefetcher(std::shared_ptr<s3::ObjectStore> store,
                                             ObjectRef object, const PrefetchOptions& options,
                                             std::shared_ptr<MemoryBudget> budget,
                                             std::shared_ptr<BufferPool> pool,
                                             std::shared_ptr<rdmaio::DataChannel> channel) {
  auto stream = std::make_shared<Stream>(std::move(object), options, std::move(budget),
                                         std::move(pool), std::weak_ptr<s3::ObjectStore>(store));
  return std::make_unique<PrefetcherImpl>(std::move(store), std::move(channel), std::move(stream));
}

}  // namespace reelfs::fuse
