#include "gateway/store/catalog.h"

#include <chrono>
#include <string_view>
#include <utility>

namespace reelfs::gateway {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

namespace {

using Stmt = CHandle<sqlite3_stmt, sqlite3_finalize>;

Status SqlError(sqlite3* db, std::string_view what) {
  return Status::Internal("sqlite " + std::string(what) + ": " + sqlite3_errmsg(db));
}

// flags: SQLITE_PREPARE_PERSISTENT for a statement that is cached (kept for the connection's life:
// SQLite then allocates it outside its lookaside memory).
Result<Stmt> Prepare(sqlite3* db, std::string_view sql, unsigned flags = 0) {
  sqlite3_stmt* raw = nullptr;
  int rc = sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()), flags, &raw, nullptr);
  Stmt stmt(raw);
  if (rc != SQLITE_OK) return SqlError(db, "prepare " + std::string(sql));
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

// Archive tables: never dropped (their content is not derivable from the files). A change to
// them bumps kArchiveSchemaVersion and adds a step to MigrateArchive, in place.
constexpr const char* kArchiveSchemaV1 = R"sql(
CREATE TABLE IF NOT EXISTS archive_meta(name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS archive_objects(
  bucket TEXT NOT NULL, key TEXT NOT NULL, state INTEGER NOT NULL, cartridge TEXT NOT NULL,
  start_block INTEGER NOT NULL, bytes INTEGER NOT NULL, content_md5 TEXT NOT NULL,
  archived_ns INTEGER NOT NULL, staging INTEGER NOT NULL, stage_fail INTEGER NOT NULL,
  restore_requested_ns INTEGER NOT NULL, restored_ns INTEGER NOT NULL, expiry_ns INTEGER NOT NULL,
  size INTEGER NOT NULL, etag TEXT NOT NULL, mtime_ns INTEGER NOT NULL, content_type TEXT NOT NULL,
  storage_class TEXT NOT NULL, user_meta TEXT NOT NULL,
  PRIMARY KEY(bucket, key)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS archive_restored ON archive_objects(restored_ns);
CREATE TABLE IF NOT EXISTS cartridges(
  vsn TEXT PRIMARY KEY, next_block INTEGER NOT NULL) WITHOUT ROWID;
)sql";

constexpr const char* kArchiveColumns =
    "a.state, a.cartridge, a.start_block, a.bytes, a.content_md5, a.archived_ns, a.staging, "
    "a.stage_fail, a.restore_requested_ns, a.restored_ns, a.expiry_ns, a.size, a.etag, "
    "a.mtime_ns, a.content_type, a.storage_class, a.user_meta, a.restore_days";
constexpr int kArchiveColumnCount = 18;

// kArchiveColumns starting at column `first`.
ArchiveRecord ReadArchive(sqlite3_stmt* s, int first) {
  ArchiveRecord a;
  int i = first;
  a.state = static_cast<ArchiveState>(sqlite3_column_int(s, i++));
  a.cartridge = ColText(s, i++);
  a.start_block = static_cast<uint64_t>(sqlite3_column_int64(s, i++));
  a.bytes = static_cast<uint64_t>(sqlite3_column_int64(s, i++));
  a.content_md5 = ColText(s, i++);
  a.archived_ns = sqlite3_column_int64(s, i++);
  a.staging = sqlite3_column_int(s, i++) != 0;
  a.stage_fail = sqlite3_column_int(s, i++) != 0;
  a.restore_requested_ns = sqlite3_column_int64(s, i++);
  a.restored_ns = sqlite3_column_int64(s, i++);
  a.expiry_ns = sqlite3_column_int64(s, i++);
  a.size = static_cast<uint64_t>(sqlite3_column_int64(s, i++));
  a.etag = ColText(s, i++);
  a.mtime_ns = sqlite3_column_int64(s, i++);
  a.content_type = ColText(s, i++);
  a.storage_class = ColText(s, i++);
  a.user_meta = ColText(s, i++);
  a.restore_days = sqlite3_column_int(s, i++);
  return a;
}

// Object columns 0..6, then the archive columns of a LEFT JOIN (NULL state: never archived).
ObjectRecord ReadObject(sqlite3_stmt* s) {
  ObjectRecord r;
  r.key = ColText(s, 0);
  r.size = static_cast<uint64_t>(sqlite3_column_int64(s, 1));
  r.etag = ColText(s, 2);
  r.mtime_ns = sqlite3_column_int64(s, 3);
  r.content_type = ColText(s, 4);
  r.storage_class = ColText(s, 5);
  r.user_meta = DecodeUserMetadata(ColText(s, 6));
  if (sqlite3_column_count(s) >= 7 + kArchiveColumnCount &&
      sqlite3_column_type(s, 7) != SQLITE_NULL) {
    r.archive = ReadArchive(s, 7);
  }
  return r;
}

std::string ObjectSelect() {
  return std::string(
             "SELECT o.key, o.size, o.etag, o.mtime_ns, o.content_type, o.storage_class, "
             "o.user_meta, ") +
         kArchiveColumns +
         " FROM objects o LEFT JOIN archive_objects a ON a.bucket = o.bucket AND a.key = o.key ";
}

}  // namespace

// One use of a prepared statement. Destroyed, it resets the statement (ending the read transaction
// a SELECT left at SQLITE_ROW keeps open, and clearing the error a failed step left) and clears its
// bindings, whichever way the method returns. Lent from the cache (marked in use meanwhile), or
// owning a statement prepared for this use alone.
class Catalog::StmtLease {
 public:
  explicit StmtLease(CachedStmt* slot) : stmt_(slot->stmt.get()), slot_(slot) {
    slot_->in_use = true;
  }
  explicit StmtLease(Stmt owned) : stmt_(owned.get()), owned_(std::move(owned)) {}
  StmtLease(StmtLease&& other) noexcept
      : stmt_(std::exchange(other.stmt_, nullptr)),
        slot_(std::exchange(other.slot_, nullptr)),
        owned_(std::move(other.owned_)) {}
  StmtLease& operator=(StmtLease&&) = delete;
  ~StmtLease() {
    if (stmt_ == nullptr) return;  // moved from
    sqlite3_reset(stmt_);          // returns the last step's error: the method reported it already
    sqlite3_clear_bindings(stmt_);
    if (slot_ != nullptr) slot_->in_use = false;
  }
  sqlite3_stmt* get() const { return stmt_; }

 private:
  sqlite3_stmt* stmt_;
  CachedStmt* slot_ = nullptr;
  Stmt owned_;  // uncached only; finalized after the reset above
};

Result<Catalog::StmtLease> Catalog::Statement(std::string_view sql) {
  auto it = stmts_.find(sql);
  if (it == stmts_.end()) {
    REELFS_ASSIGN_OR_RETURN(Stmt stmt, Prepare(db_.get(), sql, SQLITE_PREPARE_PERSISTENT));
    it = stmts_.emplace(std::string(sql), CachedStmt{std::move(stmt)}).first;
  } else if (it->second.in_use) {
    // Lent already (a nested call): never share it.
    REELFS_ASSIGN_OR_RETURN(Stmt fresh, Prepare(db_.get(), sql));
    return StmtLease(std::move(fresh));
  }
  return StmtLease(&it->second);
}

size_t Catalog::TestOnlyCachedStatements() {
  RecursiveMutexLock lock(mu_);
  return stmts_.size();
}

Status Catalog::WriteArchiveLocked(const std::string& bucket, const std::string& key,
                                   const ArchiveRecord& a) {
  REELFS_ASSIGN_OR_RETURN(
      StmtLease s,
      Statement("INSERT OR REPLACE INTO archive_objects(bucket, key, state, cartridge, "
                "start_block, bytes, content_md5, archived_ns, staging, stage_fail, "
                "restore_requested_ns, restored_ns, expiry_ns, size, etag, mtime_ns, "
                "content_type, storage_class, user_meta, restore_days) VALUES(?, ?, ?, ?, ?, ?, "
                "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
  int i = 1;
  Bind(s.get(), i++, bucket);
  Bind(s.get(), i++, key);
  Bind(s.get(), i++, static_cast<int64_t>(a.state));
  Bind(s.get(), i++, a.cartridge);
  Bind(s.get(), i++, static_cast<int64_t>(a.start_block));
  Bind(s.get(), i++, static_cast<int64_t>(a.bytes));
  Bind(s.get(), i++, a.content_md5);
  Bind(s.get(), i++, a.archived_ns);
  Bind(s.get(), i++, static_cast<int64_t>(a.staging));
  Bind(s.get(), i++, static_cast<int64_t>(a.stage_fail));
  Bind(s.get(), i++, a.restore_requested_ns);
  Bind(s.get(), i++, a.restored_ns);
  Bind(s.get(), i++, a.expiry_ns);
  Bind(s.get(), i++, static_cast<int64_t>(a.size));
  Bind(s.get(), i++, a.etag);
  Bind(s.get(), i++, a.mtime_ns);
  Bind(s.get(), i++, a.content_type);
  Bind(s.get(), i++, a.storage_class);
  Bind(s.get(), i++, a.user_meta);
  Bind(s.get(), i++, static_cast<int64_t>(a.restore_days));
  return StepDone(db_.get(), s.get());
}

Status Catalog::DeleteArchiveRowLocked(const std::string& bucket, const std::string& key) {
  REELFS_ASSIGN_OR_RETURN(StmtLease s,
                          Statement("DELETE FROM archive_objects WHERE bucket = ? AND key = ?"));
  Bind(s.get(), 1, bucket);
  Bind(s.get(), 2, key);
  return StepDone(db_.get(), s.get());
}

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

Result<std::unique_ptr<Catalog>> Catalog::Open(const std::string& path, CatalogRole role) {
  const bool owner = role == CatalogRole::kOwner;
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(
      path.c_str(), &raw,
      SQLITE_OPEN_READWRITE | (owner ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_FULLMUTEX, nullptr);
  Db db(raw);
  if (rc != SQLITE_OK) {
    if (!owner && rc == SQLITE_CANTOPEN) {
      return Status::FailedPrecondition("front end: no catalog at " + path +
                                        "; start the owning gateway (without --front-end) first");
    }
    return Status::Internal("open catalog " + path + ": " +
                            (raw ? sqlite3_errmsg(raw) : "out of memory"));
  }
  // Writers of several processes queue on SQLite's write lock (BEGIN IMMEDIATE and every
  // statement outside a transaction wait for it this long before SQLITE_BUSY).
  sqlite3_busy_timeout(db.get(), kBusyTimeoutMs);
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
  if (!owner) {
    // A front end never rebuilds or migrates: the owner does, before front ends can trust it.
    REELFS_ASSIGN_OR_RETURN(
        Stmt aver, Prepare(db.get(), "SELECT value FROM archive_meta WHERE name = 'version'"));
    const int archive_version =
        sqlite3_step(aver.get()) == SQLITE_ROW ? std::stoi(ColText(aver.get(), 0)) : 0;
    if (version != kSchemaVersion || archive_version != kArchiveSchemaVersion) {
      return Status::FailedPrecondition(
          "front end: catalog " + path + " has schema " + std::to_string(version) + "/" +
          std::to_string(archive_version) + ", this gateway expects " +
          std::to_string(kSchemaVersion) + "/" + std::to_string(kArchiveSchemaVersion) +
          "; start the owning gateway of this version first (it migrates the catalog)");
    }
    return std::unique_ptr<Catalog>(new Catalog(std::move(db), /*fresh=*/false));
  }
  bool fresh = version != kSchemaVersion;
  if (fresh) {
    REELFS_RETURN_IF_ERROR(
        exec("DROP TABLE IF EXISTS buckets; DROP TABLE IF EXISTS objects;"
             "DROP TABLE IF EXISTS uploads; DROP TABLE IF EXISTS parts;"));
    REELFS_RETURN_IF_ERROR(exec(kSchema));
    REELFS_RETURN_IF_ERROR(exec(("PRAGMA user_version=" + std::to_string(kSchemaVersion)).c_str()));
  }
  // Archive tables: migrated in place. Version 0 (a catalog from before the archive, schema 1)
  // simply had none; step 0 -> 1 creates them. Later steps go here, each in its own `if`.
  REELFS_RETURN_IF_ERROR(exec(kArchiveSchemaV1));
  REELFS_ASSIGN_OR_RETURN(
      Stmt aver, Prepare(db.get(), "SELECT value FROM archive_meta WHERE name = 'version'"));
  int archive_version =
      sqlite3_step(aver.get()) == SQLITE_ROW ? std::stoi(ColText(aver.get(), 0)) : 0;
  aver.reset();
  if (archive_version > kArchiveSchemaVersion) {
    // Written by a newer gateway: refuse rather than misread tape positions.
    return Status::FailedPrecondition(
        "catalog " + path + ": archive schema version " + std::to_string(archive_version) +
        " is newer than this gateway's " + std::to_string(kArchiveSchemaVersion));
  }
  if (archive_version < 2) {
    // 1 -> 2: the Days of the request that started a recall, so the process that runs the
    // recall (the owner, maybe not the front end that took the request) sets the expiry.
    Status st =
        exec("ALTER TABLE archive_objects ADD COLUMN restore_days INTEGER NOT NULL DEFAULT -1");
    // A migration cut off before the version row was written has the column already.
    if (!st.ok() && st.message().find("duplicate column") == std::string::npos) return st;
  }
  if (archive_version < kArchiveSchemaVersion) {
    REELFS_RETURN_IF_ERROR(exec(("INSERT OR REPLACE INTO archive_meta(name, value) "
                                 "VALUES('version', '" +
                                 std::to_string(kArchiveSchemaVersion) + "')")
                                    .c_str()));
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
  RecursiveMutexLock lock(mu_);
  REELFS_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
  Status st = fn();
  if (!st.ok()) {
    Exec("ROLLBACK").IgnoreError();
    return st;
  }
  return Exec("COMMIT");
}

Status Catalog::PutBucket(const std::string& name, int64_t created_ns) {
  RecursiveMutexLock lock(mu_);
  REELFS_ASSIGN_OR_RETURN(
      StmtLease s, Statement("INSERT OR IGNORE INTO buckets(name, created_ns) VALUES(?, ?)"));
  Bind(s.get(), 1, name);
  Bind(s.get(), 2, created_ns);
  return StepDone(db_.get(), s.get());
}

Status Catalog::DeleteBucket(const std::string& name) {
  RecursiveMutexLock lock(mu_);
  for (const char* sql :
       {"DELETE FROM buckets WHERE name = ?", "DELETE FROM objects WHERE bucket = ?",
        "DELETE FROM archive_objects WHERE bucket = ?"}) {
    REELFS_ASSIGN_OR_RETURN(StmtLease s, Statement(sql));
    Bind(s.get(), 1, name);
    REELFS_RETURN_IF_ERROR(StepDone(db_.get(), s.get()));
  }
  return Status::Ok();
}

Result<std::map<std::string, int64_t>> Catalog::Buckets() {
  RecursiveMutexLock lock(mu_);
  REELFS_ASSIGN_OR_RETURN(StmtLease s, Statement("SELECT name, created_ns FROM buckets"));
  std::map<std::string, int64_t> out;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    out[ColText(s.get(), 0)] = sqlite3_column_int64(s.get(), 1);
  }
  if (rc != SQLITE_DONE) return SqlError(db_.get(), "list buckets");
  return out;
}

Status Catalog::PutObject(const std::string& bucket, const ObjectRecord& rec) {
  RecursiveMutexLock lock(mu_);
  REELFS_ASSIGN_OR_RETURN(
      StmtLease s,
      Statement("INSERT OR REPLACE INTO objects(bucket, key, size, etag, mtime_ns, "
                "content_type, storage_class, user_meta) VALUES(?, ?, ?, ?, ?, ?, ?, ?)"));
  Bind(s.get(), 1, bucket);
  Bind(s.get(), 2, rec.key);
  Bind(s.get(), 3, static_cast<int64_t>(rec.size));
  Bind(s.get(), 4, rec.etag);
  Bind(s.get(), 5, rec.mtime_ns);
  Bind(s.get(), 6, rec.content_type);
  Bind(s.get(), 7, rec.storage_class);
  Bind(s.get(), 8, EncodeUserMetadata(rec.user_meta));
  REELFS_RETURN_IF_ERROR(StepDone(db_.get(), s.get()));
  if (rec.archive.has_value()) return WriteArchiveLocked(bucket, rec.key, *rec.archive);
  return DeleteArchiveRowLocked(bucket, rec.key);
}

Result<std::optional<ObjectRecord>> Catalog::GetObject(const std::string& bucket,
                                                       const std::string& key) {
  RecursiveMutexLock lock(mu_);
  // Built once: the query of every GET and HEAD.
  static const std::string kSql = ObjectSelect() + "WHERE o.bucket = ? AND o.key = ?";
  REELFS_ASSIGN_OR_RETURN(StmtLease s, Statement(kSql));
  Bind(s.get(), 1, bucket);
  Bind(s.get(), 2, key);
  int rc = sqlite3_step(s.get());
  if (rc == SQLITE_ROW) return std::optional<ObjectRecord>(ReadObject(s.get()));
  if (rc != SQLITE_DONE) return SqlError(db_.get(), "get object");
  return std::optional<ObjectRecord>();
}

Status Catalog::DeleteObject(const std::string& bucket, const std::string& key) {
  RecursiveMutexLock lock(mu_);
  REELFS_ASSIGN_OR_RETURN(StmtLease s,
                          Statement("DELETE FROM objects WHERE bucket = ? AND key = ?"));
  Bind(s.get(), 1, bucket);
  Bind(s.get(), 2, key);
  REELFS_RETURN_IF_ERROR(StepDone(db_.get(), s.get()));
  return DeleteArchiveRowLocked(bucket, key);
}

Result<std::vector<ObjectRecord>> Catalog::ListObjects(const std::string& bucket,
                                                       const std::string& lower,
                                                       bool lower_inclusive,
                                                       const std::string& upper, int limit) {
  RecursiveMutexLock lock(mu_);
  std::string sql = ObjectSelect() + "WHERE o.bucket = ?1 AND o.key ";
  sql += lower_inclusive ? ">= ?2" : "> ?2";
  if (!upper.empty()) sql += " AND o.key < ?3";
  sql += " ORDER BY o.key LIMIT ?4";
  REELFS_ASSIGN_OR_RETURN(StmtLease s, Statement(sql));
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

std::string_view ArchiveStateName(ArchiveState state) {
  switch (state) {
    case ArchiveState::kOnline:
      return "online";
    case ArchiveState::kPremigrated:
      return "premigrated";
    case ArchiveState::kOffline:
      return "offline";
  }
  return "unknown";
}

Result<std::optional<ArchiveRecord>> Catalog::GetArchive(const std::string& bucket,
                                                         const std::string& key) {
  RecursiveMutexLock lock(mu_);
  const std::string sql = std::string("SELECT ") + kArchiveColumns +
                          " FROM archive_objects a WHERE a.bucket = ? AND a.key = ?";
  REELFS_ASSIGN_OR_RETURN(StmtLease s, Statement(sql));
  Bind(s.get(), 1, bucket);
  Bind(s.get(), 2, key);
  int rc = sqlite3_step(s.get());
  if (rc == SQLITE_ROW) return std::optional<ArchiveRecord>(ReadArchive(s.get(), 0));
  if (rc != SQLITE_DONE) return SqlError(db_.get(), "get archive");
  return std::optional<ArchiveRecord>();
}

Status Catalog::PutArchive(const std::string& bucket, const std::string& key,
                           const ArchiveRecord& rec) {
  RecursiveMutexLock lock(mu_);
  return WriteArchiveLocked(bucket, key, rec);
}

Result<std::vector<Catalog::ArchivedObject>> Catalog::ListArchive(const ArchiveQuery& q) {
  RecursiveMutexLock lock(mu_);
  std::string sql =
      std::string("SELECT a.bucket, a.key, ") + kArchiveColumns + " FROM archive_objects a WHERE 1";
  if (!q.bucket.empty()) sql += " AND a.bucket = ?1";
  if (!q.prefix.empty()) sql += " AND substr(a.key, 1, length(?2)) = ?2";
  if (q.state.has_value()) sql += " AND a.state = ?3";
  if (q.staging_only) sql += " AND a.staging = 1";
  if (q.restored_only) {
    sql += " AND a.restored_ns > 0 ORDER BY a.restored_ns, a.bucket, a.key LIMIT ?6";
  } else {
    sql +=
        " AND (a.bucket > ?4 OR (a.bucket = ?4 AND a.key > ?5)) ORDER BY a.bucket, a.key "
        "LIMIT ?6";
  }
  REELFS_ASSIGN_OR_RETURN(StmtLease s, Statement(sql));
  if (!q.bucket.empty()) Bind(s.get(), 1, q.bucket);
  if (!q.prefix.empty()) Bind(s.get(), 2, q.prefix);
  if (q.state.has_value()) Bind(s.get(), 3, static_cast<int64_t>(*q.state));
  if (!q.restored_only) {
    Bind(s.get(), 4, q.after_bucket);
    Bind(s.get(), 5, q.after_key);
  }
  Bind(s.get(), 6, static_cast<int64_t>(q.limit));
  std::vector<ArchivedObject> out;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    out.push_back({ColText(s.get(), 0), ColText(s.get(), 1), ReadArchive(s.get(), 2)});
  }
  if (rc != SQLITE_DONE) return SqlError(db_.get(), "list archive");
  return out;
}

Result<uint64_t> Catalog::RestoredBytes() {
  RecursiveMutexLock lock(mu_);
  REELFS_ASSIGN_OR_RETURN(
      StmtLease s,
      Statement("SELECT COALESCE(SUM(bytes), 0) FROM archive_objects WHERE state = 1 AND "
                "restored_ns > 0"));
  if (sqlite3_step(s.get()) != SQLITE_ROW) return SqlError(db_.get(), "restored bytes");
  return static_cast<uint64_t>(sqlite3_column_int64(s.get(), 0));
}

Result<std::vector<CartridgeRecord>> Catalog::Cartridges() {
  RecursiveMutexLock lock(mu_);
  REELFS_ASSIGN_OR_RETURN(StmtLease s,
                          Statement("SELECT vsn, next_block FROM cartridges ORDER BY vsn"));
  std::vector<CartridgeRecord> out;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    out.push_back({ColText(s.get(), 0), static_cast<uint64_t>(sqlite3_column_int64(s.get(), 1))});
  }
  if (rc != SQLITE_DONE) return SqlError(db_.get(), "list cartridges");
  return out;
}

Status Catalog::PutCartridge(const CartridgeRecord& c) {
  RecursiveMutexLock lock(mu_);
  REELFS_ASSIGN_OR_RETURN(
      StmtLease s, Statement("INSERT OR REPLACE INTO cartridges(vsn, next_block) VALUES(?, ?)"));
  Bind(s.get(), 1, c.vsn);
  Bind(s.get(), 2, static_cast<int64_t>(c.next_block));
  return StepDone(db_.get(), s.get());
}

Status Catalog::PutUpload(const UploadRecord& u) {
  RecursiveMutexLock lock(mu_);
  REELFS_ASSIGN_OR_RETURN(
      StmtLease s, Statement("INSERT INTO uploads(id, bucket, key, content_type, storage_class, "
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
  RecursiveMutexLock lock(mu_);
  REELFS_ASSIGN_OR_RETURN(
      StmtLease s,
      Statement("SELECT id, bucket, key, content_type, storage_class, user_meta, created_ns "
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

Result<std::vector<UploadRecord>> Catalog::ListUploads(const std::string& bucket) {
  RecursiveMutexLock lock(mu_);
  REELFS_ASSIGN_OR_RETURN(
      StmtLease s,
      Statement("SELECT id, bucket, key, content_type, storage_class, user_meta, created_ns "
                "FROM uploads WHERE ?1 = '' OR bucket = ?1 ORDER BY bucket, key, created_ns, id"));
  Bind(s.get(), 1, bucket);
  std::vector<UploadRecord> out;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    UploadRecord u;
    u.id = ColText(s.get(), 0);
    u.bucket = ColText(s.get(), 1);
    u.key = ColText(s.get(), 2);
    u.content_type = ColText(s.get(), 3);
    u.storage_class = ColText(s.get(), 4);
    u.user_meta = DecodeUserMetadata(ColText(s.get(), 5));
    u.created_ns = sqlite3_column_int64(s.get(), 6);
    out.push_back(std::move(u));
  }
  if (rc != SQLITE_DONE) return SqlError(db_.get(), "list uploads");
  return out;
}

Status Catalog::DeleteUpload(const std::string& id) {
  RecursiveMutexLock lock(mu_);
  for (const char* sql :
       {"DELETE FROM uploads WHERE id = ?", "DELETE FROM parts WHERE upload_id = ?"}) {
    REELFS_ASSIGN_OR_RETURN(StmtLease s, Statement(sql));
    Bind(s.get(), 1, id);
    REELFS_RETURN_IF_ERROR(StepDone(db_.get(), s.get()));
  }
  return Status::Ok();
}

Status Catalog::PutPart(const std::string& upload_id, const PartRecord& part) {
  RecursiveMutexLock lock(mu_);
  REELFS_ASSIGN_OR_RETURN(StmtLease s,
                          Statement("INSERT OR REPLACE INTO parts(upload_id, part_number, "
                                    "size, etag) VALUES(?, ?, ?, ?)"));
  Bind(s.get(), 1, upload_id);
  Bind(s.get(), 2, static_cast<int64_t>(part.part_number));
  Bind(s.get(), 3, static_cast<int64_t>(part.size));
  Bind(s.get(), 4, part.etag);
  return StepDone(db_.get(), s.get());
}

Result<std::vector<PartRecord>> Catalog::ListParts(const std::string& upload_id) {
  RecursiveMutexLock lock(mu_);
  REELFS_ASSIGN_OR_RETURN(StmtLease s, Statement("SELECT part_number, size, etag FROM parts WHERE "
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
