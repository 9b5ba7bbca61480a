#include "gateway/store/catalog.h"

#include <string_view>

namespace reelfs::gateway {
namespace {

using Stmt = CHandle<sqlite3_stmt, sqlite3_finalize>;

Status SqlError(sqlite3* db, std::string_view what) {
  return Status::Internal("sqlite " + std::string(what) + ": " + sqlite3_errmsg(db));
}

Result<Stmt> Prepare(sqlite3* db, const char* sql) {
  sqlite3_stmt* raw = nullptr;
  int rc = sqlite3_prepare_v2(db, sql, -1, &raw, nullptr);
  Stmt stmt(raw);
  if (rc != SQLITE_OK) return SqlError(db, std::string("prepare ") + sql);
  return stmt;
}

void Bind(sqlite3_stmt* s, int i, std::string_view v) {
  sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
}
void Bind(sqlite3_stmt* s, int i, int64_t v) { sqlite3_bind_int64(s, i, v); }

std::string ColText(sqlite3_stmt* s, int i) {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s, i));
  return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(s, i))) : std::string();
}

Status StepDone(sqlite3* db, sqlite3_stmt* s) {
  int rc = sqlite3_step(s);
  if (rc != SQLITE_DONE) return SqlError(db, "step");
  return Status::Ok();
}

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS buckets(
  name TEXT PRIMARY KEY, created_ns INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS objects(
  bucket TEXT NOT NULL, key TEXT NOT NULL, size INTEGER NOT NULL, etag TEXT NOT NULL,
  mtime_ns INTEGER NOT NULL, content_type TEXT NOT NULL, storage_class TEXT NOT NULL,
  user_meta TEXT NOT NULL, PRIMARY KEY(bucket, key)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS uploads(
  id TEXT PRIMARY KEY, bucket TEXT NOT NULL, key TEXT NOT NULL, content_type TEXT NOT NULL,
  storage_class TEXT NOT NULL, user_meta TEXT NOT NULL, created_ns INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS parts(
  upload_id TEXT NOT NULL, part_number INTEGER NOT NULL, size INTEGER NOT NULL,
  etag TEXT NOT NULL, PRIMARY KEY(upload_id, part_number)) WITHOUT ROWID;
)sql";

ObjectRecord ReadObject(sqlite3_stmt* s) {
  ObjectRecord r;
  r.key = ColText(s, 0);
  r.size = static_cast<uint64_t>(sqlite3_column_int64(s, 1));
  r.etag = ColText(s, 2);
  r.mtime_ns = sqlite3_column_int64(s, 3);
  r.content_type = ColText(s, 4);
  r.storage_class = ColText(s, 5);
  r.user_meta = DecodeUserMetadata(ColText(s, 6));
  return r;
}

}  // namespace

std::string EncodeUserMetadata(const UserMetadata& meta) {
  std::string out;
  for (const auto& [name, value] : meta) out += name + "=" + value + "\n";
  return out;
}

UserMetadata DecodeUserMetadata(std::string_view text) {
  UserMetadata out;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    size_t eq = line.find('=');
    if (eq != std::string_view::npos) out[std::string(line.substr(0, eq))] = line.substr(eq + 1);
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

Result<std::unique_ptr<Catalog>> Catalog::Open(const std::string& path) {
  sqlite3* raw = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &raw,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  Db db(raw);
  if (rc != SQLITE_OK) {
    return Status::Internal("open catalog " + path + ": " +
                            (raw ? sqlite3_errmsg(raw) : "out of memory"));
  }
  sqlite3_busy_timeout(db.get(), 5000);
  auto exec = [&](const char* sql) -> Status {
    char* err = nullptr;
    if (sqlite3_exec(db.get(), sql, nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : "unknown";
      sqlite3_free(err);
      return Status::Internal("catalog " + path + ": " + msg);
    }
    return Status::Ok();
  };
  REELFS_RETURN_IF_ERROR(exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"));
  REELFS_ASSIGN_OR_RETURN(Stmt ver, Prepare(db.get(), "PRAGMA user_version"));
  int version = sqlite3_step(ver.get()) == SQLITE_ROW ? sqlite3_column_int(ver.get(), 0) : 0;
  ver.reset();
  bool fresh = version != kSchemaVersion;
  if (fresh) {
    REELFS_RETURN_IF_ERROR(
        exec("DROP TABLE IF EXISTS buckets; DROP TABLE IF EXISTS objects;"
             "DROP TABLE IF EXISTS uploads; DROP TABLE IF EXISTS parts;"));
    REELFS_RETURN_IF_ERROR(exec(kSchema));
    REELFS_RETURN_IF_ERROR(exec(("PRAGMA user_version=" + std::to_string(kSchemaVersion)).c_str()));
  }
  return std::unique_ptr<Catalog>(new Catalog(std::move(db), fresh));
}

Status Catalog::Exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_.get(), sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown";
    sqlite3_free(err);
    return Status::Internal(std::string("sqlite ") + sql + ": " + msg);
  }
  return Status::Ok();
}

Status Catalog::InTransaction(const std::function<Status()>& fn) {
  std::lock_guard lock(mu_);
  REELFS_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
  Status st = fn();
  if (!st.ok()) {
    Exec("ROLLBACK").IgnoreError();
    return st;
  }
  return Exec("COMMIT");
}

Status Catalog::PutBucket(const std::string& name, int64_t created_ns) {
  std::lock_guard lock(mu_);
  REELFS_ASSIGN_OR_RETURN(
      Stmt s, Prepare(db_.get(), "INSERT OR IGNORE INTO buckets(name, created_ns) VALUES(?, ?)"));
  Bind(s.get(), 1, name);
  Bind(s.get(), 2, created_ns);
  return StepDone(db_.get(), s.get());
}

Status Catalog::DeleteBucket(const std::string& name) {
  std::lock_guard lock(mu_);
  for (const char* sql :
       {"DELETE FROM buckets WHERE name = ?", "DELETE FROM objects WHERE bucket = ?"}) {
    REELFS_ASSIGN_OR_RETURN(Stmt s, Prepare(db_.get(), sql));
    Bind(s.get(), 1, name);
    REELFS_RETURN_IF_ERROR(StepDone(db_.get(), s.get()));
  }
  return Status::Ok();
}

Result<std::map<std::string, int64_t>> Catalog::Buckets() {
  std::lock_guard lock(mu_);
  REELFS_ASSIGN_OR_RETURN(Stmt s, Prepare(db_.get(), "SELECT name, created_ns FROM buckets"));
  std::map<std::string, int64_t> out;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    out[ColText(s.get(), 0)] = sqlite3_column_int64(s.get(), 1);
  }
  if (rc != SQLITE_DONE) return SqlError(db_.get(), "list buckets");
  return out;
}

Status Catalog::PutObject(const std::string& bucket, const ObjectRecord& rec) {
  std::lock_guard lock(mu_);
  REELFS_ASSIGN_OR_RETURN(
      Stmt s, Prepare(db_.get(),
                      "INSERT OR REPLACE INTO objects(bucket, key, size, etag, mtime_ns, "
                      "content_type, storage_class, user_meta) VALUES(?, ?, ?, ?, ?, ?, ?, ?)"));
  Bind(s.get(), 1, bucket);
  Bind(s.get(), 2, rec.key);
  Bind(s.get(), 3, static_cast<int64_t>(rec.size));
  Bind(s.get(), 4, rec.etag);
  Bind(s.get(), 5, rec.mtime_ns);
  Bind(s.get(), 6, rec.content_type);
  Bind(s.get(), 7, rec.storage_class);
  Bind(s.get(), 8, EncodeUserMetadata(rec.user_meta));
  return StepDone(db_.get(), s.get());
}

Result<std::optional<ObjectRecord>> Catalog::GetObject(const std::string& bucket,
                                                       const std::string& key) {
  std::lock_guard lock(mu_);
  REELFS_ASSIGN_OR_RETURN(
      Stmt s, Prepare(db_.get(),
                      "SELECT key, size, etag, mtime_ns, content_type, storage_class, user_meta "
                      "FROM objects WHERE bucket = ? AND key = ?"));
  Bind(s.get(), 1, bucket);
  Bind(s.get(), 2, key);
  int rc = sqlite3_step(s.get());
  if (rc == SQLITE_ROW) return std::optional<ObjectRecord>(ReadObject(s.get()));
  if (rc != SQLITE_DONE) return SqlError(db_.get(), "get object");
  return std::optional<ObjectRecord>();
}

Status Catalog::DeleteObject(const std::string& bucket, const std::string& key) {
  std::lock_guard lock(mu_);
  REELFS_ASSIGN_OR_RETURN(Stmt s,
                          Prepare(db_.get(), "DELETE FROM objects WHERE bucket = ? AND key = ?"));
  Bind(s.get(), 1, bucket);
  Bind(s.get(), 2, key);
  return StepDone(db_.get(), s.get());
}

Result<std::vector<ObjectRecord>> Catalog::ListObjects(const std::string& bucket,
                                                       const std::string& lower,
                                                       bool lower_inclusive,
                                                       const std::string& upper, int limit) {
  std::lock_guard lock(mu_);
  std::string sql =
      "SELECT key, size, etag, mtime_ns, content_type, storage_class, user_meta FROM objects "
      "WHERE bucket = ?1 AND key ";
  sql += lower_inclusive ? ">= ?2" : "> ?2";
  if (!upper.empty()) sql += " AND key < ?3";
  sql += " ORDER BY key LIMIT ?4";
  REELFS_ASSIGN_OR_RETURN(Stmt s, Prepare(db_.get(), sql.c_str()));
  Bind(s.get(), 1, bucket);
  Bind(s.get(), 2, lower);
  if (!upper.empty()) Bind(s.get(), 3, upper);
  Bind(s.get(), 4, static_cast<int64_t>(limit));
  std::vector<ObjectRecord> out;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) out.push_back(ReadObject(s.get()));
  if (rc != SQLITE_DONE) return SqlError(db_.get(), "list objects");
  return out;
}

Status Catalog::PutUpload(const UploadRecord& u) {
  std::lock_guard lock(mu_);
  REELFS_ASSIGN_OR_RETURN(
      Stmt s, Prepare(db_.get(),
                      "INSERT INTO uploads(id, bucket, key, content_type, storage_class, "
                      "user_meta, created_ns) VALUES(?, ?, ?, ?, ?, ?, ?)"));
  Bind(s.get(), 1, u.id);
  Bind(s.get(), 2, u.bucket);
  Bind(s.get(), 3, u.key);
  Bind(s.get(), 4, u.content_type);
  Bind(s.get(), 5, u.storage_class);
  Bind(s.get(), 6, EncodeUserMetadata(u.user_meta));
  Bind(s.get(), 7, u.created_ns);
  return StepDone(db_.get(), s.get());
}

Result<std::optional<UploadRecord>> Catalog::GetUpload(const std::string& id) {
  std::lock_guard lock(mu_);
  REELFS_ASSIGN_OR_RETURN(
      Stmt s, Prepare(db_.get(),
                      "SELECT id, bucket, key, content_type, storage_class, user_meta, created_ns "
                      "FROM uploads WHERE id = ?"));
  Bind(s.get(), 1, id);
  int rc = sqlite3_step(s.get());
  if (rc == SQLITE_DONE) return std::optional<UploadRecord>();
  if (rc != SQLITE_ROW) return SqlError(db_.get(), "get upload");
  UploadRecord u;
  u.id = ColText(s.get(), 0);
  u.bucket = ColText(s.get(), 1);
  u.key = ColText(s.get(), 2);
  u.content_type = ColText(s.get(), 3);
  u.storage_class = ColText(s.get(), 4);
  u.user_meta = DecodeUserMetadata(ColText(s.get(), 5));
  u.created_ns = sqlite3_column_int64(s.get(), 6);
  return std::optional<UploadRecord>(std::move(u));
}

Status Catalog::DeleteUpload(const std::string& id) {
  std::lock_guard lock(mu_);
  for (const char* sql :
       {"DELETE FROM uploads WHERE id = ?", "DELETE FROM parts WHERE upload_id = ?"}) {
    REELFS_ASSIGN_OR_RETURN(Stmt s, Prepare(db_.get(), sql));
    Bind(s.get(), 1, id);
    REELFS_RETURN_IF_ERROR(StepDone(db_.get(), s.get()));
  }
  return Status::Ok();
}

Status Catalog::PutPart(const std::string& upload_id, const PartRecord& part) {
  std::lock_guard lock(mu_);
  REELFS_ASSIGN_OR_RETURN(Stmt s, Prepare(db_.get(),
                                          "INSERT OR REPLACE INTO parts(upload_id, part_number, "
                                          "size, etag) VALUES(?, ?, ?, ?)"));
  Bind(s.get(), 1, upload_id);
  Bind(s.get(), 2, static_cast<int64_t>(part.part_number));
  Bind(s.get(), 3, static_cast<int64_t>(part.size));
  Bind(s.get(), 4, part.etag);
  return StepDone(db_.get(), s.get());
}

Result<std::vector<PartRecord>> Catalog::ListParts(const std::string& upload_id) {
  std::lock_guard lock(mu_);
  REELFS_ASSIGN_OR_RETURN(Stmt s, Prepare(db_.get(),
                                          "SELECT part_number, size, etag FROM parts WHERE "
                                          "upload_id = ? ORDER BY part_number"));
  Bind(s.get(), 1, upload_id);
  std::vector<PartRecord> out;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    PartRecord p;
    p.part_number = sqlite3_column_int(s.get(), 0);
    p.size = static_cast<uint64_t>(sqlite3_column_int64(s.get(), 1));
    p.etag = ColText(s.get(), 2);
    out.push_back(std::move(p));
  }
  if (rc != SQLITE_DONE) return SqlError(db_.get(), "list parts");
  return out;
}

}  // namespace reelfs::gateway
