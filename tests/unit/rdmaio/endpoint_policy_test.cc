#include "rdmaio/wire/endpoint_policy.h"

#include <chrono>

#include <doctest/doctest.h>

#include "tests/fakes/fake_clock.h"

namespace reelfs::rdmaio::wire {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

constexpr std::string_view kGw = "https://gw1:7070";

EndpointPolicyOptions Options() {
  return EndpointPolicyOptions{.failures_before_decline = 3,
                               .reprobe_after = seconds(60),
                               .max_reprobe_after = seconds(240),
                               .probe_lease = minutes(5)};
}

TEST_SUITE("rdmaio") {
  TEST_CASE("endpoint policy: GET is tried on an unknown endpoint and confirmed") {
    testing::FakeClock clock;
    EndpointPolicy policy(clock, Options());
    CHECK(policy.state(kGw, RdmaOp::kGet) == OpState::kUnknown);
    CHECK(policy.Choose(kGw, RdmaOp::kGet) == Route::kRdma);
    policy.Report(kGw, RdmaOp::kGet, Route::kRdma, EndpointSignal::kConfirmed);
    CHECK(policy.state(kGw, RdmaOp::kGet) == OpState::kConfirmed);
    CHECK(policy.Choose(kGw, RdmaOp::kGet) == Route::kRdma);
    // Another endpoint knows nothing of it.
    CHECK(policy.state("https://gw2:7070", RdmaOp::kGet) == OpState::kUnknown);
  }

  TEST_CASE("endpoint policy: never an RDMA PUT to an endpoint not confirmed RDMA-capable") {
    testing::FakeClock clock;
    EndpointPolicy policy(clock, Options());
    CHECK(policy.Choose(kGw, RdmaOp::kPut) == Route::kHttp);
    CHECK(policy.Choose(kGw, RdmaOp::kUploadPart) == Route::kHttp);
    CHECK_FALSE(policy.WritesAllowed(kGw));
    // A GET that was merely served from the body does not confirm anything.
    policy.Report(kGw, RdmaOp::kGet, Route::kRdma, EndpointSignal::kNone);
    CHECK(policy.Choose(kGw, RdmaOp::kPut) == Route::kHttp);
    // A completed RDMA GET does.
    policy.Report(kGw, RdmaOp::kGet, Route::kRdma, EndpointSignal::kConfirmed);
    CHECK(policy.WritesAllowed(kGw));
    CHECK(policy.Choose(kGw, RdmaOp::kPut) == Route::kRdma);
    // AIStor-style unmarked PUT success says kNone: PUT stays usable, state unknown.
    policy.Report(kGw, RdmaOp::kPut, Route::kRdma, EndpointSignal::kNone);
    CHECK(policy.Choose(kGw, RdmaOp::kPut) == Route::kRdma);
  }

  TEST_CASE("endpoint policy: one sighting of an ignored token stops RDMA writes") {
    testing::FakeClock clock;
    EndpointPolicy policy(clock, Options());
    policy.Report(kGw, RdmaOp::kGet, Route::kRdma, EndpointSignal::kConfirmed);
    policy.Report(kGw, RdmaOp::kPut, Route::kRdma, EndpointSignal::kConfirmed);
    CHECK(policy.Choose(kGw, RdmaOp::kPut) == Route::kRdma);
    // The server was reconfigured without RDMA: a GET comes back with the body, no reply header.
    policy.Report(kGw, RdmaOp::kGet, Route::kRdma, EndpointSignal::kTokenIgnored);
    CHECK(policy.state(kGw, RdmaOp::kGet) == OpState::kDeclined);
    CHECK_FALSE(policy.WritesAllowed(kGw));
    CHECK(policy.Choose(kGw, RdmaOp::kPut) == Route::kHttp);
    // Even after re-probe time: writes wait for a confirmed transfer.
    clock.Advance(minutes(10));
    CHECK(policy.Choose(kGw, RdmaOp::kPut) == Route::kHttp);
    CHECK(policy.Choose(kGw, RdmaOp::kGet) == Route::kRdmaProbe);
    policy.Report(kGw, RdmaOp::kGet, Route::kRdmaProbe, EndpointSignal::kConfirmed);
    CHECK(policy.Choose(kGw, RdmaOp::kPut) == Route::kRdma);
  }

  TEST_CASE("endpoint policy: a two-phase write skips the write guard, not the op's decline") {
    testing::FakeClock clock;
    EndpointPolicy policy(clock, Options());
    // Unknown endpoint: a plain write stays on HTTP, a PREPARE-first write may try RDMA.
    CHECK(policy.Choose(kGw, RdmaOp::kPut) == Route::kHttp);
    CHECK(policy.ChooseTwoPhaseWrite(kGw, RdmaOp::kPut) == Route::kRdma);
    CHECK(policy.ChooseTwoPhaseWrite(kGw, RdmaOp::kUploadPart) == Route::kRdma);
    // PREPARE declined: that op goes over HTTP until its re-probe, the other write op does not.
    policy.Report(kGw, RdmaOp::kPut, Route::kRdma, EndpointSignal::kDeclined);
    CHECK(policy.state(kGw, RdmaOp::kPut) == OpState::kDeclined);
    CHECK(policy.ChooseTwoPhaseWrite(kGw, RdmaOp::kPut) == Route::kHttp);
    CHECK(policy.ChooseTwoPhaseWrite(kGw, RdmaOp::kUploadPart) == Route::kRdma);
    CHECK_FALSE(policy.WritesAllowed(kGw));
    clock.Advance(seconds(61));
    CHECK(policy.ChooseTwoPhaseWrite(kGw, RdmaOp::kPut) == Route::kRdmaProbe);
    // A confirmed two-phase write confirms the endpoint for writes.
    policy.Report(kGw, RdmaOp::kPut, Route::kRdmaProbe, EndpointSignal::kConfirmed);
    CHECK(policy.WritesAllowed(kGw));
    CHECK(policy.Choose(kGw, RdmaOp::kPut) == Route::kRdma);
  }

  TEST_CASE("endpoint policy: operations are independent (vgwrdma refuses UploadPart only)") {
    testing::FakeClock clock;
    EndpointPolicy policy(clock, Options());
    policy.Report(kGw, RdmaOp::kGet, Route::kRdma, EndpointSignal::kConfirmed);
    policy.Report(kGw, RdmaOp::kUploadPart, Route::kRdma, EndpointSignal::kDeclined);
    CHECK(policy.Choose(kGw, RdmaOp::kUploadPart) == Route::kHttp);
    CHECK(policy.Choose(kGw, RdmaOp::kPut) == Route::kRdma);
    CHECK(policy.Choose(kGw, RdmaOp::kGet) == Route::kRdma);
    CHECK(policy.WritesAllowed(kGw));
  }

  TEST_CASE("endpoint policy: a decline falls back at once; failures only when repeated") {
    testing::FakeClock clock;
    EndpointPolicy policy(clock, Options());
    policy.Report(kGw, RdmaOp::kGet, Route::kRdma, EndpointSignal::kConfirmed);
    policy.Report(kGw, RdmaOp::kGet, Route::kRdma, EndpointSignal::kFailed);
    policy.Report(kGw, RdmaOp::kGet, Route::kRdma, EndpointSignal::kFailed);
    CHECK(policy.Choose(kGw, RdmaOp::kGet) == Route::kRdma);
    // A success in between resets the count.
    policy.Report(kGw, RdmaOp::kGet, Route::kRdma, EndpointSignal::kConfirmed);
    policy.Report(kGw, RdmaOp::kGet, Route::kRdma, EndpointSignal::kFailed);
    policy.Report(kGw, RdmaOp::kGet, Route::kRdma, EndpointSignal::kFailed);
    CHECK(policy.state(kGw, RdmaOp::kGet) == OpState::kConfirmed);
    policy.Report(kGw, RdmaOp::kGet, Route::kRdma, EndpointSignal::kFailed);
    CHECK(policy.state(kGw, RdmaOp::kGet) == OpState::kDeclined);
    CHECK(policy.Choose(kGw, RdmaOp::kGet) == Route::kHttp);

    EndpointPolicy other(clock, Options());
    other.Report(kGw, RdmaOp::kGet, Route::kRdma, EndpointSignal::kDeclined);
    CHECK(other.Choose(kGw, RdmaOp::kGet) == Route::kHttp);
  }

  TEST_CASE("endpoint policy: re-probe once, back off by doubling, recover on success") {
    testing::FakeClock clock;
    EndpointPolicy policy(clock, Options());
    policy.Report(kGw, RdmaOp::kGet, Route::kRdma, EndpointSignal::kDeclined);
    clock.Advance(seconds(59));
    CHECK(policy.Choose(kGw, RdmaOp::kGet) == Route::kHttp);
    clock.Advance(seconds(1));
    CHECK(policy.Choose(kGw, RdmaOp::kGet) == Route::kRdmaProbe);
    // Only one probe at a time.
    CHECK(policy.Choose(kGw, RdmaOp::kGet) == Route::kHttp);
    policy.Report(kGw, RdmaOp::kGet, Route::kHttp, EndpointSignal::kConfirmed);  // ignored
    CHECK(policy.state(kGw, RdmaOp::kGet) == OpState::kDeclined);
    // The probe is declined again: wait 120 s, then 240 s, then capped at 240 s.
    policy.Report(kGw, RdmaOp::kGet, Route::kRdmaProbe, EndpointSignal::kDeclined);
    for (int wait : {120, 240, 240}) {
      CAPTURE(wait);
      clock.Advance(seconds(wait - 1));
      CHECK(policy.Choose(kGw, RdmaOp::kGet) == Route::kHttp);
      clock.Advance(seconds(1));
      CHECK(policy.Choose(kGw, RdmaOp::kGet) == Route::kRdmaProbe);
      policy.Report(kGw, RdmaOp::kGet, Route::kRdmaProbe, EndpointSignal::kFailed);
    }
    clock.Advance(seconds(240));
    REQUIRE(policy.Choose(kGw, RdmaOp::kGet) == Route::kRdmaProbe);
    policy.Report(kGw, RdmaOp::kGet, Route::kRdmaProbe, EndpointSignal::kConfirmed);
    CHECK(policy.state(kGw, RdmaOp::kGet) == OpState::kConfirmed);
    CHECK(policy.Choose(kGw, RdmaOp::kGet) == Route::kRdma);
    // A later decline starts again from the initial wait.
    policy.Report(kGw, RdmaOp::kGet, Route::kRdma, EndpointSignal::kDeclined);
    clock.Advance(seconds(60));
    CHECK(policy.Choose(kGw, RdmaOp::kGet) == Route::kRdmaProbe);
  }

  TEST_CASE("endpoint policy: a lost or inconclusive probe does not block probing forever") {
    testing::FakeClock clock;
    EndpointPolicy policy(clock, Options());
    policy.Report(kGw, RdmaOp::kGet, Route::kRdma, EndpointSignal::kDeclined);
    clock.Advance(seconds(60));
    CHECK(policy.Choose(kGw, RdmaOp::kGet) == Route::kRdmaProbe);
    // Never reported: after the lease another probe may go.
    clock.Advance(minutes(5) - seconds(1));
    CHECK(policy.Choose(kGw, RdmaOp::kGet) == Route::kHttp);
    clock.Advance(seconds(1));
    CHECK(policy.Choose(kGw, RdmaOp::kGet) == Route::kRdmaProbe);
    // Inconclusive (a small object served inline): the next request probes again.
    policy.Report(kGw, RdmaOp::kGet, Route::kRdmaProbe, EndpointSignal::kNone);
    CHECK(policy.Choose(kGw, RdmaOp::kGet) == Route::kRdmaProbe);
  }

  TEST_CASE("endpoint policy: late answers from before a decline are ignored") {
    testing::FakeClock clock;
    EndpointPolicy policy(clock, Options());
    policy.Report(kGw, RdmaOp::kGet, Route::kRdma, EndpointSignal::kDeclined);
    policy.Report(kGw, RdmaOp::kGet, Route::kRdma, EndpointSignal::kConfirmed);  // stale
    CHECK(policy.state(kGw, RdmaOp::kGet) == OpState::kDeclined);
    CHECK(policy.Choose(kGw, RdmaOp::kGet) == Route::kHttp);
  }
}

}  // namespace
}  // namespace reelfs::rdmaio::wire
