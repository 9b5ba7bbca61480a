#include <string>

#include <doctest/doctest.h>

#include "common/listen_address.h"
#include "gateway/config_loader.h"

namespace reelfs::gateway {
namespace {

TEST_CASE("config: the example config loads") {
  Options options;
  Status st = LoadConfigFile(REELFS_SOURCE_DIR "/configs/gateway.example.yaml", &options);
  REQUIRE_MESSAGE(st.ok(), st.ToString());
  CHECK(options.root == "/var/lib/reelfs-gateway");
  CHECK_FALSE(options.create_root);
  CHECK(options.listen == "127.0.0.1:7070");
  CHECK(options.idle_timeout == std::chrono::seconds(60));
  CHECK(options.max_put_size == (5ull << 30));
  CHECK(options.min_part_size == (5ull << 20));
  CHECK(options.multipart_expiry == std::chrono::hours(24 * 7));
  CHECK(options.log_format == "text");
}

TEST_CASE("config: log_format is text or json, a mistake named with its line") {
  Options o;
  REQUIRE(LoadConfigString("log_format: json\n", "t.yaml", &o).ok());
  CHECK(o.log_format == "json");
  Status bad = LoadConfigString("threads: 2\nlog_format: xml\n", "t.yaml", &o);
  CHECK_FALSE(bad.ok());
  CHECK(std::string(bad.message()).find("t.yaml:2") != std::string::npos);
  CHECK(std::string(bad.message()).find("text or json") != std::string::npos);
}

TEST_CASE("config: multipart_expiry takes a duration, 0 for never, no negative") {
  Options o;
  REQUIRE(LoadConfigString("multipart_expiry: 90m\n", "t.yaml", &o).ok());
  CHECK(o.multipart_expiry == std::chrono::minutes(90));
  REQUIRE(LoadConfigString("multipart_expiry: 0\n", "t.yaml", &o).ok());
  CHECK(o.multipart_expiry.count() == 0);
  Status bad = LoadConfigString("multipart_expiry: soon\n", "t.yaml", &o);
  CHECK_FALSE(bad.ok());
  CHECK(std::string(bad.message()).find("multipart_expiry") != std::string::npos);
  CHECK_FALSE(LoadConfigString("multipart_expiry: -5s\n", "t.yaml", &o).ok());
}

TEST_CASE("config: the archive example configs load") {
  Options v;
  Status st = LoadConfigFile(REELFS_SOURCE_DIR "/configs/gateway.archive-versitygw.yaml", &v);
  REQUIRE_MESSAGE(st.ok(), st.ToString());
  CHECK(v.archive.personality == Personality::kVersitygw);
  CHECK(v.archive.versitygw_restore_header == RestoreHeaderGeneration::kCurrent);
  CHECK(v.archive.hints);
  CHECK(v.archive.release_high_bytes == (8ull << 30));
  CHECK(v.archive.release_low_bytes == (4ull << 30));
  CHECK(v.tape.drives == 4);
  CHECK(v.tape.speedup == 1000);
  CHECK(v.tape.scheduler.policy == "batch");
  // faults.example.yaml, found relative to the config file.
  REQUIRE(v.faults.http.size() == 3);
  CHECK(v.faults.http[0].op == "HeadObject");
  CHECK(v.faults.http[0].nth == 3);
  CHECK(v.faults.http[0].error == "SlowDown");
  CHECK(v.faults.http[1].delay == std::chrono::milliseconds(250));
  CHECK(v.faults.http[2].reset_after == (1u << 20));
  REQUIRE(v.faults.library.size() == 4);
  CHECK(v.faults.library[1].fault.kind == tape::Fault::Kind::kRobotStall);
  CHECK(v.faults.library[1].at.count() == doctest::Approx(3600));
  CHECK(v.faults.library[1].fault.duration.count() == doctest::Approx(120));
  CHECK(v.faults.library[3].fault.probability == doctest::Approx(0.01));

  Options a;
  st = LoadConfigFile(REELFS_SOURCE_DIR "/configs/gateway.archive-aws.yaml", &a);
  REQUIRE_MESSAGE(st.ok(), st.ToString());
  CHECK(a.archive.personality == Personality::kAws);
  CHECK(a.archive.expedited_unavailable);
  CHECK(a.tape.drives == 2);
  REQUIRE(a.faults.http.size() == 1);
  CHECK(a.faults.seed == 7);

  Options f;
  st = LoadFaultScenarioFile(REELFS_SOURCE_DIR "/configs/faults.example.yaml", &f.faults);
  REQUIRE_MESSAGE(st.ok(), st.ToString());
  CHECK(f.faults.library.size() == 4);
}

TEST_CASE("config: archive, tape and faults sections reject mistakes") {
  Options o;
  CHECK(LoadConfigString("archive:\n  personality: aws\n", "t", &o).ok());
  CHECK(o.archive.personality == Personality::kAws);
  Status st = LoadConfigString("archive:\n  personality: minio\n", "t", &o);
  CHECK_FALSE(st.ok());
  CHECK(std::string(st.message()).find("archive.personality") != std::string::npos);
  CHECK_FALSE(LoadConfigString("archive:\n  versitygw_restore_header: 2025\n", "t", &o).ok());
  CHECK_FALSE(LoadConfigString("archive:\n  bogus: 1\n", "t", &o).ok());
  CHECK_FALSE(LoadConfigString("archive: 3\n", "t", &o).ok());
  CHECK_FALSE(
      LoadConfigString("archive:\n  release_high_watermark: 1GiB\n  release_low_watermark: 2GiB\n",
                       "t", &o)
          .ok());
  CHECK_FALSE(LoadConfigString("tape:\n  drives: many\n", "t", &o).ok());
  CHECK_FALSE(LoadConfigString("tape:\n  no_such_key: 1\n", "t", &o).ok());
  CHECK(LoadConfigString("tape:\n  speedup: 5000\n", "t", &o).ok());
  CHECK(o.tape.speedup == 5000);
  CHECK_FALSE(
      LoadConfigString("faults:\n  http:\n    - op: GetObject\n      error: SlowDown\n", "t", &o)
          .ok());                                                                   // no trigger
  CHECK_FALSE(LoadConfigString("faults:\n  http:\n    - nth: 1\n", "t", &o).ok());  // no action
  CHECK_FALSE(LoadConfigString("faults:\n  library:\n    - kind: meteor\n", "t", &o).ok());
  CHECK_FALSE(LoadConfigString("archive:\n  faults: /nonexistent.yaml\n", "t", &o).ok());
}

TEST_CASE("config: the archive policy example loads") {
  Options o;
  Status st = LoadConfigFile(REELFS_SOURCE_DIR "/configs/gateway.archive-policy.yaml", &o);
  REQUIRE_MESSAGE(st.ok(), st.ToString());
  const ArchivePolicyOptions& p = o.archive.policy;
  CHECK(p.scan_interval == std::chrono::seconds(10));
  REQUIRE(p.sets.size() == 2);
  CHECK(p.sets[0].name == "checkpoints");
  CHECK(p.sets[0].bucket == "training");
  CHECK(p.sets[0].prefix == "ckpt/");
  CHECK(p.sets[0].after == std::chrono::seconds(30));
  CHECK_FALSE(p.sets[0].order_by_size);
  CHECK(p.sets[0].batch_bytes == (4ull << 30));
  CHECK(p.sets[0].batch_objects == 1000);
  CHECK(p.sets[0].cartridges == std::vector<std::string>{"RLC000L9", "RLC001L9"});
  CHECK(p.sets[0].release_after == std::chrono::hours(1));
  CHECK(p.sets[1].order_by_size);
  CHECK(p.sets[1].after == std::chrono::minutes(10));
  CHECK(p.sets[1].release_after.count() == 0);
  CHECK(p.sets[1].batch_objects == 1000);  // default
}

TEST_CASE("config: archive policy defaults and mistakes, with the key and line") {
  Options o;
  REQUIRE(LoadConfigString("archive:\n  policy:\n    - bucket: bkt\n", "t", &o).ok());
  REQUIRE(o.archive.policy.sets.size() == 1);
  const ArchiveSet& d = o.archive.policy.sets[0];
  CHECK(d.name == "bkt/");
  CHECK(d.prefix.empty());
  CHECK(d.after == std::chrono::seconds(30));
  CHECK(d.cartridges == std::vector<std::string>{"RL0000L9"});
  CHECK(o.archive.policy.scan_interval == std::chrono::seconds(10));
  REQUIRE(
      LoadConfigString("archive:\n  policy:\n    - {bucket: bkt, cartridges: RLX000L9}\n", "t", &o)
          .ok());
  CHECK(o.archive.policy.sets[0].cartridges == std::vector<std::string>{"RLX000L9"});

  auto error = [](const std::string& yaml) {
    Options x;
    Status st = LoadConfigString(yaml, "cfg.yaml", &x);
    CHECK_FALSE(st.ok());
    return std::string(st.message());
  };
  std::string m = error("archive:\n  policy:\n    - prefix: a/\n");
  CHECK(m.find("archive.policy[].bucket") != std::string::npos);
  CHECK(m.find("is required") != std::string::npos);
  m = error("archive:\n  policy:\n    - bucket: bkt\n      after: soon\n");
  CHECK(m.find("cfg.yaml:4") != std::string::npos);
  CHECK(m.find("archive.policy[].after") != std::string::npos);
  m = error("archive:\n  policy:\n    - bucket: bkt\n      order: random\n");
  CHECK(m.find("must be key or size") != std::string::npos);
  m = error("archive:\n  policy:\n    - bucket: bkt\n      colour: red\n");
  CHECK(m.find("archive.policy[].colour: unknown key") != std::string::npos);
  m = error("archive:\n  policy:\n    - bucket: Bad_Bucket\n");
  CHECK(m.find("not a bucket name") != std::string::npos);
  m = error("archive:\n  policy:\n    - bucket: bkt\n      batch_bytes: 0\n");
  CHECK(m.find("must be > 0") != std::string::npos);
  m = error("archive:\n  policy:\n    - bucket: bkt\n      batch_objects: 0\n");
  CHECK(m.find("must be >= 1") != std::string::npos);
  m = error("archive:\n  policy:\n    - bucket: bkt\n      cartridges: []\n");
  CHECK(m.find("must name a cartridge") != std::string::npos);
  m = error("archive:\n  policy:\n    - bucket: bkt\n      cartridges: [\"has space\"]\n");
  CHECK(m.find("is not a volume serial") != std::string::npos);
  m = error("archive:\n  policy:\n    - bucket: bkt\n      prefix: /abs\n");
  CHECK(m.find("archive.policy[].prefix") != std::string::npos);
  m = error(
      "archive:\n  policy:\n    - {bucket: bkt, prefix: ckpt/}\n    - {bucket: bkt, prefix: c}\n");
  CHECK(m.find("overlaps") != std::string::npos);
  m = error(
      "archive:\n  policy:\n    - {bucket: bkt, name: x, prefix: a/}\n"
      "    - {bucket: ckt, name: x}\n");
  CHECK(m.find("used twice") != std::string::npos);
  m = error("archive:\n  policy:\n    bucket: bkt\n");
  CHECK(m.find("expected a list of archive sets") != std::string::npos);
  m = error("archive:\n  scan_interval: 1ms\n");
  CHECK(m.find("archive.scan_interval: must be >= 100ms") != std::string::npos);
  m = error("archive:\n  policy:\n    - bucket: bkt\n      release_after: -1s\n");
  CHECK(m.find("archive.policy[].release_after") != std::string::npos);
  // Two sets in different buckets, or disjoint prefixes, are fine.
  CHECK(LoadConfigString("archive:\n  policy:\n    - {bucket: bkt, prefix: a/}\n"
                         "    - {bucket: bkt, prefix: b/}\n    - {bucket: ckt}\n",
                         "t", &o)
            .ok());
}

TEST_CASE("config: units, overrides, unknown keys with line numbers") {
  Options options;
  REQUIRE(
      LoadConfigString("threads: 8\nidle_timeout: 2m\nmax_put_size: 1GiB\n", "t", &options).ok());
  CHECK(options.threads == 8);
  CHECK(options.idle_timeout == std::chrono::seconds(120));
  CHECK(options.max_put_size == (1ull << 30));
  CHECK(options.listen == "127.0.0.1:7070");  // untouched default

  Status st =
      LoadConfigString("root: /x\nlisten: 127.0.0.1:1\nbogus_key: 1\n", "cfg.yaml", &options);
  CHECK_FALSE(st.ok());
  CHECK(std::string(st.message()).find("cfg.yaml:3") != std::string::npos);
  CHECK(std::string(st.message()).find("bogus_key") != std::string::npos);

  CHECK_FALSE(LoadConfigString("max_put_size: lots\n", "t", &options).ok());
  CHECK_FALSE(LoadConfigString("threads: 0\n", "t", &options).ok());
  CHECK_FALSE(LoadConfigString("threads: [1]\n", "t", &options).ok());
  CHECK_FALSE(LoadConfigString("root: [unclosed\n", "t", &options).ok());
  CHECK_FALSE(LoadConfigString("- a list\n", "t", &options).ok());
  CHECK(LoadConfigString("", "t", &options).ok());
}

TEST_CASE("listen addresses and the loopback guard") {
  auto a = ParseListenAddress("127.0.0.1:0");
  REQUIRE(a.ok());
  CHECK(a->port == 0);
  CHECK(IsLoopbackHost(a->host));
  auto b = ParseListenAddress("[::1]:7070");
  REQUIRE(b.ok());
  CHECK(b->host == "::1");
  CHECK(IsLoopbackHost(b->host));
  auto c = ParseListenAddress("localhost:80");
  REQUIRE(c.ok());
  CHECK(c->host == "127.0.0.1");
  CHECK_FALSE(IsLoopbackHost("0.0.0.0"));
  CHECK_FALSE(IsLoopbackHost("10.1.2.3"));
  CHECK(IsLoopbackHost("127.1.2.3"));
  CHECK_FALSE(ParseListenAddress("127.0.0.1").ok());
  CHECK_FALSE(ParseListenAddress("127.0.0.1:99999").ok());
  CHECK_FALSE(ParseListenAddress("example.com:80").ok());
}

}  // namespace
}  // namespace reelfs::gateway
