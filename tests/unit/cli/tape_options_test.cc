// `reelfs stage` / `status` / `wait` flag parsing (cli/tape_options.h): defaults, what each
// command waits for, the --from-file list, and every rejection with the message the command
// prints after "reelfs NAME: " (tests/e2e/tape_stage.sh pins the exit codes end to end).
#include "cli/tape_options.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include <doctest/doctest.h>

namespace reelfs::cli {
namespace {

TapeFlags Flags() {
  TapeFlags f;
  f.paths = {"s3://b/k"};
  return f;
}

Result<TapeConfig> Parse(TapeCommand command, const TapeFlags& f) {
  std::istringstream no_input;
  return ParseTapeFlags(command, f, no_input);
}

TEST_SUITE("cli") {
  TEST_CASE("tape: defaults") {
    auto c = Parse(TapeCommand::kStage, Flags());
    REQUIRE(c.ok());
    CHECK(c->command == TapeCommand::kStage);
    CHECK_FALSE(c->wait);
    CHECK_FALSE(c->timeout.has_value());
    CHECK(c->stage.params.tier == s3::RestoreTier::kStandard);
    CHECK(c->stage.params.days == 7);
    CHECK(c->stage.max_requests_per_second == 200);
    CHECK(c->stage.poll_min == std::chrono::seconds(1));
    CHECK(c->stage.poll_max == std::chrono::seconds(60));
    CHECK(c->stage.batch.empty());
    CHECK(c->paths == std::vector<std::string>{"s3://b/k"});
    CHECK_FALSE(c->recursive);
    CHECK_FALSE(c->json);
    CHECK_FALSE(c->dry_run);
    CHECK(c->ledger.empty());
  }

  TEST_CASE("tape: which commands wait") {
    TapeFlags f = Flags();
    CHECK_FALSE(Parse(TapeCommand::kStatus, f)->wait);
    CHECK(Parse(TapeCommand::kWait, f)->wait);
    CHECK_FALSE(Parse(TapeCommand::kStage, f)->wait);
    f.wait = true;
    CHECK(Parse(TapeCommand::kStage, f)->wait);
    // --wait belongs to stage: status ignores it.
    CHECK_FALSE(Parse(TapeCommand::kStatus, f)->wait);
  }

  TEST_CASE("tape: command names") {
    CHECK(TapeCommandName(TapeCommand::kStage) == "stage");
    CHECK(TapeCommandName(TapeCommand::kStatus) == "status");
    CHECK(TapeCommandName(TapeCommand::kWait) == "wait");
  }

  TEST_CASE("tape: values") {
    TapeFlags f = Flags();
    f.timeout = "30m";
    f.tier = "bulk";
    f.days = 36500;
    f.rate = 0.5;
    f.poll = "250ms";
    f.poll_max = "250ms";
    f.recursive = true;
    f.json = true;
    f.dry_run = true;
    f.ledger = "/tmp/l.sqlite";
    auto c = Parse(TapeCommand::kStage, f);
    REQUIRE(c.ok());
    REQUIRE(c->timeout.has_value());
    CHECK(*c->timeout == std::chrono::minutes(30));
    CHECK(c->stage.params.tier == s3::RestoreTier::kBulk);
    CHECK(c->stage.params.days == 36500);
    CHECK(c->stage.max_requests_per_second == 0.5);
    CHECK(c->stage.poll_min == std::chrono::milliseconds(250));
    CHECK(c->stage.poll_max == std::chrono::milliseconds(250));
    CHECK(c->recursive);
    CHECK(c->json);
    CHECK(c->dry_run);
    CHECK(c->ledger == "/tmp/l.sqlite");
    f.tier = "expedited";
    CHECK(Parse(TapeCommand::kStage, f)->stage.params.tier == s3::RestoreTier::kExpedited);
    f.days = 1;
    CHECK(Parse(TapeCommand::kStage, f)->stage.params.days == 1);
  }

  TEST_CASE("tape: rejections, one row per flag, in the order they are checked") {
    struct Row {
      const char* what;
      void (*set)(TapeFlags&);
      const char* message;
    };
    const Row rows[] = {
        {"bad timeout", [](TapeFlags& f) { f.timeout = "soon"; }, "--timeout: "},
        {"zero poll", [](TapeFlags& f) { f.poll = "0s"; }, "--poll: expected a positive duration"},
        {"bad poll", [](TapeFlags& f) { f.poll = "x"; }, "--poll: expected a positive duration"},
        {"poll-max below poll", [](TapeFlags& f) { f.poll_max = "500ms"; },
         "--poll-max: expected a duration >= --poll"},
        {"bad poll-max", [](TapeFlags& f) { f.poll_max = "x"; },
         "--poll-max: expected a duration >= --poll"},
        {"tier", [](TapeFlags& f) { f.tier = "fast"; },
         "--tier: expected standard, bulk or expedited"},
        {"days 0", [](TapeFlags& f) { f.days = 0; }, "--days: expected 1..36500"},
        {"days too many", [](TapeFlags& f) { f.days = 36501; }, "--days: expected 1..36500"},
        {"rate 0", [](TapeFlags& f) { f.rate = 0; }, "--rate: expected a positive number"},
        {"rate negative", [](TapeFlags& f) { f.rate = -1; }, "--rate: expected a positive number"},
        {"no path", [](TapeFlags& f) { f.paths.clear(); }, "no PATH given"},
        {"unreadable list", [](TapeFlags& f) { f.from_file = "/nonexistent/list"; },
         "--from-file: cannot read /nonexistent/list"},
        // The first bad flag wins: --poll is checked before --tier.
        {"two bad",
         [](TapeFlags& f) {
           f.tier = "fast";
           f.poll = "0s";
         },
         "--poll: expected a positive duration"},
    };
    for (const Row& row : rows) {
      CAPTURE(row.what);
      TapeFlags f = Flags();
      row.set(f);
      for (TapeCommand command : {TapeCommand::kStage, TapeCommand::kStatus, TapeCommand::kWait}) {
        auto c = Parse(command, f);
        REQUIRE_FALSE(c.ok());
        CHECK(c.status().code() == StatusCode::kInvalidArgument);
        CHECK(std::string(c.status().message()).rfind(row.message, 0) == 0);
      }
    }
  }

  TEST_CASE("tape: --from-file - reads standard input after the positional paths") {
    TapeFlags f = Flags();
    f.from_file = "-";
    std::istringstream in("a/one\r\n\n  \ns3://b/two  \nlast");
    auto c = ParseTapeFlags(TapeCommand::kStatus, f, in);
    REQUIRE(c.ok());
    CHECK(c->paths == std::vector<std::string>{"s3://b/k", "a/one", "s3://b/two", "last"});

    // A list alone is enough.
    f.paths.clear();
    std::istringstream only("x\n");
    auto d = ParseTapeFlags(TapeCommand::kStatus, f, only);
    REQUIRE(d.ok());
    CHECK(d->paths == std::vector<std::string>{"x"});

    // An empty list and no positional path: nothing to do.
    std::istringstream empty("\n\n");
    CHECK(ParseTapeFlags(TapeCommand::kStatus, f, empty).status().message() == "no PATH given");
  }

  TEST_CASE("tape: --from-file LIST reads the file, not standard input") {
    char name[] = "/tmp/reelfs-tape-options-XXXXXX";
    const int fd = mkstemp(name);
    REQUIRE(fd >= 0);
    close(fd);
    {
      std::ofstream out(name);
      out << "s3://b/from-file\n";
    }
    TapeFlags f = Flags();
    f.from_file = name;
    std::istringstream in("s3://b/stdin\n");
    auto c = ParseTapeFlags(TapeCommand::kStage, f, in);
    std::remove(name);
    REQUIRE(c.ok());
    CHECK(c->paths == std::vector<std::string>{"s3://b/k", "s3://b/from-file"});
  }

  TEST_CASE("tape: ReadPathList trims line ends and skips blank lines") {
    std::istringstream in(" lead\ntrail \r\n\r\n \nmid dle\n");
    CHECK(ReadPathList(in) == std::vector<std::string>{" lead", "trail", "mid dle"});
    std::istringstream none("");
    CHECK(ReadPathList(none).empty());
  }
}

}  // namespace
}  // namespace reelfs::cli
