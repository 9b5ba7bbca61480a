// CacheIndex in SQLite (cache_index.h). Two tables: objects (one row per cached object version,
// UNIQUE (bucket, key): one version per key) and blocks (WITHOUT ROWID, keyed by object and block
// number). synchronous=NORMAL in WAL mode: a power cut may lose the last transactions, never
// corrupt the file, and a lost row only costs a refetch.

#include "cache/cache_index.h"

#include <cstdio>
#include <map>
#include <string_view>
#include <utility>

#include "common/c_handle.h"
#include "common/log.h"
#include "common/sqlite.h"
#include "fmt/format.h"

namespace reelfs::cache {
namespace {

using sqlite::BindText;
using sqlite::ColumnText;
using sqlite::Db;
using sqlite::Stmt;
using sqlite::StmtUse;

// 'rlfc' in ASCII: a reelfs file cache index (the restore ledger is 'reel').
constexpr int32_t kApplicationId = 0x726c6663;
constexpr int kSchemaVersion = 1;

constexpr const char* kSchema = R"sql(
CREATE TABLE objects (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  bucket      TEXT    NOT NULL,
  key         TEXT    NOT NULL,
  etag        TEXT    NOT NULL,
  size        INTEGER NOT NULL,
  block_size  INTEGER NOT NULL,
  last_access INTEGER NOT NULL,
  verified_ino   INTEGER NOT NULL DEFAULT 0,
  verified_size  INTEGER NOT NULL DEFAULT 0,
  verified_mtime INTEGER NOT NULL DEFAULT 0,
  UNIQUE (bucket, key)
);
CREATE TABLE blocks (
  object INTEGER NOT NULL,
  block  INTEGER NOT NULL,
  hash   INTEGER NOT NULL,
  PRIMARY KEY (object, block)
) WITHOUT ROWID;
)sql";

// The shared helpers (common/sqlite.h), with "cache index" in every message.
constexpr std::string_view kWho = "cache index";
Status SqlError(sqlite3* db, int rc, std::string_view what) {
  return sqlite::Error(db, rc, kWho, what);
}
Status Exec(sqlite3* db, const char* sql) { return sqlite::Exec(db, sql, kWho); }
Result<Stmt> Prepare(sqlite3* db, const char* sql) { return sqlite::Prepare(db, sql, kWho); }
Result<int64_t> PragmaInt(sqlite3* db, const char* pragma) {
  return sqlite::QueryInt(db, pragma, kWho);
}

class SqliteIndex final : public CacheIndex {
 public:
  static Result<std::unique_ptr<CacheIndex>> Open(const std::string& path, bool read_only) {
    sqlite3* raw = nullptr;
    const int rc = sqlite3_open_v2(
        path.c_str(), &raw,
        (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
            SQLITE_OPEN_NOMUTEX,
        nullptr);
    Db db(raw);
    if (rc != SQLITE_OK) return SqlError(db.get(), rc, fmt::format("open {}", path));
    sqlite3_busy_timeout(db.get(), 5000);
    if (read_only) {
      REELFS_ASSIGN_OR_RETURN(int64_t app, PragmaInt(db.get(), "PRAGMA application_id"));
      if (app != kApplicationId) {
        return Status::FailedPrecondition(fmt::format("{} is not a reelfs cache index", path));
      }
      return std::unique_ptr<CacheIndex>(new SqliteIndex(std::move(db)));
    }
    REELFS_RETURN_IF_ERROR(Exec(db.get(), "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL"));
    REELFS_ASSIGN_OR_RETURN(int64_t app, PragmaInt(db.get(), "PRAGMA application_id"));
    REELFS_ASSIGN_OR_RETURN(int64_t version, PragmaInt(db.get(), "PRAGMA user_version"));
    REELFS_ASSIGN_OR_RETURN(int64_t tables,
                            PragmaInt(db.get(), "SELECT count(*) FROM sqlite_master"));
    if (app == 0 && tables == 0) {
      REELFS_RETURN_IF_ERROR(Exec(db.get(), "BEGIN IMMEDIATE"));
      REELFS_RETURN_IF_ERROR(Exec(db.get(), kSchema));
      REELFS_RETURN_IF_ERROR(
          Exec(db.get(), fmt::format("PRAGMA application_id={}; PRAGMA user_version={}",
                                     kApplicationId, kSchemaVersion)
                             .c_str()));
      REELFS_RETURN_IF_ERROR(Exec(db.get(), "COMMIT"));
    } else if (app != kApplicationId || version != kSchemaVersion) {
      return Status::FailedPrecondition(fmt::format(
          "{} is not a reelfs cache index (application id {:#x}, version {})", path, app, version));
    }
    auto index = std::unique_ptr<SqliteIndex>(new SqliteIndex(std::move(db)));
    REELFS_RETURN_IF_ERROR(index->PrepareAll());
    return std::unique_ptr<CacheIndex>(std::move(index));
  }

  Result<std::vector<IndexedObject>> LoadAll() override {
    std::vector<IndexedObject> out;
    std::map<int64_t, size_t> by_id;
    {
      REELFS_ASSIGN_OR_RETURN(
          Stmt stmt, Prepare(db_.get(),
                             "SELECT id, bucket, key, etag, size, block_size, last_access, "
                             "verified_ino, verified_size, verified_mtime "
                             "FROM objects ORDER BY id"));
      int rc;
      while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
        IndexedObject o;
        o.id = sqlite3_column_int64(stmt.get(), 0);
        o.bucket = ColumnText(stmt.get(), 1);
        o.key = ColumnText(stmt.get(), 2);
        o.etag = ColumnText(stmt.get(), 3);
        o.size = static_cast<uint64_t>(sqlite3_column_int64(stmt.get(), 4));
        o.block_size = static_cast<uint64_t>(sqlite3_column_int64(stmt.get(), 5));
        o.last_access_ms = sqlite3_column_int64(stmt.get(), 6);
        o.verified_ino = static_cast<uint64_t>(sqlite3_column_int64(stmt.get(), 7));
        o.verified_size = static_cast<uint64_t>(sqlite3_column_int64(stmt.get(), 8));
        o.verified_mtime_ns = sqlite3_column_int64(stmt.get(), 9);
        by_id[o.id] = out.size();
        out.push_back(std::move(o));
      }
      if (rc != SQLITE_DONE) return SqlError(db_.get(), rc, "load objects");
    }
    REELFS_ASSIGN_OR_RETURN(Stmt stmt,
                            Prepare(db_.get(), "SELECT object, block, hash FROM blocks"));
    int rc;
    std::vector<int64_t> orphans;
    while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
      const int64_t id = sqlite3_column_int64(stmt.get(), 0);
      auto it = by_id.find(id);
      if (it == by_id.end()) continue;  // cannot happen: blocks go with their object
      out[it->second].blocks.push_back(
          IndexedBlock{static_cast<uint32_t>(sqlite3_column_int64(stmt.get(), 1)),
                       static_cast<uint64_t>(sqlite3_column_int64(stmt.get(), 2))});
    }
    if (rc != SQLITE_DONE) return SqlError(db_.get(), rc, "load blocks");
    return out;
  }

  Result<int64_t> AddObject(const std::string& bucket, const std::string& key,
                            const std::string& etag, uint64_t size, uint64_t block_size,
                            int64_t now_ms) override {
    StmtUse use(insert_object_.get());
    BindText(insert_object_.get(), 1, bucket);
    BindText(insert_object_.get(), 2, key);
    BindText(insert_object_.get(), 3, etag);
    sqlite3_bind_int64(insert_object_.get(), 4, static_cast<int64_t>(size));
    sqlite3_bind_int64(insert_object_.get(), 5, static_cast<int64_t>(block_size));
    sqlite3_bind_int64(insert_object_.get(), 6, now_ms);
    const int rc = sqlite3_step(insert_object_.get());
    if (rc != SQLITE_DONE) return SqlError(db_.get(), rc, "add object");
    return sqlite3_last_insert_rowid(db_.get());
  }

  Status AddBlocks(int64_t id, const std::vector<IndexedBlock>& blocks) override {
    REELFS_RETURN_IF_ERROR(Exec(db_.get(), "BEGIN IMMEDIATE"));
    for (const IndexedBlock& b : blocks) {
      StmtUse use(insert_block_.get());
      sqlite3_bind_int64(insert_block_.get(), 1, id);
      sqlite3_bind_int64(insert_block_.get(), 2, b.block);
      sqlite3_bind_int64(insert_block_.get(), 3, static_cast<int64_t>(b.hash));
      const int rc = sqlite3_step(insert_block_.get());
      if (rc != SQLITE_DONE) {
        Status s = SqlError(db_.get(), rc, "add block");
        Exec(db_.get(), "ROLLBACK").IgnoreError();
        return s;
      }
    }
    return Exec(db_.get(), "COMMIT");
  }

  Status RemoveObject(int64_t id) override {
    REELFS_RETURN_IF_ERROR(Exec(db_.get(), "BEGIN IMMEDIATE"));
    for (sqlite3_stmt* stmt : {delete_blocks_.get(), delete_object_.get()}) {
      StmtUse use(stmt);
      sqlite3_bind_int64(stmt, 1, id);
      const int rc = sqlite3_step(stmt);
      if (rc != SQLITE_DONE) {
        Status s = SqlError(db_.get(), rc, "remove object");
        Exec(db_.get(), "ROLLBACK").IgnoreError();
        return s;
      }
    }
    return Exec(db_.get(), "COMMIT");
  }

  Status RemoveBlock(int64_t id, uint32_t block) override {
    StmtUse use(delete_block_.get());
    sqlite3_bind_int64(delete_block_.get(), 1, id);
    sqlite3_bind_int64(delete_block_.get(), 2, block);
    const int rc = sqlite3_step(delete_block_.get());
    return rc == SQLITE_DONE ? Status::Ok() : SqlError(db_.get(), rc, "remove block");
  }

  Status SetVerified(int64_t id, uint64_t ino, uint64_t size, int64_t mtime_ns) override {
    StmtUse use(set_verified_.get());
    sqlite3_bind_int64(set_verified_.get(), 1, static_cast<int64_t>(ino));
    sqlite3_bind_int64(set_verified_.get(), 2, static_cast<int64_t>(size));
    sqlite3_bind_int64(set_verified_.get(), 3, mtime_ns);
    sqlite3_bind_int64(set_verified_.get(), 4, id);
    const int rc = sqlite3_step(set_verified_.get());
    return rc == SQLITE_DONE ? Status::Ok() : SqlError(db_.get(), rc, "set verified");
  }

  Status Touch(int64_t id, int64_t now_ms) override {
    StmtUse use(touch_.get());
    sqlite3_bind_int64(touch_.get(), 1, now_ms);
    sqlite3_bind_int64(touch_.get(), 2, id);
    const int rc = sqlite3_step(touch_.get());
    return rc == SQLITE_DONE ? Status::Ok() : SqlError(db_.get(), rc, "touch");
  }

 private:
  explicit SqliteIndex(Db db) : db_(std::move(db)) {}

  Status PrepareAll() {
    REELFS_ASSIGN_OR_RETURN(
        insert_object_,
        Prepare(db_.get(),
                "INSERT INTO objects (bucket, key, etag, size, block_size, last_access) "
                "VALUES (?, ?, ?, ?, ?, ?)"));
    REELFS_ASSIGN_OR_RETURN(
        insert_block_,
        Prepare(db_.get(), "INSERT OR REPLACE INTO blocks (object, block, hash) VALUES (?, ?, ?)"));
    REELFS_ASSIGN_OR_RETURN(delete_blocks_,
                            Prepare(db_.get(), "DELETE FROM blocks WHERE object = ?"));
    REELFS_ASSIGN_OR_RETURN(delete_object_, Prepare(db_.get(), "DELETE FROM objects WHERE id = ?"));
    REELFS_ASSIGN_OR_RETURN(
        delete_block_, Prepare(db_.get(), "DELETE FROM blocks WHERE object = ? AND block = ?"));
    REELFS_ASSIGN_OR_RETURN(set_verified_,
                            Prepare(db_.get(),
                                    "UPDATE objects SET verified_ino = ?, verified_size = ?, "
                                    "verified_mtime = ? WHERE id = ?"));
    REELFS_ASSIGN_OR_RETURN(touch_,
                            Prepare(db_.get(), "UPDATE objects SET last_access = ? WHERE id = ?"));
    return Status::Ok();
  }

  // The connection first: members go in reverse, so every statement is finalized before it closes.
  Db db_;
  Stmt insert_object_;
  Stmt insert_block_;
  Stmt delete_blocks_;
  Stmt delete_object_;
  Stmt delete_block_;
  Stmt touch_;
  Stmt set_verified_;
};

}  // namespace

Result<std::unique_ptr<CacheIndex>> OpenCacheIndexReadOnly(const std::string& path) {
  return SqliteIndex::Open(path, /*read_only=*/true);
}

Result<std::unique_ptr<CacheIndex>> OpenCacheIndex(const std::string& path) {
  Result<std::unique_ptr<CacheIndex>> index = SqliteIndex::Open(path, /*read_only=*/false);
  if (index.ok() || index.status().code() == StatusCode::kFailedPrecondition) return index;
  // Unreadable as a database (torn, overwritten): move it aside and start empty.
  const std::string aside = path + ".corrupt";
  REELFS_LOG_WARN("cache", "{}; moving it to {} and starting an empty cache",
                  index.status().message(), aside);
  std::rename(path.c_str(), aside.c_str());
  std::remove((path + "-wal").c_str());
  std::remove((path + "-shm").c_str());
  return SqliteIndex::Open(path, /*read_only=*/false);
}

}  // namespace reelfs::cache
