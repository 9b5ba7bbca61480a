// Core's names for writes (docs/semantics.md "Writes"): files being written, directories made by
// mkdir, files written here and names removed here, kept in LocalEntries (local_entries.h) until
// a listing of their directory says the same; UNLINK, RMDIR and SETATTR.

#include <fcntl.h>

#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include <sys/stat.h>

#include "common/log.h"
#include "common/mutex.h"
#include "common/status.h"
#include "fuse/core/core_internal.h"
#include "fuse/core/name_rules.h"

namespace reelfs::fuse::detail {
namespace {

Status NotPermitted(std::string message) {
  return Status(StatusCode::kPermissionDenied, StatusReason::kNotPermitted, std::move(message));
}

Status Busy(const std::string& key) {
  return Status(
      StatusCode::kFailedPrecondition, StatusReason::kBusy,
      fmt::format("'{}' is being written by another handle of this mount", PrintableKey(key)));
}

// A name no object key can carry: EINVAL, or ENAMETOOLONG for a long one.
Status BadName(std::string_view op, std::string_view name) {
  const NameProblem p = CheckName(name);
  return Status(StatusCode::kInvalidArgument,
                p == NameProblem::kTooLong ? StatusReason::kNameTooLong : StatusReason::kNone,
                fmt::format("{} '{}': {}", op, PrintableKey(name), NameProblemText(p)));
}

}  // namespace

Status Core::ReadOnly(std::string_view op) const {
  return Status(StatusCode::kFailedPrecondition, StatusReason::kReadOnly,
                fmt::format("{}: the mount is read-only (--read-only)", op));
}

void Core::SetLocalLocked(InodeId dir, std::string_view name, LocalEntry entry) {
  if (local_.Set(dir, name, std::move(entry))) {
    // The directory must outlive its entries (they are keyed by its inode).
    if (InodeRecord* d = inodes_.Find(dir); d != nullptr) ++d->id.pins;
  }
}

void Core::EraseLocalLocked(InodeId dir, std::string_view name) {
  if (local_.Erase(dir, name)) inodes_.Unpin(dir);
}

size_t Core::ListedAndNotRemovedLocked(const InodeRecord& d) const {
  if (d.dir.listing == nullptr) return 0;
  size_t n = 0;
  for (const ListedEntry& entry : d.dir.listing->entries) {
    const LocalEntry* e = local_.Find(d.id.ino, entry.name);
    if (e == nullptr || e->kind != LocalKind::kRemoved) ++n;
  }
  return n;
}

void Core::ReconcileLocked(InodeId dir, const DirListing& listing) {
  if (!local_.Has(dir)) return;
  bool emptied = false;
  const std::vector<InodeId> now_remote =
      local_.Reconcile(dir, listing, clock_.Now(), options_.metadata_ttl, &emptied);
  for (InodeId ino : now_remote) {
    // A directory made here that S3 now shows (a file was written below it): an ordinary one.
    if (InodeRecord* rec = inodes_.Find(ino); rec != nullptr && rec->local.dir) {
      rec->local.dir = false;
      inodes_.Unpin(ino);
    }
  }
  if (emptied) inodes_.Unpin(dir);
}

std::optional<Core::NameIs> Core::KnownNameLocked(const InodeRecord& parent,
                                                  std::string_view name) {
  if (const LocalEntry* e = local_.Find(parent.id.ino, name); e != nullptr) {
    switch (e->kind) {
      case LocalKind::kWriting:
        return NameIs::kWriting;
      case LocalKind::kDir:
        return NameIs::kDir;
      case LocalKind::kWritten:
        return NameIs::kFile;
      case LocalKind::kRemoved:
        return NameIs::kAbsent;
    }
  }
  if (parent.dir.listing != nullptr && clock_.Now() < parent.dir.expiry) {
    const ListedEntry* le = parent.dir.listing->Find(name);
    if (le == nullptr) return NameIs::kAbsent;
    return le->is_dir ? NameIs::kDir : NameIs::kFile;
  }
  if (InodeRecord* c = inodes_.FindChild(parent.id.ino, name);
      c != nullptr && clock_.Now() < c->attrs.expiry) {
    return c->id.is_dir ? NameIs::kDir : NameIs::kFile;
  }
  if (negative_.Contains(parent.id.key + std::string(name), clock_.Now())) return NameIs::kAbsent;
  return std::nullopt;
}

Result<Entry> Core::LocalLookupLocked(InodeId parent, std::string_view name, const LocalEntry& e) {
  switch (e.kind) {
    case LocalKind::kWriting:
    case LocalKind::kDir: {
      InodeRecord* rec = inodes_.Find(e.ino);
      if (rec == nullptr) return Stale(e.ino);  // pinned while local: cannot happen
      ++rec->id.lookups;
      return MakeEntry(*rec);
    }
    case LocalKind::kWritten:
      return AddEntryLocked(parent, name, /*is_dir=*/false, &e.info, /*count=*/true, e.since);
    case LocalKind::kRemoved:
      break;
  }
  return Status(StatusCode::kNotFound, StatusReason::kKnownAbsent,
                fmt::format("'{}' was removed through this mount", PrintableKey(name)));
}

Result<Entry> Core::CreateLocalFile(InodeId parent, std::string_view name, int flags,
                                    std::string* key) {
  if (options_.write.read_only) return ReadOnly("create");
  if (CheckName(name) != NameProblem::kNone) return BadName("create", name);
  MutexLock lock(mutex_);
  REELFS_ASSIGN_OR_RETURN(InodeRecord * p, FindLocked(parent, Want::kDir, "create in"));
  *key = p->id.key + std::string(name);
  switch (KnownNameLocked(*p, name).value_or(NameIs::kAbsent)) {
    case NameIs::kWriting:
      return Busy(*key);
    case NameIs::kDir:
      return Status(StatusCode::kInvalidArgument, StatusReason::kIsADirectory,
                    fmt::format("create '{}': a directory has this name", PrintableKey(*key)));
    case NameIs::kFile:
      // The kernel sends CREATE only for a name it believes absent; S3 has it (a listing or the
      // object's attributes say so). Only O_TRUNC may replace it, and only where allowed.
      if ((flags & O_EXCL) != 0) {
        return Status::AlreadyExists(
            fmt::format("create '{}' with O_EXCL: the object exists", PrintableKey(*key)));
      }
      if ((flags & O_TRUNC) == 0 || !options_.write.allow_overwrite) {
        return NotPermitted(fmt::format(
            "create '{}': the object exists; {}", PrintableKey(*key),
            (flags & O_TRUNC) == 0 ? "objects are not modified in place through the mount"
                                   : "replacing objects needs reelfs mount --allow-overwrite"));
      }
      break;  // a new inode writes the replacement; the old object stays until it completes
    case NameIs::kAbsent:
      break;
  }
  InodeRecord* rec = inodes_.FindOrCreateChild(parent, name, /*is_dir=*/false, *key);
  if (rec->id.lookups > 0 || rec->id.pins > 0) {
    // The name's old inode (an object since deleted elsewhere) is still known to the kernel: a
    // new file gets a new inode.
    inodes_.RemoveName(parent, name, rec->id.ino);
    rec = inodes_.FindOrCreateChild(parent, name, /*is_dir=*/false, *key);
  }
  StartWritingLocked(rec, *key);
  ++rec->id.lookups;  // the Entry returned
  Entry e = MakeEntry(*rec);
  e.attr_timeout = std::chrono::seconds(0);
  return e;
}

void Core::StartWritingLocked(InodeRecord* rec, const std::string& key) {
  rec->local.writing = true;
  s3::ObjectInfo info;
  info.key = key;
  info.size = 0;
  info.last_modified = clock_.WallNow();
  rec->tape = {};
  rec->attrs.etag.clear();
  rec->attrs.attr = FileAttr(rec->id.ino, info, /*readable=*/true);
  rec->attrs.attr.cache_ttl = std::chrono::seconds(0);  // it grows: the kernel asks again
  rec->attrs.expiry = clock_.Now();
  ++rec->id.pins;  // the handle
  negative_.Erase(key);
  SetLocalLocked(rec->id.parent, rec->id.name,
                 LocalEntry{LocalKind::kWriting, rec->id.ino, std::move(info), clock_.Now()});
}

Result<std::string> Core::BeginOverwrite(InodeId ino) {
  MutexLock lock(mutex_);
  REELFS_ASSIGN_OR_RETURN(InodeRecord * rec, FindLocked(ino, Want::kFile, "open for writing of"));
  if (rec->local.writing) return Busy(rec->id.key);
  if (!options_.write.allow_overwrite) {
    return NotPermitted(fmt::format(
        "open '{}' with O_TRUNC: replacing objects needs reelfs mount --allow-overwrite",
        PrintableKey(rec->id.key)));
  }
  if (inodes_.FindChild(rec->id.parent, rec->id.name) != rec) {
    return Stale(ino);  // its name has gone to another inode: reopen by name
  }
  Replaced saved{rec->attrs, rec->tape, std::nullopt};
  if (const LocalEntry* e = local_.Find(rec->id.parent, rec->id.name); e != nullptr) {
    saved.local = *e;
  }
  replaced_.insert_or_assign(ino, std::move(saved));
  const std::string key = rec->id.key;
  StartWritingLocked(rec, key);
  return key;
}

void Core::SetWritingSize(InodeId ino, uint64_t size) {
  MutexLock lock(mutex_);
  InodeRecord* rec = inodes_.Find(ino);
  if (rec == nullptr || !rec->local.writing) return;
  rec->attrs.attr.size = size;
  rec->attrs.attr.blocks = (size + 511) / 512;
  rec->attrs.attr.mtime = clock_.WallNow();
  if (LocalEntry* e = local_.FindMutable(rec->id.parent, rec->id.name); e != nullptr) {
    e->info.size = size;
  }
}

void Core::PublishFile(InodeId ino, const s3::ObjectInfo& info) {
  Count(stats_.files_written);
  MutexLock lock(mutex_);
  replaced_.erase(ino);
  InodeRecord* rec = inodes_.Find(ino);
  if (rec == nullptr) return;
  rec->local.writing = false;
  RecordObjectLocked(rec, info, clock_.Now());
  const InodeId parent = rec->id.parent;
  if (inodes_.FindChild(parent, rec->id.name) == rec) {
    SetLocalLocked(parent, rec->id.name, LocalEntry{LocalKind::kWritten, ino, info, clock_.Now()});
  }
  negative_.Erase(rec->id.key);
  PublishedBelowLocked(parent);
}

void Core::PublishedBelowLocked(InodeId parent) {
  // Directories made here above it now exist in S3 too; each stays a local entry of its own
  // parent until a listing there shows it (ReconcileLocked), so lookups keep finding it.
  for (InodeRecord* d = inodes_.Find(parent); d != nullptr && d->id.ino != kRootInode;
       d = inodes_.Find(d->id.parent)) {
    negative_.Erase(d->id.key.substr(0, d->id.key.size() - 1));
    if (LocalEntry* e = local_.FindMutable(d->id.parent, d->id.name); e != nullptr) {
      e->since = clock_.Now();
    }
  }
}

void Core::AbandonFile(InodeId ino) {
  Count(stats_.uploads_failed);
  MutexLock lock(mutex_);
  InodeRecord* rec = inodes_.Find(ino);
  if (rec == nullptr || !rec->local.writing) return;
  rec->local.writing = false;
  if (auto it = replaced_.find(ino); it != replaced_.end()) {
    // An overwrite: S3 keeps the old object, and the name keeps showing it.
    Replaced saved = std::move(it->second);
    replaced_.erase(it);
    rec->attrs = std::move(saved.attrs);
    rec->attrs.expiry = clock_.Now();  // asked again: the upload may have half-happened
    rec->tape = std::move(saved.tape);
    if (saved.local.has_value()) {
      SetLocalLocked(rec->id.parent, rec->id.name, std::move(*saved.local));
    } else {
      EraseLocalLocked(rec->id.parent, rec->id.name);
    }
    return;
  }
  const LocalEntry* e = local_.Find(rec->id.parent, rec->id.name);
  if (e != nullptr && e->kind == LocalKind::kWriting && e->ino == ino) {
    EraseLocalLocked(rec->id.parent, rec->id.name);
  }
  inodes_.RemoveName(rec->id.parent, rec->id.name, ino);
  // Stale for the kernel from now on: no attributes can be trusted.
  rec->attrs.expiry = clock_.Now();
}

void Core::UnpinInode(InodeId ino) {
  MutexLock lock(mutex_);
  inodes_.Unpin(ino);
}

Result<Entry> Core::MakeLocalDir(InodeId parent, std::string_view name) {
  if (options_.write.read_only) return ReadOnly("mkdir");
  if (CheckName(name) != NameProblem::kNone) return BadName("mkdir", name);
  MutexLock lock(mutex_);
  REELFS_ASSIGN_OR_RETURN(InodeRecord * p, FindLocked(parent, Want::kDir, "mkdir in"));
  const std::string key = p->id.key + std::string(name) + "/";
  const std::optional<NameIs> known = KnownNameLocked(*p, name);
  if (known.has_value() && *known != NameIs::kAbsent) {
    return Status::AlreadyExists(fmt::format("mkdir '{}': the name exists", PrintableKey(key)));
  }
  InodeRecord* rec = inodes_.FindOrCreateChild(parent, name, /*is_dir=*/true, key);
  rec->local.dir = true;
  rec->attrs.attr = DirAttr(rec->id.ino);
  rec->attrs.expiry = Expiry();
  // Nothing is below a new directory: lookups inside need no LIST until a listing is due.
  rec->dir.listing = std::make_shared<const DirListing>();
  rec->dir.expiry = Expiry();
  ++rec->id.lookups;  // the Entry returned
  ++rec->id.pins;     // local: kept until S3 shows it or rmdir
  negative_.Erase(p->id.key + std::string(name));
  SetLocalLocked(parent, name, LocalEntry{LocalKind::kDir, rec->id.ino, {}, clock_.Now()});
  return MakeEntry(*rec);
}

void Core::Unlink(InodeId parent, std::string_view name, std::function<void(Status)> done) {
  if (options_.write.read_only) return done(ReadOnly("unlink"));
  std::string key;
  InodeId ino = 0;
  {
    MutexLock lock(mutex_);
    InodeRecord* p = FindOrFail(lock, parent, Want::kDir, "unlink in", done);
    if (p == nullptr) return;
    key = p->id.key + std::string(name);
    const std::optional<NameIs> known = KnownNameLocked(*p, name);
    InodeRecord* child = inodes_.FindChild(parent, name);
    const NameIs is = known.value_or(child == nullptr   ? NameIs::kAbsent
                                     : child->id.is_dir ? NameIs::kDir
                                                        : NameIs::kFile);
    Status refusal;
    if (is == NameIs::kAbsent) {
      refusal = Status(StatusCode::kNotFound, StatusReason::kKnownAbsent,
                       fmt::format("unlink '{}': no such file", PrintableKey(key)));
    } else if (is == NameIs::kDir) {
      refusal = Status(StatusCode::kInvalidArgument, StatusReason::kIsADirectory,
                       fmt::format("unlink '{}': a directory", PrintableKey(key)));
    } else if (is == NameIs::kWriting) {
      refusal = Busy(key);
    } else if (!options_.write.allow_delete) {
      refusal = NotPermitted(fmt::format(
          "unlink '{}': deleting objects needs reelfs mount --allow-delete", PrintableKey(key)));
    }
    if (!refusal.ok()) {
      lock.unlock();
      return done(std::move(refusal));
    }
    if (child != nullptr) ino = child->id.ino;
  }
  auto self = shared_from_this();
  store_->DeleteObject({options_.bucket, key}, [self, parent, name = std::string(name), key, ino,
                                                done = std::move(done)](Status s) {
    if (!s.ok()) return done(std::move(s).WithContext("DeleteObject " + key));
    Count(self->stats_.deletes);
    {
      MutexLock lock(self->mutex_);
      if (ino != 0) {
        self->inodes_.RemoveName(parent, name, ino);
        if (InodeRecord* rec = self->inodes_.Find(ino); rec != nullptr) {
          rec->attrs.expiry = self->clock_.Now();
        }
      }
      self->SetLocalLocked(parent, name,
                           LocalEntry{LocalKind::kRemoved, 0, {}, self->clock_.Now()});
      self->negative_.Insert(key, self->clock_.Now());
    }
    done(Status::Ok());
  });
}

void Core::RmDir(InodeId parent, std::string_view name, std::function<void(Status)> done) {
  if (options_.write.read_only) return done(ReadOnly("rmdir"));
  std::string prefix;
  InodeId ino = 0;
  {
    MutexLock lock(mutex_);
    InodeRecord* p = FindOrFail(lock, parent, Want::kDir, "rmdir in", done);
    if (p == nullptr) return;
    prefix = p->id.key + std::string(name) + "/";
    InodeRecord* d = inodes_.FindChild(parent, name);
    const LocalEntry* e = local_.Find(parent, name);
    Status refusal;
    if (d == nullptr || (e != nullptr && e->kind == LocalKind::kRemoved)) {
      refusal = Status(StatusCode::kNotFound, StatusReason::kKnownAbsent,
                       fmt::format("rmdir '{}': no such directory", PrintableKey(prefix)));
    } else if (!d->id.is_dir) {
      refusal = Status(StatusCode::kInvalidArgument, StatusReason::kNotADirectory,
                       fmt::format("rmdir '{}': not a directory", PrintableKey(prefix)));
    } else if (local_.LiveNames(d->id.ino) > 0 || ListedAndNotRemovedLocked(*d) > 0) {
      refusal = ErrnoToStatus(ENOTEMPTY, "rmdir " + PrintableKey(prefix));
    } else if (d->local.dir && e != nullptr && e->kind == LocalKind::kDir) {
      // Made here and never written to: it exists nowhere else.
      d->local.dir = false;
      inodes_.Unpin(d->id.ino);
      inodes_.RemoveName(parent, name, d->id.ino);
      EraseLocalLocked(parent, name);
      lock.unlock();
      return done(Status::Ok());
    } else if (!options_.write.allow_delete) {
      refusal = NotPermitted(fmt::format(
          "rmdir '{}': removing a directory of the archive needs reelfs mount --allow-delete",
          PrintableKey(prefix)));
    }
    if (!refusal.ok()) {
      lock.unlock();
      return done(std::move(refusal));
    }
    ino = d->id.ino;
  }
  // A directory S3 has: empty only if a fresh LIST finds nothing below it but its marker.
  auto self = shared_from_this();
  ListDirectory(
      store_, options_.bucket, prefix, warn_, [self] { Count(self->stats_.list_requests); },
      [self, parent, name = std::string(name), prefix, ino,
       done = std::move(done)](Result<std::shared_ptr<const DirListing>> listing) mutable {
        if (!listing.ok()) return done(listing.status());
        bool empty;
        {
          MutexLock lock(self->mutex_);
          empty = (*listing)->entries.empty() && self->local_.LiveNames(ino) == 0;
        }
        if (!empty) return done(ErrnoToStatus(ENOTEMPTY, "rmdir " + PrintableKey(prefix)));
        auto forget_name = [self, parent, name, prefix, ino, done = std::move(done)](Status s) {
          if (!s.ok()) return done(std::move(s).WithContext("DeleteObject " + prefix));
          {
            MutexLock lock(self->mutex_);
            self->inodes_.RemoveName(parent, name, ino);
            self->SetLocalLocked(parent, name,
                                 LocalEntry{LocalKind::kRemoved, 0, {}, self->clock_.Now()});
          }
          done(Status::Ok());
        };
        if (!(*listing)->has_marker) return forget_name(Status::Ok());
        Count(self->stats_.deletes);
        self->store_->DeleteObject({self->options_.bucket, prefix}, std::move(forget_name));
      });
}

void Core::SetAttr(InodeId ino, const FileSystem::SetAttrRequest& request,
                   Callback<Attributes> done) {
  if (options_.write.read_only) return done(ReadOnly("setattr"));
  Attributes attr;
  {
    MutexLock lock(mutex_);
    InodeRecord* rec = FindOrFail(lock, ino, Want::kAny, "setattr of", done);
    if (rec == nullptr) return;
    attr = rec->attrs.attr;
    if (request.size.has_value() && *request.size != attr.size) {
      Status refusal =
          NotPermitted(fmt::format("truncate '{}' to {} bytes: objects are not changed in place",
                                   PrintableKey(rec->id.key), *request.size));
      lock.unlock();
      return done(std::move(refusal));
    }
  }
  done(std::move(attr));
}

}  // namespace reelfs::fuse::detail
