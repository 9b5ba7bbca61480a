// FileSystem implementation: the inode table, caches and handles behind one mutex, with every S3
// request issued outside it and continued in its completion callback.
//
// Lifetime: the public FileSystem object owns a shared Core; every callback handed to the store
// holds the Core, so a response that arrives after the FileSystem is destroyed still finds its
// state (and still calls its `done` exactly once).

#include "fuse/core/filesystem.h"

#include <fcntl.h>

#include <atomic>
#include <cerrno>
#include <mutex>
#include <unordered_map>

#include <sys/stat.h>

#include "common/log.h"
#include "common/thread_annotations.h"
#include "fuse/core/dir_listing.h"
#include "fuse/core/inode_table.h"
#include "fuse/core/lookup_listing.h"
#include "fuse/core/metadata_cache.h"
#include "fuse/core/prefetcher.h"

namespace reelfs::fuse {
namespace {

// Generation numbers: inode numbers are never reused within a mount, so one constant suffices.
constexpr uint64_t kGeneration = 1;
// d_ino for plain READDIR entries that have no inode yet. The kernel does not use it to find the
// file (it LOOKUPs the name), and allocating an inode the kernel never counts would leak it.
constexpr InodeId kUnknownIno = 0xffffffff;  // FUSE_UNKNOWN_INO
// StatFs: S3 has no capacity. A large constant keeps tools that check space (cp, rsync, df)
// content; the mount is read-only, so nothing relies on it being true.
constexpr uint64_t kStatFsBytes = 1ull << 50;  // 1 PiB

Status Stale(InodeId ino) { return ErrnoToStatus(ESTALE, fmt::format("inode {} is unknown", ino)); }

bool WantsWrite(int flags) {
  return (flags & O_ACCMODE) != O_RDONLY || (flags & (O_TRUNC | O_APPEND | O_CREAT)) != 0;
}

struct DirHandle {
  InodeId ino = 0;
  InodeId parent = 0;
  std::shared_ptr<const DirListing> snapshot;
  std::vector<InodeId> pinned;  // READDIRPLUS children pinned until ReleaseDir
};

struct FileHandle {
  InodeId ino = 0;
  std::shared_ptr<Prefetcher> prefetcher;
};

class Core : public std::enable_shared_from_this<Core> {
 public:
  Core(std::shared_ptr<s3::ObjectStore> store, MountOptions options,
       std::shared_ptr<BufferPool> pool, std::shared_ptr<MemoryBudget> budget, Clock& clock)
      : store_(std::move(store)),
        options_(std::move(options)),
        pool_(std::move(pool)),
        budget_(std::move(budget)),
        clock_(clock),
        mount_time_(clock.WallNow()),
        warn_(std::make_shared<WarnOnce>()),
        negative_(options_.negative_cache_entries, options_.negative_ttl),
        inodes_(MakeRoot()) {}

  void Lookup(InodeId parent, std::string_view name, Callback<Entry> done);
  void Forget(InodeId ino, uint64_t nlookup);
  void GetAttr(InodeId ino, Callback<Attributes> done);
  void OpenDir(InodeId ino, Callback<uint64_t> done);
  void ReadDir(InodeId ino, uint64_t dh, uint64_t offset, size_t max_entries, bool plus,
               Callback<std::vector<DirEntry>> done);
  void AcceptDirEntries(const std::vector<DirEntry>& accepted);
  void ReleaseDir(uint64_t dh);
  void Open(InodeId ino, int flags, Callback<OpenedFile> done);
  void Read(InodeId ino, uint64_t fh, uint64_t offset, size_t size, Callback<ReadData> done);
  void Release(uint64_t fh);
  FsStats StatFs();
  FsCounters counters() const;
  const MountOptions& options() const { return options_; }
  void Shutdown();

 private:
  InodeRecord MakeRoot() const {
    InodeRecord root;
    root.key = options_.prefix;
    root.attr = DirAttr(kRootInode);
    return root;
  }
  Attributes DirAttr(InodeId ino) const;
  Attributes FileAttr(InodeId ino, const s3::ObjectInfo& info) const;
  Clock::TimePoint Expiry() const { return clock_.Now() + options_.metadata_ttl; }
  std::string ChildKey(const InodeRecord& parent, std::string_view name, bool is_dir) const {
    return parent.key + std::string(name) + (is_dir ? "/" : "");
  }
  // Records a looked-up child (one more kernel reference) and returns its Entry.
  Result<Entry> AddEntryLocked(InodeId parent, std::string_view name, bool is_dir,
                               const s3::ObjectInfo* info, bool count) REQUIRES(mutex_);
  // The live inode `ino` of the wanted kind: ESTALE when unknown, ENOTDIR / EISDIR when of the
  // other kind (kAny accepts both). `what` names the operation in the message.
  enum class Want { kAny, kDir, kFile };
  Result<InodeRecord*> FindLocked(InodeId ino, Want want, std::string_view what) REQUIRES(mutex_);
  Entry MakeEntry(const InodeRecord& record) const;
  void LookupRemote(InodeId parent, std::string name, std::string key, Callback<Entry> done);
  // Lookups answered from directory listings need a reusable listing and a budget.
  bool LookupListingsEnabled() const {
    return options_.lookup_listing_pages > 0 && options_.metadata_ttl > std::chrono::seconds(0);
  }
  // Lists directory `dir` (prefix `prefix`) for the lookups queued on it (lookup_listing.h).
  void StartLookupListing(InodeId dir, std::string prefix);
  // The listing of `dir` ended: installs it and answers its waiters, or sends them to HEAD+LIST.
  void FinishLookupListing(InodeId dir, Result<std::shared_ptr<const DirListing>> listing);
  // HEAD for a file whose cached attributes expired; updates the inode on success.
  void RefreshFile(InodeId ino, std::string key, Callback<InodeRecord> done);
  void FinishOpen(InodeId ino, const std::string& etag, uint64_t size, Callback<OpenedFile> done);

  const std::shared_ptr<s3::ObjectStore> store_;
  const MountOptions options_;
  const std::shared_ptr<BufferPool> pool_;
  const std::shared_ptr<MemoryBudget> budget_;
  Clock& clock_;
  const std::chrono::system_clock::time_point mount_time_;
  const std::shared_ptr<WarnOnce> warn_;  // own leaf lock

  std::atomic<uint64_t> lookups_{0};
  std::atomic<uint64_t> list_requests_{0};
  std::atomic<uint64_t> head_requests_{0};
  std::atomic<uint64_t> bytes_read_{0};

  // Guards everything below. Leaf lock: never held while calling the store, a Prefetcher or a
  // callback (WarnOnce's lock is never taken under it either).
  mutable std::mutex mutex_;
  NegativeCache negative_ GUARDED_BY(mutex_);
  InodeTable inodes_ GUARDED_BY(mutex_);
  std::unordered_map<uint64_t, DirHandle> dir_handles_ GUARDED_BY(mutex_);
  std::unordered_map<uint64_t, FileHandle> file_handles_ GUARDED_BY(mutex_);
  LookupListings lookup_listings_ GUARDED_BY(mutex_);
  uint64_t next_handle_ GUARDED_BY(mutex_) = 1;
};

Attributes Core::DirAttr(InodeId ino) const {
  Attributes a;
  a.ino = ino;
  a.is_dir = true;
  a.mode = S_IFDIR | options_.dir_mode;
  a.nlink = 2;
  a.uid = options_.uid;
  a.gid = options_.gid;
  // S3 has no directory times; the mount time is stable and plausible (mountpoint-s3 does this).
  a.mtime = mount_time_;
  return a;
}

Attributes Core::FileAttr(InodeId ino, const s3::ObjectInfo& info) const {
  Attributes a;
  a.ino = ino;
  a.is_dir = false;
  a.size = info.size;
  a.mode = S_IFREG | options_.file_mode;
  a.nlink = 1;
  a.uid = options_.uid;
  a.gid = options_.gid;
  a.mtime = info.last_modified;
  a.blocks = (info.size + 511) / 512;
  return a;
}

Entry Core::MakeEntry(const InodeRecord& record) const {
  Entry e;
  e.attr = record.attr;
  e.generation = kGeneration;
  e.entry_timeout = options_.metadata_ttl;
  e.attr_timeout = options_.metadata_ttl;
  return e;
}

Result<InodeRecord*> Core::FindLocked(InodeId ino, Want want, std::string_view what) {
  InodeRecord* rec = inodes_.Find(ino);
  if (rec == nullptr) return Stale(ino);
  if (want == Want::kDir && !rec->is_dir) {
    return ErrnoToStatus(ENOTDIR, fmt::format("{} inode {}", what, ino));
  }
  if (want == Want::kFile && rec->is_dir) {
    return ErrnoToStatus(EISDIR, fmt::format("{} directory inode {}", what, ino));
  }
  return rec;
}

Result<Entry> Core::AddEntryLocked(InodeId parent, std::string_view name, bool is_dir,
                                   const s3::ObjectInfo* info, bool count) {
  InodeRecord* p = inodes_.Find(parent);
  if (p == nullptr) return Stale(parent);
  std::string key = ChildKey(*p, name, is_dir);
  InodeRecord* child = inodes_.FindOrCreateChild(parent, name, is_dir, std::move(key));
  if (is_dir) {
    child->attr = DirAttr(child->ino);
  } else {
    child->attr = FileAttr(child->ino, *info);
    child->etag = info->etag;
  }
  child->attr_expiry = Expiry();
  if (count) ++child->lookups;
  return MakeEntry(*child);
}

void Core::Lookup(InodeId parent, std::string_view name, Callback<Entry> done) {
  lookups_.fetch_add(1, std::memory_order_relaxed);
  if (NameProblem p = CheckName(name); p != NameProblem::kNone) {
    int err = p == NameProblem::kTooLong ? ENAMETOOLONG : ENOENT;
    done(
        ErrnoToStatus(err, fmt::format("lookup '{}': {}", PrintableKey(name), NameProblemText(p))));
    return;
  }
  std::string key;
  bool start_listing = false;  // this lookup queued itself on a listing it must start
  std::string list_prefix;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    Result<InodeRecord*> found = FindLocked(parent, Want::kDir, "lookup in");
    if (!found.ok()) {
      lock.unlock();
      done(std::move(found).status());
      return;
    }
    InodeRecord* p = *found;
    key = p->key + std::string(name);
    if (p->listing != nullptr && clock_.Now() < p->listing_expiry) {
      // A fresh listing is authoritative, negative answers included.
      const ListedEntry* e = p->listing->Find(name);
      Result<Entry> r = e == nullptr
                            ? Result<Entry>(ErrnoToStatus(ENOENT, "no such name: " + key))
                            : AddEntryLocked(parent, name, e->is_dir, &e->info, /*count=*/true);
      lock.unlock();
      done(std::move(r));
      return;
    }
    if (negative_.Contains(key, clock_.Now())) {
      lock.unlock();
      done(ErrnoToStatus(ENOENT, "no such name (cached): " + key));
      return;
    }
    // A known child whose attributes are still fresh needs no request either.
    if (InodeRecord* c = inodes_.FindChild(parent, name);
        c != nullptr && clock_.Now() < c->attr_expiry) {
      ++c->lookups;
      Entry entry = MakeEntry(*c);
      lock.unlock();
      done(std::move(entry));
      return;
    }
    // Answer from the directory's listing (lookup_listing.h): join the one in flight, or start
    // it. The starter waits for one page only, so it pays at most one extra round trip (a
    // one-page directory answers it from that page); others wait up to the page budget.
    if (LookupListingsEnabled()) {
      if (lookup_listings_.InFlight(parent)) {
        lookup_listings_.Wait(
            parent, ListingWaiter{std::string(name), std::move(key), options_.lookup_listing_pages,
                                  std::move(done)});
        return;
      }
      if (lookup_listings_.TryStart(parent, clock_.Now())) {
        lookup_listings_.Wait(parent,
                              ListingWaiter{std::string(name), std::move(key), 1, std::move(done)});
        start_listing = true;
        list_prefix = p->key;
      }
    }
  }
  if (start_listing) {
    StartLookupListing(parent, std::move(list_prefix));
    return;
  }
  LookupRemote(parent, std::string(name), std::move(key), std::move(done));
}

void Core::StartLookupListing(InodeId dir, std::string prefix) {
  auto self = shared_from_this();
  ListDirectoryBounded(
      store_, options_.bucket, std::move(prefix), warn_, options_.lookup_listing_pages,
      [self] { self->list_requests_.fetch_add(1, std::memory_order_relaxed); },
      [self, dir](uint32_t pages) {
        std::vector<ListingWaiter> released;
        {
          std::lock_guard<std::mutex> lock(self->mutex_);
          released = self->lookup_listings_.TakeImpatient(dir, pages);
        }
        for (ListingWaiter& w : released) {
          self->LookupRemote(dir, std::move(w.name), std::move(w.key), std::move(w.done));
        }
      },
      [self, dir](Result<std::shared_ptr<const DirListing>> listing) {
        self->FinishLookupListing(dir, std::move(listing));
      });
}

void Core::FinishLookupListing(InodeId dir, Result<std::shared_ptr<const DirListing>> listing) {
  std::vector<ListingWaiter> waiters;
  std::vector<std::pair<Callback<Entry>, Result<Entry>>> answers;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    waiters = lookup_listings_.Finish(dir);
    if (listing.ok() && *listing != nullptr) {
      const std::shared_ptr<const DirListing>& l = *listing;
      // Installed exactly as OpenDir does: readdir and later lookups are served from it.
      InodeRecord* rec = inodes_.Find(dir);
      if (rec != nullptr) {
        rec->listing = l;
        rec->listing_expiry = Expiry();
      }
      answers.reserve(waiters.size());
      for (ListingWaiter& w : waiters) {
        // Authoritative, negative answers included (as a cached listing is in Lookup).
        const ListedEntry* e = l->Find(w.name);
        Result<Entry> r = e == nullptr
                              ? Result<Entry>(ErrnoToStatus(ENOENT, "no such name: " + w.key))
                              : AddEntryLocked(dir, w.name, e->is_dir, &e->info, /*count=*/true);
        answers.emplace_back(std::move(w.done), std::move(r));
      }
      waiters.clear();
    } else if (listing.ok()) {
      // Over the budget: lookups here use HEAD+LIST until the directory may have changed.
      lookup_listings_.HoldOff(dir, clock_.Now(), options_.metadata_ttl);
    } else {
      // Holding off keeps a failing LIST from being retried by every lookup.
      lookup_listings_.HoldOff(dir, clock_.Now(), options_.negative_ttl);
    }
  }
  if (!listing.ok()) {
    // Not an error anyone sees: the waiters retry per name below, and their HEAD+LIST reports
    // whatever is still wrong.
    REELFS_LOG_DEBUG("fuse", "lookup listing of inode {} failed, falling back to HEAD+LIST: {}",
                     dir, listing.status().ToString());
  }
  for (auto& [done, result] : answers) done(std::move(result));
  for (ListingWaiter& w : waiters) {
    LookupRemote(dir, std::move(w.name), std::move(w.key), std::move(w.done));
  }
}

// HEAD(key) and LIST(key + "/", max-keys 1) in parallel, as mountpoint-s3 does: one round trip
// tells file, directory (with or without marker) or nothing. The directory wins.
void Core::LookupRemote(InodeId parent, std::string name, std::string key, Callback<Entry> done) {
  struct Pending {
    std::mutex mutex;
    int remaining = 2;
    std::optional<Result<s3::ObjectInfo>> head;
    std::optional<Result<s3::ListObjectsPage>> list;
  };
  auto pending = std::make_shared<Pending>();
  auto self = shared_from_this();
  auto finish = [self, pending, parent, name, key, done = std::move(done)]() mutable {
    Result<s3::ObjectInfo>& head = *pending->head;
    Result<s3::ListObjectsPage>& list = *pending->list;
    bool is_dir = list.ok() && (!list->objects.empty() || !list->common_prefixes.empty());
    Result<Entry> result = Status::Internal("unreachable");
    {
      std::lock_guard<std::mutex> lock(self->mutex_);
      if (is_dir) {
        result = self->AddEntryLocked(parent, name, true, nullptr, true);
      } else if (!list.ok()) {
        result = list.status();
      } else if (head.ok()) {
        result = self->AddEntryLocked(parent, name, false, &*head, true);
      } else if (head.status().code() == StatusCode::kNotFound) {
        self->negative_.Insert(key, self->clock_.Now());
        result = head.status();
      } else {
        result = head.status();
      }
    }
    done(std::move(result));
  };
  auto arrive = [pending, finish = std::make_shared<decltype(finish)>(std::move(finish))]() {
    bool last;
    {
      std::lock_guard<std::mutex> lock(pending->mutex);
      last = --pending->remaining == 0;
    }
    if (last) (*finish)();
  };
  head_requests_.fetch_add(1, std::memory_order_relaxed);
  list_requests_.fetch_add(1, std::memory_order_relaxed);
  store_->HeadObject({options_.bucket, key}, [pending, arrive](Result<s3::ObjectInfo> r) {
    {
      std::lock_guard<std::mutex> lock(pending->mutex);
      pending->head.emplace(std::move(r));
    }
    arrive();
  });
  s3::ListObjectsRequest req;
  req.bucket = options_.bucket;
  req.prefix = key + "/";
  req.delimiter = "/";
  req.max_keys = 1;
  store_->ListObjects(req, [pending, arrive](Result<s3::ListObjectsPage> r) {
    {
      std::lock_guard<std::mutex> lock(pending->mutex);
      pending->list.emplace(std::move(r));
    }
    arrive();
  });
}

void Core::Forget(InodeId ino, uint64_t nlookup) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!inodes_.Forget(ino, nlookup)) {
    REELFS_LOG_DEBUG("fuse", "forget of unknown inode {}", ino);
  }
}

void Core::RefreshFile(InodeId ino, std::string key, Callback<InodeRecord> done) {
  head_requests_.fetch_add(1, std::memory_order_relaxed);
  auto self = shared_from_this();
  store_->HeadObject({options_.bucket, std::move(key)},
                     [self, ino, done = std::move(done)](Result<s3::ObjectInfo> r) {
                       if (!r.ok()) {
                         done(r.status());
                         return;
                       }
                       Result<InodeRecord> out = Stale(ino);
                       {
                         std::lock_guard<std::mutex> lock(self->mutex_);
                         if (InodeRecord* rec = self->inodes_.Find(ino); rec != nullptr) {
                           rec->attr = self->FileAttr(ino, *r);
                           rec->etag = r->etag;
                           rec->attr_expiry = self->Expiry();
                           InodeRecord copy;  // only the fields callers read; no listing copy
                           copy.ino = ino;
                           copy.attr = rec->attr;
                           copy.etag = rec->etag;
                           out = std::move(copy);
                         }
                       }
                       done(std::move(out));
                     });
}

void Core::GetAttr(InodeId ino, Callback<Attributes> done) {
  std::string key;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    InodeRecord* rec = inodes_.Find(ino);
    if (rec == nullptr) {
      lock.unlock();
      done(Stale(ino));
      return;
    }
    // Directories have nothing to revalidate: their attributes are synthetic.
    if (rec->is_dir || clock_.Now() < rec->attr_expiry) {
      Attributes a = rec->attr;
      lock.unlock();
      done(std::move(a));
      return;
    }
    key = rec->key;
  }
  RefreshFile(ino, std::move(key), [done = std::move(done)](Result<InodeRecord> r) {
    if (!r.ok()) {
      done(r.status());
      return;
    }
    done(r->attr);
  });
}

void Core::OpenDir(InodeId ino, Callback<uint64_t> done) {
  std::string prefix;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    Result<InodeRecord*> found = FindLocked(ino, Want::kDir, "opendir of");
    if (!found.ok()) {
      lock.unlock();
      done(std::move(found).status());
      return;
    }
    InodeRecord* rec = *found;
    if (rec->listing != nullptr && clock_.Now() < rec->listing_expiry) {
      uint64_t dh = next_handle_++;
      dir_handles_[dh] = DirHandle{ino, rec->parent, rec->listing, {}};
      ++rec->pins;
      lock.unlock();
      done(dh);
      return;
    }
    prefix = rec->key;
  }
  auto self = shared_from_this();
  ListDirectory(
      store_, options_.bucket, std::move(prefix), warn_,
      [self] { self->list_requests_.fetch_add(1, std::memory_order_relaxed); },
      [self, ino, done = std::move(done)](Result<std::shared_ptr<const DirListing>> listing) {
        if (!listing.ok()) {
          done(listing.status());
          return;
        }
        Result<uint64_t> out = Stale(ino);
        {
          std::lock_guard<std::mutex> lock(self->mutex_);
          if (InodeRecord* rec = self->inodes_.Find(ino); rec != nullptr) {
            rec->listing = *listing;
            rec->listing_expiry = self->Expiry();
            uint64_t dh = self->next_handle_++;
            self->dir_handles_[dh] = DirHandle{ino, rec->parent, *listing, {}};
            ++rec->pins;
            out = dh;
          }
        }
        done(std::move(out));
      });
}

void Core::ReadDir(InodeId ino, uint64_t dh, uint64_t offset, size_t max_entries, bool plus,
                   Callback<std::vector<DirEntry>> done) {
  std::vector<DirEntry> out;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    auto it = dir_handles_.find(dh);
    if (it == dir_handles_.end() || it->second.ino != ino) {
      lock.unlock();
      done(ErrnoToStatus(EBADF, fmt::format("directory handle {} is not open", dh)));
      return;
    }
    DirHandle& h = it->second;
    const auto& entries = h.snapshot->entries;
    // Offsets: 0 starts, entry i (0 ".", 1 "..", i >= 2 the children) carries i + 1.
    const uint64_t total = entries.size() + 2;
    for (uint64_t i = offset; i < total && out.size() < max_entries; ++i) {
      DirEntry d;
      d.offset = i + 1;
      if (i < 2) {
        d.name = i == 0 ? "." : "..";
        InodeId target = i == 0 ? h.ino : h.parent;
        InodeRecord* rec = inodes_.Find(target);
        if (rec == nullptr) rec = inodes_.Find(h.ino);  // parent forgotten: show ourselves
        if (rec != nullptr) d.entry = MakeEntry(*rec);
        d.entry.attr.ino = target;
        out.push_back(std::move(d));
        continue;
      }
      const ListedEntry& le = entries[i - 2];
      d.name = le.name;
      if (plus) {
        Result<Entry> e = AddEntryLocked(ino, le.name, le.is_dir, &le.info, /*count=*/false);
        if (!e.ok()) {
          lock.unlock();
          done(e.status());
          return;
        }
        d.entry = std::move(e).value();
        // Pinned until ReleaseDir so it survives until AcceptDirEntries counts it.
        if (InodeRecord* c = inodes_.Find(d.entry.attr.ino); c != nullptr) ++c->pins;
        h.pinned.push_back(d.entry.attr.ino);
      } else {
        InodeRecord* c = inodes_.FindChild(ino, le.name);
        d.entry.attr.ino = c != nullptr && c->is_dir == le.is_dir ? c->ino : kUnknownIno;
        d.entry.attr.is_dir = le.is_dir;
        d.entry.attr.mode =
            le.is_dir ? (S_IFDIR | options_.dir_mode) : (S_IFREG | options_.file_mode);
      }
      out.push_back(std::move(d));
    }
  }
  done(std::move(out));
}

void Core::AcceptDirEntries(const std::vector<DirEntry>& accepted) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const DirEntry& d : accepted) {
    // The kernel takes no reference for "." and ".." (fuse_direntplus_link skips them).
    if (d.name == "." || d.name == ".." || d.entry.attr.ino == 0) continue;
    if (InodeRecord* rec = inodes_.Find(d.entry.attr.ino); rec != nullptr) {
      ++rec->lookups;
    } else {
      REELFS_LOG_ERROR("fuse", "accepted directory entry for unknown inode {}", d.entry.attr.ino);
    }
  }
}

void Core::ReleaseDir(uint64_t dh) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = dir_handles_.find(dh);
  if (it == dir_handles_.end()) return;
  DirHandle h = std::move(it->second);
  dir_handles_.erase(it);
  for (InodeId child : h.pinned) inodes_.Unpin(child);
  inodes_.Unpin(h.ino);
}

void Core::Open(InodeId ino, int flags, Callback<OpenedFile> done) {
  if (WantsWrite(flags)) {
    done(ErrnoToStatus(EROFS, fmt::format("open of inode {} for writing", ino)));
    return;
  }
  std::string key;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    Result<InodeRecord*> found = FindLocked(ino, Want::kFile, "open of");
    if (!found.ok()) {
      lock.unlock();
      done(std::move(found).status());
      return;
    }
    InodeRecord* rec = *found;
    if (clock_.Now() < rec->attr_expiry) {
      std::string etag = rec->etag;
      uint64_t size = rec->attr.size;
      lock.unlock();
      FinishOpen(ino, etag, size, std::move(done));
      return;
    }
    key = rec->key;
  }
  auto self = shared_from_this();
  RefreshFile(ino, std::move(key), [self, ino, done = std::move(done)](Result<InodeRecord> r) {
    if (!r.ok()) {
      done(r.status());
      return;
    }
    self->FinishOpen(ino, r->etag, r->attr.size, std::move(done));
  });
}

void Core::FinishOpen(InodeId ino, const std::string& etag, uint64_t size,
                      Callback<OpenedFile> done) {
  OpenedFile opened;
  std::string key;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    InodeRecord* rec = inodes_.Find(ino);
    if (rec == nullptr) {
      lock.unlock();
      done(Stale(ino));
      return;
    }
    // The kernel's page cache for this inode is still valid only if the object did not change.
    opened.keep_cache = rec->opened_before && !etag.empty() && rec->last_open_etag == etag;
    rec->opened_before = true;
    rec->last_open_etag = etag;
    ++rec->pins;  // the handle keeps the inode (and its key) alive
    key = rec->key;
    opened.fh = next_handle_++;
    file_handles_[opened.fh] = FileHandle{ino, nullptr};
  }
  // Created outside the lock: the prefetcher is free to touch the store from its constructor.
  std::shared_ptr<Prefetcher> prefetcher =
      CreatePrefetcher(store_, ObjectRef{options_.bucket, std::move(key), size, etag},
                       options_.prefetch, budget_, pool_);
  bool closed = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = file_handles_.find(opened.fh);
    if (it != file_handles_.end()) {
      it->second.prefetcher = prefetcher;
    } else {
      closed = true;  // Shutdown raced with this open
    }
  }
  if (closed) {
    prefetcher->Close();
    done(Status::Cancelled("file system shut down during open"));
    return;
  }
  done(opened);
}

void Core::Read(InodeId ino, uint64_t fh, uint64_t offset, size_t size, Callback<ReadData> done) {
  std::shared_ptr<Prefetcher> prefetcher;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = file_handles_.find(fh);
    if (it != file_handles_.end() && it->second.ino == ino) prefetcher = it->second.prefetcher;
  }
  if (prefetcher == nullptr) {
    done(ErrnoToStatus(EBADF, fmt::format("file handle {} is not open", fh)));
    return;
  }
  auto self = shared_from_this();
  prefetcher->Read(offset, size, [self, done = std::move(done)](Result<ReadData> r) {
    if (r.ok()) self->bytes_read_.fetch_add(r->size(), std::memory_order_relaxed);
    done(std::move(r));
  });
}

void Core::Release(uint64_t fh) {
  std::shared_ptr<Prefetcher> prefetcher;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = file_handles_.find(fh);
    if (it == file_handles_.end()) return;
    prefetcher = std::move(it->second.prefetcher);
    InodeId ino = it->second.ino;
    file_handles_.erase(it);
    inodes_.Unpin(ino);
  }
  if (prefetcher != nullptr) prefetcher->Close();
}

FsStats Core::StatFs() {
  FsStats s;
  s.block_size = 4096;
  s.blocks = kStatFsBytes / s.block_size;
  std::lock_guard<std::mutex> lock(mutex_);
  s.files = inodes_.size();
  s.max_name = kMaxNameBytes;
  return s;
}

FsCounters Core::counters() const {
  FsCounters c;
  c.lookups = lookups_.load(std::memory_order_relaxed);
  c.list_requests = list_requests_.load(std::memory_order_relaxed);
  c.head_requests = head_requests_.load(std::memory_order_relaxed);
  c.bytes_read = bytes_read_.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mutex_);
  c.open_handles = file_handles_.size();
  c.inodes = inodes_.size();
  return c;
}

void Core::Shutdown() {
  std::vector<std::shared_ptr<Prefetcher>> prefetchers;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [fh, h] : file_handles_) {
      if (h.prefetcher != nullptr) prefetchers.push_back(std::move(h.prefetcher));
    }
    file_handles_.clear();
    dir_handles_.clear();
  }
  for (auto& p : prefetchers) p->Close();
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
    core_->OpenDir(ino, std::move(done));
  }
  void ReadDir(InodeId ino, uint64_t dh, uint64_t offset, size_t max_entries, bool plus,
               Callback<std::vector<DirEntry>> done) override {
    core_->ReadDir(ino, dh, offset, max_entries, plus, std::move(done));
  }
  void AcceptDirEntries(const std::vector<DirEntry>& accepted) override {
    core_->AcceptDirEntries(accepted);
  }
  void ReleaseDir(uint64_t dh) override { core_->ReleaseDir(dh); }
  void Open(InodeId ino, int flags, Callback<OpenedFile> done) override {
    core_->Open(ino, flags, std::move(done));
  }
  void Read(InodeId ino, uint64_t fh, uint64_t offset, size_t size,
            Callback<ReadData> done) override {
    core_->Read(ino, fh, offset, size, std::move(done));
  }
  void Release(uint64_t fh) override { core_->Release(fh); }
  FsStats StatFs() override { return core_->StatFs(); }
  FsCounters counters() const override { return core_->counters(); }
  const MountOptions& options() const override { return core_->options(); }

 private:
  std::shared_ptr<Core> core_;
};

}  // namespace

std::unique_ptr<FileSystem> CreateFileSystem(std::shared_ptr<s3::ObjectStore> store,
                                             MountOptions options, std::shared_ptr<BufferPool> pool,
                                             std::shared_ptr<MemoryBudget> budget, Clock& clock) {
  auto core = std::make_shared<Core>(std::move(store), std::move(options), std::move(pool),
                                     std::move(budget), clock);
  return std::make_unique<FileSystemImpl>(std::move(core));
}

}  // namespace reelfs::fuse
