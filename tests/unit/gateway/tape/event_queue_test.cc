// The discrete-event core: order by time then by scheduling order, clamping to now, cancellation.
#include "gateway/tape/internal/event_queue.h"

#include <string>

#include <doctest/doctest.h>

namespace reelfs::gateway::tape {
namespace {

TEST_CASE("event queue: time order, ties in scheduling order, cancel") {
  EventQueue q;
  std::string trace;
  q.Schedule(5, [&] { trace += "b"; });
  q.Schedule(1, [&] { trace += "a"; });
  q.Schedule(5, [&] { trace += "c"; });
  const uint64_t dropped = q.Schedule(3, [&] { trace += "x"; });
  q.Schedule(9, [&] { trace += "d"; });
  q.Cancel(dropped);
  q.Cancel(12345);  // unknown: ignored
  CHECK(q.NextTime() == 1);
  while (!q.Empty()) {
    const double t = q.NextTime();
    q.PopNext()();
    CHECK(q.now() == t);
  }
  CHECK(trace == "abcd");
  CHECK(q.now() == 9);
  q.Schedule(2, [&] { trace += "e"; });  // in the past: runs at now
  CHECK(q.NextTime() == 9);
  q.AdvanceTo(4);  // never backwards
  CHECK(q.now() == 9);
  q.After(1, [] {});
  q.PopNext()();
  q.PopNext()();
  CHECK(q.now() == 10);
  CHECK(trace == "abcde");
  CHECK(q.Empty());
}

}  // namespace
}  // namespace reelfs::gateway::tape
