// Catalog: the gateway's metadata in SQLite (ROOT/.reelfs-gateway/catalog.db).
//
// Objects (ETag, size, mtime, content type, storage class, user metadata), buckets (creation
// time), and in-progress multipart uploads with their parts. The files are the truth for what
// exists; the catalog is rebuilt from them when missing, stale or of another schema version
// (store.h does the reconciliation). Keys are TEXT compared with SQLite's BINARY collation
// (memcmp), which is exactly S3's byte order, so listings are index range scans.
//
// WAL mode, `PRAGMA user_version` = kSchemaVersion, busy_timeout. One connection guarded by a
// mutex: the gateway's writes are small and SQLite serializes writers anyway.
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
#include <vector>

#include <sqlite3.h>

#include "common/c_handle.h"
#include "common/result.h"
#include "common/thread_annotations.h"

namespace reelfs::gateway {

using UserMetadata = std::map<std::string, std::string>;  // lowercase name (no x-amz-meta-)

struct ObjectRecord {
  std::string key;
  uint64_t size = 0;
  std::string etag;  // without quotes
  int64_t mtime_ns = 0;
  std::string content_type;
  std::string storage_class = "STANDARD";
  UserMetadata user_meta;
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

class Catalog {
 public:
  static constexpr int kSchemaVersion = 1;

  // Opens or creates the database. A different schema version is dropped and recreated.
  static Result<std::unique_ptr<Catalog>> Open(const std::string& path);

  // True when the database was created (or reset) by Open: every row must be rebuilt.
  bool fresh() const { return fresh_; }

  Status PutBucket(const std::string& name, int64_t created_ns);
  Status DeleteBucket(const std::string& name);  // and its objects
  Result<std::map<std::string, int64_t>> Buckets();

  Status PutObject(const std::string& bucket, const ObjectRecord& rec);
  Result<std::optional<ObjectRecord>> GetObject(const std::string& bucket, const std::string& key);
  Status DeleteObject(const std::string& bucket, const std::string& key);
  // Rows with key > lower (>= when lower_inclusive) and key < upper (no bound when upper is
  // empty), in key order, at most `limit`.
  Result<std::vector<ObjectRecord>> ListObjects(const std::string& bucket, const std::string& lower,
                                                bool lower_inclusive, const std::string& upper,
                                                int limit);

  Status PutUpload(const UploadRecord& upload);
  Result<std::optional<UploadRecord>> GetUpload(const std::string& id);
  Status DeleteUpload(const std::string& id);  // and its parts
  Status PutPart(const std::string& upload_id, const PartRecord& part);
  Result<std::vector<PartRecord>> ListParts(const std::string& upload_id);

  // Runs fn inside BEGIN IMMEDIATE .. COMMIT (ROLLBACK when fn fails). fn may call the methods
  // above (the mutex is recursive).
  Status InTransaction(const std::function<Status()>& fn);

 private:
  using Db = CHandle<sqlite3, sqlite3_close_v2>;
  explicit Catalog(Db db, bool fresh) : db_(std::move(db)), fresh_(fresh) {}
  Status Exec(const char* sql) REQUIRES(mu_);

  std::recursive_mutex mu_;
  Db db_ GUARDED_BY(mu_);
  bool fresh_;
};

// "name=value\n..." (values cannot hold CR/LF: they came from HTTP headers).
std::string EncodeUserMetadata(const UserMetadata& meta);
UserMetadata DecodeUserMetadata(std::string_view text);

}  // namespace reelfs::gateway
