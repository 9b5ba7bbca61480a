#include <string>

#include <doctest/doctest.h>

#include "gateway/config_loader.h"
#include "gateway/listen_address.h"

namespace reelfs::gateway {
namespace {

TEST_CASE("config: the example config loads") {
  Options options;
  Status st = LoadConfigFile(REELFS_SOURCE_DIR "/configs/gateway.example.yaml", &options);
  REQUIRE_MESSAGE(st.ok(), st.ToString());
  CHECK(options.root == "/var/lib/reelfs-gateway");
  CHECK(options.listen == "127.0.0.1:7070");
  CHECK(options.idle_timeout == std::chrono::seconds(60));
  CHECK(options.max_put_size == (5ull << 30));
  CHECK(options.min_part_size == (5ull << 20));
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
