// hsm::Classify and tape hints: every combination of storage class, restore info and ledger.
#include "hsm/state.h"

#include <doctest/doctest.h>

using namespace reelfs;
using namespace reelfs::hsm;
using namespace std::chrono_literals;

namespace {

const s3::WallTime kNow = s3::WallTime(std::chrono::seconds(1'800'000'000));

s3::ObjectInfo Info(std::string storage_class, std::optional<s3::RestoreInfo> restore = {}) {
  s3::ObjectInfo info;
  info.key = "k";
  info.storage_class = std::move(storage_class);
  info.restore = restore;
  return info;
}

}  // namespace

TEST_CASE("names round-trip and unknown names are rejected") {
  for (State s :
       {State::kUnknown, State::kOnline, State::kOffline, State::kStaging, State::kRestored}) {
    CHECK(ParseStateName(StateName(s)) == s);
  }
  CHECK_FALSE(ParseStateName("ONLINE").has_value());
  CHECK_FALSE(ParseStateName("").has_value());
}

TEST_CASE("archive classes") {
  CHECK(IsArchiveClass("GLACIER"));
  CHECK(IsArchiveClass("glacier"));
  CHECK(IsArchiveClass("DEEP_ARCHIVE"));
  CHECK_FALSE(IsArchiveClass("GLACIER_IR"));
  CHECK_FALSE(IsArchiveClass("STANDARD"));
  CHECK_FALSE(IsArchiveClass(""));
}

TEST_CASE("classification") {
  const LedgerView none;
  const LedgerView requested{.requested = true};
  SUBCASE("standard objects are online, even with versitygw's restore header") {
    CHECK(Classify(Info("STANDARD"), none, kNow) == State::kOnline);
    s3::RestoreInfo done{
        .ongoing = false, .expiry = kNow + 24h * 365 * 24, .expiry_is_placeholder = true};
    CHECK(Classify(Info("STANDARD", done), none, kNow) == State::kOnline);
    CHECK(Classify(Info("STANDARD", s3::RestoreInfo{.ongoing = true}), none, kNow) ==
          State::kStaging);
  }
  SUBCASE("archived without restore information: offline unless we asked") {
    CHECK(Classify(Info("GLACIER"), none, kNow) == State::kOffline);
    CHECK(Classify(Info("DEEP_ARCHIVE"), requested, kNow) == State::kStaging);
  }
  SUBCASE("archived with restore information") {
    CHECK(Classify(Info("GLACIER", s3::RestoreInfo{.ongoing = true}), none, kNow) ==
          State::kStaging);
    CHECK(Classify(Info("GLACIER", s3::RestoreInfo{.ongoing = false, .expiry = kNow + 1h}), none,
                   kNow) == State::kRestored);
    CHECK(Classify(Info("GLACIER", s3::RestoreInfo{.ongoing = false}), none, kNow) ==
          State::kRestored);
    // An expired copy is gone: offline again (staging when we asked again).
    s3::RestoreInfo expired{.ongoing = false, .expiry = kNow - 1s};
    CHECK(Classify(Info("GLACIER", expired), none, kNow) == State::kOffline);
    CHECK(Classify(Info("GLACIER", expired), requested, kNow) == State::kStaging);
    // versitygw's placeholder is no expiry, whatever the clock says.
    s3::RestoreInfo placeholder{
        .ongoing = false, .expiry = kNow - 1s, .expiry_is_placeholder = true};
    CHECK(Classify(Info("GLACIER", placeholder), none, kNow) == State::kRestored);
  }
  CHECK(IsReadable(State::kOnline));
  CHECK(IsReadable(State::kRestored));
  CHECK_FALSE(IsReadable(State::kStaging));
  CHECK_FALSE(IsReadable(State::kOffline));
  CHECK_FALSE(IsReadable(State::kUnknown));
}

TEST_CASE("tape hints") {
  s3::ObjectInfo info = Info("GLACIER");
  CHECK_FALSE(TapeHintOf(info).has_value());
  info.hints["x-reelfs-tape-cartridge"] = "RL0001L9";
  info.hints["x-reelfs-tape-block"] = "1234";
  info.hints["x-reelfs-tape-position"] = "wrap=12,lpos=34567,band=1";
  auto hint = TapeHintOf(info);
  REQUIRE(hint.has_value());
  CHECK(hint->cartridge == "RL0001L9");
  CHECK(hint->block == 1234u);
  CHECK(hint->wrap == 12u);
  CHECK(hint->lpos == 34567u);
  info.hints["x-reelfs-tape-block"] = "12x";
  info.hints["x-reelfs-tape-position"] = "garbage,wrap=,lpos=-1";
  hint = TapeHintOf(info);
  REQUIRE(hint.has_value());
  CHECK_FALSE(hint->block.has_value());
  CHECK_FALSE(hint->wrap.has_value());
  CHECK_FALSE(hint->lpos.has_value());
}
