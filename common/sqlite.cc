// common/sqlite.h.

#include "common/sqlite.h"

#include <utility>

namespace reelfs::sqlite {

bool IsCorruption(int rc) {
  rc &= 0xff;  // primary code of an extended result code
  return rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB;
}

Status Error(sqlite3* db, int rc, std::string_view who, std::string_view what) {
  std::string message = std::string(who) + ": " + std::string(what) + ": " +
                        (db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return Status::Unavailable(std::move(message));
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return Status::DataLoss(std::move(message));
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_CANTOPEN:
      return Status::PermissionDenied(std::move(message));
    case SQLITE_FULL:
      return Status::ResourceExhausted(std::move(message));
    default:
      return Status::Internal(std::move(message));
  }
}

Status Exec(sqlite3* db, const char* sql, std::string_view who) {
  char* error = nullptr;
  const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &error);
  CHandle<char, sqlite3_free> owned(error);
  if (rc != SQLITE_OK) {
    return Error(
        nullptr, rc, who,
        std::string(sql).substr(0, 40) + ": " + (owned ? owned.get() : sqlite3_errstr(rc)));
  }
  return Status::Ok();
}

Result<Stmt> Prepare(sqlite3* db, std::string_view sql, std::string_view who) {
  sqlite3_stmt* raw = nullptr;
  const int rc = sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()),
                                    SQLITE_PREPARE_PERSISTENT, &raw, nullptr);
  Stmt stmt(raw);
  if (rc != SQLITE_OK) return Error(db, rc, who, "prepare " + std::string(sql.substr(0, 40)));
  return stmt;
}

Result<int64_t> QueryInt(sqlite3* db, const char* sql, std::string_view who) {
  REELFS_ASSIGN_OR_RETURN(Stmt stmt, Prepare(db, sql, who));
  const int rc = sqlite3_step(stmt.get());
  if (rc != SQLITE_ROW) return Error(db, rc, who, sql);
  return sqlite3_column_int64(stmt.get(), 0);
}

void BindText(sqlite3_stmt* stmt, int index, std::string_view text) {
  sqlite3_bind_text64(stmt, index, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
}

std::string ColumnText(sqlite3_stmt* stmt, int index) {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, index));
  return text == nullptr
             ? std::string()
             : std::string(text, static_cast<size_t>(sqlite3_column_bytes(stmt, index)));
}

}  // namespace reelfs::sqlite
