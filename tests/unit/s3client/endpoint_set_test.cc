#include "s3/client/endpoint_set.h"

#include <doctest/doctest.h>

using namespace reelfs;
using namespace reelfs::s3;
using namespace std::chrono_literals;
using Outcome = EndpointSet::Outcome;

namespace {
const EndpointSet::Time t0{};

std::unique_ptr<EndpointSet> Three() {
  auto set = EndpointSet::Create({"http://a:1", "http://b:2", "http://c:3"}, {100ms, 800ms});
  REQUIRE(set.ok());
  return std::move(set).value();
}
}  // namespace

TEST_CASE("endpoint list: split, parsed, bad ones named") {
  CHECK(EndpointSet::SplitList(" http://a:1, ,http://b:2 ") ==
        std::vector<std::string>{"http://a:1", "http://b:2"});
  CHECK(EndpointSet::SplitList("http://a:1") == std::vector<std::string>{"http://a:1"});
  auto bad = EndpointSet::Create({"http://a:1", "ftp://b"}, {});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == StatusCode::kInvalidArgument);
  CHECK(bad.status().ToString().find("ftp://b") != std::string::npos);
  CHECK_FALSE(EndpointSet::Create({}, {}).ok());
  CHECK_FALSE(EndpointSet::Create({"http://a:1"}, {0ms, 1ms}).ok());
}

TEST_CASE("new attempts go to the endpoint with the fewest in flight, in turn among equals") {
  auto set = Three();
  CHECK(set->Acquire() == 0);
  CHECK(set->Acquire() == 1);
  CHECK(set->Acquire() == 2);
  set->Finish(1, Outcome::kOk, 10, t0);
  CHECK(set->Acquire() == 1);  // the only one with nothing in flight
  set->Finish(0, Outcome::kOk, 5, t0);
  set->Finish(2, Outcome::kOk, 5, t0);
  set->Finish(1, Outcome::kOk, 5, t0);
  const auto stats = set->Stats();
  CHECK(stats[1].requests == 2);
  CHECK(stats[1].bytes == 15);
  CHECK(stats[1].in_flight == 0);
  CHECK(stats[0].url == "http://a:1");
}

TEST_CASE("a failed endpoint is avoided until a probe finds it back; backoff doubles") {
  auto set = Three();
  const size_t a = set->Acquire();
  REQUIRE(a == 0);
  set->Finish(0, Outcome::kEndpointFailure, 0, t0);
  CHECK_FALSE(set->Stats()[0].up);
  CHECK(set->Stats()[0].downs == 1);
  CHECK(set->OtherUp(0));
  for (int i = 0; i < 6; ++i) {
    const size_t e = set->Acquire(0);
    CHECK(e != 0);
    set->Finish(e, Outcome::kOk, 0, t0);
  }
  std::optional<EndpointSet::Time> next;
  CHECK(set->TakeDueProbes(t0 + 50ms, &next).empty());
  REQUIRE(next.has_value());
  CHECK(*next == t0 + 100ms);
  CHECK(set->TakeDueProbes(t0 + 100ms, nullptr) == std::vector<size_t>{0});
  CHECK(set->TakeDueProbes(t0 + 100ms, nullptr).empty());  // one probe at a time
  set->ProbeResult(0, false, t0 + 110ms);                  // still dead: 200 ms now
  CHECK(set->TakeDueProbes(t0 + 300ms, nullptr).empty());
  CHECK(set->TakeDueProbes(t0 + 310ms, nullptr) == std::vector<size_t>{0});
  set->ProbeResult(0, true, t0 + 320ms);
  CHECK(set->Stats()[0].up);
  CHECK(set->Stats()[0].probes == 2);
  // Back in the rotation: the next attempts reach it again.
  bool reached = false;
  for (int i = 0; i < 3; ++i) reached = reached || set->Acquire() == 0;
  CHECK(reached);
}

TEST_CASE("an error answer says the endpoint is alive; a cancelled attempt says nothing") {
  auto set = Three();
  set->Acquire();
  set->Finish(0, Outcome::kOtherError, 0, t0);
  CHECK(set->Stats()[0].up);
  CHECK(set->Stats()[0].errors == 1);
  set->Acquire();
  set->Finish(1, Outcome::kCancelled, 0, t0);
  CHECK(set->Stats()[1].up);
  CHECK(set->Stats()[1].errors == 0);
}

TEST_CASE("all down: attempts go to the one expected back first; a success brings it back") {
  auto set = Three();
  for (size_t i = 0; i < 3; ++i) {
    set->Acquire();
  }
  set->Finish(2, Outcome::kEndpointFailure, 0, t0);
  set->Finish(0, Outcome::kEndpointFailure, 0, t0 + 10ms);
  set->Finish(1, Outcome::kEndpointFailure, 0, t0 + 20ms);
  CHECK_FALSE(set->OtherUp(0));
  CHECK(set->Acquire() == 2);
  set->Finish(2, Outcome::kOk, 0, t0 + 30ms);
  CHECK(set->Stats()[2].up);
}

TEST_CASE("one endpoint is never marked down: the retry policy alone decides") {
  auto one = EndpointSet::Single(Endpoint{"http", "127.0.0.1", 7070, ""});
  CHECK(one->Stats()[0].url == "http://127.0.0.1:7070");
  CHECK(one->Acquire() == 0);
  one->Finish(0, Outcome::kEndpointFailure, 0, t0);
  CHECK(one->Stats()[0].up);
  CHECK(one->Stats()[0].errors == 1);
  CHECK(one->TakeDueProbes(t0 + 1h, nullptr).empty());
}
