#include "cli/uploader.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <future>
#include <thread>

#include <fmt/format.h>
#include <sys/stat.h>

#include "common/clock.h"
#include "common/unique_fd.h"
#include "fuse/core/memory_budget.h"
#include "fuse/core/upload.h"

namespace reelfs::cli {
namespace {

// Bytes read from the file per Write. Upload copies them into its part buffer, so this only
// sets the number of read(2) calls and Write round trips.
constexpr uint64_t kChunk = 4ull << 20;

// Whether `s` will fail every other file of the copy too, so starting more is pointless. A write
// never answers NoSuchKey: kNotFound from one means the bucket (or the upload) is gone.
bool StopsTheCopy(const Status& s) {
  switch (s.code()) {
    case StatusCode::kUnauthenticated:
    case StatusCode::kPermissionDenied:
    case StatusCode::kNotFound:
    case StatusCode::kUnavailable:
    case StatusCode::kCancelled:
      return true;
    default:
      return false;
  }
}

Status ReadSome(int fd, std::span<std::byte> buf, size_t* n) {
  while (true) {
    ssize_t r = ::read(fd, buf.data(), buf.size());
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return ErrnoToStatus(errno, "read");
    *n = static_cast<size_t>(r);
    return Status::Ok();
  }
}

bool SameFile(const struct stat& a, const struct stat& b) {
  return a.st_size == b.st_size && a.st_mtim.tv_sec == b.st_mtim.tv_sec &&
         a.st_mtim.tv_nsec == b.st_mtim.tv_nsec && a.st_ino == b.st_ino;
}

class Job {
 public:
  Job(std::shared_ptr<s3::ObjectStore> store, std::shared_ptr<fuse::MemoryBudget> budget,
      const std::string& bucket, const UploaderOptions& options, Progress& progress)
      : store_(std::move(store)),
        budget_(std::move(budget)),
        bucket_(bucket),
        options_(options),
        progress_(progress),
        chunk_(std::min(kChunk, options.part_size)) {}

  // Uploads one file: its size, or what went wrong (without the file's name).
  Result<uint64_t> UploadOne(const LocalSource& src) {
    UniqueFd owned;
    int fd = STDIN_FILENO;
    if (src.path != "-") {
      auto opened = UniqueFd::Open(src.path, O_RDONLY | O_CLOEXEC);
      if (!opened.ok()) return opened.status().WithContext("cannot open the file");
      owned = std::move(opened).value();
      fd = owned.get();
    }
    struct stat before {};
    const bool regular = ::fstat(fd, &before) == 0 && S_ISREG(before.st_mode);

    auto upload = fuse::Upload::Create(
        store_, budget_, bucket_, src.key,
        {.part_size = options_.part_size, .max_in_flight = options_.parts_in_flight}, RealClock(),
        {.pool = options_.pool, .sender = options_.sender});
    // A cancel aborts the upload at once, even while this thread waits for a part to drain.
    uint64_t on_cancel = 0;
    if (options_.cancel != nullptr) {
      on_cancel = options_.cancel->OnCancel([weak = std::weak_ptr<fuse::Upload>(upload)] {
        if (auto u = weak.lock()) u->Abort();
      });
    }
    Status local;  // a failure on this side: the upload is aborted
    Status remote;
    uint64_t offset = 0;
    while (!Cancelled()) {
      size_t n = 0;
      local = ReadSome(fd, chunk_, &n);
      if (!local.ok() || n == 0) break;
      remote = AwaitWrite(*upload, offset, std::span<const std::byte>(chunk_.data(), n));
      if (!remote.ok()) break;
      offset += n;
      progress_.AddBytes(n);
    }
    if (local.ok() && remote.ok() && regular) {
      // A file that changed while it was read would be stored as a mix of two versions.
      struct stat after {};
      if (::fstat(fd, &after) != 0) {
        local = ErrnoToStatus(errno, "fstat");
      } else if (!SameFile(before, after) || offset != static_cast<uint64_t>(after.st_size)) {
        local = Status(StatusCode::kAborted,
                       fmt::format("the file changed while it was read ({} bytes read, {} now); "
                                   "not uploaded",
                                   offset, after.st_size));
      }
    }
    if (local.ok() && Cancelled()) local = Status::Cancelled("interrupted");
    if (!local.ok()) upload->Abort();
    // Finish answers after the abort has been answered, when there was one.
    auto promise = std::make_shared<std::promise<Result<s3::ObjectInfo>>>();
    auto future = promise->get_future();
    upload->Finish([promise](Result<s3::ObjectInfo> r) { promise->set_value(std::move(r)); });
    Result<s3::ObjectInfo> finished = future.get();
    if (options_.cancel != nullptr) options_.cancel->RemoveOnCancel(on_cancel);
    if (!local.ok()) return local;
    if (!finished.ok()) return finished.status();
    return offset;
  }

 private:
  bool Cancelled() const { return options_.cancel != nullptr && options_.cancel->cancelled(); }

  static Status AwaitWrite(fuse::Upload& upload, uint64_t offset, std::span<const std::byte> data) {
    auto promise = std::make_shared<std::promise<Status>>();
    auto future = promise->get_future();
    upload.Write(offset, data, [promise](Status s) { promise->set_value(std::move(s)); });
    return future.get();
  }

  std::shared_ptr<s3::ObjectStore> store_;
  std::shared_ptr<fuse::MemoryBudget> budget_;
  const std::string& bucket_;
  const UploaderOptions& options_;
  Progress& progress_;
  std::vector<std::byte> chunk_;
};

}  // namespace

UploadReport UploadSources(std::shared_ptr<s3::ObjectStore> store, const std::string& bucket,
                           const std::vector<LocalSource>& sources, const UploaderOptions& options,
                           Progress& progress) {
  if (sources.empty()) return {};
  auto budget = std::make_shared<fuse::MemoryBudget>(options.max_memory);
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> uploaded{0}, failed{0}, bytes{0};

  auto worker = [&] {
    Job job(store, budget, bucket, options, progress);
    while (!stop.load() && !(options.cancel != nullptr && options.cancel->cancelled())) {
      const size_t i = next.fetch_add(1);
      if (i >= sources.size()) break;
      const LocalSource& src = sources[i];
      Result<uint64_t> r = job.UploadOne(src);
      if (r.ok()) {
        uploaded.fetch_add(1);
        bytes.fetch_add(*r);
        progress.FileDone();
        continue;
      }
      const Status& s = r.status();
      failed.fetch_add(1);
      progress.Note(fmt::format("reelfs cp: {} -> s3://{}/{}: {}",
                                src.path == "-" ? "(stdin)" : src.path, bucket, src.key,
                                s.ToString()));
      if (StopsTheCopy(s)) stop.store(true);
    }
  };
  const size_t threads = std::clamp<size_t>(options.files_in_flight, 1, sources.size());
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();

  UploadReport report;
  report.uploaded = uploaded.load();
  report.failed = failed.load();
  report.bytes = bytes.load();
  report.not_started = sources.size() - report.uploaded - report.failed;
  report.peak_memory = budget->peak();
  if (options.sender != nullptr) report.puts = options.sender->counters();
  return report;
}

}  // namespace reelfs::cli
