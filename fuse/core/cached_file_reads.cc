// The check of the file before each READ, and the hand-over to the inner Prefetcher.
#include "fuse/core/cached_file_reads.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include <sys/stat.h>

#include "common/log.h"
#include "fuse/core/dir_listing.h"

namespace reelfs::fuse {
namespace {

// What identifies the file OpenWhole verified: any write, truncate or touch changes one of these.
struct Identity {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  timespec mtime{};
  timespec ctime{};

  static Identity Of(const struct stat& st) {
    return Identity{st.st_dev, st.st_ino, st.st_size, st.st_mtim, st.st_ctim};
  }
  bool operator==(const Identity& o) const {
    return dev == o.dev && ino == o.ino && size == o.size && mtime.tv_sec == o.mtime.tv_sec &&
           mtime.tv_nsec == o.mtime.tv_nsec && ctime.tv_sec == o.ctime.tv_sec &&
           ctime.tv_nsec == o.ctime.tv_nsec;
  }
};

class CachedFilePrefetcher final : public Prefetcher {
 public:
  CachedFilePrefetcher(std::shared_ptr<Prefetcher> inner, std::shared_ptr<const UniqueFd> file,
                       ObjectRef ref, Identity verified, std::shared_ptr<CachedFileStats> stats)
      : inner_(std::move(inner)),
        file_(std::move(file)),
        ref_(std::move(ref)),
        verified_(verified),
        stats_(std::move(stats)) {}
  ~CachedFilePrefetcher() override { Close(); }

  void Read(uint64_t offset, size_t size, Callback<ReadData> done) override {
    if (changed_.load(std::memory_order_acquire) || !Unchanged()) {
      inner_->Read(offset, size, std::move(done));
      return;
    }
    ReadData data;
    if (offset < ref_.size && size > 0) {
      data.fd = file_->get();
      data.fd_offset = static_cast<int64_t>(offset);
      data.fd_bytes = static_cast<size_t>(std::min<uint64_t>(size, ref_.size - offset));
      data.keepalive = file_;  // the descriptor stays open until the reply has been written
      stats_->reads.fetch_add(1, std::memory_order_relaxed);
      stats_->bytes.fetch_add(data.fd_bytes, std::memory_order_relaxed);
    }
    done(std::move(data));
  }

  void Prefetch() override {}  // nothing to fetch: the bytes are on local storage
  void Close() override { inner_->Close(); }
  PrefetchCounters counters() const override { return inner_->counters(); }

 private:
  // Whether the file is still the one verified; the first "no" is logged and kept.
  bool Unchanged() {
    struct stat st {};
    std::string why;
    if (::fstat(file_->get(), &st) != 0) {
      why = std::string("fstat failed: ") + std::strerror(errno);
    } else if (!(Identity::Of(st) == verified_)) {
      why = "its inode, size, mtime or ctime changed";
    } else {
      return true;
    }
    if (!changed_.exchange(true, std::memory_order_acq_rel)) {
      stats_->fallbacks.fetch_add(1, std::memory_order_relaxed);
      REELFS_LOG_WARN("cache",
                      "'{}': the cache's file is no longer the one verified at open ({}); this "
                      "handle reads through the cache's checks (or the server) from here on",
                      PrintableKey(ref_.key), why);
    }
    return false;
  }

  const std::shared_ptr<Prefetcher> inner_;
  const std::shared_ptr<const UniqueFd> file_;
  const ObjectRef ref_;
  const Identity verified_;
  const std::shared_ptr<CachedFileStats> stats_;
  std::atomic<bool> changed_{false};
};

}  // namespace

std::shared_ptr<Prefetcher> CreateCachedFilePrefetcher(std::shared_ptr<Prefetcher> inner,
                                                       std::shared_ptr<const UniqueFd> file,
                                                       ObjectRef object,
                                                       std::shared_ptr<CachedFileStats> stats) {
  struct stat st {};
  if (file == nullptr || !file->valid() || ::fstat(file->get(), &st) != 0 ||
      static_cast<uint64_t>(st.st_size) != object.size) {
    return inner;  // not the object's bytes as verified: the ordinary path serves it
  }
  if (stats == nullptr) stats = std::make_shared<CachedFileStats>();
  stats->opens.fetch_add(1, std::memory_order_relaxed);
  return std::make_shared<CachedFilePrefetcher>(
      std::move(inner), std::move(file), std::move(object), Identity::Of(st), std::move(stats));
}

}  // namespace reelfs::fuse
