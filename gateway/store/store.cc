#include "gateway/store/store.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <set>

#include <sys/stat.h>

#include "common/log.h"
#include "gateway/store/etag.h"
#include "gateway/store/key_validation.h"
#include "s3/protocol/crypto.h"

namespace reelfs::gateway {
namespace {

constexpr std::string_view kEmptyMd5 = "d41d8cd98f00b204e9800998ecf8427e";

// An empty file where the archive row says the object holds bytes: the released object's
// placeholder (store.h), whatever state the row says (a crash can land between the rename of the
// placeholder and the catalog write).
bool IsPlaceholder(const std::optional<ArchiveRecord>& archive, const FileStat& st) {
  return archive.has_value() && archive->size > 0 && st.size == 0 && !st.is_dir;
}

// The objects row an archive row describes (after a catalog rebuild).
ObjectRecord RecordFromArchive(const std::string& key, const ArchiveRecord& a) {
  ObjectRecord r;
  r.key = key;
  r.size = a.size;
  r.etag = a.etag;
  r.mtime_ns = a.mtime_ns;
  r.content_type = a.content_type;
  r.storage_class = a.storage_class.empty() ? "STANDARD" : a.storage_class;
  r.user_meta = DecodeUserMetadata(a.user_meta);
  r.archive = a;
  return r;
}

Status Changed(const std::string& key, std::string_view what) {
  return Status::FailedPrecondition("object " + key + " changed " + std::string(what));
}

}  // namespace

Result<std::unique_ptr<Store>> Store::Open(const std::string& root, StoreOptions options) {
  REELFS_ASSIGN_OR_RETURN(std::unique_ptr<FsRoot> fs, FsRoot::Open(root, options.front_end));
  REELFS_ASSIGN_OR_RETURN(
      std::unique_ptr<Catalog> catalog,
      Catalog::Open(fs->internal_path() + "/catalog.db",
                    options.front_end ? CatalogRole::kFrontEnd : CatalogRole::kOwner));
  REELFS_ASSIGN_OR_RETURN(std::unique_ptr<KeyLocks> key_locks, KeyLocks::Open(fs->internal_path()));
  std::unique_ptr<Store> store(
      new Store(std::move(fs), std::move(catalog), std::move(key_locks), options));
  // A front end joins a root its owner has reconciled; walking it again would race the owner's
  // writers for nothing (a stale row is repaired at its next HEAD/GET in any process).
  if (!options.front_end) REELFS_RETURN_IF_ERROR(store->Reconcile());
  return store;
}

Status Store::Reconcile() {
  REELFS_ASSIGN_OR_RETURN(std::vector<std::string> dirs, fs_->ListBucketDirs());
  REELFS_ASSIGN_OR_RETURN(auto known, catalog_->Buckets());
  for (const auto& [name, created] : known) {
    if (!std::binary_search(dirs.begin(), dirs.end(), name)) {
      REELFS_RETURN_IF_ERROR(catalog_->DeleteBucket(name));
    }
  }
  for (const std::string& bucket : dirs) {
    REELFS_RETURN_IF_ERROR(catalog_->PutBucket(bucket, NowNs()));
    REELFS_RETURN_IF_ERROR(ReconcileBucket(bucket));
  }
  return Status::Ok();
}

Status Store::ReconcileBucket(const std::string& bucket) {
  std::set<std::string> seen;
  size_t refreshed = 0;
  Status walk_error;
  return catalog_->InTransaction([&]() -> Status {
    REELFS_RETURN_IF_ERROR(fs_->Walk(bucket, [&](const std::string& key, const FileStat& st) {
      if (!walk_error.ok()) return;
      seen.insert(key);
      auto rec = catalog_->GetObject(bucket, key);
      if (!rec.ok()) {
        walk_error = rec.status();
        return;
      }
      std::optional<ArchiveRecord> archive;
      if (rec->has_value()) {
        archive = (*rec)->archive;
      } else {
        auto a = catalog_->GetArchive(bucket, key);  // the objects table was rebuilt
        if (!a.ok()) {
          walk_error = a.status();
          return;
        }
        archive = std::move(*a);
      }
      if (IsPlaceholder(archive, st)) {
        ObjectRecord out = rec->has_value() ? **rec : RecordFromArchive(key, *archive);
        if (rec->has_value() && out.archive->state == ArchiveState::kOffline) return;
        out.archive->state = ArchiveState::kOffline;
        out.archive->staging = false;
        ++refreshed;
        walk_error = catalog_->PutObject(bucket, out);
        return;
      }
      if (rec->has_value() && (*rec)->size == st.size &&
          ((*rec)->mtime_ns == st.mtime_ns || st.is_dir)) {
        return;
      }
      if (!rec->has_value() && archive.has_value() && archive->state != ArchiveState::kOffline &&
          archive->size == st.size && archive->mtime_ns == st.mtime_ns) {
        // Archived and still on disk, unchanged: the archive row's snapshot is the metadata.
        ++refreshed;
        walk_error = catalog_->PutObject(bucket, RecordFromArchive(key, *archive));
        return;
      }
      ObjectRecord out = rec->has_value() ? **rec : ObjectRecord{};
      out.archive.reset();  // new content: the tape copy (if any) is of something else
      out.key = key;
      out.size = st.size;
      out.mtime_ns = st.mtime_ns;
      if (st.is_dir) {
        out.etag = kEmptyMd5;
      } else {
        auto opened = fs_->OpenObject(bucket, key);
        if (!opened.ok()) return;  // vanished meanwhile
        auto md5 = Md5HexOfFd(opened->fd.get());
        if (!md5.ok()) {
          walk_error = md5.status();
          return;
        }
        out.etag = *md5;
      }
      ++refreshed;
      walk_error = catalog_->PutObject(bucket, out);
    }));
    REELFS_RETURN_IF_ERROR(walk_error);
    // Rows whose files are gone. Markers over non-empty directories are kept.
    std::string lower;
    bool inclusive = true;
    size_t dropped = 0;
    while (true) {
      REELFS_ASSIGN_OR_RETURN(auto rows, catalog_->ListObjects(bucket, lower, inclusive, "", 1000));
      if (rows.empty()) break;
      for (const ObjectRecord& r : rows) {
        if (seen.count(r.key)) continue;
        if (IsDirectoryMarker(r.key) && fs_->OpenObject(bucket, r.key).ok()) continue;
        REELFS_RETURN_IF_ERROR(catalog_->DeleteObject(bucket, r.key));
        ++dropped;
      }
      lower = rows.back().key;
      inclusive = false;
    }
    // Archive rows of keys with no file left (the placeholder was deleted by hand).
    std::string after;
    while (true) {
      Catalog::ArchiveQuery q;
      q.bucket = bucket;
      q.after_bucket = bucket;
      q.after_key = after;
      REELFS_ASSIGN_OR_RETURN(auto rows, catalog_->ListArchive(q));
      if (rows.empty()) break;
      for (const auto& row : rows) {
        if (seen.count(row.key)) continue;
        REELFS_RETURN_IF_ERROR(catalog_->DeleteObject(bucket, row.key));
        ++dropped;
      }
      after = rows.back().key;
    }
    if (refreshed || dropped) {
      REELFS_LOG_INFO("gateway", "catalog: bucket {}: {} rows refreshed, {} dropped", bucket,
                      refreshed, dropped);
    }
    return Status::Ok();
  });
}

Result<KeyLocks::Guard> Store::KeyLock(const std::string& bucket, const std::string& key) {
  return key_locks_->Lock(bucket, key);
}

// ---- buckets ----

Result<std::vector<s3::BucketInfo>> Store::ListBuckets() {
  REELFS_ASSIGN_OR_RETURN(std::vector<std::string> dirs, fs_->ListBucketDirs());
  REELFS_ASSIGN_OR_RETURN(auto known, catalog_->Buckets());
  std::vector<s3::BucketInfo> out;
  for (const std::string& name : dirs) {
    s3::BucketInfo info;
    info.name = name;
    auto it = known.find(name);
    int64_t ns = it != known.end() ? it->second : NowNs();
    info.creation_date = s3::WallTime(
        std::chrono::duration_cast<s3::WallTime::duration>(std::chrono::nanoseconds(ns)));
    out.push_back(std::move(info));
  }
  return out;
}

Status Store::CreateBucket(const std::string& bucket) {
  REELFS_RETURN_IF_ERROR(fs_->MakeBucketDir(bucket));
  return catalog_->PutBucket(bucket, NowNs());
}

Status Store::DeleteBucket(const std::string& bucket) {
  REELFS_RETURN_IF_ERROR(HeadBucket(bucket));
  // Directory markers are empty directories: a bucket holding only markers is not empty.
  REELFS_RETURN_IF_ERROR(fs_->RemoveBucketDir(bucket));
  return catalog_->DeleteBucket(bucket);
}

Status Store::HeadBucket(const std::string& bucket) {
  REELFS_ASSIGN_OR_RETURN(UniqueFd fd, fs_->OpenBucket(bucket));
  return Status::Ok();
}

// ---- objects ----

Result<Store::OpenedObject> Store::Open(const std::string& bucket, const std::string& key) {
  const bool marker = IsDirectoryMarker(key);
  auto stale = [&](const std::optional<ObjectRecord>& rec, const FileStat& st) {
    if (rec.has_value() && IsPlaceholder(rec->archive, st)) return false;
    return !rec.has_value() || (!marker && (rec->size != st.size || rec->mtime_ns != st.mtime_ns));
  };
  REELFS_ASSIGN_OR_RETURN(FsRoot::OpenedObject file, fs_->OpenObject(bucket, key));
  REELFS_ASSIGN_OR_RETURN(std::optional<ObjectRecord> rec, catalog_->GetObject(bucket, key));
  KeyLocks::Guard lock;
  if (stale(rec, file.stat)) {
    // A concurrent Put may be between its rename and its catalog write: open and look again
    // under the key's lock, so a repair never mixes one writer's file with another's row.
    REELFS_ASSIGN_OR_RETURN(lock, KeyLock(bucket, key));
    REELFS_ASSIGN_OR_RETURN(file, fs_->OpenObject(bucket, key));
    REELFS_ASSIGN_OR_RETURN(rec, catalog_->GetObject(bucket, key));
  }
  if (marker && !rec.has_value()) {
    // A directory that is not a declared marker is a prefix, not an object.
    return S3CodeError(StatusCode::kNotFound, "NoSuchKey", 404,
                       "The specified key does not exist: " + key);
  }
  if (stale(rec, file.stat)) {
    // Written behind our back (or the catalog lost it): recompute and keep what we knew.
    ObjectRecord fixed = rec.value_or(ObjectRecord{});
    fixed.archive.reset();  // new content: the tape copy is of the old one
    fixed.key = key;
    fixed.size = file.stat.size;
    fixed.mtime_ns = file.stat.mtime_ns;
    REELFS_ASSIGN_OR_RETURN(fixed.etag, Md5HexOfFd(file.fd.get()));
    REELFS_RETURN_IF_ERROR(catalog_->PutObject(bucket, fixed));
    rec = std::move(fixed);
  }
  if (IsPlaceholder(rec->archive, file.stat) && rec->archive->state != ArchiveState::kOffline) {
    // A release that crashed between the placeholder's rename and its catalog write.
    rec->archive->state = ArchiveState::kOffline;
    rec->archive->staging = false;
  }
  OpenedObject out;
  out.fd = std::move(file.fd);
  out.record = std::move(*rec);
  return out;
}

Result<ObjectRecord> Store::Head(const std::string& bucket, const std::string& key) {
  REELFS_ASSIGN_OR_RETURN(OpenedObject o, Open(bucket, key));
  return std::move(o.record);
}

Result<ObjectRecord> Store::Put(const std::string& bucket, const std::string& key, TmpFile& tmp,
                                const std::string& etag, const PutOptions& options) {
  REELFS_RETURN_IF_ERROR(tmp.Sync());  // outside the lock: the slow part
  REELFS_ASSIGN_OR_RETURN(KeyLocks::Guard lock, KeyLock(bucket, key));
  REELFS_ASSIGN_OR_RETURN(FileStat st, fs_->Publish(tmp, bucket, key));
  return RecordPublished(bucket, key, st.size, etag, st.mtime_ns, options);
}

Result<ObjectRecord> Store::PutMarker(const std::string& bucket, const std::string& key,
                                      const PutOptions& options) {
  REELFS_ASSIGN_OR_RETURN(KeyLocks::Guard lock, KeyLock(bucket, key));
  REELFS_ASSIGN_OR_RETURN(FileStat st, fs_->MakeMarker(bucket, key));
  return RecordPublished(bucket, key, 0, std::string(kEmptyMd5), st.mtime_ns, options);
}

Result<ObjectRecord> Store::RecordPublished(const std::string& bucket, const std::string& key,
                                            uint64_t size, const std::string& etag,
                                            int64_t mtime_ns, const PutOptions& options) {
  ObjectRecord rec;
  rec.key = key;
  rec.size = size;
  rec.etag = etag;
  rec.mtime_ns = mtime_ns;
  rec.content_type = options.content_type;
  rec.storage_class = options.storage_class.empty() ? "STANDARD" : options.storage_class;
  rec.user_meta = options.user_meta;
  REELFS_RETURN_IF_ERROR(catalog_->PutObject(bucket, rec));
  return rec;
}

Status Store::Delete(const std::string& bucket, const std::string& key) {
  REELFS_RETURN_IF_ERROR(HeadBucket(bucket));
  REELFS_ASSIGN_OR_RETURN(KeyLocks::Guard lock, KeyLock(bucket, key));
  REELFS_RETURN_IF_ERROR(fs_->RemoveObject(bucket, key, [&](const std::string& dir_key) {
    auto rec = catalog_->GetObject(bucket, dir_key);
    return !rec.ok() || rec->has_value();  // on doubt, keep the directory
  }));
  return catalog_->DeleteObject(bucket, key);
}

}  // namespace reelfs::gateway

namespace reelfs::gateway {

// ---- archive ----

Status Store::MarkArchived(const std::string& bucket, const ObjectRecord& expected,
                           const ArchiveRecord& archive) {
  REELFS_ASSIGN_OR_RETURN(KeyLocks::Guard lock, KeyLock(bucket, expected.key));
  REELFS_ASSIGN_OR_RETURN(FsRoot::OpenedObject file, fs_->OpenObject(bucket, expected.key));
  REELFS_ASSIGN_OR_RETURN(std::optional<ObjectRecord> rec,
                          catalog_->GetObject(bucket, expected.key));
  if (!rec.has_value() || rec->etag != expected.etag || rec->size != expected.size ||
      rec->mtime_ns != expected.mtime_ns || file.stat.size != expected.size ||
      file.stat.mtime_ns != expected.mtime_ns) {
    return Changed(expected.key, "while it was written to tape");
  }
  return catalog_->PutArchive(bucket, expected.key, archive);
}

Status Store::Release(const std::string& bucket, const std::string& key) {
  REELFS_ASSIGN_OR_RETURN(KeyLocks::Guard lock, KeyLock(bucket, key));
  REELFS_ASSIGN_OR_RETURN(std::optional<ObjectRecord> rec, catalog_->GetObject(bucket, key));
  if (!rec.has_value() || !rec->archive.has_value() ||
      rec->archive->state != ArchiveState::kPremigrated) {
    return Status::FailedPrecondition("object " + key + " has no disk copy with a tape copy");
  }
  REELFS_ASSIGN_OR_RETURN(FsRoot::OpenedObject file, fs_->OpenObject(bucket, key));
  if (file.stat.size != rec->size || file.stat.mtime_ns != rec->mtime_ns) {
    return Changed(key, "on disk since it was archived; not released");
  }
  REELFS_ASSIGN_OR_RETURN(TmpFile placeholder, fs_->CreateTmp("release"));
  REELFS_RETURN_IF_ERROR(placeholder.Sync());
  REELFS_ASSIGN_OR_RETURN(FileStat st, fs_->Publish(placeholder, bucket, key));
  (void)st;
  ArchiveRecord a = *rec->archive;
  a.state = ArchiveState::kOffline;
  a.staging = false;
  a.expiry_ns = 0;
  return catalog_->PutArchive(bucket, key, a);
}

Status Store::CompleteRecall(const std::string& bucket, const std::string& key,
                             const ArchiveRecord& from, TmpFile& restored,
                             const std::function<void(ArchiveRecord&)>& update) {
  REELFS_ASSIGN_OR_RETURN(KeyLocks::Guard lock, KeyLock(bucket, key));
  REELFS_ASSIGN_OR_RETURN(std::optional<ObjectRecord> rec, catalog_->GetObject(bucket, key));
  if (!rec.has_value() || !rec->archive.has_value() || rec->archive->cartridge != from.cartridge ||
      rec->archive->start_block != from.start_block ||
      rec->archive->state != ArchiveState::kOffline) {
    return Changed(key, "during its recall; the recalled copy is dropped");
  }
  // The object's Last-Modified is its original mtime; the restored file carries it so that the
  // size/mtime staleness check keeps trusting the row (a multipart ETag cannot be recomputed).
  const timespec times[2] = {{0, UTIME_NOW},
                             {static_cast<time_t>(rec->mtime_ns / 1'000'000'000),
                              static_cast<long>(rec->mtime_ns % 1'000'000'000)}};
  if (::futimens(restored.fd(), times) != 0) return ErrnoToStatus(errno, "futimens restored");
  REELFS_RETURN_IF_ERROR(restored.Sync());
  REELFS_ASSIGN_OR_RETURN(FileStat st, fs_->Publish(restored, bucket, key));
  (void)st;
  ArchiveRecord a = *rec->archive;
  a.state = ArchiveState::kPremigrated;
  update(a);
  return catalog_->PutArchive(bucket, key, a);
}

Status Store::UpdateArchive(const std::string& bucket, const std::string& key,
                            const std::function<Status(ArchiveRecord&)>& fn) {
  REELFS_ASSIGN_OR_RETURN(KeyLocks::Guard lock, KeyLock(bucket, key));
  REELFS_ASSIGN_OR_RETURN(std::optional<ArchiveRecord> a, catalog_->GetArchive(bucket, key));
  if (!a.has_value()) return Status::NotFound("object " + key + " is not archived");
  REELFS_RETURN_IF_ERROR(fn(*a));
  return catalog_->PutArchive(bucket, key, *a);
}

}  // namespace reelfs::gateway
