// RefreshingCredentials: refetched before expiry on its own thread, a failed refresh keeps the
// credentials in hand, long-term keys stop the refresher. Timings are short but the checks only
// wait (up to a generous bound) for what must eventually happen; nothing asserts a duration.
#include "s3/client/refreshing_credentials.h"

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include <doctest/doctest.h>

using namespace reelfs;
using namespace reelfs::s3;
using namespace std::chrono_literals;
using std::chrono::system_clock;

namespace {

TemporaryCredentials Creds(int n, std::chrono::milliseconds lifetime) {
  TemporaryCredentials c;
  c.credentials = {"KEY" + std::to_string(n), "secret" + std::to_string(n),
                   "token" + std::to_string(n)};
  c.expiration = system_clock::now() + lifetime;
  return c;
}

template <class Pred>
bool WaitFor(Pred pred) {
  for (int i = 0; i < 2000 && !pred(); ++i) std::this_thread::sleep_for(5ms);
  return pred();
}

RefreshingCredentials::Options Fast() {
  RefreshingCredentials::Options o;
  o.refresh_before = 900ms;
  o.retry_every = 20ms;
  o.min_interval = 10ms;
  return o;
}

}  // namespace

TEST_CASE("credentials are refetched before they expire") {
  std::atomic<int> fetches{0};
  RefreshingCredentials holder(
      Creds(0, 1s), [&] { return Result<TemporaryCredentials>(Creds(++fetches, 1s)); }, "test",
      Fast());
  CHECK(holder.Current().access_key_id == "KEY0");
  REQUIRE(WaitFor([&] { return holder.refreshes() >= 2; }));
  const Credentials now = holder.Current();
  CHECK(now.access_key_id != "KEY0");
  CHECK(now.session_token == "token" + now.access_key_id.substr(3));
  CHECK(holder.failures() == 0);
  CHECK(*holder.expiration() > system_clock::now());
}

TEST_CASE("a failed refresh keeps the current credentials and is retried") {
  std::atomic<int> calls{0};
  RefreshingCredentials holder(
      Creds(0, 1s),
      [&]() -> Result<TemporaryCredentials> {
        if (++calls <= 3) return Status::Unavailable("STS is down");
        return Creds(9, 1h);
      },
      "test", Fast());
  REQUIRE(WaitFor([&] { return holder.failures() >= 1; }));
  CHECK(holder.Current().access_key_id == "KEY0");  // still valid: kept
  REQUIRE(WaitFor([&] { return holder.refreshes() == 1; }));
  CHECK(holder.failures() == 3);
  CHECK(holder.Current().access_key_id == "KEY9");
}

TEST_CASE("long-term keys from a refresh end the refreshing") {
  std::atomic<int> calls{0};
  RefreshingCredentials holder(
      Creds(0, 1s),
      [&] {
        ++calls;
        TemporaryCredentials fixed;
        fixed.credentials = {"FIXED", "s", ""};
        return Result<TemporaryCredentials>(fixed);
      },
      "test", Fast());
  REQUIRE(WaitFor([&] { return holder.refreshes() == 1; }));
  std::this_thread::sleep_for(100ms);
  CHECK(calls == 1);
  CHECK_FALSE(holder.expiration().has_value());
  CHECK(holder.Current().access_key_id == "FIXED");
}

TEST_CASE("destroying the holder stops a refresher that is waiting for hours") {
  RefreshingCredentials holder(
      Creds(0, 10h), [] { return Result<TemporaryCredentials>(Status::Internal("unused")); },
      "test");
  CHECK(holder.refreshes() == 0);
  // The destructor returns without waiting for the 9 h 55 min refresh time.
}
