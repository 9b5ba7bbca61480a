// The stream, its worker, and the hand-over to the inner Prefetcher.
#include "fuse/core/splicing_prefetcher.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <sys/ioctl.h>

#include "common/cancel.h"
#include "common/log.h"
#include "common/mutex.h"
#include "common/pipe.h"
#include "common/thread_annotations.h"
#include "common/unique_fd.h"

namespace reelfs::fuse {
namespace {

constexpr std::string_view kSubject = "splice";

struct Pending {
  size_t size = 0;
  Callback<ReadData> done;
};

// Bytes of the stream already in a pipe: [offset, offset + n).
struct Filled {
  uint64_t offset = 0;
  size_t n = 0;
  std::shared_ptr<Pipe> pipe;
};

// How the stream keeps up with its reader, over a window of SpliceOptions::slow_window bytes
// served and slow_time passed. The worker's own; no lock.
struct Pace {
  std::chrono::steady_clock::time_point start{};  // the window's first Fill
  std::chrono::steady_clock::duration waited{};   // for bytes not yet in the socket
  uint64_t bytes = 0;                             // served in the window
};

// Pipes filled ahead of the reader, each of the last READ's size.
constexpr size_t kPipesAhead = 4;

// The most bytes the stream drops to get past a gap whose READ went the ordinary way; a larger
// gap ends splicing (reading it would cost more than the ordinary path's fetch of it).
constexpr uint64_t kMaxSkip = 8ull << 20;

class SplicingPrefetcher final : public Prefetcher {
 public:
  struct State {
    std::shared_ptr<Prefetcher> inner;
    std::shared_ptr<s3::BodySource> source;
    ObjectRef ref;
    SpliceOptions options;
    std::shared_ptr<SpliceStats> stats;
    std::shared_ptr<CancellationToken> cancel = CancellationToken::Create();  // Close: cut Open

    Mutex mu;
    CondVar cv;
    bool splicing GUARDED_BY(mu) = true;  // false: every read goes to `inner`, for good
    bool closed GUARDED_BY(mu) = false;
    bool started GUARDED_BY(mu) = false;             // a sequential read placed the stream
    std::optional<uint64_t> follows GUARDED_BY(mu);  // before that: where the last READ ended
    uint64_t pos GUARDED_BY(mu) = 0;                 // the object offset the stream serves next
    std::map<uint64_t, Pending> pending GUARDED_BY(mu);
    std::shared_ptr<s3::BodyStream> stream GUARDED_BY(mu);
    std::deque<Filled> ready GUARDED_BY(mu);  // pipes filled ahead, in stream order from pos
    size_t chunk GUARDED_BY(mu) = 0;          // the last READ's size: what is filled ahead
    std::thread worker GUARDED_BY(mu);
  };

  explicit SplicingPrefetcher(std::shared_ptr<State> state) : state_(std::move(state)) {}
  ~SplicingPrefetcher() override { Close(); }

  void Read(uint64_t offset, size_t size, Callback<ReadData> done) override {
    State& s = *state_;
    if (offset >= s.ref.size || size == 0) {
      done(ReadData{});
      return;
    }
    {
      MutexLock lock(s.mu);
      if (s.closed) {
        lock.unlock();
        done(Status::Cancelled("read on a closed file handle"));
        return;
      }
      // Not placed yet: the stream starts at a READ that begins where the one before it ended;
      // until then READs go the ordinary way, so a random reader never opens (and drops) one.
      if (s.splicing && !s.started) {
        if (s.follows == offset) {
          s.started = true;
          s.pos = offset;
        } else {
          s.follows = offset + size;
        }
      }
      if (s.splicing && s.started) {
        const bool in_window = offset >= s.pos && offset - s.pos <= s.options.reorder_window;
        if (in_window && !s.pending.contains(offset)) {
          s.pending[offset] = Pending{size, std::move(done)};
          if (!s.worker.joinable()) {  // started once: a failed start stops splicing
            try {
              s.worker = std::thread([state = state_] { Work(state); });
            } catch (const std::system_error& e) {
              // No thread (a process limit): everything waiting goes the ordinary way.
              std::vector<std::pair<uint64_t, Pending>> moved = StopLocked(s, e.what());
              lock.unlock();
              HandOver(s, std::move(moved));
              return;
            }
          }
          s.cv.notify_all();
          return;
        }
        // A second READ for an offset already waiting is served the ordinary way, and the
        // stream goes on; a jump forward beyond the window ends splicing.
        if (offset > s.pos && !in_window) {
          // A jump forward: a random reader; the ordinary path serves it better from here on.
          std::vector<std::pair<uint64_t, Pending>> moved = StopLocked(s, "a jump forward");
          lock.unlock();
          HandOver(s, std::move(moved));
        }
        // Behind the stream (a re-read): one read through the inner path, the stream goes on.
      }
    }
    s.inner->Read(offset, size, std::move(done));
  }

  void Prefetch() override { state_->inner->Prefetch(); }

  void Close() override {
    State& s = *state_;
    std::vector<std::pair<uint64_t, Pending>> cancelled;
    std::thread worker;
    {
      MutexLock lock(s.mu);
      if (s.closed) return;
      s.closed = true;
      s.splicing = false;
      for (auto& entry : s.pending) cancelled.emplace_back(entry.first, std::move(entry.second));
      s.pending.clear();
      if (s.stream != nullptr) s.stream->Abort();  // unblocks the worker's splice
      worker = std::move(s.worker);
      s.cv.notify_all();
    }
    s.cancel->Cancel();
    for (auto& [offset, p] : cancelled) p.done(Status::Cancelled("file handle closed"));
    s.inner->Close();
    if (worker.joinable()) {
      // The last reference may be dropped by a reply on the worker itself.
      if (worker.get_id() == std::this_thread::get_id()) {
        worker.detach();
      } else {
        worker.join();
      }
    }
  }

  PrefetchCounters counters() const override { return state_->inner->counters(); }

 private:
  // Ends splicing for good; returns the reads waiting, for HandOver once the lock is dropped.
  static std::vector<std::pair<uint64_t, Pending>> StopLocked(State& s, std::string_view why)
      REQUIRES(s.mu) {
    std::vector<std::pair<uint64_t, Pending>> moved;
    if (!s.splicing) return moved;
    s.splicing = false;
    s.stats->fallbacks.fetch_add(1, std::memory_order_relaxed);
    REELFS_LOG_DEBUG(kSubject, "{}/{}: reads go through the ordinary path from {} on: {}",
                     s.ref.bucket, s.ref.key, s.pos, why);
    for (auto& entry : s.pending) moved.emplace_back(entry.first, std::move(entry.second));
    s.pending.clear();
    if (s.stream != nullptr) s.stream->Abort();
    s.stream = nullptr;
    s.ready.clear();
    s.cv.notify_all();
    return moved;
  }

  static void HandOver(State& s, std::vector<std::pair<uint64_t, Pending>> moved) {
    for (auto& [offset, p] : moved) s.inner->Read(offset, p.size, std::move(p.done));
  }

  // READs waiting before pos (placed before the stream moved past them), for HandOver.
  static std::vector<std::pair<uint64_t, Pending>> TakeBehindLocked(State& s) REQUIRES(s.mu) {
    std::vector<std::pair<uint64_t, Pending>> behind;
    while (!s.pending.empty() && s.pending.begin()->first < s.pos) {
      behind.emplace_back(s.pending.begin()->first, std::move(s.pending.begin()->second));
      s.pending.erase(s.pending.begin());
    }
    return behind;
  }

  // Reads exactly n bytes of fd (blocking, or holding them already) and drops them.
  static Status Drop(int fd, uint64_t n, std::string_view what) {
    std::vector<std::byte> scratch(static_cast<size_t>(std::min<uint64_t>(n, 64 << 10)));
    while (n > 0) {
      const ssize_t r =
          ::read(fd, scratch.data(), static_cast<size_t>(std::min<uint64_t>(n, scratch.size())));
      if (r > 0) {
        n -= static_cast<uint64_t>(r);
        continue;
      }
      if (r == 0) return Status::Unavailable(std::string(what) + " ended early");
      if (errno == EINTR) continue;
      // EAGAIN: the socket's receive timeout (the idle timeout) passed, or a pipe filled ahead
      // lacks its bytes; either way the stream is no longer trusted.
      return ErrnoToStatus(errno == EAGAIN ? ETIMEDOUT : errno, "read " + std::string(what));
    }
    return Status::Ok();
  }

  // Drops the stream's bytes [at, to): first from the pipes filled ahead, then from the socket.
  static Status Skip(s3::BodyStream* stream, uint64_t at, uint64_t to, std::deque<Filled>& queue,
                     std::vector<std::shared_ptr<Pipe>>& spare) {
    while (at < to && !queue.empty()) {
      Filled& f = queue.front();
      if (f.offset != at) return Status::DataLoss("the pipe filled ahead is not at the gap");
      const uint64_t take = std::min<uint64_t>(f.n, to - at);
      REELFS_RETURN_IF_ERROR(Drop(f.pipe->read_end.get(), take, "a pipe filled ahead"));
      at += take;
      f.offset += take;
      f.n -= static_cast<size_t>(take);
      if (f.n == 0) {
        spare.push_back(std::move(f.pipe));
        queue.pop_front();
      }
    }
    // No stream yet: it opens where the next READ is.
    if (at == to || stream == nullptr) return Status::Ok();
    if (stream->offset() != at) return Status::DataLoss("the stream is not at the gap");
    REELFS_RETURN_IF_ERROR(Drop(stream->fd(), to - at, "the GET's body"));
    stream->Consumed(to - at);
    return Status::Ok();
  }

  // Moves exactly n bytes from the stream's socket into the pipe. A pipe counts slots, not
  // bytes, and a socket's bytes fill slots partly: a pipe that cannot take the rest is a failure
  // (EAGAIN with bytes waiting in the socket), never a wait, since nobody drains it meanwhile.
  // The time spent waiting for the socket's bytes goes to `pace`: a splice from an empty socket
  // blocks in the kernel until bytes come (the socket is blocking; SPLICE_F_NONBLOCK is the
  // pipe's), one that finds bytes takes them and returns.
  static Status Fill(s3::BodyStream& stream, Pipe& pipe, size_t n, std::chrono::milliseconds idle,
                     Pace& pace) {
    using Clock = std::chrono::steady_clock;
    if (pace.start == Clock::time_point{}) pace.start = Clock::now();
    size_t moved = 0;
    while (moved < n) {
      // Bytes already waiting before the call: an EAGAIN then means the pipe is full (bytes
      // that arrive during the call prove nothing).
      int waiting = 0;
      if (::ioctl(stream.fd(), FIONREAD, &waiting) != 0) waiting = 0;
      const Clock::time_point before = waiting == 0 ? Clock::now() : Clock::time_point{};
      const ssize_t r = ::splice(stream.fd(), nullptr, pipe.write_end.get(), nullptr, n - moved,
                                 SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (waiting == 0) pace.waited += Clock::now() - before;
      if (r > 0) {
        moved += static_cast<size_t>(r);
        continue;
      }
      if (r == 0) return Status::Unavailable("the server closed the GET's body early");
      if (errno == EINTR) continue;
      if (errno != EAGAIN) return ErrnoToStatus(errno, "splice from the GET");
      if (waiting > 0) {
        return Status::ResourceExhausted("the pipe is full of partial pages (" +
                                         std::to_string(moved) + " of " + std::to_string(n) +
                                         " bytes in it)");
      }
      pollfd p{stream.fd(), POLLIN | POLLRDHUP, 0};
      const Clock::time_point polled = Clock::now();
      const int ready = ::poll(&p, 1, idle.count() > 0 ? static_cast<int>(idle.count()) : -1);
      pace.waited += Clock::now() - polled;
      if (ready == 0) return ErrnoToStatus(ETIMEDOUT, "splice from the GET");
      if (ready < 0 && errno != EINTR) return ErrnoToStatus(errno, "poll the GET");
    }
    stream.Consumed(n);
    return Status::Ok();
  }

  // A pipe of the right capacity for n bytes: a spare one, or a new one.
  static Result<std::shared_ptr<Pipe>> PipeFor(std::vector<std::shared_ptr<Pipe>>& spare,
                                               size_t n) {
    while (!spare.empty()) {
      std::shared_ptr<Pipe> p = std::move(spare.back());
      spare.pop_back();
      if (p->capacity >= 2 * n) return p;
    }
    // Twice the bytes: the socket's pieces rarely fill their slots.
    REELFS_ASSIGN_OR_RETURN(Pipe opened, OpenPipe(std::max<size_t>(2 * n, 1 << 20)));
    auto made = std::make_shared<Pipe>(std::move(opened));
    if (made->capacity < 2 * n) {
      return Status::ResourceExhausted("a pipe cannot hold a READ of " + std::to_string(n) +
                                       " bytes (/proc/sys/fs/pipe-max-size)");
    }
    return made;
  }

  // The stream, opened at `at` if there is none yet.
  static Result<std::shared_ptr<s3::BodyStream>> StreamAt(State& s, uint64_t at) {
    {
      MutexLock lock(s.mu);
      if (s.stream != nullptr) return s.stream;
      // Stopped since this READ was taken (a jump or gap seen by Read): no stream to drop.
      if (!s.splicing) return Status::Cancelled("splicing stopped");
    }
    REELFS_ASSIGN_OR_RETURN(
        std::unique_ptr<s3::BodyStream> opened,
        s.source->Open(s3::BodyStreamRequest{
            s.ref.bucket, s.ref.key, s3::ByteRange{at, s.ref.size - at}, s.ref.etag, s.cancel}));
    s.stats->streams.fetch_add(1, std::memory_order_relaxed);
    std::shared_ptr<s3::BodyStream> stream = std::move(opened);
    MutexLock lock(s.mu);
    // Published before the first splice, so that Close can cut a stalled one.
    if (!s.splicing) {
      stream->Abort();
      return Status::Cancelled("file handle closed");
    }
    s.stream = stream;
    return stream;
  }

  // Moves exactly n bytes from one pipe into another (buffers change hands, no copy).
  static Status Move(Pipe& from, Pipe& to, size_t n) {
    size_t moved = 0;
    while (moved < n) {
      const ssize_t r = ::splice(from.read_end.get(), nullptr, to.write_end.get(), nullptr,
                                 n - moved, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return Status::ResourceExhausted("a pipe filled ahead could not be joined");
      moved += static_cast<size_t>(r);
    }
    return Status::Ok();
  }

  // Serves the READ at `at` from `queue`, the pipes filled ahead (contiguous from `at`): the
  // head pipe, joined with the bytes of the next ones and then of the socket when the READ is
  // larger (kernel readahead grows its READs), or a pipe filled now. What is left stays in
  // `queue`, in order. `*answered`: p got its reply (a failure after that is about the pipe).
  static Status Serve(State& s, uint64_t at, size_t n, Pending& p, std::deque<Filled>& queue,
                      std::vector<std::shared_ptr<Pipe>>& spare, Pace& pace, bool* answered) {
    REELFS_ASSIGN_OR_RETURN(std::shared_ptr<s3::BodyStream> stream, StreamAt(s, at));
    std::shared_ptr<Pipe> pipe;
    size_t in_pipe = 0;
    if (!queue.empty()) {
      if (queue.front().offset != at) {
        return Status::DataLoss("the pipe filled ahead is not at the READ");
      }
      pipe = std::move(queue.front().pipe);
      in_pipe = queue.front().n;
      queue.pop_front();
      if (in_pipe < n && pipe->capacity < 2 * n) {
        // Kernel readahead grew its READs past the size the pipes ahead were made for: their
        // buffers move into a pipe that holds the READ (no copy); none that large: a failure.
        REELFS_ASSIGN_OR_RETURN(std::shared_ptr<Pipe> larger, PipeFor(spare, n));
        REELFS_RETURN_IF_ERROR(Move(*pipe, *larger, in_pipe));
        spare.push_back(std::move(pipe));
        pipe = std::move(larger);
      }
      while (in_pipe < n && !queue.empty()) {
        Filled& next = queue.front();
        const size_t take = std::min(next.n, n - in_pipe);
        REELFS_RETURN_IF_ERROR(Move(*next.pipe, *pipe, take));
        in_pipe += take;
        next.offset += take;
        next.n -= take;
        if (next.n == 0) {
          spare.push_back(std::move(next.pipe));
          queue.pop_front();
        }
      }
    } else {
      REELFS_ASSIGN_OR_RETURN(pipe, PipeFor(spare, n));
    }
    if (in_pipe < n) {
      // Every pipe filled ahead is in this one now: the socket continues where it ends.
      if (stream->offset() != at + in_pipe)
        return Status::DataLoss("the stream is not at the READ");
      REELFS_RETURN_IF_ERROR(Fill(*stream, *pipe, n - in_pipe, s.options.idle_timeout, pace));
      in_pipe = n;
    }
    s.stats->reads.fetch_add(1, std::memory_order_relaxed);
    s.stats->bytes.fetch_add(n, std::memory_order_relaxed);
    ReadData data;
    data.fd = pipe->read_end.get();
    data.fd_bytes = n;
    data.keepalive = pipe;
    p.done(std::move(data));
    *answered = true;
    // The reply took exactly its n bytes, or the pipe no longer matches the stream (an
    // interrupted request answered with an error leaves them): splicing ends there.
    int left = 0;
    if (::ioctl(pipe->read_end.get(), FIONREAD, &left) != 0 ||
        static_cast<size_t>(left) != in_pipe - n) {
      return Status::Aborted("a reply did not take its bytes from the pipe");
    }
    if (left == 0) {
      spare.push_back(std::move(pipe));
    } else {
      queue.push_front(Filled{at + n, in_pipe - n, std::move(pipe)});
    }
    return Status::Ok();
  }

  // After a window of bytes served: whether the worker waited on the socket so long that the
  // stream, not its reader, set the pace. Starts the next window.
  static bool SlowerThanReader(State& s, Pace& pace, std::string* why) REQUIRES(s.mu) {
    using namespace std::chrono;
    if (s.options.slow_window == 0 || pace.bytes < s.options.slow_window) return false;
    const steady_clock::duration took = steady_clock::now() - pace.start;
    if (took < s.options.slow_time) return false;
    const double share =
        took.count() > 0 ? static_cast<double>(pace.waited.count()) / took.count() : 0;
    const auto ms = [](steady_clock::duration d) { return duration_cast<milliseconds>(d).count(); };
    REELFS_LOG_DEBUG(kSubject, "{}/{}: {} MiB to {} in {} ms, {} ms of them waiting on the socket",
                     s.ref.bucket, s.ref.key, pace.bytes >> 20, s.pos, ms(took), ms(pace.waited));
    const bool slow = share > s.options.slow_share;
    if (slow) {
      *why = fmt::format(
          "the connection is slower than its reader: {} MiB took {} ms, {} of them waiting for its "
          "bytes",
          pace.bytes >> 20, ms(took), ms(pace.waited));
    }
    pace = Pace{};
    return slow;
  }

  static void Work(std::shared_ptr<State> state) {
    State& s = *state;
    std::vector<std::shared_ptr<Pipe>> spare;
    Pace pace;
    MutexLock lock(s.mu);
    for (;;) {
      if (!s.splicing) return;
      auto it = s.pending.find(s.pos);
      if (it != s.pending.end()) {
        const uint64_t at = s.pos;
        Pending p = std::move(it->second);
        s.pending.erase(it);
        const size_t n = static_cast<size_t>(std::min<uint64_t>(p.size, s.ref.size - at));
        s.pos = at + n;  // later READs are placed after this one while it is spliced
        s.chunk = n;
        // The pipes filled ahead are this thread's while it serves (a Stop meanwhile clears
        // nothing it uses; they go back only while splicing goes on).
        std::deque<Filled> queue = std::move(s.ready);
        s.ready.clear();
        lock.unlock();
        bool answered = false;
        const Status served = Serve(s, at, n, p, queue, spare, pace, &answered);
        lock.lock();
        if (!served.ok()) {
          auto moved = StopLocked(s, served.message());
          lock.unlock();
          if (!answered) moved.insert(moved.begin(), std::make_pair(at, std::move(p)));
          HandOver(s, std::move(moved));
          return;
        }
        if (!s.splicing) return;
        s.ready = std::move(queue);
        pace.bytes += n;
        if (std::string why; SlowerThanReader(s, pace, &why)) {
          // The ordinary path's parallel GETs are not bound by this connection's pace.
          s.stats->slow_streams.fetch_add(1, std::memory_order_relaxed);
          auto moved = StopLocked(s, why);
          lock.unlock();
          HandOver(s, std::move(moved));
          return;
        }
        // READs that overlap what was just served (placed before it was) cannot be spliced.
        if (auto behind = TakeBehindLocked(s); !behind.empty()) {
          lock.unlock();
          HandOver(s, std::move(behind));
          lock.lock();
        }
        continue;
      }
      if (!s.pending.empty()) {
        // The kernel sent a later READ first; the one at pos is usually a moment behind.
        const bool filled = s.cv.wait_for(lock, s.options.reorder_wait, [&]() REQUIRES(s.mu) {
          return !s.splicing || s.pending.contains(s.pos);
        });
        if (!s.splicing) return;
        if (filled) continue;
        // Every READ waiting is after pos (earlier ones went the ordinary way).
        const uint64_t at = s.pos;
        const uint64_t to = s.pending.begin()->first;
        if (to - at > kMaxSkip) {
          auto moved = StopLocked(s, "a gap before the reads waiting");
          lock.unlock();
          HandOver(s, std::move(moved));
          return;
        }
        // The READ for the gap went the ordinary way before the stream was placed (the kernel's
        // READs arrive out of order at the start) or will come late and go there as a re-read:
        // the stream drops those bytes and serves the READs after them.
        s.pos = to;
        std::deque<Filled> queue = std::move(s.ready);
        s.ready.clear();
        std::shared_ptr<s3::BodyStream> stream = s.stream;
        lock.unlock();
        const Status skipped = Skip(stream.get(), at, to, queue, spare);
        lock.lock();
        if (!skipped.ok()) {
          auto moved = StopLocked(s, skipped.message());
          lock.unlock();
          HandOver(s, std::move(moved));
          return;
        }
        if (!s.splicing) return;
        s.ready = std::move(queue);
        s.stats->gaps_skipped.fetch_add(1, std::memory_order_relaxed);
        REELFS_LOG_DEBUG(kSubject,
                         "{}/{}: skipped {} bytes at {} (their READ went the ordinary way)",
                         s.ref.bucket, s.ref.key, to - at, at);
        if (auto behind = TakeBehindLocked(s); !behind.empty()) {
          lock.unlock();
          HandOver(s, std::move(behind));
          lock.lock();
        }
        continue;
      }
      // Nothing asked: keep the socket drained ahead of the reader (the server keeps sending
      // while READs make their round trip), up to kPipesAhead pipes of the last READ's size.
      uint64_t ahead_at = s.pos;
      for (const Filled& f : s.ready) ahead_at = f.offset + f.n;
      if (s.stream != nullptr && s.chunk > 0 && s.ready.size() < kPipesAhead &&
          ahead_at < s.ref.size) {
        std::shared_ptr<s3::BodyStream> stream = s.stream;
        const size_t n = static_cast<size_t>(std::min<uint64_t>(s.chunk, s.ref.size - ahead_at));
        lock.unlock();
        Status failed;
        Result<std::shared_ptr<Pipe>> pipe = PipeFor(spare, n);
        if (!pipe.ok()) {
          failed = pipe.status();
        } else if (stream->offset() != ahead_at) {
          failed = Status::DataLoss("the stream is not where the pipes filled ahead end");
        } else {
          failed = Fill(*stream, **pipe, n, s.options.idle_timeout, pace);
        }
        lock.lock();
        if (!failed.ok()) {
          auto moved = StopLocked(s, failed.message());
          lock.unlock();
          HandOver(s, std::move(moved));
          return;
        }
        if (!s.splicing) return;
        s.ready.push_back(Filled{ahead_at, n, std::move(pipe).value()});
        continue;
      }
      s.cv.wait(lock, [&]() REQUIRES(s.mu) { return !s.splicing || !s.pending.empty(); });
    }
  }

  std::shared_ptr<State> state_;
};

}  // namespace

std::unique_ptr<Prefetcher> CreateSplicingPrefetcher(std::unique_ptr<Prefetcher> inner,
                                                     std::shared_ptr<s3::BodySource> source,
                                                     ObjectRef object, const SpliceOptions& options,
                                                     std::shared_ptr<SpliceStats> stats) {
  if (source == nullptr || object.size < options.min_object_size || object.etag.empty()) {
    return inner;
  }
  auto state = std::make_shared<SplicingPrefetcher::State>();
  state->inner = std::move(inner);
  state->source = std::move(source);
  state->ref = std::move(object);
  state->options = options;
  state->stats = stats != nullptr ? std::move(stats) : std::make_shared<SpliceStats>();
  return std::make_unique<SplicingPrefetcher>(std::move(state));
}

}  // namespace reelfs::fuse
