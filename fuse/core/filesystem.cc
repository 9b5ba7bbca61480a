// FileSystem implementation: Core (core_internal.h) and its parts, with every S3 request issued
// outside their locks and continued in its completion callback. The operations are defined by
// concept: core_namespace.cc (inodes), file_handles.cc, dir_handles.cc, tape_view.cc; this file
// holds what is left: construction, STATFS, the counters and JSON snapshots, Shutdown and the
// public FileSystem wrapper.
//
// Lifetime: the public FileSystem object owns a shared Core; every callback handed to the store
// holds the Core, so a response that arrives after the FileSystem is destroyed still finds its
// state (and still calls its `done` exactly once).

#include "fuse/core/filesystem.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/json.h"
#include "common/log.h"
#include "common/mutex.h"
#include "fuse/core/core_internal.h"
#include "fuse/core/name_rules.h"
#include "fuse/core/prefetcher.h"

namespace reelfs::fuse {
namespace detail {
namespace {

// StatFs: S3 has no capacity. A large constant keeps tools that check space (cp, rsync, df)
// content; a write that finds the gateway full gets ENOSPC from it, not from this figure.
constexpr uint64_t kStatFsBytes = 1ull << 50;  // 1 PiB
constexpr uint64_t kStatFsFiles = 1ull << 32;  // inodes: more than a mount will ever know

}  // namespace

Core::Core(std::shared_ptr<s3::ObjectStore> store, MountOptions options,
           std::shared_ptr<BufferPool> pool, std::shared_ptr<MemoryBudget> budget, Clock& clock,
           std::shared_ptr<hsm::Restorer> restorer, DataPath data_path)
    : store_(std::move(store)),
      restorer_(std::move(restorer)),
      data_path_(std::move(data_path)),
      options_(std::move(options)),
      pool_(std::move(pool)),
      budget_(std::move(budget)),
      part_sender_(data_path_.channel != nullptr
                       ? CreateChannelPartSender(data_path_.channel, store_)
                       : CreateStorePartSender(store_)),
      clock_(clock),
      mount_time_(clock.WallNow()),
      warn_(std::make_shared<WarnOnce>()),
      negative_(options_.negative_cache_entries, options_.negative_ttl),
      inodes_(MakeRoot()),
      files_(*this),
      dirs_(*this),
      tape_(*this),
      writes_(*this) {}

InodeRecord Core::MakeRoot() const {
  InodeRecord root;
  root.id.key = options_.prefix;
  root.attrs.attr = DirAttr(kRootInode);
  return root;
}

std::string Core::MountJson() const {
  Json mount = {{"version", 1},
                {"endpoint", options_.endpoint},
                {"bucket", options_.bucket},
                {"prefix", options_.prefix},
                {"ledger", options_.ledger_path}};
  if (!options_.side_channel_path.empty()) mount["side_channel"] = options_.side_channel_path;
  if (!options_.cache_dir.empty()) mount["cache"] = options_.cache_dir;
  if (!options_.gpu.empty()) mount["gpu"] = options_.gpu;
  return DumpJson(mount);
}

std::string Core::MetricsJson() const {
  const FsCounters c = counters();
  const Json fs = {{"lookups", c.lookups},
                   {"list_requests", c.list_requests},
                   {"head_requests", c.head_requests},
                   {"open_handles", c.open_handles},
                   {"inodes", c.inodes},
                   {"bytes_read", c.bytes_read},
                   {"direct_reads", c.direct_reads},
                   {"offline_reads", c.offline_reads},
                   {"restore_waits", c.restore_waits},
                   {"xattr_refreshes", c.xattr_refreshes},
                   {"write_handles", c.write_handles},
                   {"bytes_written", c.bytes_written},
                   {"files_written", c.files_written},
                   {"uploads_failed", c.uploads_failed},
                   {"rdma_put_parts", c.rdma_put_parts},
                   {"rdma_put_bytes", c.rdma_put_bytes},
                   {"http_put_parts", c.http_put_parts},
                   {"http_put_bytes", c.http_put_bytes},
                   {"put_fallbacks", c.put_fallbacks},
                   {"deletes", c.deletes},
                   {"renames", c.renames},
                   {"copy_parts", c.copy_parts},
                   {"backing_opens", c.backing_opens},
                   {"spliced_reads", c.spliced_reads},
                   {"spliced_bytes", c.spliced_bytes},
                   {"splice_streams", c.splice_streams},
                   {"splice_fallbacks", c.splice_fallbacks},
                   {"splice_gaps_skipped", c.splice_gaps_skipped},
                   {"splice_slow_streams", c.splice_slow_streams},
                   {"cached_file_opens", c.cached_file_opens},
                   {"cached_file_reads", c.cached_file_reads},
                   {"cached_file_bytes", c.cached_file_bytes},
                   {"cached_file_fallbacks", c.cached_file_fallbacks}};
  const Json data_path = data_path_.metrics_json ? data_path_.metrics_json() : Json();
  const Json side_channel = data_path_.side_channel_json ? data_path_.side_channel_json() : Json();
  const Json cache = data_path_.cache != nullptr ? data_path_.cache->StatsJson() : Json();
  const Json endpoints = data_path_.endpoints_json ? data_path_.endpoints_json() : Json();
  return DumpJson(Json{{"version", 1},
                       {"fs", fs},
                       {"endpoints", endpoints},
                       {"data_path", data_path},
                       {"side_channel", side_channel},
                       {"cache", cache}});
}

FsStats Core::StatFs() {
  FsStats s;
  s.block_size = 4096;
  s.blocks = kStatFsBytes / s.block_size;
  MutexLock lock(mutex_);
  s.files = kStatFsFiles;
  s.files_used = std::min<uint64_t>(inodes_.size(), kStatFsFiles);
  s.max_name = kMaxNameBytes;
  return s;
}

FsCounters Core::counters() const {
  FsCounters c;
  c.lookups = stats_.lookups.load(std::memory_order_relaxed);
  c.list_requests = stats_.list_requests.load(std::memory_order_relaxed);
  c.head_requests = stats_.head_requests.load(std::memory_order_relaxed);
  c.bytes_read = stats_.bytes_read.load(std::memory_order_relaxed);
  c.spliced_reads = splice_stats_->reads.load(std::memory_order_relaxed);
  c.spliced_bytes = splice_stats_->bytes.load(std::memory_order_relaxed);
  c.splice_streams = splice_stats_->streams.load(std::memory_order_relaxed);
  c.splice_fallbacks = splice_stats_->fallbacks.load(std::memory_order_relaxed);
  c.splice_gaps_skipped = splice_stats_->gaps_skipped.load(std::memory_order_relaxed);
  c.splice_slow_streams = splice_stats_->slow_streams.load(std::memory_order_relaxed);
  c.cached_file_opens = cached_file_stats_->opens.load(std::memory_order_relaxed);
  c.cached_file_reads = cached_file_stats_->reads.load(std::memory_order_relaxed);
  c.cached_file_bytes = cached_file_stats_->bytes.load(std::memory_order_relaxed);
  c.cached_file_fallbacks = cached_file_stats_->fallbacks.load(std::memory_order_relaxed);
  c.direct_reads = stats_.direct_reads.load(std::memory_order_relaxed);
  c.offline_reads = stats_.offline_reads.load(std::memory_order_relaxed);
  c.restore_waits = stats_.restore_waits.load(std::memory_order_relaxed);
  c.xattr_refreshes = stats_.xattr_refreshes.load(std::memory_order_relaxed);
  c.bytes_written = stats_.bytes_written.load(std::memory_order_relaxed);
  c.files_written = stats_.files_written.load(std::memory_order_relaxed);
  c.uploads_failed = stats_.uploads_failed.load(std::memory_order_relaxed);
  c.deletes = stats_.deletes.load(std::memory_order_relaxed);
  const PutCounters puts = part_sender_->counters();
  c.rdma_put_parts = puts.rdma_put_parts;
  c.rdma_put_bytes = puts.rdma_put_bytes;
  c.http_put_parts = puts.http_put_parts;
  c.http_put_bytes = puts.http_put_bytes;
  c.put_fallbacks = puts.put_fallbacks;
  c.renames = stats_.renames.load(std::memory_order_relaxed);
  c.copy_parts = stats_.copy_parts.load(std::memory_order_relaxed);
  c.backing_opens = stats_.backing_opens.load(std::memory_order_relaxed);
  c.write_handles = writes_.size();  // its own lock, not nested with mutex_
  c.open_handles = files_.size();    // its own lock, not nested with mutex_
  MutexLock lock(mutex_);
  c.inodes = inodes_.size();
  return c;
}

void Core::Shutdown() {
  writes_.AbortAll();  // nothing half-written becomes visible
  files_.CloseAll();
  dirs_.Clear();
}

}  // namespace detail

namespace {

using detail::Core;

// A READ through a handle this mount is writing (O_RDWR, or the page faults of a private mmap):
// its bytes are on their way to S3 and not kept to be read back (docs/semantics.md "Writes").
Status ReadOfWriteHandle(uint64_t fh) {
  return Status(StatusCode::kInvalidArgument, StatusReason::kBadHandle,
                fmt::format("file handle {} is being written: what it wrote can be read once it is "
                            "closed, not through it",
                            fh));
}

class FileSystemImpl final : public FileSystem {
 public:
  explicit FileSystemImpl(std::shared_ptr<Core> core) : core_(std::move(core)) {}
  ~FileSystemImpl() override { core_->Shutdown(); }

  void Lookup(InodeId parent, std::string_view name, Callback<Entry> done) override {
    core_->Lookup(parent, name, std::move(done));
  }
  void Forget(InodeId ino, uint64_t nlookup) override { core_->Forget(ino, nlookup); }
  void GetAttr(InodeId ino, Callback<Attributes> done) override {
    core_->GetAttr(ino, std::move(done));
  }
  void OpenDir(InodeId ino, Callback<uint64_t> done) override {
    core_->dirs().OpenDir(ino, std::move(done));
  }
  void ReadDir(InodeId ino, uint64_t dh, uint64_t offset, size_t max_entries, bool plus,
               Callback<std::vector<DirEntry>> done) override {
    core_->dirs().ReadDir(ino, dh, offset, max_entries, plus, std::move(done));
  }
  void AcceptDirEntries(const std::vector<DirEntry>& accepted) override {
    core_->AcceptDirEntries(accepted);
  }
  void ReleaseDir(uint64_t dh) override { core_->dirs().ReleaseDir(dh); }
  void Open(InodeId ino, int flags, uint32_t pid, Callback<OpenedFile> done) override {
    core_->files().Open(ino, flags, pid, std::move(done));
  }
  void Read(InodeId ino, uint64_t fh, uint64_t offset, size_t size,
            std::shared_ptr<CancellationToken> interrupt, Callback<ReadData> done) override {
    if (core_->writes().Owns(fh)) return done(ReadOfWriteHandle(fh));
    core_->files().Read(ino, fh, offset, size, std::move(interrupt), std::move(done));
  }
  void ReadTo(InodeId ino, uint64_t fh, uint64_t offset, size_t size, ReadTarget target,
              std::shared_ptr<CancellationToken> interrupt, Callback<ReadToResult> done) override {
    if (core_->writes().Owns(fh)) return done(ReadOfWriteHandle(fh));
    core_->files().ReadTo(ino, fh, offset, size, std::move(target), std::move(interrupt),
                          std::move(done));
  }
  void GetXattr(InodeId ino, std::string_view name, Callback<std::string> done) override {
    core_->tape().GetXattr(ino, name, std::move(done));
  }
  void ListXattr(InodeId ino, Callback<std::vector<std::string>> done) override {
    core_->tape().ListXattr(ino, std::move(done));
  }
  void SetXattr(InodeId ino, std::string_view name, std::string_view value,
                std::function<void(Status)> done) override {
    core_->tape().SetXattr(ino, name, value, std::move(done));
  }
  void Release(uint64_t fh) override {
    if (core_->writes().Owns(fh)) return core_->writes().Release(fh);
    core_->files().Release(fh);
  }
  void Create(InodeId parent, std::string_view name, int flags, uint32_t pid,
              Callback<CreatedFile> done) override {
    core_->writes().Create(parent, name, flags, pid, std::move(done));
  }
  void Write(InodeId /*ino*/, uint64_t fh, uint64_t offset, std::span<const std::byte> data,
             Callback<size_t> done) override {
    core_->writes().Write(fh, offset, data, std::move(done));
  }
  void Flush(InodeId /*ino*/, uint64_t fh, bool fsync, uint32_t pid,
             std::function<void(Status)> done) override {
    core_->writes().Complete(fh, /*even_empty=*/fsync, fsync ? 0 : pid, std::move(done));
  }
  void MkDir(InodeId parent, std::string_view name, Callback<Entry> done) override {
    done(core_->MakeLocalDir(parent, name));
  }
  void Unlink(InodeId parent, std::string_view name, std::function<void(Status)> done) override {
    core_->Unlink(parent, name, std::move(done));
  }
  void Rename(InodeId parent, std::string_view name, InodeId new_parent, std::string_view new_name,
              unsigned flags, std::function<void(Status)> done) override {
    core_->Rename(parent, name, new_parent, new_name, flags, std::move(done));
  }
  void RmDir(InodeId parent, std::string_view name, std::function<void(Status)> done) override {
    core_->RmDir(parent, name, std::move(done));
  }
  void SetAttr(InodeId ino, const SetAttrRequest& request, Callback<Attributes> done) override {
    if (request.size.has_value() && !core_->options().write.read_only) {
      if (std::optional<Status> s = core_->writes().Truncate(ino, *request.size); s.has_value()) {
        if (!s->ok()) return done(std::move(*s));
        return core_->GetAttr(ino, std::move(done));
      }
    }
    core_->SetAttr(ino, request, std::move(done));
  }
  void SetBackingFiles(bool on) override { core_->SetBackingFiles(on); }
  FsStats StatFs() override { return core_->StatFs(); }
  FsCounters counters() const override { return core_->counters(); }
  const MountOptions& options() const override { return core_->options(); }

 private:
  std::shared_ptr<Core> core_;
};

}  // namespace

std::unique_ptr<FileSystem> CreateFileSystem(std::shared_ptr<s3::ObjectStore> store,
                                             MountOptions options, std::shared_ptr<BufferPool> pool,
                                             std::shared_ptr<MemoryBudget> budget, Clock& clock,
                                             std::shared_ptr<hsm::Restorer> restorer,
                                             DataPath data_path) {
  auto core =
      std::make_shared<Core>(std::move(store), std::move(options), std::move(pool),
                             std::move(budget), clock, std::move(restorer), std::move(data_path));
  return std::make_unique<FileSystemImpl>(std::move(core));
}

}  // namespace reelfs::fuse
