// `reelfs mount` flag parsing: defaults, the BUCKET[/PREFIX] split, and rejections.
#include "cli/mount_options.h"

#include <unistd.h>

#include <doctest/doctest.h>

namespace reelfs::cli {
namespace {

MountFlags Flags() {
  MountFlags f;
  f.source = "bucket";
  f.mountpoint = "/tmp";
  return f;
}

TEST_SUITE("cli") {
  TEST_CASE("mount: defaults") {
    auto c = ParseMountFlags(Flags());
    REQUIRE(c.ok());
    CHECK(c->mount.bucket == "bucket");
    CHECK(c->mount.prefix == "");
    CHECK(c->mount.uid == getuid());
    CHECK(c->mount.gid == getgid());
    CHECK(c->mount.file_mode == 0644);  // writable by default
    CHECK(c->mount.dir_mode == 0755);
    CHECK_FALSE(c->mount.write.read_only);
    CHECK_FALSE(c->mount.write.allow_delete);
    CHECK(c->mount.write.part_size == (8ull << 20));
    CHECK(c->mount.metadata_ttl == std::chrono::hours(1));
    CHECK(c->mount.negative_ttl == std::chrono::seconds(60));
    CHECK(c->mount.max_memory == (1ull << 30));
    CHECK(c->mount.prefetch.part_size == (8ull << 20));
    CHECK(c->daemon.mountpoint == "/tmp");
    CHECK(c->daemon.fsname == "reelfs:bucket");
    CHECK(c->daemon.subtype == "reelfs");
    CHECK(c->daemon.max_threads == 16);
    CHECK(c->daemon.read_ahead_kb == 4096);
    CHECK_FALSE(c->daemon.allow_other);
    CHECK_FALSE(c->daemon.clone_fd);
    CHECK_FALSE(c->foreground);
    CHECK_FALSE(c->rdma.enabled);
  }

  TEST_CASE("mount: --direct-io reaches the file system and the daemon") {
    auto c = ParseMountFlags(Flags());
    REQUIRE(c.ok());
    CHECK_FALSE(c->mount.direct_io_reads);  // the page cache by default
    CHECK_FALSE(c->daemon.direct_io);
    MountFlags f = Flags();
    f.direct_io = true;
    c = ParseMountFlags(f);
    REQUIRE(c.ok());
    CHECK(c->mount.direct_io_reads);
    CHECK(c->daemon.direct_io);
  }

  TEST_CASE("mount: --read-only, --allow-delete, --write-part-size") {
    MountFlags f = Flags();
    f.read_only = true;
    auto c = ParseMountFlags(f);
    REQUIRE(c.ok());
    CHECK(c->mount.write.read_only);
    CHECK(c->mount.file_mode == 0444);  // read-only modes unless given
    CHECK(c->mount.dir_mode == 0555);
    f.file_mode = "0600";
    CHECK(ParseMountFlags(f)->mount.file_mode == 0600);
    MountFlags g = Flags();
    g.allow_delete = true;
    g.write_part_size = "16MiB";
    c = ParseMountFlags(g);
    REQUIRE(c.ok());
    CHECK(c->mount.write.allow_delete);
    CHECK(c->mount.write.part_size == (16ull << 20));
    g.write_part_size = "4MiB";  // below S3's 5 MiB minimum part
    CHECK(ParseMountFlags(g).status().code() == StatusCode::kInvalidArgument);
    g.write_part_size = "6GiB";  // above the 5 GiB maximum
    CHECK(ParseMountFlags(g).status().code() == StatusCode::kInvalidArgument);
  }

  TEST_CASE("mount: --write-parts-in-flight") {
    MountFlags f = Flags();
    CHECK(ParseMountFlags(f)->mount.write.max_parts_in_flight == 4);
    f.write_parts_in_flight = 8;
    CHECK(ParseMountFlags(f)->mount.write.max_parts_in_flight == 8);
    for (int bad : {0, -1, 65}) {
      f.write_parts_in_flight = bad;
      CHECK(ParseMountFlags(f).status().code() == StatusCode::kInvalidArgument);
    }
  }

  TEST_CASE("mount: --copy-threshold, --copy-part-size (rename's copies)") {
    MountFlags f = Flags();
    auto c = ParseMountFlags(f);
    REQUIRE(c.ok());
    CHECK(c->mount.write.copy_threshold == (5ull << 30));
    CHECK(c->mount.write.copy_part_size == (512ull << 20));
    f.copy_threshold = "8MiB";
    f.copy_part_size = "5MiB";
    c = ParseMountFlags(f);
    REQUIRE(c.ok());
    CHECK(c->mount.write.copy_threshold == (8ull << 20));
    CHECK(c->mount.write.copy_part_size == (5ull << 20));
    f.copy_threshold = "6GiB";  // CopyObject copies at most 5 GiB
    CHECK(ParseMountFlags(f).status().code() == StatusCode::kInvalidArgument);
    f.copy_threshold = "1MiB";  // small thresholds force the multipart copy (tests do)
    CHECK(ParseMountFlags(f).ok());
    f.copy_part_size = "4MiB";
    CHECK(ParseMountFlags(f).status().code() == StatusCode::kInvalidArgument);
    f.copy_part_size = "6GiB";
    CHECK(ParseMountFlags(f).status().code() == StatusCode::kInvalidArgument);
  }

  TEST_CASE("mount: spliced reads: on by default where they work, --splice-slow-window") {
    auto c = ParseMountFlags(Flags());
    REQUIRE(c.ok());
    CHECK(c->splice == SpliceMode::kAuto);
    CHECK(c->mount.splice.slow_window == (8ull << 20));
    MountFlags f = Flags();
    f.splice_reads = true;
    f.splice_slow_window = "0";  // never hand a slow stream over
    c = ParseMountFlags(f);
    REQUIRE(c.ok());
    CHECK(c->splice == SpliceMode::kOn);
    CHECK(c->mount.splice.slow_window == 0);
    MountFlags off = Flags();
    off.no_splice_reads = true;
    CHECK(ParseMountFlags(off)->splice == SpliceMode::kOff);
    off.splice_reads = true;
    CHECK_FALSE(ParseMountFlags(off).ok());  // both: a contradiction, refused
    MountFlags bad = Flags();
    bad.splice_slow_window = "lots";
    CHECK_FALSE(ParseMountFlags(bad).ok());
  }

  TEST_CASE("mount: --rdma, --rdma=DEV, --rdma-sessions") {
    MountFlags f = Flags();
    f.rdma = true;
    auto c = ParseMountFlags(f);
    REQUIRE(c.ok());
    CHECK(c->rdma.enabled);
    CHECK(c->rdma.device.empty());
    CHECK(c->rdma.sessions == 4);
    f.rdma_device = "rxe0";
    f.rdma_sessions = 8;
    c = ParseMountFlags(f);
    REQUIRE(c.ok());
    CHECK(c->rdma.device == "rxe0");
    CHECK(c->rdma.sessions == 8);
    f.rdma_sessions = 0;
    CHECK_FALSE(ParseMountFlags(f).ok());
    f.rdma_sessions = 65;
    CHECK_FALSE(ParseMountFlags(f).ok());
    // A session count or a device without --rdma is a mistake, not a silent no-op.
    MountFlags g = Flags();
    g.rdma_sessions = 2;
    CHECK(ParseMountFlags(g).status().code() == StatusCode::kInvalidArgument);
  }

  TEST_CASE(
      "mount: --rdma-transport auto (default), rc, dc; anything else or without --rdma fails") {
    MountFlags f = Flags();
    f.rdma = true;
    auto c = ParseMountFlags(f);
    REQUIRE(c.ok());
    CHECK(c->rdma.transport == RdmaTransport::kAuto);
    f.rdma_transport = "rc";
    REQUIRE(ParseMountFlags(f).ok());
    CHECK(ParseMountFlags(f)->rdma.transport == RdmaTransport::kRc);
    f.rdma_transport = "dc";
    REQUIRE(ParseMountFlags(f).ok());
    CHECK(ParseMountFlags(f)->rdma.transport == RdmaTransport::kDc);
    f.rdma_transport = "DC";
    CHECK(ParseMountFlags(f).status().code() == StatusCode::kInvalidArgument);
    MountFlags g = Flags();
    g.rdma_transport = "dc";
    CHECK(ParseMountFlags(g).status().code() == StatusCode::kInvalidArgument);
  }

  TEST_CASE("mount: source and prefix") {
    std::string bucket, prefix;
    SUBCASE("prefix gets a trailing slash") {
      REQUIRE(ParseMountSource("b/data/set", &bucket, &prefix).ok());
      CHECK(bucket == "b");
      CHECK(prefix == "data/set/");
    }
    SUBCASE("s3:// is accepted") {
      REQUIRE(ParseMountSource("s3://b/p/", &bucket, &prefix).ok());
      CHECK(bucket == "b");
      CHECK(prefix == "p/");
    }
    SUBCASE("bucket only, trailing slash") {
      REQUIRE(ParseMountSource("b/", &bucket, &prefix).ok());
      CHECK(prefix == "");
    }
    SUBCASE("rejects") {
      CHECK_FALSE(ParseMountSource("", &bucket, &prefix).ok());
      CHECK_FALSE(ParseMountSource("/p", &bucket, &prefix).ok());
      CHECK_FALSE(ParseMountSource("b/a//c", &bucket, &prefix).ok());
    }
    MountFlags f = Flags();
    f.source = "b/x/y";
    auto c = ParseMountFlags(f);
    REQUIRE(c.ok());
    CHECK(c->daemon.fsname == "reelfs:b/x/y");
  }

  TEST_CASE("mount: values with units") {
    MountFlags f = Flags();
    f.file_mode = "640";
    f.dir_mode = "0750";
    f.metadata_ttl = "5m";
    f.negative_ttl = "0";
    f.max_memory = "256MiB";
    f.part_size = "16MiB";
    f.uid = "1000";
    f.gid = "100";
    f.max_threads = 4;
    f.read_ahead_kb = 0;
    auto c = ParseMountFlags(f);
    REQUIRE(c.ok());
    CHECK(c->mount.file_mode == 0640);
    CHECK(c->mount.dir_mode == 0750);
    CHECK(c->mount.metadata_ttl == std::chrono::minutes(5));
    CHECK(c->mount.negative_ttl == std::chrono::seconds(0));
    CHECK(c->mount.max_memory == (256ull << 20));
    CHECK(c->mount.prefetch.part_size == (16ull << 20));
    CHECK(c->mount.uid == 1000);
    CHECK(c->mount.gid == 100);
    CHECK(c->daemon.max_threads == 4);
    CHECK(c->daemon.read_ahead_kb == 0);
  }

  TEST_CASE("mount: rejects") {
    struct Bad {
      const char* name;
      void (*apply)(MountFlags&);
    };
    const Bad bad[] = {
        {"--file-mode 999", [](MountFlags& f) { f.file_mode = "999"; }},
        {"--file-mode 17777", [](MountFlags& f) { f.file_mode = "17777"; }},
        {"--dir-mode rwx", [](MountFlags& f) { f.dir_mode = "rwx"; }},
        {"--max-memory 12 parsecs", [](MountFlags& f) { f.max_memory = "12 parsecs"; }},
        {"--max-memory 0", [](MountFlags& f) { f.max_memory = "0"; }},
        {"--part-size 6GiB", [](MountFlags& f) { f.part_size = "6GiB"; }},
        {"--metadata-ttl soon", [](MountFlags& f) { f.metadata_ttl = "soon"; }},
        {"--uid -1", [](MountFlags& f) { f.uid = "-1"; }},
        {"--gid x", [](MountFlags& f) { f.gid = "x"; }},
        {"--max-threads 0", [](MountFlags& f) { f.max_threads = 0; }},
        {"--read-ahead-kb -5", [](MountFlags& f) { f.read_ahead_kb = -5; }},
        {"missing mountpoint", [](MountFlags& f) { f.mountpoint = "/nonexistent/reelfs/mnt"; }},
        {"mountpoint is a file", [](MountFlags& f) { f.mountpoint = "/etc/hostname"; }},
        {"no bucket", [](MountFlags& f) { f.source = ""; }},
        {"log file and syslog",
         [](MountFlags& f) {
           f.log_file = "/tmp/x.log";
           f.syslog = true;
         }},
    };
    for (const Bad& b : bad) {
      CAPTURE(b.name);
      MountFlags f = Flags();
      b.apply(f);
      auto c = ParseMountFlags(f);
      CHECK_FALSE(c.ok());
      if (!c.ok()) CHECK(c.status().code() != StatusCode::kOk);
    }
  }

  TEST_CASE("mount: tape defaults") {
    auto c = ParseMountFlags(Flags());
    REQUIRE(c.ok());
    CHECK(c->mount.tape.offline == fuse::OfflineMode::kWait);
    CHECK(c->mount.tape.offline_wait == std::chrono::minutes(30));
    CHECK(c->restorer.params.tier == s3::RestoreTier::kStandard);
    CHECK(c->restorer.params.days == std::optional<int>(7));
    CHECK(c->restorer.poll_min == std::chrono::seconds(1));
    CHECK(c->restorer.poll_max == std::chrono::seconds(60));
    CHECK(c->restorer.bucket == "bucket");
    CHECK(c->mount.ledger_path == "");
  }

  TEST_CASE("mount: tape flags") {
    MountFlags f = Flags();
    f.offline = "eagain";
    f.offline_timeout = "90s";
    f.offline_state_ttl = "10m";
    f.restore_tier = "bulk";
    f.restore_days = 0;
    f.restore_poll = "2s";
    f.restore_poll_max = "5m";
    f.ledger = "none";
    auto c = ParseMountFlags(f);
    REQUIRE(c.ok());
    CHECK(c->mount.tape.offline == fuse::OfflineMode::kEagain);
    CHECK(c->mount.tape.offline_wait == std::chrono::seconds(90));
    CHECK(c->mount.tape.state_ttl == std::chrono::minutes(10));
    CHECK(c->restorer.params.tier == s3::RestoreTier::kBulk);
    CHECK_FALSE(c->restorer.params.days.has_value());  // 0: no Days element
    CHECK(c->restorer.poll_min == std::chrono::seconds(2));
    CHECK(c->restorer.poll_max == std::chrono::minutes(5));
    CHECK(c->mount.ledger_path == "none");
    f.offline = "eacces";
    f.restore_tier = "expedited";
    f.restore_days = 30;
    c = ParseMountFlags(f);
    REQUIRE(c.ok());
    CHECK(c->mount.tape.offline == fuse::OfflineMode::kEacces);
    CHECK(c->restorer.params.tier == s3::RestoreTier::kExpedited);
    CHECK(c->restorer.params.days == std::optional<int>(30));
    f.restore_poll = "20ms";  // a simulated library on a fast clock
    f.restore_poll_max = "200ms";
    c = ParseMountFlags(f);
    REQUIRE(c.ok());
    CHECK(c->restorer.poll_min == std::chrono::milliseconds(20));
    CHECK(c->restorer.poll_max == std::chrono::milliseconds(200));
  }

  TEST_CASE("mount: tape rejects") {
    MountFlags f = Flags();
    SUBCASE("offline mode") { f.offline = "block"; }
    SUBCASE("offline mode is case-sensitive") { f.offline = "WAIT"; }
    SUBCASE("timeout without unit") { f.offline_timeout = "abc"; }
    SUBCASE("zero timeout") { f.offline_timeout = "0s"; }
    SUBCASE("zero state TTL") { f.offline_state_ttl = "0s"; }
    SUBCASE("tier") { f.restore_tier = "fast"; }
    SUBCASE("negative days") { f.restore_days = -1; }
    SUBCASE("poll") { f.restore_poll = "0s"; }
    SUBCASE("poll max below poll") {
      f.restore_poll = "10s";
      f.restore_poll_max = "5s";
    }
    auto c = ParseMountFlags(f);
    CHECK_FALSE(c.ok());
    CHECK(c.status().code() == StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace reelfs::cli
