// ObjectCache (object_cache.h): the in-memory map of cached versions over CacheIndex and
// CacheFiles. Order of a store: room is reserved under the mutex, bytes are written outside it,
// then the index learns the blocks and the map marks them present, so a crash at any point leaves
// the index naming only blocks whose bytes were written (a torn write still fails its hash).

#include "cache/object_cache.h"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include <sys/file.h>
#include <sys/stat.h>

#include "cache/cache_index.h"
#include "cache/io_pool.h"
#include "common/log.h"
#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "common/unique_fd.h"
#include "fmt/format.h"

namespace reelfs::cache {
namespace {

// The LRU order is written to the index at most this often per object (it only orders evictions
// after a restart; a read must not cost a SQLite write).
constexpr int64_t kTouchPersistMs = 60'000;
// A failing cache (full, read-only, I/O errors) warns at most this often.
constexpr auto kWarnEvery = std::chrono::seconds(60);

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

uint64_t HashBlock(std::span<const std::byte> bytes) {
  return XXH3_64bits(bytes.data(), bytes.size());
}

Status PreadAll(int fd, std::span<std::byte> dst, uint64_t offset, const std::string& path) {
  size_t done = 0;
  while (done < dst.size()) {
    const ssize_t n =
        ::pread(fd, dst.data() + done, dst.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoToStatus(errno, "read " + path);
    if (n == 0) return Status::DataLoss(fmt::format("read {}: the file ends early", path));
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

std::string MapKey(std::string_view bucket, std::string_view key) {
  std::string out;
  out.reserve(bucket.size() + key.size() + 1);
  out.append(bucket).push_back('\0');
  out.append(key);
  return out;
}

Status MakeDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    return ErrnoToStatus(errno, fmt::format("cache directory {}", path));
  }
  return Status::Ok();
}

struct Entry {
  int64_t id = 0;
  std::string etag;
  uint64_t size = 0;
  std::vector<uint64_t> hashes;  // per block, valid where present
  std::vector<bool> present;
  uint64_t present_count = 0;
  uint64_t bytes = 0;  // bytes of present blocks
  uint64_t lru = 0;    // position in lru_ (higher: used more recently)
  int64_t persisted_access_ms = 0;
  std::string map_key;
  // The data file as OpenWhole last verified it whole (0: never): inode, size, mtime.
  struct FileSig {
    uint64_t ino = 0;
    uint64_t size = 0;
    int64_t mtime_ns = 0;
    bool operator==(const FileSig&) const = default;
  } verified;
};

class Cache final : public ObjectCache {
 public:
  Cache(std::string dir, CacheOptions options, std::shared_ptr<CacheFiles> files,
        std::unique_ptr<CacheIndex> index, UniqueFd lock)
      : dir_(std::move(dir)),
        data_dir_(dir_ + "/data"),
        options_(options),
        files_(std::move(files)),
        lock_(std::move(lock)),
        index_(std::move(index)) {}

  Status Load() {
    MutexLock lock(mutex_);
    REELFS_ASSIGN_OR_RETURN(std::vector<IndexedObject> objects, index_->LoadAll());
    std::sort(objects.begin(), objects.end(), [](const IndexedObject& a, const IndexedObject& b) {
      return a.last_access_ms < b.last_access_ms;
    });
    std::set<std::string> known;
    uint64_t dropped_blocks = 0;
    for (IndexedObject& o : objects) {
      const std::string path = DataPath(o.id);
      Result<uint64_t> file_size = files_->Size(path);
      const uint64_t nblocks = BlockCount(o.size);
      Entry e;
      e.id = o.id;
      e.etag = o.etag;
      e.size = o.size;
      e.hashes.assign(nblocks, 0);
      e.present.assign(nblocks, false);
      e.persisted_access_ms = o.last_access_ms;
      e.map_key = MapKey(o.bucket, o.key);
      e.verified = Entry::FileSig{o.verified_ino, o.verified_size, o.verified_mtime_ns};
      for (const IndexedBlock& b : o.blocks) {
        // A block whose bytes the file does not reach was torn by a crash (or the file lost).
        if (b.block >= nblocks || !file_size.ok() || BlockEnd(o.size, b.block) > *file_size) {
          ++dropped_blocks;
          index_->RemoveBlock(o.id, b.block).IgnoreError();
          continue;
        }
        if (e.present[b.block]) continue;
        e.present[b.block] = true;
        e.hashes[b.block] = b.hash;
        ++e.present_count;
        e.bytes += BlockLength(o.size, b.block);
      }
      // Blocks of another size (a cache made with other options): not this cache's.
      if (e.present_count == 0 || o.block_size != options_.block_size ||
          entries_.contains(e.map_key)) {
        REELFS_RETURN_IF_ERROR(index_->RemoveObject(o.id));
        files_->Remove(path).IgnoreError();
        continue;
      }
      known.insert(std::to_string(o.id));
      e.lru = ++lru_clock_;
      lru_.emplace(e.lru, e.map_key);
      total_bytes_ += e.bytes;
      entries_.emplace(e.map_key, std::move(e));
    }
    // Files the index does not name: a store that crashed before its first row, or an eviction
    // that crashed after its rows went.
    Result<std::vector<std::string>> names = files_->List(data_dir_);
    if (!names.ok()) return names.status();
    uint64_t orphans = 0;
    for (const std::string& name : *names) {
      if (known.contains(name)) continue;
      files_->Remove(data_dir_ + "/" + name).IgnoreError();
      ++orphans;
    }
    EvictLocked(0, /*keep=*/nullptr);
    REELFS_LOG_INFO("cache", "{}: {} object(s), {} bytes of at most {}{}", dir_, entries_.size(),
                    total_bytes_, options_.max_bytes,
                    dropped_blocks + orphans == 0
                        ? std::string()
                        : fmt::format(" ({} torn block(s) and {} stray file(s) dropped)",
                                      dropped_blocks, orphans));
    return Status::Ok();
  }

  uint64_t block_size() const override { return options_.block_size; }

  std::optional<uint64_t> ObjectSize(const CacheKey& key) const override {
    MutexLock lock(mutex_);
    const Entry* e = FindLocked(key);
    if (e == nullptr) return std::nullopt;
    return e->size;
  }

  bool Covers(const CacheKey& key, uint64_t offset, uint64_t length) const override {
    MutexLock lock(mutex_);
    const Entry* e = FindLocked(key);
    if (e == nullptr || length == 0 || offset >= e->size) return false;
    const uint64_t end = std::min(e->size, offset + length);
    for (uint64_t b = offset / options_.block_size; b * options_.block_size < end; ++b) {
      if (!e->present[b]) return false;
    }
    return true;
  }

  bool Complete(const CacheKey& key) const override {
    MutexLock lock(mutex_);
    const Entry* e = FindLocked(key);
    return e != nullptr && e->present_count == e->present.size();
  }

  uint64_t CachedBytes(const CacheKey& key) const override {
    MutexLock lock(mutex_);
    const Entry* e = FindLocked(key);
    return e == nullptr ? 0 : e->bytes;
  }

  Status Read(const CacheKey& key, uint64_t offset, std::span<std::byte> dst) override {
    int64_t id = 0;
    uint64_t size = 0;
    std::vector<std::pair<uint64_t, uint64_t>> blocks;  // (block, hash)
    {
      MutexLock lock(mutex_);
      Entry* e = FindLocked(key);
      if (e == nullptr) return Status::NotFound("not cached");
      if (offset + dst.size() > e->size) return Status::OutOfRange("read past the object's end");
      for (uint64_t b = offset / options_.block_size; b * options_.block_size < offset + dst.size();
           ++b) {
        if (!e->present[b]) return Status::NotFound("not cached");
        blocks.emplace_back(b, e->hashes[b]);
      }
      id = e->id;
      size = e->size;
      TouchLocked(*e);
    }
    const std::string path = DataPath(id);
    std::vector<std::byte> scratch;
    for (const auto& [b, hash] : blocks) {
      const uint64_t block_begin = b * options_.block_size;
      const uint64_t block_len = BlockLength(size, b);
      const uint64_t want_begin = std::max(block_begin, offset);
      const uint64_t want_end = std::min(block_begin + block_len, offset + dst.size());
      // A block the read covers whole lands in place; a partial one through a scratch block (its
      // hash needs every byte).
      const bool whole = want_begin == block_begin && want_end == block_begin + block_len;
      std::span<std::byte> target;
      if (whole) {
        target = dst.subspan(block_begin - offset, block_len);
      } else {
        scratch.resize(block_len);
        target = std::span<std::byte>(scratch);
      }
      Status s = files_->ReadAt(path, block_begin, target);
      if (s.ok() && HashBlock(target) != hash) {
        s = Status::DataLoss(
            fmt::format("block {} of cache file {} does not match its hash", b, path));
      }
      if (!s.ok()) {
        Drop(key, id, s);
        return s.code() == StatusCode::kNotFound ? Status::NotFound(std::string(s.message()))
                                                 : Status::DataLoss(std::string(s.message()));
      }
      if (!whole) {
        std::copy_n(scratch.begin() + static_cast<ptrdiff_t>(want_begin - block_begin),
                    want_end - want_begin,
                    dst.begin() + static_cast<ptrdiff_t>(want_begin - offset));
      }
    }
    MutexLock lock(mutex_);
    ++stats_.hits;
    stats_.hit_bytes += dst.size();
    return Status::Ok();
  }

  Status Store(const CacheKey& key, uint64_t object_size, uint64_t offset,
               std::span<const std::byte> data) override {
    const uint64_t bs = options_.block_size;
    if (offset % bs != 0) return Status::InvalidArgument("cache store at an unaligned offset");
    if (offset >= object_size || object_size > options_.max_bytes) return Status::Ok();
    // The whole blocks of `data`.
    const uint64_t end = std::min(object_size, offset + data.size());
    uint64_t last = end / bs;                         // first block not stored
    if (end == object_size && end % bs != 0) ++last;  // the object's short last block
    const uint64_t first = offset / bs;
    if (last <= first) return Status::Ok();

    int64_t id = 0;
    std::vector<uint64_t> missing;
    uint64_t need = 0;
    {
      MutexLock lock(mutex_);
      Entry* e = FindLocked(key);
      const std::string map_key = MapKey(key.bucket, key.key);
      if (e == nullptr) {
        // Another version of the key goes: one version per key.
        if (auto old = entries_.find(map_key); old != entries_.end()) {
          RemoveLocked(old, /*evicted=*/false);
        }
      } else if (e->size != object_size) {
        return Status::FailedPrecondition("cache store: the object size changed under one ETag");
      }
      for (uint64_t b = first; b < last; ++b) {
        if (e != nullptr && e->present[b]) continue;
        missing.push_back(b);
        need += BlockLength(object_size, b);
      }
      if (missing.empty()) return Status::Ok();
      if (!MakeRoomLocked(need, e)) {
        ++stats_.stores_skipped;
        WarnLocked(&last_room_warning_,
                   fmt::format("no room to cache {} bytes of '{}' (limit {} "
                               "bytes, free-space floor {} bytes)",
                               need, key.key, options_.max_bytes, options_.min_free_bytes));
        return Status::Ok();
      }
      if (e == nullptr) {
        Result<int64_t> added =
            index_->AddObject(key.bucket, key.key, key.etag, object_size, bs, NowMs());
        if (!added.ok()) {
          total_bytes_ -= need;
          return StoreFailedLocked(key, added.status());
        }
        Entry fresh;
        fresh.id = *added;
        fresh.etag = key.etag;
        fresh.size = object_size;
        fresh.hashes.assign(BlockCount(object_size), 0);
        fresh.present.assign(BlockCount(object_size), false);
        fresh.persisted_access_ms = NowMs();
        fresh.map_key = map_key;
        fresh.lru = ++lru_clock_;
        lru_.emplace(fresh.lru, map_key);
        e = &entries_.emplace(map_key, std::move(fresh)).first->second;
      } else {
        TouchLocked(*e);
      }
      id = e->id;
      reserved_[id] += need;
    }

    // Bytes first (outside the mutex), contiguous runs in one write each.
    std::vector<IndexedBlock> rows;
    rows.reserve(missing.size());
    Status written = Status::Ok();
    const std::string path = DataPath(id);
    for (size_t i = 0; i < missing.size() && written.ok();) {
      size_t j = i;
      while (j + 1 < missing.size() && missing[j + 1] == missing[j] + 1) ++j;
      const uint64_t run_begin = missing[i] * bs;
      const uint64_t run_end = missing[j] * bs + BlockLength(object_size, missing[j]);
      const auto run = data.subspan(run_begin - offset, run_end - run_begin);
      for (size_t k = i; k <= j; ++k) {
        const uint64_t b_begin = missing[k] * bs - run_begin;
        rows.push_back(
            IndexedBlock{static_cast<uint32_t>(missing[k]),
                         HashBlock(run.subspan(b_begin, BlockLength(object_size, missing[k])))});
      }
      written = files_->WriteAt(path, run_begin, run);
      i = j + 1;
    }

    MutexLock lock(mutex_);
    reserved_[id] -= need;
    if (reserved_[id] == 0) reserved_.erase(id);
    total_bytes_ -= need;
    auto it = entries_.find(MapKey(key.bucket, key.key));
    const bool alive = it != entries_.end() && it->second.id == id;
    if (!alive) {
      // Evicted or replaced meanwhile: its file is no one's now.
      files_->Remove(path).IgnoreError();
      return Status::Ok();
    }
    if (written.ok()) written = index_->AddBlocks(id, rows);
    if (!written.ok()) {
      if (it->second.present_count == 0) RemoveLocked(it, /*evicted=*/false);
      return StoreFailedLocked(key, written);
    }
    Entry& e = it->second;
    for (const IndexedBlock& row : rows) {
      if (e.present[row.block]) continue;
      e.present[row.block] = true;
      e.hashes[row.block] = row.hash;
      ++e.present_count;
      const uint64_t len = BlockLength(object_size, row.block);
      e.bytes += len;
      total_bytes_ += len;
      stats_.stored_bytes += len;
    }
    return Status::Ok();
  }

  Result<UniqueFd> OpenWhole(const CacheKey& key) override {
    int64_t id = 0;
    uint64_t size = 0;
    std::vector<uint64_t> hashes;
    Entry::FileSig verified;
    {
      MutexLock lock(mutex_);
      Entry* e = FindLocked(key);
      if (e == nullptr || e->present_count != e->present.size()) {
        return Status::NotFound("not cached whole");
      }
      id = e->id;
      size = e->size;
      verified = e->verified;
      TouchLocked(*e);
      if (verified.ino == 0) hashes = e->hashes;
    }
    const std::string path = DataPath(id);
    Result<UniqueFd> fd = UniqueFd::Open(path, O_RDONLY);
    if (!fd.ok()) {
      Drop(key, id, fd.status());
      return Status::NotFound(std::string(fd.status().message()));
    }
    struct stat st {};
    if (::fstat(fd->get(), &st) != 0) return ErrnoToStatus(errno, "fstat " + path);
    const Entry::FileSig sig{
        static_cast<uint64_t>(st.st_ino), static_cast<uint64_t>(st.st_size),
        static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
    if (verified.ino != 0 && sig == verified) {
      MutexLock lock(mutex_);
      ++stats_.whole_opens;
      return fd;
    }
    if (hashes.empty()) {
      MutexLock lock(mutex_);
      if (const Entry* e = FindLocked(key); e != nullptr && e->id == id) hashes = e->hashes;
    }
    // Verified through the descriptor handed out: what the kernel will read is what was checked.
    Status s = sig.size == size ? Status::Ok()
                                : Status::DataLoss(fmt::format("cache file {} has {} bytes, the "
                                                               "object {}",
                                                               path, sig.size, size));
    std::vector<std::byte> block(options_.block_size);
    for (uint64_t b = 0; s.ok() && b < hashes.size(); ++b) {
      const uint64_t len = BlockLength(size, b);
      const auto target = std::span<std::byte>(block).first(len);
      s = PreadAll(fd->get(), target, b * options_.block_size, path);
      if (s.ok() && HashBlock(target) != hashes[b]) {
        s = Status::DataLoss(
            fmt::format("block {} of cache file {} does not match its hash", b, path));
      }
    }
    if (!s.ok()) {
      Drop(key, id, s);
      return Status::DataLoss(std::string(s.message()));
    }
    MutexLock lock(mutex_);
    if (Entry* e = FindLocked(key); e != nullptr && e->id == id) {
      e->verified = sig;
      // Kept across remounts: a file unchanged since (same inode, size, mtime) is not read again.
      index_->SetVerified(id, sig.ino, sig.size, sig.mtime_ns).IgnoreError();
    }
    ++stats_.whole_opens;
    stats_.verified_bytes += size;
    return fd;
  }

  void OpenWholeAsync(const CacheKey& key, std::function<void(Result<UniqueFd>)> done) override {
    bool verified = false;
    {
      MutexLock lock(mutex_);
      const Entry* e = FindLocked(key);
      verified = e != nullptr && e->verified.ino != 0;
    }
    if (verified) return done(OpenWhole(key));
    verifier_.Post([this, key, done = std::move(done)] { done(OpenWhole(key)); });
  }

  CacheStats stats() const override {
    MutexLock lock(mutex_);
    CacheStats s = stats_;
    s.objects = entries_.size();
    s.bytes = total_bytes_;
    s.max_bytes = options_.max_bytes;
    for (const auto& [k, e] : entries_) {
      if (e.present_count == e.present.size()) ++s.complete_objects;
    }
    return s;
  }

  Json StatsJson() const override {
    const CacheStats s = stats();
    return Json{{"dir", dir_},
                {"objects", s.objects},
                {"complete_objects", s.complete_objects},
                {"bytes", s.bytes},
                {"max_bytes", s.max_bytes},
                {"hits", s.hits},
                {"hit_bytes", s.hit_bytes},
                {"stored_bytes", s.stored_bytes},
                {"evicted_objects", s.evicted_objects},
                {"evicted_bytes", s.evicted_bytes},
                {"dropped_objects", s.dropped_objects},
                {"store_failures", s.store_failures},
                {"stores_skipped", s.stores_skipped},
                {"whole_opens", s.whole_opens},
                {"verified_bytes", s.verified_bytes}};
  }

 private:
  using EntryMap = std::unordered_map<std::string, Entry>;

  uint64_t BlockCount(uint64_t size) const {
    return (size + options_.block_size - 1) / options_.block_size;
  }
  uint64_t BlockLength(uint64_t size, uint64_t block) const {
    return std::min(options_.block_size, size - block * options_.block_size);
  }
  uint64_t BlockEnd(uint64_t size, uint64_t block) const {
    return block * options_.block_size + BlockLength(size, block);
  }
  std::string DataPath(int64_t id) const { return fmt::format("{}/{}", data_dir_, id); }

  // The entry of this version (same ETag), or null. One lookup for both constnesses.
  template <class Map>
  static auto FindIn(Map& entries, const CacheKey& key) -> decltype(&entries.begin()->second) {
    auto it = entries.find(MapKey(key.bucket, key.key));
    if (it == entries.end() || it->second.etag != key.etag) return nullptr;
    return &it->second;
  }
  const Entry* FindLocked(const CacheKey& key) const REQUIRES(mutex_) {
    return FindIn(entries_, key);
  }
  Entry* FindLocked(const CacheKey& key) REQUIRES(mutex_) { return FindIn(entries_, key); }

  void TouchLocked(Entry& e) REQUIRES(mutex_) {
    lru_.erase(e.lru);
    e.lru = ++lru_clock_;
    lru_.emplace(e.lru, e.map_key);
    const int64_t now = NowMs();
    if (now - e.persisted_access_ms >= kTouchPersistMs) {
      e.persisted_access_ms = now;
      index_->Touch(e.id, now).IgnoreError();  // only the order after a restart depends on it
    }
  }

  // Index row first, then the file: a crash between leaves a stray file, swept at the next open.
  void RemoveLocked(EntryMap::iterator it, bool evicted) REQUIRES(mutex_) {
    Entry& e = it->second;
    Status s = index_->RemoveObject(e.id);
    if (!s.ok()) REELFS_LOG_WARN("cache", "dropping cache entry {}: {}", e.id, s.message());
    files_->Remove(DataPath(e.id)).IgnoreError();
    total_bytes_ -= e.bytes;
    if (evicted) {
      ++stats_.evicted_objects;
      stats_.evicted_bytes += e.bytes;
    }
    lru_.erase(e.lru);
    entries_.erase(it);
  }

  // Evicts least-recently-used objects (never `keep`, nor one with a store in flight) until
  // `need` more bytes fit under max_bytes and above the free-space floor; reserves them.
  bool MakeRoomLocked(uint64_t need, const Entry* keep) REQUIRES(mutex_) {
    if (!EvictLocked(need, keep)) return false;
    for (;;) {
      Result<uint64_t> free_bytes = files_->FreeBytes(dir_);
      if (!free_bytes.ok() || *free_bytes >= options_.min_free_bytes + need) break;
      if (!EvictOneLocked(keep)) return false;
    }
    total_bytes_ += need;
    return true;
  }

  bool EvictLocked(uint64_t need, const Entry* keep) REQUIRES(mutex_) {
    while (total_bytes_ + need > options_.max_bytes) {
      if (!EvictOneLocked(keep)) return false;
    }
    return true;
  }

  bool EvictOneLocked(const Entry* keep) REQUIRES(mutex_) {
    for (const auto& [order, map_key] : lru_) {
      auto it = entries_.find(map_key);
      if (&it->second == keep || reserved_.contains(it->second.id)) continue;
      RemoveLocked(it, /*evicted=*/true);
      return true;
    }
    return false;
  }

  void Drop(const CacheKey& key, int64_t id, const Status& why) {
    MutexLock lock(mutex_);
    auto it = entries_.find(MapKey(key.bucket, key.key));
    if (it == entries_.end() || it->second.id != id) return;
    REELFS_LOG_WARN("cache", "dropping the cached copy of '{}': {}; reading it from the server",
                    key.key, why.message());
    ++stats_.dropped_objects;
    RemoveLocked(it, /*evicted=*/false);
  }

  Status StoreFailedLocked(const CacheKey& key, const Status& why) REQUIRES(mutex_) {
    ++stats_.store_failures;
    WarnLocked(&last_store_warning_,
               fmt::format("could not cache '{}': {}", key.key, why.message()));
    return why;
  }

  void WarnLocked(std::chrono::steady_clock::time_point* last, const std::string& message)
      REQUIRES(mutex_) {
    const auto now = std::chrono::steady_clock::now();
    if (*last != std::chrono::steady_clock::time_point{} && now - *last < kWarnEvery) return;
    *last = now;
    REELFS_LOG_WARN("cache",
                    "{} (reads go on from the server; this warning repeats at most "
                    "once a minute)",
                    message);
  }

  const std::string dir_;
  const std::string data_dir_;
  const CacheOptions options_;
  const std::shared_ptr<CacheFiles> files_;
  const UniqueFd lock_;  // held (flock) for the cache's lifetime

  mutable Mutex mutex_;
  std::unique_ptr<CacheIndex> index_ GUARDED_BY(mutex_);
  EntryMap entries_ GUARDED_BY(mutex_);
  std::map<uint64_t, std::string> lru_ GUARDED_BY(mutex_);  // lru position -> map key
  uint64_t lru_clock_ GUARDED_BY(mutex_) = 0;
  uint64_t total_bytes_ GUARDED_BY(mutex_) = 0;                        // present + reserved
  std::unordered_map<int64_t, uint64_t> reserved_ GUARDED_BY(mutex_);  // id -> bytes in flight
  CacheStats stats_ GUARDED_BY(mutex_);
  std::chrono::steady_clock::time_point last_room_warning_ GUARDED_BY(mutex_);
  std::chrono::steady_clock::time_point last_store_warning_ GUARDED_BY(mutex_);
  // Last: destroyed first, running what is queued while every member above is still alive.
  IoPool verifier_{1};  // OpenWholeAsync's verifications
};

Result<UniqueFd> LockDir(const std::string& dir) {
  const std::string path = dir + "/lock";
  Result<UniqueFd> fd = UniqueFd::Open(path, O_RDWR | O_CREAT, 0600);
  if (!fd.ok()) {
    return Status::FailedPrecondition(
        fmt::format("cache directory {} is not writable: {}", dir, fd.status().message()));
  }
  while (::flock(fd->get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK) {
      char pid[32] = {};
      const ssize_t n = ::pread(fd->get(), pid, sizeof(pid) - 1, 0);
      std::string holder = n > 0 ? std::string(pid, static_cast<size_t>(n)) : "?";
      while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
      return Status::FailedPrecondition(fmt::format(
          "cache directory {} is in use by another reelfs process (pid {}); give each mount its "
          "own --cache directory",
          dir, holder));
    }
    return ErrnoToStatus(errno, "lock " + path);
  }
  const std::string pid = fmt::format("{}\n", ::getpid());
  if (::ftruncate(fd->get(), 0) != 0 ||
      ::pwrite(fd->get(), pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    return Status::FailedPrecondition(fmt::format("cache directory {} is not writable: {}", dir,
                                                  ErrnoToStatus(errno, path).message()));
  }
  return fd;
}

}  // namespace

Result<std::shared_ptr<ObjectCache>> ObjectCache::Open(const std::string& dir, CacheOptions options,
                                                       std::shared_ptr<CacheFiles> files) {
  if (options.block_size == 0 || options.max_bytes == 0) {
    return Status::InvalidArgument("cache: block size and size limit must be positive");
  }
  REELFS_RETURN_IF_ERROR(MakeDir(dir));
  REELFS_ASSIGN_OR_RETURN(UniqueFd lock, LockDir(dir));
  REELFS_RETURN_IF_ERROR(MakeDir(dir + "/data"));
  REELFS_ASSIGN_OR_RETURN(std::unique_ptr<CacheIndex> index, OpenCacheIndex(dir + "/index.sqlite"));
  auto cache =
      std::make_shared<Cache>(dir, options, std::move(files), std::move(index), std::move(lock));
  REELFS_RETURN_IF_ERROR(cache->Load());
  return std::shared_ptr<ObjectCache>(std::move(cache));
}

}  // namespace reelfs::cache
