// MetricsJson consistency (bytes, mounts, outcome counts, distributions) and TimelineSvg
// structure, escaping and size bound.
#include <random>
#include <regex>

#include <doctest/doctest.h>

#include "gateway/tape/internal/timeline_svg.h"
#include "gateway/tape/internal/xml.h"
#include "tests/unit/gateway/tape/tape_test_util.h"

namespace reelfs::gateway::tape {
namespace {

constexpr uint64_t kMB = 1'000'000;

// The number after "key": in `json` (first occurrence), or -1.
double Field(const std::string& json, const std::string& key) {
  const std::regex re("\"" + key + "\":(-?[0-9.eE+-]+)");
  std::smatch m;
  if (!std::regex_search(json, m, re)) return -1;
  return std::stod(m[1].str());
}

TEST_CASE("metrics: counters add up") {
  auto lib = MakeLibrary(DiscreteConfig("sltf", 2));
  for (const char* c : {"A", "B", "C"}) REQUIRE(lib->AddCartridge(c).ok());
  lib->Inject(Fault{.kind = Fault::Kind::kMediaError, .target = "C"});
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<uint64_t> block(0, 1'000'000);
  Completions c;
  uint64_t ok_bytes = 0;
  for (int i = 0; i < 60; ++i) {
    const std::string cart = i % 3 == 0 ? "A" : i % 3 == 1 ? "B" : "C";
    const uint64_t bytes = (i + 1) * 10 * kMB;
    if (cart != "C") ok_bytes += bytes;
    lib->Submit(Recall(cart, block(rng), bytes), c.Callback());
  }
  lib->Submit(Recall("unknown", 0, 1), c.Callback());
  const double end = lib->RunUntilIdle().count();
  REQUIRE(c.done.size() == 61);
  const std::string json = lib->MetricsJson();
  MESSAGE(json);
  CHECK(Field(json, "now_s") == doctest::Approx(end));
  CHECK(Field(json, "submitted") == 61);
  CHECK(Field(json, "completed") == 61);
  CHECK(Field(json, "pending") == 0);
  CHECK(Field(json, "ok") == 40);
  CHECK(Field(json, "media_error") == 21);
  CHECK(Field(json, "stage_fail") == 0);
  CHECK(Field(json, "bytes_read") == doctest::Approx(static_cast<double>(ok_bytes)));
  CHECK(Field(json, "total") == 3);  // mounts: A, B, C once each
  CHECK(json.find(R"("per_cartridge":{"A":1,"B":1,"C":1})") != std::string::npos);
  // Bytes per mount: C moved nothing; A and B together moved every OK byte.
  CHECK(json.find(R"("bytes_per_mount":{"count":3,)") != std::string::npos);
  const double locating = Field(json, "locating");
  const double reading = Field(json, "reading");
  CHECK(reading == doctest::Approx(static_cast<double>(ok_bytes) / 400e6));
  CHECK(locating == doctest::Approx(lib->TotalSeconds(Activity::kLocating)));
  const double share = Field(json, "locate_share");
  CHECK(share > 0);
  CHECK(share < 1);
  CHECK(Field(json, "drive0") > 0);
  CHECK(Field(json, "drive0") <= 1);
  // Fetch A, fetch B, put one of them away, fetch C.
  CHECK(Field(json, "robot_moves") == 4);
  CHECK(Field(json, "robot_utilization") == doctest::Approx(48 / end));
  for (const char* key : {"queue_wait_s", "completion_s", "time_to_first_byte_s"}) {
    CHECK(json.find(std::string("\"") + key + "\":{\"count\":") != std::string::npos);
  }
  CHECK(json.find(R"("completion_s":{"count":61,)") != std::string::npos);
  CHECK(json.find(R"("time_to_first_byte_s":{"count":40,)") != std::string::npos);
}

TEST_CASE("metrics: JSON and XML escaping") {
  // The JSON side is common/json.h's (tests/unit/common/json_test.cc); here, through the library.
  auto lib = MakeLibrary(DiscreteConfig("fifo", 1));
  REQUIRE(lib->AddCartridge("T\"1\\").ok());
  Completions c;
  lib->Submit(Recall("T\"1\\", 0, kMB), c.Callback());
  lib->RunUntilIdle();
  CHECK(lib->MetricsJson().find(R"("per_cartridge":{"T\"1\\":1})") != std::string::npos);
  CHECK(XmlEscape("<a & 'b'>\"") == "&lt;a &amp; &apos;b&apos;&gt;&quot;");
  CHECK(XmlEscape(std::string("x\x01y")) == "xy");
}

TEST_CASE("timeline: a standalone SVG with lanes, axis, legend and escaped labels") {
  auto lib = MakeLibrary(DiscreteConfig("batch", 2));
  REQUIRE(lib->AddCartridge("T<&>1").ok());
  REQUIRE(lib->AddCartridge("T2").ok());
  Completions c;
  lib->Submit(Recall("T<&>1", 1000, 400'000 * kMB), c.Callback());
  lib->Submit(Recall("T2", 1000, 40 * kMB), c.Callback());
  lib->Submit(Recall("T2", 9'000'000, 40 * kMB), c.Callback());
  lib->RunUntilIdle();
  const std::string svg = lib->TimelineSvg();
  CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
  CHECK(svg.find("viewBox=\"0 0 1200 ") != std::string::npos);
  CHECK(svg.find("width=\"1200\"") != std::string::npos);
  CHECK(svg.find("</svg>") != std::string::npos);
  for (const char* lane : {">drive0<", ">drive1<", ">robot0<"}) {
    CHECK(svg.find(lane) != std::string::npos);
  }
  for (const char* legend : {">loading<", ">locating<", ">reading<", ">rewinding<", ">unloading<",
                             ">robot moving<", ">down<"}) {
    CHECK(svg.find(legend) != std::string::npos);
  }
  CHECK(svg.find("T&lt;&amp;&gt;1") != std::string::npos);
  CHECK(svg.find("T<&>1") == std::string::npos);
  CHECK(svg.find("#2a9d8f") != std::string::npos);     // a reading interval
  CHECK(svg.find("min</text>") != std::string::npos);  // axis ticks, in minutes for ~20 min
  CHECK(svg.find("not drawn") == std::string::npos);
}

TEST_CASE("timeline: thousands of intervals stay bounded, with a note when capped") {
  std::vector<std::string> lanes = {"drive0", "robot0"};
  std::vector<Interval> many;
  for (int i = 0; i < 100'000; ++i) {
    // Alternating activities 1 s each over 100,000 s: far below a pixel each.
    many.push_back(Interval{0, i % 2 ? Activity::kReading : Activity::kLocating,
                            static_cast<double>(i), i + 1.0, "RL0001L9"});
  }
  const std::string svg = RenderTimelineSvg(lanes, many, 100'000, 0);
  MESSAGE("100k intervals -> " << svg.size() << " bytes");
  CHECK(svg.size() < 4'000'000);
  CHECK(svg.find("not drawn") != std::string::npos);
  CHECK(svg.find("</svg>") != std::string::npos);

  // Same activity back to back merges into one rectangle.
  std::vector<Interval> same;
  for (int i = 0; i < 5000; ++i) {
    same.push_back(Interval{0, Activity::kReading, static_cast<double>(i), i + 1.0, "A"});
  }
  const std::string merged = RenderTimelineSvg(lanes, same, 5000, 0);
  CHECK(merged.size() < 10'000);
  CHECK(merged.find("not drawn") == std::string::npos);
}

}  // namespace
}  // namespace reelfs::gateway::tape
