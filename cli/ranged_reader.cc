#include "cli/ranged_reader.h"

#include <algorithm>
#include <deque>
#include <map>
#include <vector>

#include "common/mutex.h"

namespace reelfs::cli {
namespace {

struct Completion {
  int slot = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
  Status status;
};

// Completions cross from the event loop to the caller through this queue. The callback's last
// touch of shared state is the push under the lock, so the caller may return as soon as it has
// seen every completion.
class CompletionQueue {
 public:
  void Push(Completion c) {
    MutexLock lock(mu_);
    queue_.push_back(std::move(c));
    cv_.notify_one();
  }
  Completion Pop() {
    MutexLock lock(mu_);
    cv_.wait(lock, [this] { return !queue_.empty(); });
    Completion c = std::move(queue_.front());
    queue_.pop_front();
    return c;
  }

 private:
  Mutex mu_;
  CondVar cv_;
  std::deque<Completion> queue_;  // GUARDED_BY(mu_)
};

}  // namespace

Status ReadRanges(s3::ObjectStore& store, const std::string& bucket, const std::string& key,
                  const s3::ObjectInfo& info, const RangedReadOptions& options,
                  const std::function<Status(uint64_t, std::span<const std::byte>)>& consume) {
  const uint64_t size = info.size;
  const uint64_t part = std::max<uint64_t>(1, options.part_size);
  const uint64_t parts = (size + part - 1) / part;
  if (parts == 0) return Status::Ok();
  // No more slots than parts and no buffer larger than the object: small objects are common and
  // zero-filling 8 x 8 MiB for a 4 KiB file would dominate the read.
  const int slots = static_cast<int>(std::min<uint64_t>(std::max(1, options.concurrency), parts));
  std::vector<std::vector<std::byte>> buffers(slots, std::vector<std::byte>(std::min(part, size)));
  CompletionQueue completions;

  uint64_t next_offset = 0;
  auto issue = [&](int slot) {
    uint64_t offset = next_offset;
    uint64_t length = std::min(part, size - offset);
    next_offset += length;
    s3::GetObjectRequest req{.bucket = bucket,
                             .key = key,
                             .range = s3::ByteRange{offset, length},
                             .buffer = std::span<std::byte>(buffers[slot].data(), length),
                             .if_match = info.etag};
    store.GetObject(req, [&completions, slot, offset, length](Result<s3::GetObjectResult> r) {
      Status s = r.status();
      if (s.ok() && r->bytes != length) s = Status::DataLoss("short ranged GET");
      completions.Push({slot, offset, length, std::move(s)});
    });
  };

  int in_flight = 0;
  for (int s = 0; s < slots; ++s, ++in_flight) issue(s);
  Status error;
  uint64_t next_consume = 0;
  std::map<uint64_t, Completion> waiting;  // in_order: completed ranges ahead of next_consume
  while (in_flight > 0) {
    Completion c = completions.Pop();
    --in_flight;
    if (!c.status.ok()) {
      if (error.ok()) error = std::move(c.status);
      continue;
    }
    if (!error.ok()) continue;
    waiting.emplace(c.offset, c);
    // Consume whatever is ready (everything, or the contiguous run when in order), then reuse
    // each consumed slot for the next range.
    while (!waiting.empty() && error.ok()) {
      auto it = options.in_order ? waiting.find(next_consume) : waiting.begin();
      if (it == waiting.end()) break;
      Completion ready = it->second;
      waiting.erase(it);
      next_consume = ready.offset + ready.length;
      error = consume(ready.offset,
                      std::span<const std::byte>(buffers[ready.slot].data(), ready.length));
      if (error.ok() && next_offset < size) {
        issue(ready.slot);
        ++in_flight;
      }
    }
  }
  return error;
}

}  // namespace reelfs::cli
