// Store: buckets and objects over FsRoot (the files) and Catalog (their metadata).
//
// Every mutation goes file first, catalog second: a crash in between leaves a file whose
// catalog row is missing or stale, which Open() repairs lazily (size/mtime mismatch -> ETag
// recomputed) and Reconcile() repairs at start-up. Keys must be validated before they get here.
//
// Archived objects (catalog.h ArchiveRecord): a released (offline) object is an empty
// placeholder file that keeps its name; an empty file at a key whose archive row says it holds
// N > 0 bytes is read as that placeholder, never as new content (also after a crash between
// the placeholder's rename and the catalog write). New content at a key (Put, a file changed
// behind our back) drops the archive row: the tape copy is of the old content.
//
// Thread-safety: all methods are safe to call from any thread. Writers of one key (Put, PutMarker,
// Delete, and Open's repair of a stale row) hold that key's stripe of key_locks_ (key_locks.h:
// across threads and across the gateway processes of one root) over the file change and the
// catalog write, so the catalog always ends up describing the file that won.
// Lock order: a key stripe, then Catalog's own mutex; never two stripes at once.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "gateway/store/catalog.h"
#include "gateway/store/fs_root.h"
#include "gateway/store/key_locks.h"
#include "s3/types.h"
#include "s3/upload_types.h"

namespace reelfs::gateway {

struct PutOptions {
  std::string content_type;
  std::string storage_class = "STANDARD";
  UserMetadata user_meta;
};

struct ListParams {
  std::string prefix;
  std::string delimiter;
  std::string start_after;
  std::string continuation_token;  // opaque, as returned in next_continuation_token
  int max_keys = 1000;
};

struct UploadListParams {
  std::string prefix;
  std::string delimiter;
  std::string key_marker;
  std::string upload_id_marker;
  int max_uploads = 1000;
};

struct StoreOptions {
  uint64_t min_part_size = 5 * 1024 * 1024;  // every part but the last (S3: EntityTooSmall)
  // A front end over a root another gateway owns: the catalog must exist (never created,
  // rebuilt or migrated here), no start-up reconciliation, only its own temporary files cleaned.
  bool front_end = false;
};

class Store {
 public:
  // Opens ROOT, the catalog, and reconciles the catalog with the files.
  static Result<std::unique_ptr<Store>> Open(const std::string& root, StoreOptions options = {});

  FsRoot& fs() { return *fs_; }
  Catalog& catalog() { return *catalog_; }

  // ---- buckets ----
  Result<std::vector<s3::BucketInfo>> ListBuckets();
  Status CreateBucket(const std::string& bucket);
  Status DeleteBucket(const std::string& bucket);
  Status HeadBucket(const std::string& bucket);

  // ---- objects ----
  struct OpenedObject {
    UniqueFd fd;  // for an offline object: its empty placeholder (the caller must not serve it)
    ObjectRecord record;
  };
  Result<OpenedObject> Open(const std::string& bucket, const std::string& key);
  Result<ObjectRecord> Head(const std::string& bucket, const std::string& key);
  // Publishes tmp at bucket/key; etag is the content's hex MD5 (or multipart ETag).
  Result<ObjectRecord> Put(const std::string& bucket, const std::string& key, TmpFile& tmp,
                           const std::string& etag, const PutOptions& options);
  // A directory marker ("a/b/"), empty content.
  Result<ObjectRecord> PutMarker(const std::string& bucket, const std::string& key,
                                 const PutOptions& options);
  // Idempotent: deleting a missing key succeeds.
  Status Delete(const std::string& bucket, const std::string& key);
  // rows (optional) receives the catalog record of each page.objects entry, in the same order
  // (the archive state the listing's StorageClass/RestoreStatus are made from).
  Result<s3::ListObjectsPage> List(const std::string& bucket, const ListParams& params,
                                   std::vector<ObjectRecord>* rows = nullptr);

  // ---- archive (gateway/archive/ drives these; each holds the key's stripe) ----
  // Records the tape copy of an object whose file is still the one described by `expected`
  // (size, mtime, ETag); FailedPrecondition when it changed meanwhile (the copy is then garbage).
  Status MarkArchived(const std::string& bucket, const ObjectRecord& expected,
                      const ArchiveRecord& archive);
  // Premigrated -> offline: the file is replaced by an empty placeholder (rename, so GETs in
  // flight keep their bytes), then the row says kOffline. FailedPrecondition unless premigrated.
  Status Release(const std::string& bucket, const std::string& key);
  // Offline -> premigrated: publishes `restored` (the recalled bytes, already verified) over the
  // placeholder with the object's original mtime, if the archive row still names the same
  // extent; `update` then edits the row (restored_ns, expiry, flags) in the same critical section.
  Status CompleteRecall(const std::string& bucket, const std::string& key,
                        const ArchiveRecord& from, TmpFile& restored,
                        const std::function<void(ArchiveRecord&)>& update);
  // Read-modify-write of an archive row under the key's stripe. NotFound when there is none;
  // `fn` may refuse with its own Status (returned as is).
  Status UpdateArchive(const std::string& bucket, const std::string& key,
                       const std::function<Status(ArchiveRecord&)>& fn);

  // ---- multipart ----
  Result<std::string> CreateUpload(const std::string& bucket, const std::string& key,
                                   const PutOptions& options);
  // NoSuchUpload unless the upload exists and belongs to bucket/key.
  Result<UploadRecord> GetUpload(const std::string& bucket, const std::string& key,
                                 const std::string& upload_id);
  // Where an UploadPart body of `size` bytes (nullopt: not known up front) is written: its
  // region in the upload's data file when it can go in place (fs_root.h), else a tmp file.
  Result<TmpFile> CreatePartTarget(const std::string& upload_id, int part_number,
                                   std::optional<uint64_t> size);
  // Stores a received part (either kind of target) and records it in the catalog.
  Status PutPart(const UploadRecord& upload, int part_number, TmpFile& tmp,
                 const std::string& md5_hex);
  Result<ObjectRecord> CompleteUpload(const UploadRecord& upload,
                                      const std::vector<s3::CompletedPart>& parts);
  Status AbortUpload(const UploadRecord& upload);

  // ---- multipart listings and expiry (upload_listing.cc) ----
  // ListMultipartUploads: uploads of `bucket` in (key, initiation) order after the markers,
  // CommonPrefixes rolled up at the delimiter (each counts toward max_uploads). NoSuchBucket.
  Result<s3::ListMultipartUploadsPage> ListUploads(const std::string& bucket,
                                                   const UploadListParams& params);
  // ListParts: the staged parts after part_number_marker, LastModified from each part's file.
  Result<s3::ListPartsPage> ListUploadParts(const UploadRecord& upload, int part_number_marker,
                                            int max_parts);
  // Aborts every upload created before cutoff_ns (all buckets), as AbortUpload does, and returns
  // what went; counted in upload_expiry_stats(). Errors on one upload are logged and skipped.
  struct ExpiredUpload {
    UploadRecord upload;
    uint64_t parts = 0;
    uint64_t bytes = 0;
  };
  Result<std::vector<ExpiredUpload>> ExpireUploads(int64_t cutoff_ns);
  struct UploadExpiryStats {
    uint64_t uploads = 0;
    uint64_t parts = 0;
    uint64_t bytes = 0;
  };
  UploadExpiryStats upload_expiry_stats() const;

  // Brings the catalog in line with the files (all buckets). Called by Open.
  Status Reconcile();

  // ---- check.cc ----
  // Read-only: compares every catalog row with its file and every file with its row (size,
  // mtime, the content MD5 of single-part ETags, directory markers, upload staging directories)
  // and reports each disagreement; repairs nothing (`reelfs-gateway check`). Meant for a quiet
  // root: a write in flight may show up as a problem.
  struct CheckReport {
    uint64_t buckets = 0, objects = 0, files = 0, bytes = 0, hashed = 0, uploads = 0;
    std::vector<std::string> problems;
    std::string ToJson() const;
  };
  Result<CheckReport> Check();

 private:
  // CompleteUpload's fast path: the data file, taken and cut to the object's size, when
  // `chosen` (the listed parts) is every staged part, 1..n, in place and whole; else nullopt.
  Result<std::optional<TmpFile>> TakeWholeInPlace(const UploadRecord& upload,
                                                  const std::vector<PartRecord>& staged,
                                                  const std::vector<const PartRecord*>& chosen);
  Store(std::unique_ptr<FsRoot> fs, std::unique_ptr<Catalog> catalog,
        std::unique_ptr<KeyLocks> key_locks, StoreOptions options)
      : fs_(std::move(fs)),
        catalog_(std::move(catalog)),
        options_(options),
        key_locks_(std::move(key_locks)) {}
  Status ReconcileBucket(const std::string& bucket);
  Result<KeyLocks::Guard> KeyLock(const std::string& bucket, const std::string& key);
  // Records what was just published at bucket/key (its size, ETag and mtime) in the catalog,
  // with the options' metadata; under the key's lock.
  Result<ObjectRecord> RecordPublished(const std::string& bucket, const std::string& key,
                                       uint64_t size, const std::string& etag, int64_t mtime_ns,
                                       const PutOptions& options);

  std::unique_ptr<FsRoot> fs_;
  std::unique_ptr<Catalog> catalog_;
  StoreOptions options_;
  std::unique_ptr<KeyLocks> key_locks_;  // see the thread-safety note above
  // ExpireUploads' totals since start (admin metrics).
  std::atomic<uint64_t> expired_uploads_{0};
  std::atomic<uint64_t> expired_parts_{0};
  std::atomic<uint64_t> expired_bytes_{0};
};

// Encoding of continuation tokens (exposed for tests): opaque hex of a kind byte and a bound.
std::string EncodeContinuationToken(char kind, const std::string& bound);

}  // namespace reelfs::gateway
