#include "rdmaio/wire/window_fence.h"

#include <chrono>

#include <doctest/doctest.h>

#include "tests/fakes/fake_clock.h"

namespace reelfs::rdmaio::wire {
namespace {

using std::chrono::seconds;

constexpr Clock::Duration kTimeout = seconds(30);

TEST_SUITE("rdmaio") {
  TEST_CASE("window fence: a clean completion frees the window") {
    testing::FakeClock clock;
    WindowFence fence(clock, {});
    CHECK(fence.state(7) == WindowState::kIdle);
    Result<WindowFence::Ticket> t = fence.Begin(7, kTimeout);
    REQUIRE(t.ok());
    CHECK(fence.state(7) == WindowState::kInFlight);
    CHECK(fence.Begin(7, kTimeout).status().code() == StatusCode::kFailedPrecondition);
    CHECK(fence.Begin(7, kTimeout).status().reason() == StatusReason::kWindowBusy);
    CHECK(fence.Finish(*t, /*fence_needed=*/false));
    CHECK(fence.state(7) == WindowState::kIdle);
    CHECK(fence.Begin(7, kTimeout).ok());
  }

  TEST_CASE("window fence: not reused after a failed request until fenced") {
    testing::FakeClock clock;
    WindowFence fence(clock, {});
    WindowFence::Ticket t = fence.Begin(1, kTimeout).value();
    CHECK(fence.Finish(t, /*fence_needed=*/true));  // e.g. HTTP 500
    CHECK(fence.state(1) == WindowState::kQuarantined);
    CHECK(fence.Quarantined() == std::vector<WindowFence::WindowId>{1});
    Result<WindowFence::Ticket> again = fence.Begin(1, kTimeout);
    REQUIRE_FALSE(again.ok());
    CHECK(again.status().code() == StatusCode::kFailedPrecondition);
    CHECK(again.status().reason() == StatusReason::kWindowQuarantined);
    // Without a lease, time alone never frees it.
    clock.Advance(std::chrono::hours(24));
    CHECK(fence.state(1) == WindowState::kQuarantined);
    REQUIRE(fence.MarkFenced(1).ok());  // the transport re-registered: old rkey dead
    CHECK(fence.state(1) == WindowState::kIdle);
    CHECK(fence.Quarantined().empty());
    CHECK(fence.Begin(1, kTimeout).ok());
  }

  TEST_CASE("window fence: timeouts quarantine, stale tickets change nothing") {
    testing::FakeClock clock;
    WindowFence fence(clock, {});
    WindowFence::Ticket a = fence.Begin(1, seconds(10)).value();
    WindowFence::Ticket b = fence.Begin(2, seconds(20)).value();
    clock.Advance(seconds(10));
    std::vector<WindowFence::Ticket> overdue = fence.CollectOverdue();
    CHECK(overdue == std::vector<WindowFence::Ticket>{a});
    CHECK(fence.state(1) == WindowState::kQuarantined);
    CHECK(fence.state(2) == WindowState::kInFlight);
    CHECK(fence.CollectOverdue().empty());  // reported once
    CHECK_FALSE(fence.Abandon(a));          // already quarantined
    CHECK(fence.Finish(b, false));

    // Fence and reuse window 1; the late answer to the old request must not touch the new one.
    REQUIRE(fence.MarkFenced(1).ok());
    WindowFence::Ticket c = fence.Begin(1, kTimeout).value();
    CHECK(c.epoch != a.epoch);
    CHECK_FALSE(fence.Finish(a, false));
    CHECK_FALSE(fence.Abandon(a));
    CHECK(fence.state(1) == WindowState::kInFlight);
    CHECK(fence.Finish(c, false));
  }

  TEST_CASE("window fence: a late clean response to an abandoned request ends quarantine") {
    testing::FakeClock clock;
    WindowFence fence(clock, {});
    WindowFence::Ticket t = fence.Begin(3, kTimeout).value();
    CHECK(fence.Abandon(t));  // cancelled by the reader
    CHECK(fence.state(3) == WindowState::kQuarantined);
    CHECK(fence.Finish(t, /*fence_needed=*/false));  // ...but the server finished after all
    CHECK(fence.state(3) == WindowState::kIdle);

    WindowFence::Ticket u = fence.Begin(3, kTimeout).value();
    CHECK(fence.Abandon(u));
    CHECK(fence.Finish(u, /*fence_needed=*/true));  // a late 500: still quarantined
    CHECK(fence.state(3) == WindowState::kQuarantined);
  }

  TEST_CASE("window fence: fencing under a live request is refused") {
    testing::FakeClock clock;
    WindowFence fence(clock, {});
    WindowFence::Ticket t = fence.Begin(4, kTimeout).value();
    CHECK(fence.MarkFenced(4).code() == StatusCode::kFailedPrecondition);
    CHECK(fence.Finish(t, false));
    CHECK(fence.MarkFenced(4).ok());   // idle: a no-op
    CHECK(fence.MarkFenced(99).ok());  // never seen: a no-op
  }

  TEST_CASE("window fence: with a lease, quarantine ends by itself") {
    testing::FakeClock clock;
    WindowFence fence(clock, WindowFenceOptions{.lease = seconds(5)});
    WindowFence::Ticket t = fence.Begin(5, kTimeout).value();
    CHECK(fence.Abandon(t));
    clock.Advance(seconds(4));
    CHECK(fence.state(5) == WindowState::kQuarantined);
    CHECK_FALSE(fence.Begin(5, kTimeout).ok());
    // A late failing answer does not extend the lease.
    CHECK(fence.Finish(t, true));
    clock.Advance(seconds(1));
    CHECK(fence.state(5) == WindowState::kIdle);
    CHECK(fence.Quarantined().empty());
    CHECK(fence.Begin(5, kTimeout).ok());
  }
}

}  // namespace
}  // namespace reelfs::rdmaio::wire
