// Catalog: the gateway's metadata in SQLite (ROOT/.reelfs-gateway/catalog.db).
//
// Objects (ETag, size, mtime, content type, storage class, user metadata), buckets (creation
// time), and in-progress multipart uploads with their parts. The files are the truth for what
// exists; the catalog is rebuilt from them when missing, stale or of another schema version
// (store.h does the reconciliation). Keys are TEXT compared with SQLite's BINARY collation
// (memcmp), which is exactly S3's byte order, so listings are index range scans.
//
// Archive state (docs/gateway.md "Archive") is the exception: where an object's bytes sit on tape,
// whether the disk copy was released, restore requests and expiry cannot be derived from the
// files. It lives in its own tables (archive_objects, cartridges, archive_meta) that the
// objects-schema rebuild never drops; they carry their own version (archive_meta 'version',
// kArchiveSchemaVersion) and are migrated in place, never rebuilt. An archive row also keeps a
// copy of the object's metadata, so an objects row rebuilt from a released (empty placeholder)
// file gets its real size, ETag and metadata back.
//
// WAL mode, `PRAGMA user_version` = kSchemaVersion, busy_timeout. One connection guarded by a
// mutex: the gateway's writes are small and SQLite serializes writers anyway. Several gateway
// processes (front ends over one root) each open their own connection; WAL gives every reader a
// committed snapshot, writers queue on SQLite's lock (busy_timeout), and nothing of the
// database is cached here but compiled statements, so another process's commit is seen by the
// next query.
//
// Prepared statements are cached per connection, keyed by their SQL text (a bounded set: the
// fixed queries plus the few shapes ListObjects/ListArchive build), because compiling a query cost
// more CPU than running it (bench/RESULTS.md, gateway CPU per small GET). A statement is lent for
// one use and reset (ending its read transaction) and cleared when given back, on error paths
// too. A statement already lent gets a fresh, uncached copy: no method calls another while it
// holds one today, and a future nested call must not share it. The cache is declared after the
// connection: finalized before the close.
//
// Thread-safety: all methods are safe to call from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <sqlite3.h>

#include "common/c_handle.h"
#include "common/mutex.h"
#include "common/result.h"
#include "common/thread_annotations.h"

namespace reelfs::gateway {

using UserMetadata = std::map<std::string, std::string>;  // lowercase name (no x-amz-meta-)

// The wall clock in nanoseconds since the Unix epoch: the unit of every time the catalog keeps.
int64_t NowNs();

// Where an object's data is (docs/gateway.md "Archive"): only on disk (no archive row: kOnline), on
// disk and on tape (kPremigrated: archived, or restored), or only on tape (kOffline: the disk copy
// was released; an empty placeholder file keeps the name).
enum class ArchiveState : int { kOnline = 0, kPremigrated = 1, kOffline = 2 };
std::string_view ArchiveStateName(ArchiveState state);

struct ArchiveRecord {
  ArchiveState state = ArchiveState::kPremigrated;
  // The tape copy: cartridge (VSN), first block, length in bytes, and the hex MD5 of those bytes
  // (recalls are verified against it; the ETag of a multipart object is not a content MD5).
  std::string cartridge;
  uint64_t start_block = 0;
  uint64_t bytes = 0;
  std::string content_md5;
  int64_t archived_ns = 0;
  // A recall is running (ScoutAM "Staging"); the last recall failed (ScoutAM "StageFail").
  bool staging = false;
  bool stage_fail = false;
  int64_t restore_requested_ns = 0;  // last RestoreObject that started or joined a recall; 0 none
  int64_t restored_ns = 0;           // when the last recall completed; 0: never restored
  int64_t expiry_ns = 0;             // restored copy's expiry (aws personality); 0: none
  // Snapshot of the object's metadata when it was archived (see the file comment).
  uint64_t size = 0;
  std::string etag;
  int64_t mtime_ns = 0;
  std::string content_type;
  std::string storage_class;
  std::string user_meta;  // EncodeUserMetadata form
  // `Days` of the RestoreObject that started the running recall (-1: none): the expiry is set
  // from it when the recall completes, by whichever process runs the library.
  int restore_days = -1;
};

struct CartridgeRecord {
  std::string vsn;
  uint64_t next_block = 0;  // first free block (blocks are appended, never reused)
};

struct ObjectRecord {
  std::string key;
  uint64_t size = 0;
  std::string etag;  // without quotes
  int64_t mtime_ns = 0;
  std::string content_type;
  std::string storage_class = "STANDARD";
  UserMetadata user_meta;
  // Archive state; nullopt: kOnline, never archived. Read by GetObject/ListObjects (a join),
  // written by PutObject (which drops the archive row when this is nullopt: new content).
  std::optional<ArchiveRecord> archive;
};

struct UploadRecord {
  std::string id;
  std::string bucket;
  std::string key;
  std::string content_type;
  std::string storage_class = "STANDARD";
  UserMetadata user_meta;
  int64_t created_ns = 0;
};

struct PartRecord {
  int part_number = 0;
  uint64_t size = 0;
  std::string etag;  // hex MD5, without quotes
};

// Who opens the catalog (docs/gateway.md "Several front ends over one root"): the owning
// gateway creates, rebuilds and migrates it; a front end only opens one of its own version.
enum class CatalogRole { kOwner, kFrontEnd };

class Catalog {
 public:
  // 2: archive tables added (kept across rebuilds, see the file comment).
  static constexpr int kSchemaVersion = 2;
  // 2: archive_objects.restore_days.
  static constexpr int kArchiveSchemaVersion = 2;
  static constexpr int kBusyTimeoutMs = 10000;

  // Opens or creates the database. A different schema version drops and recreates the object
  // tables; the archive tables are created when missing and migrated, never dropped. kFrontEnd:
  // never creates, rebuilds or migrates; a missing catalog or another version is
  // FailedPrecondition.
  static Result<std::unique_ptr<Catalog>> Open(const std::string& path,
                                               CatalogRole role = CatalogRole::kOwner);

  // True when the database was created (or reset) by Open: every row must be rebuilt.
  bool fresh() const { return fresh_; }

  Status PutBucket(const std::string& name, int64_t created_ns);
  Status DeleteBucket(const std::string& name);  // and its objects
  Result<std::map<std::string, int64_t>> Buckets();

  // Writes the row and its archive state: rec.archive nullopt removes the archive row.
  Status PutObject(const std::string& bucket, const ObjectRecord& rec);
  Result<std::optional<ObjectRecord>> GetObject(const std::string& bucket, const std::string& key);
  Status DeleteObject(const std::string& bucket, const std::string& key);  // and its archive row
  // Rows with key > lower (>= when lower_inclusive) and key < upper (no bound when upper is
  // empty), in key order, at most `limit`.
  Result<std::vector<ObjectRecord>> ListObjects(const std::string& bucket, const std::string& lower,
                                                bool lower_inclusive, const std::string& upper,
                                                int limit);

  // ---- archive ----
  Result<std::optional<ArchiveRecord>> GetArchive(const std::string& bucket,
                                                  const std::string& key);
  // Archive rows alone (the object row is untouched).
  Status PutArchive(const std::string& bucket, const std::string& key, const ArchiveRecord& rec);
  struct ArchivedObject {
    std::string bucket;
    std::string key;
    ArchiveRecord archive;
  };
  // Archive rows in (bucket, key) order; filters: bucket ("" any), key prefix, state (nullopt
  // any), staging only; at most `limit`, keys > after.
  struct ArchiveQuery {
    std::string bucket;
    std::string prefix;
    std::optional<ArchiveState> state;
    bool staging_only = false;
    bool restored_only = false;  // restored_ns > 0, ordered by restored_ns (oldest first)
    std::string after_bucket;
    std::string after_key;
    int limit = 1000;
  };
  Result<std::vector<ArchivedObject>> ListArchive(const ArchiveQuery& query);
  // Sum of `bytes` of restored (restored_ns > 0) premigrated objects: the releaser's measure.
  Result<uint64_t> RestoredBytes();
  Result<std::vector<CartridgeRecord>> Cartridges();
  Status PutCartridge(const CartridgeRecord& cartridge);

  Status PutUpload(const UploadRecord& upload);
  Result<std::optional<UploadRecord>> GetUpload(const std::string& id);
  Status DeleteUpload(const std::string& id);  // and its parts
  Status PutPart(const std::string& upload_id, const PartRecord& part);
  Result<std::vector<PartRecord>> ListParts(const std::string& upload_id);
  // Uploads of `bucket` ("" = every bucket) in (key, created_ns, id) order: the order of
  // ListMultipartUploads (AWS: by key, then by initiation time).
  Result<std::vector<UploadRecord>> ListUploads(const std::string& bucket);

  // Runs fn inside BEGIN IMMEDIATE .. COMMIT (ROLLBACK when fn fails). fn may call the methods
  // above (the mutex is recursive).
  Status InTransaction(const std::function<Status()>& fn);

  // Number of statements in the cache (tests: repeated queries reuse theirs).
  size_t TestOnlyCachedStatements();

 private:
  using Db = CHandle<sqlite3, sqlite3_close_v2>;
  using Stmt = CHandle<sqlite3_stmt, sqlite3_finalize>;
  struct CachedStmt {
    Stmt stmt;
    bool in_use = false;
  };
  class StmtLease;  // catalog.cc: one use of a statement, reset and cleared when destroyed

  explicit Catalog(Db db, bool fresh) : db_(std::move(db)), fresh_(fresh) {}
  Status Exec(const char* sql) REQUIRES(mu_);
  // The cached statement for sql (prepared on first use), or a fresh one when it is lent already.
  Result<StmtLease> Statement(std::string_view sql) REQUIRES(mu_);
  Status WriteArchiveLocked(const std::string& bucket, const std::string& key,
                            const ArchiveRecord& rec) REQUIRES(mu_);
  Status DeleteArchiveRowLocked(const std::string& bucket, const std::string& key) REQUIRES(mu_);

  RecursiveMutex mu_;
  Db db_ GUARDED_BY(mu_);
  // After db_: destroyed (finalized) first. std::less<>: found by string_view, without a copy.
  std::map<std::string, CachedStmt, std::less<>> stmts_ GUARDED_BY(mu_);
  bool fresh_;
};

// "name=value\n..." (values cannot hold CR/LF: they came from HTTP headers).
std::string EncodeUserMetadata(const UserMetadata& meta);
UserMetadata DecodeUserMetadata(std::string_view text);

}  // namespace reelfs::gateway
