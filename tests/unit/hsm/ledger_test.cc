// hsm::Ledger on SQLite: round trips, prefix scans in byte order, two connections on one file,
// refusal of foreign and newer files, recovery from corrupt ones, default path.
#include "hsm/ledger.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <doctest/doctest.h>
#include <sqlite3.h>  // only to forge foreign and future files; reelfs_hsm links SQLite
#include <sys/stat.h>

using namespace reelfs;
using namespace reelfs::hsm;
using namespace std::chrono_literals;

namespace {

struct TempDir {
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "reelfs-ledger-XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string path;
};

const s3::WallTime kT0 = s3::WallTime(std::chrono::milliseconds(1'800'000'000'123));

LedgerEntry Entry(std::string key, LedgerPhase phase = LedgerPhase::kRequested) {
  LedgerEntry e;
  e.id = {"http://127.0.0.1:9000", "bkt", std::move(key)};
  e.phase = phase;
  e.etag = "etag-" + e.id.key;
  e.size = 1234;
  e.requested_at = kT0;
  e.updated_at = kT0;
  return e;
}

void ExecRaw(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
  INFO((err ? err : ""));
  sqlite3_free(err);
  sqlite3_close(db);
  REQUIRE(rc == SQLITE_OK);
}

std::vector<std::string> Keys(const std::vector<LedgerEntry>& entries) {
  std::vector<std::string> keys;
  for (const auto& e : entries) keys.push_back(e.id.key);
  return keys;
}

std::vector<std::string> CorruptSiblings(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& f : std::filesystem::directory_iterator(dir)) {
    std::string name = f.path().filename().string();
    if (name.find(".corrupt-") != std::string::npos) out.push_back(name);
  }
  return out;
}

}  // namespace

TEST_SUITE("hsm") {
  TEST_CASE("Open creates parent directories 0700 and the entry round-trips every field") {
    TempDir tmp;
    const std::string path = tmp.path + "/a/b/ledger.sqlite";
    auto ledger = Ledger::Open(path);
    REQUIRE_MESSAGE(ledger.ok(), ledger.status().ToString());
    CHECK((*ledger)->path() == path);
    struct stat st {};
    REQUIRE(::stat((tmp.path + "/a/b").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);
    REQUIRE(::stat((tmp.path + "/a").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);

    LedgerEntry e = Entry("dir/obj");
    e.tier = s3::RestoreTier::kBulk;
    e.days = 9;
    e.attempts = 2;
    e.batch = "stage-42";
    e.last_error = "none yet";
    e.requested_at = kT0 + 999us;  // stored in milliseconds: the microseconds go
    e.updated_at = kT0 + 5s;
    REQUIRE((*ledger)->Upsert(e).ok());
    auto found = (*ledger)->Find(e.id);
    REQUIRE(found.ok());
    REQUIRE(found->has_value());
    LedgerEntry got = **found;
    CHECK(got.id == e.id);
    CHECK(got.phase == LedgerPhase::kRequested);
    CHECK(got.etag == "etag-dir/obj");
    CHECK(got.size == 1234);
    CHECK(got.tier == s3::RestoreTier::kBulk);
    CHECK(got.days == std::optional<int>(9));
    CHECK(got.requested_at == kT0);
    CHECK(got.updated_at == kT0 + 5s);
    CHECK(got.attempts == 2);
    CHECK(got.batch == "stage-42");
    CHECK(got.last_error == "none yet");

    e.days.reset();
    e.phase = LedgerPhase::kOnline;
    REQUIRE((*ledger)->Upsert(e).ok());  // replaces
    got = **(*ledger)->Find(e.id);
    CHECK_FALSE(got.days.has_value());
    CHECK(got.phase == LedgerPhase::kOnline);

    auto missing = (*ledger)->Find({"http://127.0.0.1:9000", "bkt", "nope"});
    REQUIRE(missing.ok());
    CHECK_FALSE(missing->has_value());
    // Same key, other endpoint or bucket: other entries.
    CHECK_FALSE((*ledger)->Find({"", "bkt", "dir/obj"})->has_value());
    CHECK_FALSE((*ledger)->Find({"http://127.0.0.1:9000", "other", "dir/obj"})->has_value());
  }

  TEST_CASE("the file persists and is shared by two Ledger objects (two processes' view)") {
    TempDir tmp;
    const std::string path = tmp.path + "/ledger.sqlite";
    auto daemon = Ledger::Open(path);
    auto cli = Ledger::Open(path);
    REQUIRE(daemon.ok());
    REQUIRE(cli.ok());
    REQUIRE((*cli)->Upsert(Entry("k1")).ok());
    auto seen = (*daemon)->Find(Entry("k1").id);
    REQUIRE(seen.ok());
    CHECK(seen->has_value());
    REQUIRE((*daemon)->SetPhase(Entry("k1").id, LedgerPhase::kOnline, "", kT0 + 1s).ok());
    CHECK((**(*cli)->Find(Entry("k1").id)).phase == LedgerPhase::kOnline);
    daemon->reset();
    cli->reset();
    auto reopened = Ledger::Open(path);
    REQUIRE(reopened.ok());
    auto again = (*reopened)->Find(Entry("k1").id);
    REQUIRE(again.ok());
    REQUIRE(again->has_value());
    CHECK((**again).phase == LedgerPhase::kOnline);
    CHECK((**again).updated_at == kT0 + 1s);
  }

  TEST_CASE("UpsertMany, FindPrefix in byte order, SetPhase and Prune") {
    auto ledger = Ledger::InMemory();
    CHECK(ledger->path() == ":memory:");
    std::vector<LedgerEntry> many;
    for (int i = 999; i >= 0; --i) {
      char key[32];
      std::snprintf(key, sizeof key, "data/%04d", i);
      many.push_back(Entry(key));
    }
    many.push_back(Entry("data0"));                       // '0' > '/': outside "data/"
    many.push_back(Entry("dat"));                         // shorter: outside
    many.push_back(Entry(std::string("data/\xff\xff")));  // inside, sorts last
    many.push_back(Entry(std::string("\xff\xff")));
    LedgerEntry other_bucket = Entry("data/0001");
    other_bucket.id.bucket = "other";
    many.push_back(other_bucket);
    REQUIRE(ledger->UpsertMany(many).ok());
    REQUIRE(ledger->UpsertMany({}).ok());

    auto in_dir = ledger->FindPrefix("http://127.0.0.1:9000", "bkt", "data/");
    REQUIRE(in_dir.ok());
    REQUIRE(in_dir->size() == 1001);
    CHECK(in_dir->front().id.key == "data/0000");
    CHECK((*in_dir)[999].id.key == "data/0999");
    CHECK(in_dir->back().id.key == std::string("data/\xff\xff"));

    auto all = ledger->FindPrefix("http://127.0.0.1:9000", "bkt", "");
    REQUIRE(all.ok());
    CHECK(all->size() == 1004);
    CHECK(all->front().id.key == "dat");
    CHECK(all->back().id.key == std::string("\xff\xff"));
    auto ff = ledger->FindPrefix("http://127.0.0.1:9000", "bkt", std::string("\xff"));
    REQUIRE(ff.ok());
    CHECK(Keys(*ff) == std::vector<std::string>{std::string("\xff\xff")});
    CHECK(ledger->FindPrefix("http://127.0.0.1:9000", "other", "")->size() == 1);

    // SetPhase: updates an entry, no-op when absent.
    REQUIRE(
        ledger->SetPhase(Entry("data/0005").id, LedgerPhase::kFailed, "gave up", kT0 + 1h).ok());
    LedgerEntry failed = **ledger->Find(Entry("data/0005").id);
    CHECK(failed.phase == LedgerPhase::kFailed);
    CHECK(failed.last_error == "gave up");
    CHECK(failed.updated_at == kT0 + 1h);
    CHECK(failed.requested_at == kT0);
    REQUIRE(ledger->SetPhase(Entry("absent").id, LedgerPhase::kOnline, "", kT0).ok());
    CHECK_FALSE(ledger->Find(Entry("absent").id)->has_value());

    // Prune drops what was last updated before the cutoff.
    auto pruned = ledger->Prune(kT0 + 1s);
    REQUIRE(pruned.ok());
    CHECK(*pruned == 1004);
    auto left = ledger->FindPrefix("http://127.0.0.1:9000", "bkt", "");
    CHECK(Keys(*left) == std::vector<std::string>{"data/0005"});
  }

  TEST_CASE("a SQLite file that is not a ledger is refused and left alone") {
    TempDir tmp;
    const std::string path = tmp.path + "/foreign.sqlite";
    ExecRaw(path, "CREATE TABLE photos (name TEXT); INSERT INTO photos VALUES ('cat');");
    auto ledger = Ledger::Open(path);
    REQUIRE_FALSE(ledger.ok());
    CHECK(ledger.status().code() == StatusCode::kFailedPrecondition);
    CHECK(ledger.status().message().find("not a reelfs ledger") != std::string_view::npos);
    CHECK(CorruptSiblings(tmp.path).empty());
    ExecRaw(path, "SELECT name FROM photos");  // still the user's database
  }

  TEST_CASE("a ledger with a newer schema is refused") {
    TempDir tmp;
    const std::string path = tmp.path + "/ledger.sqlite";
    REQUIRE(Ledger::Open(path).ok());
    ExecRaw(path, "PRAGMA user_version=2");
    auto ledger = Ledger::Open(path);
    REQUIRE_FALSE(ledger.ok());
    CHECK(ledger.status().code() == StatusCode::kFailedPrecondition);
    CHECK(ledger.status().message().find("schema version 2") != std::string_view::npos);
  }

  TEST_CASE("a corrupt file is moved aside and a new ledger created") {
    TempDir tmp;
    const std::string path = tmp.path + "/ledger.sqlite";
    SUBCASE("not a database at all") { std::ofstream(path) << std::string(8192, 'x'); }
    SUBCASE("a ledger whose pages were overwritten") {
      {
        auto ledger = Ledger::Open(path);
        REQUIRE(ledger.ok());
        std::vector<LedgerEntry> many;
        for (int i = 0; i < 2000; ++i) many.push_back(Entry("k" + std::to_string(i)));
        REQUIRE((*ledger)->UpsertMany(many).ok());
      }
      ExecRaw(path, "PRAGMA wal_checkpoint(TRUNCATE)");
      REQUIRE(std::filesystem::file_size(path) > 3 * 4096);
      std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(2 * 4096);  // past the header page: the B-tree pages
      const std::string junk(8192, '\x5a');
      f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
    }
    auto ledger = Ledger::Open(path);
    REQUIRE_MESSAGE(ledger.ok(), ledger.status().ToString());
    CHECK(CorruptSiblings(tmp.path).size() >= 1);
    REQUIRE((*ledger)->Upsert(Entry("fresh")).ok());
    CHECK((*ledger)->Find(Entry("fresh").id)->has_value());
    CHECK((*ledger)->FindPrefix("http://127.0.0.1:9000", "bkt", "k")->empty());
  }

  TEST_CASE("DefaultPath: REELFS_LEDGER, then XDG_STATE_HOME, then HOME") {
    auto save = [](const char* name) -> std::optional<std::string> {
      const char* v = std::getenv(name);
      return v ? std::optional<std::string>(v) : std::nullopt;
    };
    auto restore = [](const char* name, const std::optional<std::string>& v) {
      if (v) {
        ::setenv(name, v->c_str(), 1);
      } else {
        ::unsetenv(name);
      }
    };
    auto ledger_env = save("REELFS_LEDGER");
    auto xdg = save("XDG_STATE_HOME");
    auto home = save("HOME");
    ::setenv("REELFS_LEDGER", "/x/l.sqlite", 1);
    ::setenv("XDG_STATE_HOME", "/state", 1);
    ::setenv("HOME", "/home/u", 1);
    CHECK(Ledger::DefaultPath() == "/x/l.sqlite");
    ::unsetenv("REELFS_LEDGER");
    CHECK(Ledger::DefaultPath() == "/state/reelfs/ledger.sqlite");
    ::setenv("XDG_STATE_HOME", "relative", 1);  // invalid per the XDG spec: ignored
    CHECK(Ledger::DefaultPath() == "/home/u/.local/state/reelfs/ledger.sqlite");
    ::unsetenv("XDG_STATE_HOME");
    CHECK(Ledger::DefaultPath() == "/home/u/.local/state/reelfs/ledger.sqlite");
    ::unsetenv("HOME");
    CHECK_FALSE(Ledger::DefaultPath().empty());
    restore("REELFS_LEDGER", ledger_env);
    restore("XDG_STATE_HOME", xdg);
    restore("HOME", home);
  }
}
