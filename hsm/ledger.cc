// The ledger in SQLite. One table, keyed by (endpoint, bucket, key), WITHOUT ROWID so a lookup
// is one B-tree descent. Times are integer milliseconds since the Unix epoch; phase and tier are
// stored by name so `sqlite3 ledger.sqlite 'select * from restores'` is readable by a person.
//
// Identity: PRAGMA application_id = kApplicationId marks a reelfs ledger; PRAGMA user_version is
// the schema version. A SQLite file with another application id (or tables but no id) is
// someone else's and is refused, never touched; a file SQLite cannot read as a database, or whose
// quick_check fails, is corrupt: it is renamed aside and a new ledger is created (the ledger only
// saves duplicate requests, data never depends on it).
#include "hsm/ledger.h"

#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <string_view>
#include <utility>

#include <sys/stat.h>

#include "common/c_handle.h"
#include "common/log.h"
#include "common/mutex.h"
#include "common/sqlite.h"
#include "common/thread_annotations.h"
#include "common/time_format.h"

namespace reelfs::hsm {
namespace {

using sqlite::BindText;
using sqlite::ColumnText;
using sqlite::Db;
using sqlite::IsCorruption;
using sqlite::Stmt;
using sqlite::StmtUse;

// 'reel' in ASCII: what `file` and sqlite3's .dbinfo show for our ledgers.
constexpr int32_t kApplicationId = 0x7265656c;
constexpr int kSchemaVersion = 1;
// Other processes (the daemon, a `reelfs stage`) may hold the write lock for a moment.
constexpr int kBusyTimeoutMs = 5000;

constexpr const char* kSchema = R"sql(
CREATE TABLE restores (
  endpoint     TEXT    NOT NULL,
  bucket       TEXT    NOT NULL,
  key          TEXT    NOT NULL,
  phase        TEXT    NOT NULL,
  etag         TEXT    NOT NULL,
  size         INTEGER NOT NULL,
  tier         TEXT    NOT NULL,
  days         INTEGER,
  requested_at INTEGER NOT NULL,
  updated_at   INTEGER NOT NULL,
  attempts     INTEGER NOT NULL,
  batch        TEXT    NOT NULL,
  last_error   TEXT    NOT NULL,
  PRIMARY KEY (endpoint, bucket, key)
) WITHOUT ROWID;
CREATE INDEX restores_updated ON restores (updated_at);
)sql";

constexpr const char* kColumns =
    "endpoint, bucket, key, phase, etag, size, tier, days, requested_at, updated_at, attempts, "
    "batch, last_error";

int64_t ToMillis(s3::WallTime t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}
s3::WallTime FromMillis(int64_t ms) {
  return s3::WallTime(
      std::chrono::duration_cast<s3::WallTime::duration>(std::chrono::milliseconds(ms)));
}

std::string_view TierName(s3::RestoreTier tier) {
  switch (tier) {
    case s3::RestoreTier::kStandard:
      return "standard";
    case s3::RestoreTier::kBulk:
      return "bulk";
    case s3::RestoreTier::kExpedited:
      return "expedited";
  }
  return "standard";
}
s3::RestoreTier ParseTier(std::string_view name) {
  if (name == "bulk") return s3::RestoreTier::kBulk;
  if (name == "expedited") return s3::RestoreTier::kExpedited;
  return s3::RestoreTier::kStandard;
}
LedgerPhase ParsePhase(std::string_view name) {
  if (name == "online") return LedgerPhase::kOnline;
  if (name == "failed") return LedgerPhase::kFailed;
  return LedgerPhase::kRequested;
}

// The shared helpers (common/sqlite.h), with "ledger" in every message.
Status SqliteError(sqlite3* db, int rc, std::string_view what) {
  return sqlite::Error(db, rc, "ledger", what);
}
Status Exec(sqlite3* db, const char* sql) { return sqlite::Exec(db, sql, "ledger"); }
Result<Stmt> Prepare(sqlite3* db, const std::string& sql) {
  return sqlite::Prepare(db, sql, "ledger");
}

LedgerEntry ReadRow(sqlite3_stmt* stmt) {
  LedgerEntry e;
  e.id.endpoint = ColumnText(stmt, 0);
  e.id.bucket = ColumnText(stmt, 1);
  e.id.key = ColumnText(stmt, 2);
  e.phase = ParsePhase(ColumnText(stmt, 3));
  e.etag = ColumnText(stmt, 4);
  e.size = static_cast<uint64_t>(sqlite3_column_int64(stmt, 5));
  e.tier = ParseTier(ColumnText(stmt, 6));
  if (sqlite3_column_type(stmt, 7) != SQLITE_NULL) e.days = sqlite3_column_int(stmt, 7);
  e.requested_at = FromMillis(sqlite3_column_int64(stmt, 8));
  e.updated_at = FromMillis(sqlite3_column_int64(stmt, 9));
  e.attempts = sqlite3_column_int(stmt, 10);
  e.batch = ColumnText(stmt, 11);
  e.last_error = ColumnText(stmt, 12);
  return e;
}

// The smallest string greater than every string starting with `prefix`, or "" if none (prefix
// empty or all 0xff): keys compare as bytes (BINARY collation is memcmp), like S3 orders them.
std::string PrefixEnd(std::string prefix) {
  while (!prefix.empty() && static_cast<unsigned char>(prefix.back()) == 0xff) prefix.pop_back();
  if (prefix.empty()) return prefix;
  prefix.back() = static_cast<char>(static_cast<unsigned char>(prefix.back()) + 1);
  return prefix;
}

// mkdir -p with mode 0700 for what it creates: the ledger says what this user restores.
Status MakeParentDirs(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0) return Status::Ok();
  const std::string dir = path.substr(0, slash);
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    const std::string part = dir.substr(0, pos);
    if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) {
      return ErrnoToStatus(errno, "ledger: mkdir " + part);
    }
  }
  return Status::Ok();
}

class SqliteLedger final : public Ledger {
 public:
  static Result<std::unique_ptr<Ledger>> Open(const std::string& path, bool allow_recreate);

  const std::string& path() const override { return path_; }

  Status UpsertMany(std::span<const LedgerEntry> entries) override {
    MutexLock lock(mutex_);
    if (entries.empty()) return Status::Ok();
    // One transaction: a `reelfs stage` of 2 000 objects is one fsync, not 2 000.
    REELFS_RETURN_IF_ERROR(Exec(db_.get(), "BEGIN IMMEDIATE"));
    for (const LedgerEntry& e : entries) {
      Status s = UpsertLocked(e);
      if (!s.ok()) {
        Exec(db_.get(), "ROLLBACK").IgnoreError();  // the error that matters is `s`
        return s;
      }
    }
    Status commit = Exec(db_.get(), "COMMIT");
    if (!commit.ok()) Exec(db_.get(), "ROLLBACK").IgnoreError();
    return commit;
  }

  Result<std::optional<LedgerEntry>> Find(const LedgerKey& id) override {
    MutexLock lock(mutex_);
    sqlite3_stmt* stmt = find_.get();
    StmtUse use(stmt);
    BindText(stmt, 1, id.endpoint);
    BindText(stmt, 2, id.bucket);
    BindText(stmt, 3, id.key);
    int rc = sqlite3_step(stmt);
    if (rc == SQLITE_DONE) return std::optional<LedgerEntry>();
    if (rc != SQLITE_ROW) return SqliteError(db_.get(), rc, "find");
    return std::optional<LedgerEntry>(ReadRow(stmt));
  }

  Result<std::vector<LedgerEntry>> FindPrefix(const std::string& endpoint,
                                              const std::string& bucket,
                                              const std::string& prefix) override {
    MutexLock lock(mutex_);
    sqlite3_stmt* stmt = find_prefix_.get();
    StmtUse use(stmt);
    BindText(stmt, 1, endpoint);
    BindText(stmt, 2, bucket);
    BindText(stmt, 3, prefix);
    const std::string end = PrefixEnd(prefix);
    if (end.empty()) {
      sqlite3_bind_null(stmt, 4);
    } else {
      BindText(stmt, 4, end);
    }
    std::vector<LedgerEntry> out;
    for (;;) {
      int rc = sqlite3_step(stmt);
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) return SqliteError(db_.get(), rc, "find prefix");
      out.push_back(ReadRow(stmt));
    }
    return out;
  }

  Status SetPhase(const LedgerKey& id, LedgerPhase phase, const std::string& error,
                  s3::WallTime now) override {
    MutexLock lock(mutex_);
    sqlite3_stmt* stmt = set_phase_.get();
    StmtUse use(stmt);
    BindText(stmt, 1, LedgerPhaseName(phase));
    BindText(stmt, 2, error);
    sqlite3_bind_int64(stmt, 3, ToMillis(now));
    BindText(stmt, 4, id.endpoint);
    BindText(stmt, 5, id.bucket);
    BindText(stmt, 6, id.key);
    int rc = sqlite3_step(stmt);
    if (rc != SQLITE_DONE) return SqliteError(db_.get(), rc, "set phase");
    return Status::Ok();
  }

  Result<uint64_t> Prune(s3::WallTime cutoff) override {
    MutexLock lock(mutex_);
    sqlite3_stmt* stmt = prune_.get();
    StmtUse use(stmt);
    sqlite3_bind_int64(stmt, 1, ToMillis(cutoff));
    int rc = sqlite3_step(stmt);
    if (rc != SQLITE_DONE) return SqliteError(db_.get(), rc, "prune");
    return static_cast<uint64_t>(sqlite3_changes64(db_.get()));
  }

 private:
  SqliteLedger(std::string path, Db db) : path_(std::move(path)), db_(std::move(db)) {}

  Status PrepareAll() REQUIRES(mutex_) {
    const std::string cols = kColumns;
    REELFS_ASSIGN_OR_RETURN(upsert_, Prepare(db_.get(), "INSERT OR REPLACE INTO restores (" + cols +
                                                            ") VALUES "
                                                            "(?,?,?,?,?,?,?,?,?,?,?,?,?)"));
    REELFS_ASSIGN_OR_RETURN(
        find_, Prepare(db_.get(), "SELECT " + cols +
                                      " FROM restores WHERE endpoint=? AND bucket=? AND key=?"));
    REELFS_ASSIGN_OR_RETURN(
        find_prefix_,
        Prepare(db_.get(), "SELECT " + cols +
                               " FROM restores WHERE endpoint=?1 AND bucket=?2 AND key>=?3 AND "
                               "(?4 IS NULL OR key<?4) ORDER BY key"));
    REELFS_ASSIGN_OR_RETURN(set_phase_,
                            Prepare(db_.get(),
                                    "UPDATE restores SET phase=?, last_error=?, updated_at=? WHERE "
                                    "endpoint=? AND bucket=? AND key=?"));
    REELFS_ASSIGN_OR_RETURN(prune_, Prepare(db_.get(), "DELETE FROM restores WHERE updated_at<?"));
    return Status::Ok();
  }

  Status UpsertLocked(const LedgerEntry& e) REQUIRES(mutex_) {
    sqlite3_stmt* stmt = upsert_.get();
    StmtUse use(stmt);
    BindText(stmt, 1, e.id.endpoint);
    BindText(stmt, 2, e.id.bucket);
    BindText(stmt, 3, e.id.key);
    BindText(stmt, 4, LedgerPhaseName(e.phase));
    BindText(stmt, 5, e.etag);
    sqlite3_bind_int64(stmt, 6, static_cast<sqlite3_int64>(e.size));
    BindText(stmt, 7, TierName(e.tier));
    if (e.days.has_value()) {
      sqlite3_bind_int(stmt, 8, *e.days);
    } else {
      sqlite3_bind_null(stmt, 8);
    }
    sqlite3_bind_int64(stmt, 9, ToMillis(e.requested_at));
    sqlite3_bind_int64(stmt, 10, ToMillis(e.updated_at));
    sqlite3_bind_int(stmt, 11, e.attempts);
    BindText(stmt, 12, e.batch);
    BindText(stmt, 13, e.last_error);
    int rc = sqlite3_step(stmt);
    if (rc != SQLITE_DONE) return SqliteError(db_.get(), rc, "upsert");
    return Status::Ok();
  }

  const std::string path_;
  Mutex mutex_;  // one connection: every use of db_ and the statements is under it
  // Declaration order is teardown order: statements are finalized before the connection closes.
  Db db_;
  Stmt upsert_ GUARDED_BY(mutex_);
  Stmt find_ GUARDED_BY(mutex_);
  Stmt find_prefix_ GUARDED_BY(mutex_);
  Stmt set_phase_ GUARDED_BY(mutex_);
  Stmt prune_ GUARDED_BY(mutex_);
};

// What an opened file turned out to be.
enum class FileKind { kFresh, kOurs, kForeign, kNewerSchema };

struct Probe {
  FileKind kind = FileKind::kFresh;
  int version = 0;
};

// Reads application_id, user_version and whether any schema exists. A corrupt or non-database
// file fails here with SQLITE_NOTADB / SQLITE_CORRUPT.
Result<Probe> ProbeFile(sqlite3* db, int* sqlite_rc) {
  auto scalar = [&](const char* sql) -> Result<int64_t> {
    Result<Stmt> prepared = Prepare(db, sql);
    if (!prepared.ok()) {
      *sqlite_rc = sqlite3_extended_errcode(db);  // a garbage file fails already here
      return prepared.status();
    }
    Stmt stmt = std::move(prepared).value();
    int rc = sqlite3_step(stmt.get());
    *sqlite_rc = rc;
    if (rc != SQLITE_ROW) return SqliteError(db, rc, sql);
    return sqlite3_column_int64(stmt.get(), 0);
  };
  *sqlite_rc = SQLITE_OK;
  REELFS_ASSIGN_OR_RETURN(int64_t objects, scalar("SELECT count(*) FROM sqlite_master"));
  REELFS_ASSIGN_OR_RETURN(int64_t app_id, scalar("PRAGMA application_id"));
  REELFS_ASSIGN_OR_RETURN(int64_t version, scalar("PRAGMA user_version"));
  Probe probe;
  probe.version = static_cast<int>(version);
  if (app_id == kApplicationId) {
    probe.kind = version > kSchemaVersion ? FileKind::kNewerSchema : FileKind::kOurs;
  } else if (app_id == 0 && objects == 0 && version == 0) {
    probe.kind = FileKind::kFresh;
  } else {
    probe.kind = FileKind::kForeign;
  }
  return probe;
}

// PRAGMA quick_check: "ok" or the first problems found.
Status QuickCheck(sqlite3* db, int* sqlite_rc) {
  Result<Stmt> prepared = Prepare(db, "PRAGMA quick_check");
  if (!prepared.ok()) {
    *sqlite_rc = sqlite3_extended_errcode(db);
    return prepared.status();
  }
  Stmt stmt = std::move(prepared).value();
  int rc = sqlite3_step(stmt.get());
  *sqlite_rc = rc;
  if (rc != SQLITE_ROW) return SqliteError(db, rc, "quick_check");
  std::string result = ColumnText(stmt.get(), 0);
  if (result != "ok") {
    *sqlite_rc = SQLITE_CORRUPT;
    return Status::DataLoss("ledger: quick_check: " + result);
  }
  return Status::Ok();
}

Status CreateSchema(sqlite3* db) {
  // BEGIN IMMEDIATE: two processes opening a new file at once create the schema once.
  REELFS_RETURN_IF_ERROR(Exec(db, "BEGIN IMMEDIATE"));
  int rc = SQLITE_OK;
  Result<Probe> again = ProbeFile(db, &rc);
  Status s = again.ok() ? Status::Ok() : again.status();
  if (s.ok() && again->kind == FileKind::kFresh) {
    s = Exec(db, kSchema);
    if (s.ok()) {
      const std::string pragmas = "PRAGMA application_id=" + std::to_string(kApplicationId) +
                                  "; PRAGMA user_version=" + std::to_string(kSchemaVersion) + ";";
      s = Exec(db, pragmas.c_str());
    }
  }
  if (!s.ok()) {
    Exec(db, "ROLLBACK").IgnoreError();
    return s;
  }
  return Exec(db, "COMMIT");
}

Status MoveAside(const std::string& path, const Status& why) {
  const std::string aside =
      path + ".corrupt-" + FormatIso8601Basic(std::chrono::system_clock::now());
  if (::rename(path.c_str(), aside.c_str()) != 0) {
    return ErrnoToStatus(errno, "ledger: moving corrupt " + path + " aside");
  }
  // The WAL and shared-memory files belong to the corrupt database: keep them with it.
  for (const char* suffix : {"-wal", "-shm"}) {
    const std::string from = path + suffix;
    const std::string to = aside + suffix;
    if (::rename(from.c_str(), to.c_str()) != 0 && errno != ENOENT) {
      ::unlink(from.c_str());
    }
  }
  REELFS_LOG_WARN("hsm", "ledger {} is corrupt ({}); moved to {} and starting a new one", path,
                  why.ToString(), aside);
  return Status::Ok();
}

Result<std::unique_ptr<Ledger>> SqliteLedger::Open(const std::string& path, bool allow_recreate) {
  const bool memory = path == ":memory:";
  if (!memory) REELFS_RETURN_IF_ERROR(MakeParentDirs(path));
  sqlite3* raw = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &raw,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  Db db(raw);
  if (rc != SQLITE_OK) return SqliteError(db.get(), rc, "open " + path);
  sqlite3_extended_result_codes(db.get(), 1);
  sqlite3_busy_timeout(db.get(), kBusyTimeoutMs);

  int probe_rc = SQLITE_OK;
  Result<Probe> probe = ProbeFile(db.get(), &probe_rc);
  Status corrupt;
  if (!probe.ok()) {
    if (!IsCorruption(probe_rc)) return probe.status().WithContext(path);
    corrupt = probe.status();
  } else if (probe->kind == FileKind::kForeign) {
    return Status::FailedPrecondition("ledger: " + path +
                                      " is a SQLite database but not a reelfs ledger (application "
                                      "id differs); refusing to use it");
  } else if (probe->kind == FileKind::kNewerSchema) {
    return Status::FailedPrecondition(
        "ledger: " + path + " has schema version " + std::to_string(probe->version) +
        ", newer than this reelfs understands (" + std::to_string(kSchemaVersion) + ")");
  } else if (probe->kind == FileKind::kOurs) {
    int check_rc = SQLITE_OK;
    Status check = QuickCheck(db.get(), &check_rc);
    if (!check.ok()) {
      if (!IsCorruption(check_rc)) return check.WithContext(path);
      corrupt = check;
    }
  }
  if (!corrupt.ok()) {
    if (memory || !allow_recreate) return corrupt.WithContext(path);
    db.reset();
    REELFS_RETURN_IF_ERROR(MoveAside(path, corrupt));
    return Open(path, /*allow_recreate=*/false);
  }

  if (!memory) {
    // WAL: readers (reelfs status) never block the daemon's writes, and the reverse.
    REELFS_RETURN_IF_ERROR(Exec(db.get(), "PRAGMA journal_mode=WAL"));
    // NORMAL is durable enough in WAL mode: a power loss may drop the last requests, which only
    // costs a duplicate RestoreObject.
    REELFS_RETURN_IF_ERROR(Exec(db.get(), "PRAGMA synchronous=NORMAL"));
  }
  if (probe->kind == FileKind::kFresh) REELFS_RETURN_IF_ERROR(CreateSchema(db.get()));

  std::unique_ptr<SqliteLedger> ledger(new SqliteLedger(path, std::move(db)));
  {
    MutexLock lock(ledger->mutex_);
    REELFS_RETURN_IF_ERROR(ledger->PrepareAll());
  }
  return std::unique_ptr<Ledger>(std::move(ledger));
}

}  // namespace

std::string_view LedgerPhaseName(LedgerPhase phase) {
  switch (phase) {
    case LedgerPhase::kRequested:
      return "requested";
    case LedgerPhase::kOnline:
      return "online";
    case LedgerPhase::kFailed:
      return "failed";
  }
  return "requested";
}

Result<std::unique_ptr<Ledger>> Ledger::Open(const std::string& path) {
  if (path.empty()) return Status::InvalidArgument("ledger: empty path");
  return SqliteLedger::Open(path, /*allow_recreate=*/true);
}

std::unique_ptr<Ledger> Ledger::InMemory() {
  Result<std::unique_ptr<Ledger>> ledger = SqliteLedger::Open(":memory:", false);
  // An in-memory database fails only when out of memory; nothing sensible to return then.
  if (!ledger.ok()) {
    REELFS_LOG_ERROR("hsm", "in-memory ledger: {}", ledger.status().ToString());
    std::abort();
  }
  return std::move(ledger).value();
}

std::string Ledger::DefaultPath() {
  if (const char* env = std::getenv("REELFS_LEDGER"); env != nullptr && *env != '\0') return env;
  constexpr std::string_view kTail = "reelfs/ledger.sqlite";
  // XDG: a relative XDG_STATE_HOME is invalid and must be ignored.
  if (const char* state = std::getenv("XDG_STATE_HOME"); state != nullptr && state[0] == '/') {
    return std::string(state) + "/" + std::string(kTail);
  }
  std::string home;
  if (const char* env = std::getenv("HOME"); env != nullptr && env[0] == '/') {
    home = env;
  } else if (const passwd* pw = ::getpwuid(::getuid()); pw != nullptr && pw->pw_dir != nullptr) {
    home = pw->pw_dir;
  }
  if (home.empty()) return "/tmp/reelfs-" + std::to_string(::getuid()) + "/ledger.sqlite";
  return home + "/.local/state/" + std::string(kTail);
}

}  // namespace reelfs::hsm
