// Upload (upload.h): the part schedule, back-pressure and the failure path.
//
// Everything below lives in State, under its one mutex:
//  - `current` is the part being filled. It is allocated at its first byte, so a file whose size
//    is an exact multiple of the part size ends with no empty buffer (and no empty last part).
//    A full one moves to `waiting`.
//  - `waiting` parts go out in part-number order once the upload id is known and fewer than
//    max_in_flight UploadParts are in flight; the first full part sends the create.
//  - Pump() turns the state into work: store requests, run once the lock is dropped, and replies,
//    queued in `replies` and delivered by one thread at a time (Deliver), so that write answers
//    keep their order whichever thread freed them.
//  - Each payload (a part, or the single PutObject) goes out through the PartSender; its answer
//    is the ETag COMPLETE names, whichever path the bytes took.
//  - The first failure sticks in `error`: every buffer is dropped, held writes are answered, and
//    once nothing is in flight the multipart upload is aborted and then Finish answered.
#include "fuse/core/upload.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "common/log.h"
#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "fuse/core/dir_listing.h"

namespace reelfs::fuse {
namespace {

constexpr uint32_t kPartsPerSize = 1000;  // parts of one size before the size doubles
constexpr uint32_t kMaxDoublings = 9;     // 512 x base for parts 9001..10000

// The bytes parts 1..kMaxParts hold together for `base`: with a small base this, not
// kMaxObjectSize, is the largest file.
uint64_t CapacityOfAllParts(uint64_t base) {
  uint64_t total = 0;
  for (uint32_t first = 1; first <= kMaxParts; first += kPartsPerSize) {
    total += kPartsPerSize * PartSize(first, base);
  }
  return total;
}

// Heap memory for an Upload without a pool (never registered).
class PlainBuffer final : public Buffer {
 public:
  explicit PlainBuffer(uint64_t size)
      : bytes_(std::make_unique_for_overwrite<std::byte[]>(size)), size_(size) {}
  std::span<std::byte> bytes() override { return {bytes_.get(), static_cast<size_t>(size_)}; }

 private:
  std::unique_ptr<std::byte[]> bytes_;
  uint64_t size_;
};

// One part's bytes and the budget they hold (`capacity`, reserved when allocated).
struct PartBuffer {
  uint32_t number = 0;
  std::unique_ptr<Buffer> buffer;  // null: not allocated yet, or released
  uint64_t capacity = 0;
  uint64_t filled = 0;

  std::span<const std::byte> body() const {
    return buffer->bytes().first(static_cast<size_t>(filled));
  }
  // The body as a registered window (region null when the buffer is not registered).
  rdmaio::RegisteredWindow window() const {
    rdmaio::RegisteredWindow w = buffer->registered_window();
    w.length = filled;
    return w;
  }
};

using Requests = std::vector<std::function<void()>>;

}  // namespace

uint64_t PartSize(uint32_t part_number, uint64_t base_part_size) {
  const uint32_t doublings =
      std::min((std::max<uint32_t>(part_number, 1) - 1) / kPartsPerSize, kMaxDoublings);
  // Capping the base first keeps the shift from overflowing.
  return std::min(std::min(base_part_size, kMaxPartSize) << doublings, kMaxPartSize);
}

struct Upload::State {
  State(std::shared_ptr<s3::ObjectStore> store_in, std::shared_ptr<MemoryBudget> budget_in,
        std::string bucket_in, std::string key_in, Options options_in, Clock& clock_in,
        Transport transport)
      : store(std::move(store_in)),
        budget(std::move(budget_in)),
        pool(std::move(transport.pool)),
        sender(transport.sender != nullptr ? std::move(transport.sender)
                                           : CreateStorePartSender(store)),
        bucket(std::move(bucket_in)),
        key(std::move(key_in)),
        shown_key(PrintableKey(key)),
        options(Normalized(std::move(options_in))),
        clock(clock_in),
        max_size(std::min(kMaxObjectSize, CapacityOfAllParts(options.part_size))) {}

  static Options Normalized(Options options) {
    if (options.part_size == 0) options.part_size = kMinPartSize;
    options.max_in_flight = std::max<uint32_t>(options.max_in_flight, 1);
    return options;
  }

  // --- Under the lock ---

  // Copies `data` into part buffers; true if it filled at least one. A buffer that cannot be
  // allocated sets `error`.
  bool AppendLocked(std::span<const std::byte> data) REQUIRES(mutex);
  void ReleaseLocked(PartBuffer& part) REQUIRES(mutex);
  void DropBuffersLocked() REQUIRES(mutex);
  // Whether a write that filled a part must wait before it is answered (upload.h).
  bool BackPressureLocked() const REQUIRES(mutex);
  void AnswerFinishLocked() REQUIRES(mutex);
  // Moves the upload forward: see the comment at the top.
  void PumpLocked(const std::shared_ptr<Upload>& self, Requests* requests) REQUIRES(mutex);

  // --- Without the lock ---

  // Sends `requests`, then delivers the queued replies.
  void Run(Requests requests) EXCLUDES(mutex);
  void Deliver() EXCLUDES(mutex);

  void OnCreated(const std::shared_ptr<Upload>& self, Result<std::string> r) EXCLUDES(mutex);
  void OnPart(const std::shared_ptr<Upload>& self, const std::shared_ptr<PartBuffer>& part,
              Result<PartSent> r) EXCLUDES(mutex);
  void OnFinal(const std::shared_ptr<Upload>& self, const std::shared_ptr<PartBuffer>& body,
               std::string_view operation, Result<std::string> r) EXCLUDES(mutex);
  void OnAborted(const std::shared_ptr<Upload>& self, const std::string& upload_id, Status status)
      EXCLUDES(mutex);

  const std::shared_ptr<s3::ObjectStore> store;
  const std::shared_ptr<MemoryBudget> budget;
  const std::shared_ptr<BufferPool> pool;    // null: PlainBuffer
  const std::shared_ptr<PartSender> sender;  // the payloads; the store's without a transport
  const std::string bucket;
  const std::string key;
  const std::string shown_key;  // for messages: control bytes escaped
  const Options options;
  Clock& clock;
  const uint64_t max_size;  // the largest file: S3's object size limit or 10 000 parts

  mutable Mutex mutex;
  uint64_t size GUARDED_BY(mutex) = 0;
  uint64_t reserved GUARDED_BY(mutex) = 0;           // budget held by buffers still alive
  PartBuffer current GUARDED_BY(mutex);              // buffer == nullptr: not allocated yet
  uint32_t next_part GUARDED_BY(mutex) = 1;          // the number of `current`
  std::deque<PartBuffer> waiting GUARDED_BY(mutex);  // full, not sent yet
  uint32_t in_flight GUARDED_BY(mutex) = 0;
  uint32_t parts_started GUARDED_BY(mutex) = 0;
  std::map<int, std::string> etags GUARDED_BY(mutex);  // answered parts
  bool create_sent GUARDED_BY(mutex) = false;
  bool create_pending GUARDED_BY(mutex) = false;
  std::string upload_id GUARDED_BY(mutex);  // empty: no multipart upload (yet)
  bool abort_sent GUARDED_BY(mutex) = false;
  bool abort_pending GUARDED_BY(mutex) = false;
  bool finish_called GUARDED_BY(mutex) = false;
  bool final_sent GUARDED_BY(mutex) = false;  // PutObject or CompleteMultipartUpload
  bool final_pending GUARDED_BY(mutex) = false;
  bool aborted GUARDED_BY(mutex) = false;  // Abort() was called
  Status error GUARDED_BY(mutex);          // the first failure, sticky
  std::deque<std::function<void(Status)>> held_writes GUARDED_BY(mutex);
  std::vector<s3::Callback<s3::ObjectInfo>> finish_waiters GUARDED_BY(mutex);
  std::optional<Result<s3::ObjectInfo>> result GUARDED_BY(mutex);  // Finish's answer, once known
  std::deque<std::function<void()>> replies GUARDED_BY(mutex);
  bool delivering GUARDED_BY(mutex) = false;
};

bool Upload::State::AppendLocked(std::span<const std::byte> data) {
  bool filled_one = false;
  while (!data.empty()) {
    if (current.buffer == nullptr) {
      const uint64_t capacity = PartSize(next_part, options.part_size);
      std::unique_ptr<Buffer> buffer;
      if (pool != nullptr) {
        // Registered once when the pool first allocates it, then recycled: no write registers.
        Result<std::unique_ptr<Buffer>> allocated = pool->Allocate(capacity);
        if (!allocated.ok()) {
          error = allocated.status().WithContext(
              fmt::format("part {} of '{}' ({} bytes)", next_part, shown_key, capacity));
          return filled_one;
        }
        buffer = std::move(allocated).value();
      } else {
        buffer = std::make_unique<PlainBuffer>(capacity);
      }
      budget->ReserveForDemand(capacity);
      reserved += capacity;
      current.number = next_part;
      current.buffer = std::move(buffer);
      current.capacity = capacity;
      current.filled = 0;
    }
    const size_t n =
        static_cast<size_t>(std::min<uint64_t>(data.size(), current.capacity - current.filled));
    std::memcpy(current.buffer->bytes().data() + current.filled, data.data(), n);
    current.filled += n;
    size += n;
    data = data.subspan(n);
    if (current.filled == current.capacity) {
      waiting.push_back(std::move(current));
      current = PartBuffer{};
      ++next_part;
      filled_one = true;
    }
  }
  return filled_one;
}

void Upload::State::ReleaseLocked(PartBuffer& part) {
  budget->Release(part.capacity);
  reserved -= part.capacity;
  part.capacity = 0;
  part.buffer.reset();
}

void Upload::State::DropBuffersLocked() {
  ReleaseLocked(current);
  for (PartBuffer& part : waiting) ReleaseLocked(part);
  waiting.clear();
}

bool Upload::State::BackPressureLocked() const {
  const uint64_t outstanding = in_flight + waiting.size();
  if (outstanding >= options.max_in_flight) return true;
  // Over the shared limit this upload drains before it takes more: its parts answering is what
  // frees memory.
  return outstanding > 0 && budget->used() > budget->limit();
}

void Upload::State::AnswerFinishLocked() {
  for (auto& waiter : finish_waiters) {
    replies.push_back([waiter = std::move(waiter), r = *result] { waiter(r); });
  }
  finish_waiters.clear();
}

void Upload::State::PumpLocked(const std::shared_ptr<Upload>& self, Requests* requests) {
  if (!error.ok()) {
    DropBuffersLocked();
    while (!held_writes.empty()) {
      replies.push_back([done = std::move(held_writes.front()), e = error] { done(e); });
      held_writes.pop_front();
    }
    // The abort waits for every request that may still add to the upload (or create it).
    const bool quiet = in_flight == 0 && !create_pending && !final_pending;
    if (quiet && !upload_id.empty() && !abort_sent) {
      abort_sent = true;
      abort_pending = true;
      requests->push_back([this, self, id = upload_id] {
        s3::AbortMultipartUploadRequest req;
        req.bucket = bucket;
        req.key = key;
        req.upload_id = id;
        store->AbortMultipartUpload(req, [self, id](Status status) {
          self->state_->OnAborted(self, id, std::move(status));
        });
      });
    }
    if (quiet && !abort_pending && finish_called && !result.has_value()) {
      result.emplace(error);
      AnswerFinishLocked();
    }
    return;
  }

  if (!waiting.empty() && !create_sent) {
    create_sent = true;
    create_pending = true;
    requests->push_back([this, self] {
      s3::CreateMultipartUploadRequest req;
      req.bucket = bucket;
      req.key = key;
      req.content_type = options.content_type;
      store->CreateMultipartUpload(
          req, [self](Result<std::string> r) { self->state_->OnCreated(self, std::move(r)); });
    });
  }

  while (!upload_id.empty() && !waiting.empty() && in_flight < options.max_in_flight) {
    auto part = std::make_shared<PartBuffer>(std::move(waiting.front()));
    waiting.pop_front();
    ++in_flight;
    ++parts_started;
    requests->push_back([this, self, part, id = upload_id] {
      PartPayload payload;
      payload.bucket = bucket;
      payload.key = key;
      payload.upload_id = id;
      payload.part_number = static_cast<int>(part->number);
      payload.body = part->body();
      payload.window = part->window();
      sender->Send(payload, [self, part](Result<PartSent> r) {
        self->state_->OnPart(self, part, std::move(r));
      });
    });
  }

  if (!BackPressureLocked()) {
    while (!held_writes.empty()) {
      replies.push_back([done = std::move(held_writes.front())] { done(Status::Ok()); });
      held_writes.pop_front();
    }
  }

  if (finish_called && !final_sent && waiting.empty() && in_flight == 0 && !create_pending) {
    final_sent = true;
    final_pending = true;
    if (upload_id.empty()) {
      // No part ever filled: the whole file (possibly empty) is one PUT.
      auto body = std::make_shared<PartBuffer>(std::move(current));
      current = PartBuffer{};
      requests->push_back([this, self, body] {
        PartPayload payload;
        payload.bucket = bucket;
        payload.key = key;
        payload.content_type = options.content_type;
        if (body->buffer != nullptr) {
          payload.body = body->body();
          payload.window = body->window();
        }
        sender->Send(payload, [self, body](Result<PartSent> r) {
          if (r.ok() && r->retire_buffer && body->buffer != nullptr) {
            RetireForever(std::move(body->buffer));
          }
          self->state_->OnFinal(self, body, "PutObject",
                                r.ok() ? Result<std::string>(std::move(r->etag))
                                       : Result<std::string>(std::move(r).status()));
        });
      });
    } else {
      s3::CompleteMultipartUploadRequest req;
      req.bucket = bucket;
      req.key = key;
      req.upload_id = upload_id;
      for (const auto& [number, etag] : etags) req.parts.push_back({number, etag});
      requests->push_back([this, self, req = std::move(req)] {
        store->CompleteMultipartUpload(req, [self](Result<std::string> r) {
          self->state_->OnFinal(self, nullptr, "CompleteMultipartUpload", std::move(r));
        });
      });
    }
  }
}

void Upload::State::Run(Requests requests) {
  for (auto& request : requests) request();
  Deliver();
}

void Upload::State::Deliver() {
  MutexLock lock(mutex);
  if (delivering) return;  // the thread delivering now will also deliver ours, in order
  delivering = true;
  while (!replies.empty()) {
    std::function<void()> reply = std::move(replies.front());
    replies.pop_front();
    lock.unlock();
    reply();
    lock.lock();
  }
  delivering = false;
}

void Upload::State::OnCreated(const std::shared_ptr<Upload>& self, Result<std::string> r) {
  Requests requests;
  {
    MutexLock lock(mutex);
    create_pending = false;
    if (r.ok()) {
      // Kept even after a failure or an Abort in the meantime: Pump aborts it.
      upload_id = std::move(r).value();
    } else if (error.ok()) {
      error = r.status().WithContext(fmt::format("CreateMultipartUpload of '{}'", shown_key));
    }
    PumpLocked(self, &requests);
  }
  Run(std::move(requests));
}

void Upload::State::OnPart(const std::shared_ptr<Upload>& self,
                           const std::shared_ptr<PartBuffer>& part, Result<PartSent> r) {
  // Never back to the pool: the channel refused the window (part_sender.h).
  if (r.ok() && r->retire_buffer && part->buffer != nullptr) {
    RetireForever(std::move(part->buffer));
  }
  Requests requests;
  {
    MutexLock lock(mutex);
    --in_flight;
    ReleaseLocked(*part);
    if (r.ok()) {
      etags[static_cast<int>(part->number)] = std::move(r->etag);
    } else if (error.ok()) {
      error = r.status().WithContext(fmt::format("UploadPart {} of '{}'", part->number, shown_key));
    }
    PumpLocked(self, &requests);
  }
  Run(std::move(requests));
}

void Upload::State::OnFinal(const std::shared_ptr<Upload>& self,
                            const std::shared_ptr<PartBuffer>& body, std::string_view operation,
                            Result<std::string> r) {
  Requests requests;
  {
    MutexLock lock(mutex);
    final_pending = false;
    if (body != nullptr) ReleaseLocked(*body);
    if (r.ok() && error.ok()) {
      s3::ObjectInfo info;
      info.key = key;
      info.size = size;
      info.etag = std::move(r).value();
      info.last_modified = clock.WallNow();
      info.content_type = options.content_type;
      result.emplace(std::move(info));
      AnswerFinishLocked();
    } else {
      if (error.ok())
        error = r.status().WithContext(fmt::format("{} of '{}'", operation, shown_key));
      PumpLocked(self, &requests);
    }
  }
  Run(std::move(requests));
}

void Upload::State::OnAborted(const std::shared_ptr<Upload>& self, const std::string& upload_id_in,
                              Status status) {
  if (!status.ok()) {
    // Nothing to answer with it: the upload has failed already. The parts stay on the server.
    REELFS_LOG_WARN("fuse",
                    "AbortMultipartUpload of '{}' (upload id {}) failed: {}; its parts stay on "
                    "the server until a lifecycle rule removes them",
                    shown_key, upload_id_in, status.ToString());
  }
  Requests requests;
  {
    MutexLock lock(mutex);
    abort_pending = false;
    PumpLocked(self, &requests);
  }
  Run(std::move(requests));
}

// --- Upload ---

std::shared_ptr<Upload> Upload::Create(std::shared_ptr<s3::ObjectStore> store,
                                       std::shared_ptr<MemoryBudget> budget, std::string bucket,
                                       std::string key, Options options, Clock& clock,
                                       Transport transport) {
  // The constructor is private: make_shared cannot reach it.
  return std::shared_ptr<Upload>(new Upload(std::move(store), std::move(budget), std::move(bucket),
                                            std::move(key), std::move(options), clock,
                                            std::move(transport)));
}

Upload::Upload(std::shared_ptr<s3::ObjectStore> store, std::shared_ptr<MemoryBudget> budget,
               std::string bucket, std::string key, Options options, Clock& clock,
               Transport transport)
    : state_(std::make_unique<State>(std::move(store), std::move(budget), std::move(bucket),
                                     std::move(key), std::move(options), clock,
                                     std::move(transport))) {}

Upload::~Upload() {
  State& s = *state_;
  MutexLock lock(s.mutex);
  // Only buffers never sent are left (every request holds the Upload until it answers), but
  // release whatever is counted rather than trust that.
  if (s.reserved > 0) s.budget->Release(s.reserved);
  s.reserved = 0;
  if (!s.upload_id.empty() && !s.abort_sent && !s.final_sent) {
    REELFS_LOG_WARN("fuse",
                    "upload of '{}' dropped without Finish or Abort: multipart upload {} is left "
                    "on the server",
                    s.shown_key, s.upload_id);
  }
}

void Upload::Write(uint64_t offset, std::span<const std::byte> data,
                   std::function<void(Status)> done) {
  State& s = *state_;
  const std::shared_ptr<Upload> self = shared_from_this();
  Requests requests;
  {
    MutexLock lock(s.mutex);
    Status refusal;
    if (s.finish_called || s.aborted) {
      refusal =
          Status(StatusCode::kFailedPrecondition, StatusReason::kBadHandle,
                 fmt::format("upload of '{}' finished: Write of {} bytes at offset {} refused",
                             s.shown_key, data.size(), offset));
    } else if (!s.error.ok()) {
      refusal = s.error;
    } else if (offset != s.size) {
      refusal = Status::InvalidArgument(
          fmt::format("Write to '{}' at offset {}: a new file is written sequentially, the next "
                      "write must be at offset {}",
                      s.shown_key, offset, s.size));
    } else if (data.size() > s.max_size - s.size) {
      refusal = Status(StatusCode::kOutOfRange, StatusReason::kFileTooLarge,
                       fmt::format("Write to '{}' of {} bytes at offset {}: past the largest "
                                   "object S3 takes in {} parts of {}+ bytes ({} bytes)",
                                   s.shown_key, data.size(), offset, kMaxParts, s.options.part_size,
                                   s.max_size));
    }
    if (!refusal.ok()) {
      s.replies.push_back(
          [done = std::move(done), refusal = std::move(refusal)] { done(refusal); });
    } else {
      const bool filled_one = s.AppendLocked(data);
      if (filled_one || !s.held_writes.empty() || !s.error.ok()) {
        // Pump answers it at once unless back-pressure holds it; behind a held write it waits
        // its turn. A buffer that could not be allocated failed the upload: Pump answers that.
        s.held_writes.push_back(std::move(done));
      } else {
        s.replies.push_back([done = std::move(done)] { done(Status::Ok()); });
      }
      s.PumpLocked(self, &requests);
    }
  }
  s.Run(std::move(requests));
}

Status Upload::Truncate(uint64_t size) {
  State& s = *state_;
  MutexLock lock(s.mutex);
  if (size == s.size) return Status::Ok();
  if (s.finish_called || s.aborted) {
    return Status(
        StatusCode::kFailedPrecondition, StatusReason::kBadHandle,
        fmt::format("upload of '{}' finished: Truncate to {} bytes refused", s.shown_key, size));
  }
  if (!s.error.ok()) return s.error;
  if (size == 0 && s.next_part == 1) {
    // Nothing has left the buffer: the file can start over.
    s.ReleaseLocked(s.current);
    s.current = PartBuffer{};
    s.size = 0;
    return Status::Ok();
  }
  // EPERM, as for every other truncate the mount cannot do (docs/semantics.md "Writes").
  return Status(
      StatusCode::kPermissionDenied, StatusReason::kNotPermitted,
      fmt::format(
          "Truncate of '{}' to {} bytes: a file being uploaded ({} bytes, {} parts sent) can only "
          "be truncated to its size, or to 0 before its first part is sent",
          s.shown_key, size, s.size, s.next_part - 1));
}

void Upload::Finish(s3::Callback<s3::ObjectInfo> done) {
  State& s = *state_;
  const std::shared_ptr<Upload> self = shared_from_this();
  Requests requests;
  {
    MutexLock lock(s.mutex);
    if (s.result.has_value()) {
      s.replies.push_back([done = std::move(done), r = *s.result] { done(r); });
    } else {
      s.finish_waiters.push_back(std::move(done));
      if (!s.finish_called) {
        s.finish_called = true;
        // A multipart file sends what is buffered as its last part (which may be short).
        if (s.error.ok() && s.next_part > 1 && s.current.buffer != nullptr) {
          s.waiting.push_back(std::move(s.current));
          s.current = PartBuffer{};
          ++s.next_part;
        }
      }
      s.PumpLocked(self, &requests);
    }
  }
  s.Run(std::move(requests));
}

void Upload::Abort() {
  State& s = *state_;
  const std::shared_ptr<Upload> self = shared_from_this();
  Requests requests;
  {
    MutexLock lock(s.mutex);
    // Once the PUT or COMPLETE is out, its answer decides (and a failed one aborts by itself).
    if (s.aborted || s.final_sent) return;
    s.aborted = true;
    if (s.error.ok())
      s.error = Status::Cancelled(fmt::format("upload of '{}' aborted", s.shown_key));
    s.PumpLocked(self, &requests);
  }
  s.Run(std::move(requests));
}

const std::string& Upload::key() const { return state_->key; }

uint64_t Upload::size() const {
  MutexLock lock(state_->mutex);
  return state_->size;
}

uint32_t Upload::parts_started() const {
  MutexLock lock(state_->mutex);
  return state_->parts_started;
}

bool Upload::finished() const {
  MutexLock lock(state_->mutex);
  return state_->finish_called || state_->aborted;
}

}  // namespace reelfs::fuse
