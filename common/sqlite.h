// The SQLite plumbing the persistent stores share (the restore ledger, hsm/ledger.cc; the local
// cache's index, cache/cache_index.cc): RAII for connections and statements, result codes as
// Status, and the bind/column helpers. Its own library, reelfs_sqlite, so that only the modules
// that keep a SQLite file link SQLite.
//
// Thread-safety: free functions; a connection and its statements have one user at a time.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <sqlite3.h>

#include "common/c_handle.h"
#include "common/result.h"

namespace reelfs::sqlite {

using Db = CHandle<sqlite3, sqlite3_close_v2>;
using Stmt = CHandle<sqlite3_stmt, sqlite3_finalize>;

// `who` names the store in messages ("ledger", "cache index"). By the primary result code:
// BUSY/LOCKED kUnavailable (another process holds the file), CORRUPT/NOTADB kDataLoss,
// READONLY/PERM/CANTOPEN kPermissionDenied, FULL kResourceExhausted, anything else kInternal.
// The message is "WHO: WHAT: " and the connection's errmsg (or the code's text without one).
[[nodiscard]] Status Error(sqlite3* db, int rc, std::string_view who, std::string_view what);
// SQLITE_CORRUPT or SQLITE_NOTADB (extended codes too).
bool IsCorruption(int rc);
// sqlite3_exec of statements without results.
[[nodiscard]] Status Exec(sqlite3* db, const char* sql, std::string_view who);
// A statement kept for reuse (SQLITE_PREPARE_PERSISTENT).
[[nodiscard]] Result<Stmt> Prepare(sqlite3* db, std::string_view sql, std::string_view who);
// The first column of the first row of `sql` as an integer (PRAGMA application_id, count(*)).
[[nodiscard]] Result<int64_t> QueryInt(sqlite3* db, const char* sql, std::string_view who);

// Resets a cached statement when the scope ends, so the next use starts clean and no read
// transaction is left open (that would pin the WAL for every other process).
class StmtUse {
 public:
  explicit StmtUse(sqlite3_stmt* stmt) : stmt_(stmt) {}
  ~StmtUse() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  StmtUse(const StmtUse&) = delete;
  StmtUse& operator=(const StmtUse&) = delete;

 private:
  sqlite3_stmt* stmt_;
};

void BindText(sqlite3_stmt* stmt, int index, std::string_view text);
// A text column as bytes ("" for NULL).
std::string ColumnText(sqlite3_stmt* stmt, int index);

}  // namespace reelfs::sqlite
