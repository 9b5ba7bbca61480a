// FileSystem implementation: the inode table, caches and handles behind one mutex, with every S3
// request issued outside it and continued in its completion callback.
//
// Lifetime: the public FileSystem object owns a shared Core; every callback handed to the store
// holds the Core, so a response that arrives after the FileSystem is destroyed still finds its
// state (and still calls its `done` exactly once).

#include "fuse/core/filesystem.h"

#include <fcntl.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <ctime>
#include <limits>
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
#include "hsm/state.h"
#include "s3/protocol/restore_header.h"

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

// A wait for a restore that keeps finding the object offline again (the releaser race, each time
// after the Restorer saw it readable) gives up after this many rounds instead of spinning.
constexpr int kMaxRestoreWaits = 8;

constexpr std::string_view kInvalidObjectState = "InvalidObjectState";
constexpr std::string_view kXattrRequest = "user.hsm.request";
constexpr std::string_view kXattrSummary = "user.hsm.summary";
constexpr std::string_view kXattrMount = "user.reelfs.mount";
constexpr std::string_view kXattrMetrics = "user.reelfs.metrics";
constexpr std::string_view kXattrStorageClass = "user.s3.storage_class";
constexpr std::string_view kXattrEtag = "user.s3.etag";
constexpr std::string_view kXattrRestore = "user.s3.restore";
constexpr std::string_view kXattrState = "user.hsm.state";
constexpr std::string_view kXattrExpiry = "user.hsm.restore_expiry";
constexpr std::string_view kXattrTape = "user.hsm.tape";
constexpr std::string_view kXattrPosition = "user.hsm.position";

Status Stale(InodeId ino) { return ErrnoToStatus(ESTALE, fmt::format("inode {} is unknown", ino)); }

Status NoData(InodeId ino, std::string_view name) {
  return ErrnoToStatus(ENODATA, fmt::format("inode {} has no attribute {}", ino, name));
}

// The answer to a read of an object that is still archived, carrying the errno the mode chose
// (EAGAIN, ETIMEDOUT): kFailedPrecondition with the S3 code, so fuse/lowlevel/errno_map.cc keeps
// the errno (it only discards errnos of network failures).
Status OfflineError(int err, std::string message) {
  return Status(StatusCode::kFailedPrecondition, std::move(message),
                StatusDetail{.sys_errno = err, .s3_code = std::string(kInvalidObjectState)});
}

bool IsInvalidObjectState(const Status& s) { return s.detail().s3_code == kInvalidObjectState; }

// "2026-11-30T12:00:00Z".
std::string Iso8601(s3::WallTime t) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return std::string(buf, n);
}

// A JSON string literal (quotes included); control bytes as \u00XX, other bytes as they are.
std::string JsonString(std::string_view in) {
  std::string out = "\"";
  for (unsigned char c : in) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      out += fmt::format("\\u{:04x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
  return out;
}

// user.hsm.position: the parts of the tape hint that say where the object is.
std::string PositionText(const hsm::TapeHint& h) {
  std::string out;
  auto add = [&out](std::string_view k, uint64_t v) {
    if (!out.empty()) out += ',';
    out += fmt::format("{}={}", k, v);
  };
  if (h.block) add("block", *h.block);
  if (h.wrap) add("wrap", *h.wrap);
  if (h.lpos) add("lpos", *h.lpos);
  return out;
}

bool WantsWrite(int flags) {
  return (flags & O_ACCMODE) != O_RDONLY || (flags & (O_TRUNC | O_APPEND | O_CREAT)) != 0;
}

struct DirHandle {
  InodeId ino = 0;
  InodeId parent = 0;
  std::shared_ptr<const DirListing> snapshot;
  Clock::TimePoint listed_at{};  // when the snapshot was listed
  std::vector<InodeId> pinned;   // READDIRPLUS children pinned until ReleaseDir
};

struct FileHandle {
  InodeId ino = 0;
  std::shared_ptr<Prefetcher> prefetcher;
  ObjectRef ref;          // what the prefetcher reads (recreated after a restore)
  bool nonblock = false;  // O_NONBLOCK: reads of an offline object answer EAGAIN at once
};

// One READ of a file handle, kept across the waits for a restore it may need.
struct ReadOp {
  InodeId ino = 0;
  uint64_t fh = 0;
  uint64_t offset = 0;
  size_t size = 0;
  std::shared_ptr<CancellationToken> interrupt;
  Callback<ReadData> done;
  std::optional<Clock::TimePoint> deadline;  // set by the first wait
  int waits = 0;
};

// The xattr answers for a file, from a copy taken under the lock.
struct FileXattrView {
  std::string key;
  std::string etag;
  s3::ObjectInfo object;
  bool offline_by_get = false;  // a GET said InvalidObjectState after `object` was observed
};

// user.hsm.summary of one directory: the cached value and the readers waiting for a computation.
struct SummaryCache {
  std::string value;
  Clock::TimePoint expiry{};
  bool in_flight = false;
  std::vector<Callback<std::string>> waiters;
};

struct XattrWaiter {
  std::string name;
  Callback<std::string> done;
};

class Core : public std::enable_shared_from_this<Core> {
 public:
  Core(std::shared_ptr<s3::ObjectStore> store, MountOptions options,
       std::shared_ptr<BufferPool> pool, std::shared_ptr<MemoryBudget> budget, Clock& clock,
       std::shared_ptr<hsm::Restorer> restorer, DataPath data_path)
      : store_(std::move(store)),
        restorer_(std::move(restorer)),
        data_path_(std::move(data_path)),
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
  void Read(InodeId ino, uint64_t fh, uint64_t offset, size_t size,
            std::shared_ptr<CancellationToken> interrupt, Callback<ReadData> done);
  void Release(uint64_t fh);
  void GetXattr(InodeId ino, std::string_view name, Callback<std::string> done);
  void ListXattr(InodeId ino, Callback<std::vector<std::string>> done);
  void SetXattr(InodeId ino, std::string_view name, std::string_view value,
                std::function<void(Status)> done);
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
  Attributes FileAttr(InodeId ino, const s3::ObjectInfo& info, bool readable) const;
  // Whether the record's object can be read with a GET as far as we know (no ledger lookup: it
  // only tells staging from offline, which are both unreadable).
  bool ReadableLocked(const InodeRecord& rec) const REQUIRES(mutex_);
  // Stores what a listing or HEAD observed at `observed` (older news than the record's is
  // dropped) and derives attributes, ETag and expiry from it.
  void RecordObjectLocked(InodeRecord* rec, const s3::ObjectInfo& info, Clock::TimePoint observed)
      REQUIRES(mutex_);
  // A GET answered InvalidObjectState: the object is offline now.
  void MarkOfflineLocked(InodeRecord* rec) REQUIRES(mutex_);
  // The state of a listed or HEADed object, with the Restorer's knowledge of live requests for
  // archived objects the server says nothing about. Call without the lock (ledger I/O).
  hsm::State ClassifyWithRequests(const s3::ObjectInfo& info);
  std::string FileXattrValue(const FileXattrView& view, std::string_view name);
  void StartRead(std::shared_ptr<ReadOp> op);
  void OnOffline(std::shared_ptr<ReadOp> op, bool from_get);
  void WaitForRestore(std::shared_ptr<ReadOp> op, std::string key);
  void ReplacePrefetcher(uint64_t fh);
  void Summary(InodeId ino, std::string prefix, Callback<std::string> done);
  void StageTree(std::string prefix, std::function<void(Status)> done);
  std::string MountJson() const;
  std::string MetricsJson() const;
  Clock::TimePoint Expiry() const { return clock_.Now() + options_.metadata_ttl; }
  std::string ChildKey(const InodeRecord& parent, std::string_view name, bool is_dir) const {
    return parent.key + std::string(name) + (is_dir ? "/" : "");
  }
  // Records a looked-up child (one more kernel reference) and returns its Entry.
  // `observed`: when `info` was listed or HEADed.
  Result<Entry> AddEntryLocked(InodeId parent, std::string_view name, bool is_dir,
                               const s3::ObjectInfo* info, bool count, Clock::TimePoint observed)
      REQUIRES(mutex_);
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
  void FinishOpen(InodeId ino, const std::string& etag, uint64_t size, bool nonblock,
                  Callback<OpenedFile> done);

  const std::shared_ptr<s3::ObjectStore> store_;
  const std::shared_ptr<hsm::Restorer> restorer_;  // may be null
  const DataPath data_path_;                       // channel null: reads over store_
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
  std::atomic<uint64_t> offline_reads_{0};
  std::atomic<uint64_t> restore_waits_{0};
  std::atomic<uint64_t> xattr_refreshes_{0};

  // Guards everything below. Leaf lock: never held while calling the store, a Prefetcher or a
  // callback (WarnOnce's lock is never taken under it either).
  mutable std::mutex mutex_;
  NegativeCache negative_ GUARDED_BY(mutex_);
  InodeTable inodes_ GUARDED_BY(mutex_);
  std::unordered_map<uint64_t, DirHandle> dir_handles_ GUARDED_BY(mutex_);
  std::unordered_map<uint64_t, FileHandle> file_handles_ GUARDED_BY(mutex_);
  LookupListings lookup_listings_ GUARDED_BY(mutex_);
  uint64_t next_handle_ GUARDED_BY(mutex_) = 1;
  // Single-flight HEADs refreshing a stale state for user.hsm.* getxattrs, per inode.
  std::unordered_map<InodeId, std::vector<XattrWaiter>> xattr_waiters_ GUARDED_BY(mutex_);
  std::unordered_map<InodeId, SummaryCache> summaries_ GUARDED_BY(mutex_);
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
  a.cache_ttl = options_.metadata_ttl;
  return a;
}

Attributes Core::FileAttr(InodeId ino, const s3::ObjectInfo& info, bool readable) const {
  Attributes a;
  a.ino = ino;
  a.is_dir = false;
  a.size = info.size;
  a.mode = S_IFREG | options_.file_mode;
  a.nlink = 1;
  a.uid = options_.uid;
  a.gid = options_.gid;
  a.mtime = info.last_modified;
  // Lustre's convention for released files (tape-archive.md §7.6): one block, so du shows what
  // is resident and tar/cp never see a fully sparse file; empty files stay at 0.
  if (readable) {
    a.blocks = (info.size + 511) / 512;
    a.cache_ttl = options_.metadata_ttl;
  } else {
    a.blocks = info.size == 0 ? 0 : 1;
    // Short, so du and ls -s follow a restore without waiting for metadata_ttl.
    a.cache_ttl =
        std::min<std::chrono::duration<double>>(options_.tape.state_ttl, options_.metadata_ttl);
  }
  return a;
}

bool Core::ReadableLocked(const InodeRecord& rec) const {
  if (rec.is_dir) return true;
  if (rec.offline_by_get) return false;
  return hsm::IsReadable(hsm::Classify(rec.object, {}, clock_.WallNow()));
}

void Core::RecordObjectLocked(InodeRecord* rec, const s3::ObjectInfo& info,
                              Clock::TimePoint observed) {
  if (observed < rec->observed) return;  // a listing older than the HEAD we already have
  rec->object = info;
  rec->object.user_metadata.clear();  // never shown; not worth the memory per inode
  rec->observed = observed;
  if (observed >= rec->offline_at) rec->offline_by_get = false;
  rec->etag = info.etag;
  const bool readable = ReadableLocked(*rec);
  rec->attr = FileAttr(rec->ino, info, readable);
  rec->attr_expiry =
      clock_.Now() +
      (readable ? options_.metadata_ttl : std::min(options_.tape.state_ttl, options_.metadata_ttl));
}

void Core::MarkOfflineLocked(InodeRecord* rec) {
  rec->offline_at = clock_.Now();
  rec->offline_by_get = true;
  rec->attr = FileAttr(rec->ino, rec->object, /*readable=*/false);
  rec->attr_expiry = clock_.Now() + std::min(options_.tape.state_ttl, options_.metadata_ttl);
}

hsm::State Core::ClassifyWithRequests(const s3::ObjectInfo& info) {
  hsm::LedgerView ledger;
  // Only an archived object the server says nothing about needs the ledger; skipping the rest
  // keeps ledger lookups off large listings of online objects.
  if (restorer_ != nullptr && hsm::IsArchiveClass(info.storage_class) && !info.restore) {
    ledger.requested = restorer_->IsRequested(info.key);
  }
  return hsm::Classify(info, ledger, clock_.WallNow());
}

Entry Core::MakeEntry(const InodeRecord& record) const {
  Entry e;
  e.attr = record.attr;
  e.generation = kGeneration;
  e.entry_timeout = options_.metadata_ttl;
  e.attr_timeout = record.attr.cache_ttl;
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
                                   const s3::ObjectInfo* info, bool count,
                                   Clock::TimePoint observed) {
  InodeRecord* p = inodes_.Find(parent);
  if (p == nullptr) return Stale(parent);
  std::string key = ChildKey(*p, name, is_dir);
  InodeRecord* child = inodes_.FindOrCreateChild(parent, name, is_dir, std::move(key));
  if (is_dir) {
    child->attr = DirAttr(child->ino);
    child->attr_expiry = Expiry();
  } else {
    RecordObjectLocked(child, *info, observed);
  }
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
                            : AddEntryLocked(parent, name, e->is_dir, &e->info, /*count=*/true,
                                             p->listing_expiry - options_.metadata_ttl);
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
        Result<Entry> r =
            e == nullptr
                ? Result<Entry>(ErrnoToStatus(ENOENT, "no such name: " + w.key))
                : AddEntryLocked(dir, w.name, e->is_dir, &e->info, /*count=*/true, clock_.Now());
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
        result = self->AddEntryLocked(parent, name, true, nullptr, true, self->clock_.Now());
      } else if (!list.ok()) {
        result = list.status();
      } else if (head.ok()) {
        result = self->AddEntryLocked(parent, name, false, &*head, true, self->clock_.Now());
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
                           self->RecordObjectLocked(rec, *r, self->clock_.Now());
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
      dir_handles_[dh] = DirHandle{
          ino, rec->parent, rec->listing, rec->listing_expiry - options_.metadata_ttl, {}};
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
            self->dir_handles_[dh] = DirHandle{ino, rec->parent, *listing, self->clock_.Now(), {}};
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
        Result<Entry> e =
            AddEntryLocked(ino, le.name, le.is_dir, &le.info, /*count=*/false, h.listed_at);
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
      FinishOpen(ino, etag, size, (flags & O_NONBLOCK) != 0, std::move(done));
      return;
    }
    key = rec->key;
  }
  auto self = shared_from_this();
  const bool nonblock = (flags & O_NONBLOCK) != 0;
  RefreshFile(ino, std::move(key),
              [self, ino, nonblock, done = std::move(done)](Result<InodeRecord> r) {
                if (!r.ok()) {
                  done(r.status());
                  return;
                }
                self->FinishOpen(ino, r->etag, r->attr.size, nonblock, std::move(done));
              });
}

void Core::FinishOpen(InodeId ino, const std::string& etag, uint64_t size, bool nonblock,
                      Callback<OpenedFile> done) {
  OpenedFile opened;
  std::string key;
  bool readable = false;
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
    readable = ReadableLocked(*rec);
    ++rec->pins;  // the handle keeps the inode (and its key) alive
    key = rec->key;
    opened.fh = next_handle_++;
    file_handles_[opened.fh] =
        FileHandle{ino, nullptr, ObjectRef{options_.bucket, key, size, etag}, nonblock};
  }
  // Created outside the lock: the prefetcher is free to touch the store from its constructor.
  std::shared_ptr<Prefetcher> prefetcher =
      CreatePrefetcher(store_, ObjectRef{options_.bucket, std::move(key), size, etag},
                       options_.prefetch, budget_, pool_, data_path_.channel);
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
  // A small object is fetched whole from here, before the kernel even has the OPEN reply: the
  // READ that follows finds the GET in flight (fio/Python small-file reads: open, read, close).
  // Not when the page cache still holds the file (keep_cache: no READ will come) nor for an
  // object known to be offline (its GET would only fail; the read decides what to do).
  if (!opened.keep_cache && readable) prefetcher->Prefetch();
  done(opened);
}

void Core::Read(InodeId ino, uint64_t fh, uint64_t offset, size_t size,
                std::shared_ptr<CancellationToken> interrupt, Callback<ReadData> done) {
  auto op = std::make_shared<ReadOp>();
  op->ino = ino;
  op->fh = fh;
  op->offset = offset;
  op->size = size;
  op->interrupt = std::move(interrupt);
  op->done = std::move(done);
  StartRead(std::move(op));
}

void Core::StartRead(std::shared_ptr<ReadOp> op) {
  std::shared_ptr<Prefetcher> prefetcher;
  bool known_offline = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = file_handles_.find(op->fh);
    if (it != file_handles_.end() && it->second.ino == op->ino) prefetcher = it->second.prefetcher;
    // A state seen unreadable within state_ttl is trusted: no GET that would only fail again.
    // Older, the GET is the final word (the object may have been restored by someone else).
    if (InodeRecord* rec = inodes_.Find(op->ino); rec != nullptr && !ReadableLocked(*rec)) {
      const Clock::TimePoint seen = std::max(rec->observed, rec->offline_at);
      known_offline = clock_.Now() - seen < options_.tape.state_ttl;
    }
  }
  if (prefetcher == nullptr) {
    op->done(ErrnoToStatus(EBADF, fmt::format("file handle {} is not open", op->fh)));
    return;
  }
  if (known_offline) {
    OnOffline(std::move(op), /*from_get=*/false);
    return;
  }
  auto self = shared_from_this();
  const uint64_t offset = op->offset;
  const size_t size = op->size;
  prefetcher->Read(offset, size, [self, op = std::move(op)](Result<ReadData> r) mutable {
    if (!r.ok() && IsInvalidObjectState(r.status())) {
      self->OnOffline(std::move(op), /*from_get=*/true);
      return;
    }
    if (r.ok()) self->bytes_read_.fetch_add(r->size(), std::memory_order_relaxed);
    auto done = std::move(op->done);
    done(std::move(r));
  });
}

void Core::OnOffline(std::shared_ptr<ReadOp> op, bool from_get) {
  offline_reads_.fetch_add(1, std::memory_order_relaxed);
  ObjectRef ref;
  bool nonblock = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = file_handles_.find(op->fh);
    if (it == file_handles_.end()) {
      auto done = std::move(op->done);
      done(ErrnoToStatus(EBADF, fmt::format("file handle {} is not open", op->fh)));
      return;
    }
    ref = it->second.ref;
    nonblock = it->second.nonblock;
    if (from_get) {
      if (InodeRecord* rec = inodes_.Find(op->ino); rec != nullptr) MarkOfflineLocked(rec);
    }
  }
  if (from_get && restorer_ != nullptr) restorer_->NoteOffline(ref.key);
  const OfflineMode mode = options_.tape.offline;
  auto finish = [op](Status s) {
    auto done = std::move(op->done);
    done(std::move(s));
  };
  const std::string what = fmt::format("'{}' is offline (archived)", PrintableKey(ref.key));
  if (mode == OfflineMode::kEacces || restorer_ == nullptr) {
    // Nothing is requested: the point of eacces is to protect the library from scans. An
    // O_NONBLOCK reader still gets EAGAIN, its contract in every mode.
    finish(nonblock ? OfflineError(EAGAIN, what + ", O_NONBLOCK")
                    : ErrnoToStatus(EACCES, what + " (--offline=eacces)"));
    return;
  }
  if (nonblock || mode == OfflineMode::kEagain) {
    const std::string key = ref.key;
    restorer_->Request(key, ref.etag, ref.size, [finish, what, key](Status s) {
      if (!s.ok()) {
        REELFS_LOG_WARN("fuse", "restore request for '{}' failed: {}", PrintableKey(key),
                        s.ToString());
      }
      finish(OfflineError(EAGAIN, what + ", restore requested"));
    });
    return;
  }
  WaitForRestore(std::move(op), ref.key);
}

void Core::WaitForRestore(std::shared_ptr<ReadOp> op, std::string key) {
  if (!op->deadline) op->deadline = clock_.Now() + options_.tape.offline_wait;
  if (++op->waits > kMaxRestoreWaits) {
    REELFS_LOG_WARN("fuse", "'{}' went offline again {} times right after its restore; giving up",
                    PrintableKey(key), kMaxRestoreWaits);
    auto done = std::move(op->done);
    done(ErrnoToStatus(EIO, fmt::format("'{}' keeps going offline", PrintableKey(key))));
    return;
  }
  restore_waits_.fetch_add(1, std::memory_order_relaxed);
  auto self = shared_from_this();
  // No FUSE worker waits here: the Restorer calls back when the object is readable, at the
  // deadline, or as soon as the kernel interrupts the request.
  restorer_->WaitOnline(
      key, *op->deadline, op->interrupt, [self, op, key](Result<s3::ObjectInfo> r) mutable {
        if (!r.ok()) {
          Status out;
          if (r.status().code() == StatusCode::kCancelled) {
            out = Status::Cancelled(fmt::format(
                "read of '{}' interrupted while waiting for its restore", PrintableKey(key)));
          } else if (r.status().code() == StatusCode::kDeadlineExceeded) {
            out = OfflineError(ETIMEDOUT,
                               fmt::format("'{}' did not come online within {}s", PrintableKey(key),
                                           self->options_.tape.offline_wait.count()));
          } else {
            // The errno says little; the log says why.
            REELFS_LOG_WARN("fuse", "restore of '{}' failed: {}", PrintableKey(key),
                            r.status().ToString());
            out = ErrnoToStatus(EIO, fmt::format("restore of '{}' failed: {}", PrintableKey(key),
                                                 r.status().message()));
          }
          auto done = std::move(op->done);
          done(std::move(out));
          return;
        }
        {
          std::lock_guard<std::mutex> lock(self->mutex_);
          if (InodeRecord* rec = self->inodes_.Find(op->ino); rec != nullptr) {
            self->RecordObjectLocked(rec, *r, self->clock_.Now());
          }
        }
        // The failed GET may have left the stream in an error state: read through a new one.
        self->ReplacePrefetcher(op->fh);
        self->StartRead(std::move(op));
      });
}

void Core::ReplacePrefetcher(uint64_t fh) {
  ObjectRef ref;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = file_handles_.find(fh);
    if (it == file_handles_.end()) return;
    ref = it->second.ref;
  }
  std::shared_ptr<Prefetcher> fresh =
      CreatePrefetcher(store_, ref, options_.prefetch, budget_, pool_, data_path_.channel);
  std::shared_ptr<Prefetcher> old;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = file_handles_.find(fh);
    if (it != file_handles_.end()) {
      old = std::move(it->second.prefetcher);
      it->second.prefetcher = fresh;
      fresh = nullptr;
    }
  }
  if (old != nullptr) old->Close();
  if (fresh != nullptr) fresh->Close();  // released meanwhile
}

// ---- extended attributes ----

std::string Core::MountJson() const {
  return fmt::format(R"({{"version":1,"endpoint":{},"bucket":{},"prefix":{},"ledger":{}}})",
                     JsonString(options_.endpoint), JsonString(options_.bucket),
                     JsonString(options_.prefix), JsonString(options_.ledger_path));
}

std::string Core::MetricsJson() const {
  const FsCounters c = counters();
  std::string data_path = data_path_.metrics_json ? data_path_.metrics_json() : std::string();
  if (data_path.empty()) data_path = "null";
  return fmt::format(
      R"({{"version":1,"fs":{{"lookups":{},"list_requests":{},"head_requests":{},)"
      R"("open_handles":{},"inodes":{},"bytes_read":{},"offline_reads":{},"restore_waits":{},)"
      R"("xattr_refreshes":{}}},"data_path":{}}})",
      c.lookups, c.list_requests, c.head_requests, c.open_handles, c.inodes, c.bytes_read,
      c.offline_reads, c.restore_waits, c.xattr_refreshes, data_path);
}

std::string Core::FileXattrValue(const FileXattrView& v, std::string_view name) {
  if (name == kXattrStorageClass) return v.object.storage_class;
  if (name == kXattrEtag) return v.etag;
  if (name == kXattrRestore) {
    // The header as the server sent it (HEAD). Listings carry RestoreStatus, not the header:
    // then its AWS form, so the attribute does not depend on which request came last.
    if (!v.object.restore_header.empty()) return v.object.restore_header;
    return v.object.restore ? s3::FormatRestoreHeader(*v.object.restore) : "";
  }
  if (name == kXattrState) {
    hsm::State state = ClassifyWithRequests(v.object);
    if (v.offline_by_get) {
      state = restorer_ != nullptr && restorer_->IsRequested(v.key) ? hsm::State::kStaging
                                                                    : hsm::State::kOffline;
    }
    return std::string(hsm::StateName(state));
  }
  if (name == kXattrExpiry) {
    const auto& r = v.object.restore;
    if (!r || !r->expiry || r->expiry_is_placeholder) return "";
    std::string text = Iso8601(*r->expiry);
    // versitygw's fixed "2 Dec 2050" is no expiry, also where no parser flagged it (listings).
    if (text.starts_with("2050-")) return "";
    return text;
  }
  return "";
}

void Core::GetXattr(InodeId ino, std::string_view name, Callback<std::string> done) {
  const std::string n(name);
  FileXattrView view;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    Result<InodeRecord*> found = FindLocked(ino, Want::kAny, "getxattr of");
    if (!found.ok()) {
      lock.unlock();
      done(std::move(found).status());
      return;
    }
    InodeRecord* rec = *found;
    if (rec->is_dir) {
      std::string prefix = rec->key;
      lock.unlock();
      if (n == kXattrSummary) return Summary(ino, std::move(prefix), std::move(done));
      if (n == kXattrMount && ino == kRootInode) return done(MountJson());
      if (n == kXattrMetrics && ino == kRootInode) return done(MetricsJson());
      return done(NoData(ino, n));
    }
    const bool hsm_name =
        n == kXattrState || n == kXattrExpiry || n == kXattrTape || n == kXattrPosition;
    const bool s3_name = n == kXattrStorageClass || n == kXattrEtag || n == kXattrRestore;
    if (!hsm_name && !s3_name) {
      lock.unlock();
      done(NoData(ino, n));
      return;
    }
    if (n == kXattrTape || n == kXattrPosition) {
      std::optional<hsm::TapeHint> hint = hsm::TapeHintOf(rec->object);
      lock.unlock();
      if (!hint) return done(NoData(ino, n));
      return done(n == kXattrTape ? hint->cartridge : PositionText(*hint));
    }
    // A state that is not readable goes stale quickly (a restore may have finished): one HEAD
    // refreshes it, shared by every getxattr of the inode meanwhile.
    const Clock::TimePoint seen = std::max(rec->observed, rec->offline_at);
    if (hsm_name && !ReadableLocked(*rec) && clock_.Now() - seen > options_.tape.state_ttl) {
      auto& waiters = xattr_waiters_[ino];
      waiters.push_back(XattrWaiter{n, std::move(done)});
      if (waiters.size() > 1) return;
      std::string key = rec->key;
      lock.unlock();
      xattr_refreshes_.fetch_add(1, std::memory_order_relaxed);
      auto self = shared_from_this();
      RefreshFile(ino, std::move(key), [self, ino](Result<InodeRecord> r) {
        if (!r.ok()) {
          REELFS_LOG_DEBUG("fuse", "xattr refresh of inode {} failed: {}", ino,
                           r.status().ToString());
        }
        std::vector<XattrWaiter> ready;
        FileXattrView fresh;
        bool gone = false;
        {
          std::lock_guard<std::mutex> relock(self->mutex_);
          auto it = self->xattr_waiters_.find(ino);
          if (it != self->xattr_waiters_.end()) {
            ready = std::move(it->second);
            self->xattr_waiters_.erase(it);
          }
          InodeRecord* now = self->inodes_.Find(ino);
          gone = now == nullptr;
          if (!gone) {
            fresh = FileXattrView{now->key, now->etag, now->object, now->offline_by_get};
          }
        }
        for (XattrWaiter& w : ready) {
          // A failed HEAD answers from what we knew: stale beats an error for a status query.
          if (gone) {
            w.done(Stale(ino));
          } else {
            w.done(self->FileXattrValue(fresh, w.name));
          }
        }
      });
      return;
    }
    view = FileXattrView{rec->key, rec->etag, rec->object, rec->offline_by_get};
  }
  done(FileXattrValue(view, n));
}

void Core::ListXattr(InodeId ino, Callback<std::vector<std::string>> done) {
  std::vector<std::string> names;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    Result<InodeRecord*> found = FindLocked(ino, Want::kAny, "listxattr of");
    if (!found.ok()) {
      lock.unlock();
      done(std::move(found).status());
      return;
    }
    InodeRecord* rec = *found;
    if (rec->is_dir) {
      names.emplace_back(kXattrSummary);
      if (ino == kRootInode) {
        names.emplace_back(kXattrMount);
        names.emplace_back(kXattrMetrics);
      }
    } else {
      for (std::string_view n :
           {kXattrStorageClass, kXattrEtag, kXattrRestore, kXattrState, kXattrExpiry}) {
        names.emplace_back(n);
      }
      if (hsm::TapeHintOf(rec->object)) {
        names.emplace_back(kXattrTape);
        names.emplace_back(kXattrPosition);
      }
    }
  }
  done(std::move(names));
}

void Core::Summary(InodeId ino, std::string prefix, Callback<std::string> done) {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    SummaryCache& c = summaries_[ino];
    if (!c.in_flight && !c.value.empty() && clock_.Now() < c.expiry) {
      std::string value = c.value;
      lock.unlock();
      done(std::move(value));
      return;
    }
    c.waiters.push_back(std::move(done));
    if (c.in_flight) return;  // single-flight: the computation in progress answers us too
    c.in_flight = true;
  }
  struct Tally {
    uint64_t objects[5] = {};
    uint64_t bytes[5] = {};
  };
  auto tally = std::make_shared<Tally>();
  auto self = shared_from_this();
  ListSubtree(
      store_, options_.bucket, std::move(prefix),
      [self] { self->list_requests_.fetch_add(1, std::memory_order_relaxed); },
      // Pages arrive one after the other, so the tally needs no lock.
      [self, tally](const std::vector<s3::ObjectInfo>& objects) {
        for (const s3::ObjectInfo& o : objects) {
          if (!o.key.empty() && o.key.back() == '/') continue;  // directory markers
          const auto i = static_cast<size_t>(self->ClassifyWithRequests(o));
          ++tally->objects[i];
          tally->bytes[i] += o.size;
        }
      },
      [self, ino, tally](Status s) {
        // A Result is built from an error Status only (an OK one carries no value).
        Result<std::string> out = std::string();
        if (!s.ok()) {
          out = s;
        } else {
          constexpr hsm::State kOrder[] = {hsm::State::kOnline, hsm::State::kOffline,
                                           hsm::State::kStaging, hsm::State::kRestored,
                                           hsm::State::kUnknown};
          std::string objects;
          std::string bytes;
          for (hsm::State st : kOrder) {
            const auto i = static_cast<size_t>(st);
            const char* sep = objects.empty() ? "" : ",";
            objects += fmt::format("{}\"{}\":{}", sep, hsm::StateName(st), tally->objects[i]);
            bytes += fmt::format("{}\"{}\":{}", sep, hsm::StateName(st), tally->bytes[i]);
          }
          out = fmt::format(R"({{"objects":{{{}}},"bytes":{{{}}}}})", objects, bytes);
        }
        std::vector<Callback<std::string>> waiters;
        {
          std::lock_guard<std::mutex> lock(self->mutex_);
          SummaryCache& c = self->summaries_[ino];
          waiters = std::move(c.waiters);
          c.waiters.clear();
          c.in_flight = false;
          if (out.ok()) {
            c.value = *out;
            c.expiry = self->clock_.Now() + self->options_.tape.summary_ttl;
          }
        }
        for (auto& w : waiters) w(out);
      });
}

void Core::SetXattr(InodeId ino, std::string_view name, std::string_view value,
                    std::function<void(Status)> done) {
  if (name != kXattrRequest) {
    done(ErrnoToStatus(EROFS, fmt::format("setxattr {} on inode {}: read-only", name, ino)));
    return;
  }
  // setfattr sends the bare value; tolerate a trailing NUL or newline from other writers.
  while (!value.empty() && (value.back() == '\0' || value.back() == '\n')) value.remove_suffix(1);
  if (value != "stage") {
    done(ErrnoToStatus(EINVAL, fmt::format("{}: '{}' is not a request (want 'stage')",
                                           kXattrRequest, PrintableKey(value))));
    return;
  }
  if (restorer_ == nullptr) {
    done(ErrnoToStatus(EOPNOTSUPP, "this mount cannot request restores"));
    return;
  }
  std::string key;
  std::string etag;
  uint64_t size = 0;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    Result<InodeRecord*> found = FindLocked(ino, Want::kAny, "setxattr of");
    if (!found.ok()) {
      lock.unlock();
      done(std::move(found).status());
      return;
    }
    InodeRecord* rec = *found;
    if (rec->is_dir) {
      std::string prefix = rec->key;
      lock.unlock();
      StageTree(std::move(prefix), std::move(done));
      return;
    }
    if (ReadableLocked(*rec)) {
      lock.unlock();
      done(Status::Ok());  // nothing to restore
      return;
    }
    key = rec->key;
    etag = rec->etag;
    size = rec->attr.size;
  }
  restorer_->Request(key, etag, size, std::move(done));
}

void Core::StageTree(std::string prefix, std::function<void(Status)> done) {
  auto wanted = std::make_shared<std::vector<s3::ObjectInfo>>();
  auto self = shared_from_this();
  ListSubtree(
      store_, options_.bucket, std::move(prefix),
      [self] { self->list_requests_.fetch_add(1, std::memory_order_relaxed); },
      [self, wanted](const std::vector<s3::ObjectInfo>& objects) {
        const s3::WallTime now = self->clock_.WallNow();
        for (const s3::ObjectInfo& o : objects) {
          if (!o.key.empty() && o.key.back() == '/') continue;
          if (hsm::IsReadable(hsm::Classify(o, {}, now))) continue;
          wanted->push_back(o);
        }
      },
      [self, wanted, done = std::move(done)](Status s) mutable {
        if (!s.ok()) {
          done(s);
          return;
        }
        // Tape order when the server tells it (one pass per cartridge), else key order (usually
        // write order): tape-archive.md §7.3.
        struct Item {
          std::optional<hsm::TapeHint> hint;
          const s3::ObjectInfo* info;
        };
        std::vector<Item> items;
        items.reserve(wanted->size());
        for (const auto& o : *wanted) items.push_back({hsm::TapeHintOf(o), &o});
        std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
          if (a.hint.has_value() != b.hint.has_value()) return a.hint.has_value();
          if (a.hint && a.hint->cartridge != b.hint->cartridge) {
            return a.hint->cartridge < b.hint->cartridge;
          }
          if (a.hint) {
            const uint64_t ba = a.hint->block.value_or(std::numeric_limits<uint64_t>::max());
            const uint64_t bb = b.hint->block.value_or(std::numeric_limits<uint64_t>::max());
            if (ba != bb) return ba < bb;
          }
          return a.info->key < b.info->key;
        });
        if (items.empty()) {
          done(Status::Ok());
          return;
        }
        struct Join {
          std::mutex mutex;
          size_t remaining = 0;
          bool answered = false;
          std::function<void(Status)> done;
        };
        auto join = std::make_shared<Join>();
        join->remaining = items.size();
        join->done = std::move(done);
        // Every request is handed over at once, in order; the Restorer queues and paces them.
        for (const Item& it : items) {
          self->restorer_->Request(it.info->key, it.info->etag, it.info->size,
                                   [join, wanted](Status r) {
                                     std::function<void(Status)> answer;
                                     {
                                       std::lock_guard<std::mutex> lock(join->mutex);
                                       --join->remaining;
                                       if (join->answered) return;
                                       if (!r.ok() || join->remaining == 0) {
                                         join->answered = true;
                                         answer = std::move(join->done);
                                       }
                                     }
                                     if (answer) answer(std::move(r));
                                   });
        }
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
  c.offline_reads = offline_reads_.load(std::memory_order_relaxed);
  c.restore_waits = restore_waits_.load(std::memory_order_relaxed);
  c.xattr_refreshes = xattr_refreshes_.load(std::memory_order_relaxed);
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
            std::shared_ptr<CancellationToken> interrupt, Callback<ReadData> done) override {
    core_->Read(ino, fh, offset, size, std::move(interrupt), std::move(done));
  }
  void GetXattr(InodeId ino, std::string_view name, Callback<std::string> done) override {
    core_->GetXattr(ino, name, std::move(done));
  }
  void ListXattr(InodeId ino, Callback<std::vector<std::string>> done) override {
    core_->ListXattr(ino, std::move(done));
  }
  void SetXattr(InodeId ino, std::string_view name, std::string_view value,
                std::function<void(Status)> done) override {
    core_->SetXattr(ino, name, value, std::move(done));
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
                                             std::shared_ptr<MemoryBudget> budget, Clock& clock,
                                             std::shared_ptr<hsm::Restorer> restorer,
                                             DataPath data_path) {
  auto core =
      std::make_shared<Core>(std::move(store), std::move(options), std::move(pool),
                             std::move(budget), clock, std::move(restorer), std::move(data_path));
  return std::make_unique<FileSystemImpl>(std::move(core));
}

}  // namespace reelfs::fuse
