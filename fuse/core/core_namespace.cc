// Core's namespace: attributes and entries of inodes, LOOKUP (from a fresh listing, the negative
// cache, a fresh child, the directory's lookup listing, else HEAD+LIST), FORGET, GETATTR, the
// HEAD that refreshes a file's attributes, and the inode steps of the parts (OPEN's pin,
// OPENDIR's listing, READDIR's entries, the facts behind the xattrs).

#include <algorithm>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <sys/stat.h>

#include "common/log.h"
#include "common/mutex.h"
#include "fuse/core/answer_check.h"
#include "fuse/core/core_internal.h"
#include "fuse/core/name_rules.h"
#include "hsm/state.h"

namespace reelfs::fuse::detail {
namespace {

// Generation numbers: inode numbers are never reused within a mount, so one constant suffices.
constexpr uint64_t kGeneration = 1;

// d_ino for plain READDIR entries that have no inode yet. The kernel does not use it to find the
// file (it LOOKUPs the name), and allocating an inode the kernel never counts would leak it.
constexpr InodeId kUnknownIno = 0xffffffff;  // FUSE_UNKNOWN_INO

}  // namespace

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
  // Lustre's convention for released files (docs/semantics.md "Offline objects"): one block, so du
  // shows what is resident and tar/cp never see a fully sparse file; empty files stay at 0.
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

bool Core::CachedWhole(std::string_view key, std::string_view etag) const {
  return data_path_.cache != nullptr && !etag.empty() &&
         data_path_.cache->Complete(
             cache::CacheKey{options_.bucket, std::string(key), std::string(BareEtag(etag))});
}

bool Core::ReadableLocked(const InodeRecord& rec) const {
  if (rec.id.is_dir) return true;
  // Every byte is in the local cache: a read needs no server, whatever the archive says.
  if (CachedWhole(rec.id.key, rec.attrs.etag)) return true;
  if (rec.tape.offline_by_get) return false;
  return hsm::IsReadable(hsm::Classify(rec.tape.object, {}, clock_.WallNow()));
}

void Core::RecordObjectLocked(InodeRecord* rec, const s3::ObjectInfo& info,
                              Clock::TimePoint observed) {
  TapeState& tape = rec->tape;
  if (observed < tape.observed) return;  // a listing older than the HEAD we already have
  tape.object = info;
  tape.object.user_metadata.clear();  // never shown; not worth the memory per inode
  tape.observed = observed;
  if (observed >= tape.offline_at) tape.offline_by_get = false;
  rec->attrs.etag = info.etag;
  const bool readable = ReadableLocked(*rec);
  rec->attrs.attr = FileAttr(rec->id.ino, info, readable);
  rec->attrs.expiry =
      clock_.Now() +
      (readable ? options_.metadata_ttl : std::min(options_.tape.state_ttl, options_.metadata_ttl));
}

void Core::MarkOfflineLocked(InodeRecord* rec) {
  rec->tape.offline_at = clock_.Now();
  rec->tape.offline_by_get = true;
  rec->attrs.attr = FileAttr(rec->id.ino, rec->tape.object, /*readable=*/false);
  rec->attrs.expiry = clock_.Now() + std::min(options_.tape.state_ttl, options_.metadata_ttl);
}

Entry Core::MakeEntry(const InodeRecord& record) const {
  Entry e;
  e.attr = record.attrs.attr;
  e.generation = kGeneration;
  e.entry_timeout = options_.metadata_ttl;
  e.attr_timeout = record.attrs.attr.cache_ttl;
  return e;
}

Result<InodeRecord*> Core::FindLocked(InodeId ino, Want want, std::string_view what) {
  InodeRecord* rec = inodes_.Find(ino);
  if (rec == nullptr) return Stale(ino);
  if (want == Want::kDir && !rec->id.is_dir) {
    return Status(StatusCode::kInvalidArgument, StatusReason::kNotADirectory,
                  fmt::format("{} inode {}", what, ino));
  }
  if (want == Want::kFile && rec->id.is_dir) {
    return Status(StatusCode::kInvalidArgument, StatusReason::kIsADirectory,
                  fmt::format("{} directory inode {}", what, ino));
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
    child->attrs.attr = DirAttr(child->id.ino);
    child->attrs.expiry = Expiry();
  } else if (!child->local.writing) {  // a file being written has its handle's attributes
    RecordObjectLocked(child, *info, observed);
  }
  if (count) ++child->id.lookups;
  return MakeEntry(*child);
}

void Core::Lookup(InodeId parent, std::string_view name, Callback<Entry> done) {
  Count(stats_.lookups);
  if (NameProblem p = CheckName(name); p != NameProblem::kNone) {
    const bool too_long = p == NameProblem::kTooLong;
    done(Status(too_long ? StatusCode::kInvalidArgument : StatusCode::kNotFound,
                too_long ? StatusReason::kNameTooLong : StatusReason::kInvalidName,
                fmt::format("lookup '{}': {}", PrintableKey(name), NameProblemText(p))));
    return;
  }
  std::string key;
  bool start_listing = false;  // this lookup queued itself on a listing it must start
  std::string list_prefix;
  {
    MutexLock lock(mutex_);
    InodeRecord* p = FindOrFail(lock, parent, Want::kDir, "lookup in", done);
    if (p == nullptr) return;
    key = p->id.key + std::string(name);
    // What this mount wrote, made or removed comes before any listing (local_entries.h).
    if (const LocalEntry* local = local_.Find(parent, name); local != nullptr) {
      Result<Entry> r = LocalLookupLocked(parent, name, *local);
      lock.unlock();
      done(std::move(r));
      return;
    }
    if (p->dir.listing != nullptr && clock_.Now() < p->dir.expiry) {
      // A fresh listing is authoritative, negative answers included.
      const ListedEntry* e = p->dir.listing->Find(name);
      Result<Entry> r =
          e == nullptr ? Result<Entry>(Status(StatusCode::kNotFound, StatusReason::kKnownAbsent,
                                              "no such name: " + key))
                       : AddEntryLocked(parent, name, e->is_dir, &e->info, /*count=*/true,
                                        p->dir.expiry - options_.metadata_ttl);
      lock.unlock();
      done(std::move(r));
      return;
    }
    if (negative_.Contains(key, clock_.Now())) {
      lock.unlock();
      done(Status(StatusCode::kNotFound, StatusReason::kKnownAbsent,
                  "no such name (cached): " + key));
      return;
    }
    // A known child whose attributes are still fresh needs no request either.
    if (InodeRecord* c = inodes_.FindChild(parent, name);
        c != nullptr && clock_.Now() < c->attrs.expiry) {
      ++c->id.lookups;
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
        list_prefix = p->id.key;
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
      [self] { Count(self->stats_.list_requests); },
      [self, dir](uint32_t pages) {
        std::vector<ListingWaiter> released;
        {
          MutexLock lock(self->mutex_);
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
    MutexLock lock(mutex_);
    waiters = lookup_listings_.Finish(dir);
    if (listing.ok() && *listing != nullptr) {
      const std::shared_ptr<const DirListing>& l = *listing;
      // Installed exactly as OpenDir does: readdir and later lookups are served from it.
      InodeRecord* rec = inodes_.Find(dir);
      if (rec != nullptr) {
        rec->dir.listing = l;
        rec->dir.expiry = Expiry();
        ReconcileLocked(dir, *l);
      }
      answers.reserve(waiters.size());
      for (ListingWaiter& w : waiters) {
        // Authoritative, negative answers included (as a cached listing is in Lookup).
        const ListedEntry* e = l->Find(w.name);
        Result<Entry> r =
            e == nullptr
                ? Result<Entry>(Status(StatusCode::kNotFound, StatusReason::kKnownAbsent,
                                       "no such name: " + w.key))
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
    Mutex mutex;
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
      MutexLock lock(self->mutex_);
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
      MutexLock lock(pending->mutex);
      last = --pending->remaining == 0;
    }
    if (last) (*finish)();
  };
  Count(stats_.head_requests);
  Count(stats_.list_requests);
  store_->HeadObject({options_.bucket, key}, [pending, arrive](Result<s3::ObjectInfo> r) {
    {
      MutexLock lock(pending->mutex);
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
      MutexLock lock(pending->mutex);
      pending->list.emplace(std::move(r));
    }
    arrive();
  });
}

void Core::Forget(InodeId ino, uint64_t nlookup) {
  MutexLock lock(mutex_);
  if (!inodes_.Forget(ino, nlookup)) {
    REELFS_LOG_DEBUG("fuse", "forget of unknown inode {}", ino);
  }
}

void Core::RefreshFile(InodeId ino, std::string key, Callback<AttrCache> done) {
  Count(stats_.head_requests);
  auto self = shared_from_this();
  store_->HeadObject({options_.bucket, std::move(key)},
                     [self, ino, done = std::move(done)](Result<s3::ObjectInfo> r) {
                       if (!r.ok()) {
                         done(r.status());
                         return;
                       }
                       Result<AttrCache> out = Stale(ino);
                       {
                         MutexLock lock(self->mutex_);
                         if (InodeRecord* rec = self->inodes_.Find(ino); rec != nullptr) {
                           self->RecordObjectLocked(rec, *r, self->clock_.Now());
                           out = rec->attrs;
                         }
                       }
                       done(std::move(out));
                     });
}

void Core::GetAttr(InodeId ino, Callback<Attributes> done) {
  std::string key;
  {
    MutexLock lock(mutex_);
    InodeRecord* rec = FindOrFail(lock, ino, Want::kAny, "getattr of", done);
    if (rec == nullptr) return;
    // Directories have nothing to revalidate: their attributes are synthetic; a file being
    // written has no object yet: its size is what the handle wrote.
    if (rec->id.is_dir || rec->local.writing || clock_.Now() < rec->attrs.expiry) {
      Attributes a = rec->attrs.attr;
      lock.unlock();
      done(std::move(a));
      return;
    }
    key = rec->id.key;
  }
  RefreshFile(ino, std::move(key), [done = std::move(done)](Result<AttrCache> r) {
    if (!r.ok()) {
      done(r.status());
      return;
    }
    done(r->attr);
  });
}

// The inode steps of the parts (file_handles.h, dir_handles.h, tape_view.h). Each takes the lock
// once and answers with a copy, so a part never holds a pointer into the table.

Result<InodeFacts> Core::Facts(InodeId ino, Want want, std::string_view what) {
  MutexLock lock(mutex_);
  REELFS_ASSIGN_OR_RETURN(InodeRecord * rec, FindLocked(ino, want, what));
  InodeFacts f;
  f.is_dir = rec->id.is_dir;
  f.key = rec->id.key;
  if (!rec->id.is_dir) {
    f.etag = rec->attrs.etag;
    f.size = rec->attrs.attr.size;
    f.tape = rec->tape;
    f.readable = ReadableLocked(*rec);
    f.seen = std::max(rec->tape.observed, rec->tape.offline_at);
  }
  return f;
}

Result<FileForOpen> Core::FileToOpen(InodeId ino) {
  MutexLock lock(mutex_);
  REELFS_ASSIGN_OR_RETURN(InodeRecord * rec, FindLocked(ino, Want::kFile, "open of"));
  if (rec->local.writing) {
    return Status(StatusCode::kFailedPrecondition, StatusReason::kBusy,
                  fmt::format("open '{}': it is being written; it can be read once closed",
                              PrintableKey(rec->id.key)));
  }
  FileForOpen f;
  f.key = rec->id.key;
  if (clock_.Now() < rec->attrs.expiry) {
    f.fresh = true;
    f.etag = rec->attrs.etag;
    f.size = rec->attrs.attr.size;
  }
  return f;
}

Result<OpenedInode> Core::PinOpened(InodeId ino, const std::string& etag) {
  MutexLock lock(mutex_);
  REELFS_ASSIGN_OR_RETURN(InodeRecord * rec, FindLocked(ino, Want::kAny, "open of"));
  OpenedInode out;
  OpenHistory& opens = rec->opens;
  // The kernel's page cache for this inode is still valid only if the object did not change.
  out.keep_cache = opens.opened_before && !etag.empty() && opens.last_open_etag == etag;
  opens.opened_before = true;
  opens.last_open_etag = etag;
  out.readable = ReadableLocked(*rec);
  ++rec->id.pins;  // the handle keeps the inode (and its key) alive
  out.key = rec->id.key;
  return out;
}

bool Core::KnownOffline(InodeId ino) {
  MutexLock lock(mutex_);
  InodeRecord* rec = inodes_.Find(ino);
  if (rec == nullptr || ReadableLocked(*rec)) return false;
  const Clock::TimePoint seen = std::max(rec->tape.observed, rec->tape.offline_at);
  return clock_.Now() - seen < options_.tape.state_ttl;
}

void Core::MarkOffline(InodeId ino) {
  MutexLock lock(mutex_);
  if (InodeRecord* rec = inodes_.Find(ino); rec != nullptr) MarkOfflineLocked(rec);
}

size_t Core::ForgetTapeState(InodeId ino) {
  MutexLock lock(mutex_);
  const InodeRecord* target = inodes_.Find(ino);
  if (target == nullptr) return 0;
  const bool tree = target->id.is_dir;
  const std::string key = target->id.key;  // a directory's ends in '/' (or is the mount prefix)
  const Clock::TimePoint now = clock_.Now();
  // Seen longer ago than state_ttl: what KnownOffline no longer trusts.
  const Clock::TimePoint old_news = now - options_.tape.state_ttl - std::chrono::seconds(1);
  size_t forgotten = 0;
  for (InodeRecord* rec : inodes_.All()) {
    if (rec->id.is_dir || ReadableLocked(*rec)) continue;
    if (tree ? !rec->id.key.starts_with(key) : rec->id.ino != ino) continue;
    // Old news: KnownOffline no longer trusts it, any listing or HEAD replaces it (and clears
    // offline_by_get), and the attributes are refreshed at the next getattr.
    rec->tape.observed = std::min(rec->tape.observed, old_news);
    rec->tape.offline_at = std::min(rec->tape.offline_at, old_news);
    rec->attrs.expiry = now;
    ++forgotten;
  }
  return forgotten;
}

void Core::RecordObject(InodeId ino, const s3::ObjectInfo& info) {
  MutexLock lock(mutex_);
  if (InodeRecord* rec = inodes_.Find(ino); rec != nullptr) {
    RecordObjectLocked(rec, info, clock_.Now());
  }
}

Result<Core::DirToOpen> Core::DirectoryToOpen(InodeId ino) {
  MutexLock lock(mutex_);
  REELFS_ASSIGN_OR_RETURN(InodeRecord * rec, FindLocked(ino, Want::kDir, "opendir of"));
  DirToOpen out;
  out.parent = rec->id.parent;
  if (rec->dir.listing != nullptr && clock_.Now() < rec->dir.expiry) {
    out.pinned = true;
    out.listing = local_.Merge(ino, rec->dir.listing);
    out.listed_at = rec->dir.expiry - options_.metadata_ttl;
    ++rec->id.pins;
    return out;
  }
  out.prefix = rec->id.key;
  return out;
}

Result<Core::DirToOpen> Core::InstallListing(InodeId ino,
                                             std::shared_ptr<const DirListing> listing) {
  MutexLock lock(mutex_);
  InodeRecord* rec = inodes_.Find(ino);
  if (rec == nullptr) return Stale(ino);
  rec->dir.listing = listing;
  rec->dir.expiry = Expiry();
  ++rec->id.pins;
  ReconcileLocked(ino, *listing);
  DirToOpen out;
  out.pinned = true;
  out.parent = rec->id.parent;
  out.listing = local_.Merge(ino, std::move(listing));
  out.listed_at = clock_.Now();
  return out;
}

Result<std::vector<DirEntry>> Core::ReadDirEntries(InodeId ino, InodeId parent,
                                                   const DirListing& snapshot,
                                                   Clock::TimePoint listed_at, uint64_t offset,
                                                   size_t max_entries, bool plus,
                                                   std::vector<InodeId>* pinned) {
  std::vector<DirEntry> out;
  MutexLock lock(mutex_);
  const auto& entries = snapshot.entries;
  // Offsets: 0 starts, entry i (0 ".", 1 "..", i >= 2 the children) carries i + 1.
  const uint64_t total = entries.size() + 2;
  for (uint64_t i = offset; i < total && out.size() < max_entries; ++i) {
    DirEntry d;
    d.offset = i + 1;
    if (i < 2) {
      d.name = i == 0 ? "." : "..";
      InodeId target = i == 0 ? ino : parent;
      InodeRecord* rec = inodes_.Find(target);
      if (rec == nullptr) rec = inodes_.Find(ino);  // parent forgotten: show ourselves
      if (rec != nullptr) d.entry = MakeEntry(*rec);
      d.entry.attr.ino = target;
      out.push_back(std::move(d));
      continue;
    }
    const ListedEntry& le = entries[i - 2];
    d.name = le.name;
    if (plus) {
      REELFS_ASSIGN_OR_RETURN(
          d.entry, AddEntryLocked(ino, le.name, le.is_dir, &le.info, /*count=*/false, listed_at));
      // Pinned until ReleaseDir so it survives until AcceptDirEntries counts it.
      if (InodeRecord* c = inodes_.Find(d.entry.attr.ino); c != nullptr) ++c->id.pins;
      pinned->push_back(d.entry.attr.ino);
    } else {
      InodeRecord* c = inodes_.FindChild(ino, le.name);
      d.entry.attr.ino = c != nullptr && c->id.is_dir == le.is_dir ? c->id.ino : kUnknownIno;
      d.entry.attr.is_dir = le.is_dir;
      d.entry.attr.mode =
          le.is_dir ? (S_IFDIR | options_.dir_mode) : (S_IFREG | options_.file_mode);
    }
    out.push_back(std::move(d));
  }
  return out;
}

void Core::AcceptDirEntries(const std::vector<DirEntry>& accepted) {
  MutexLock lock(mutex_);
  for (const DirEntry& d : accepted) {
    // The kernel takes no reference for "." and ".." (fuse_direntplus_link skips them).
    if (d.name == "." || d.name == ".." || d.entry.attr.ino == 0) continue;
    if (InodeRecord* rec = inodes_.Find(d.entry.attr.ino); rec != nullptr) {
      ++rec->id.lookups;
    } else {
      REELFS_LOG_ERROR("fuse", "accepted directory entry for unknown inode {}", d.entry.attr.ino);
    }
  }
}

void Core::Unpin(const std::vector<InodeId>& inodes) {
  MutexLock lock(mutex_);
  for (InodeId ino : inodes) inodes_.Unpin(ino);
}

}  // namespace reelfs::fuse::detail
