#include "cli/client_config.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include <CLI/CLI.hpp>
#include <doctest/doctest.h>

#include "cli/config_flags.h"

namespace reelfs::cli {
namespace {

bool Mentions(const Status& s, const std::string& text) {
  return std::string(s.message()).find(text) != std::string::npos;
}

std::string ValueOf(const std::vector<ConfigSetting>& settings, const std::string& key) {
  for (const auto& s : settings) {
    if (s.key == key) return s.value + " @" + s.origin;
  }
  return "";
}

TEST_SUITE("cli") {
  TEST_CASE("config: profiles, the default one, and a mount section") {
    const char* yaml =
        "default_profile: b\n"
        "profiles:\n"
        "  a:\n"
        "    endpoint: http://a:1\n"
        "  b:\n"
        "    endpoint: http://b:2\n"
        "    no_verify_tls: false\n"
        "    mount:\n"
        "      max_memory: 2GiB\n";
    auto b = ParseClientProfile(yaml, "c.yaml", "");
    REQUIRE_MESSAGE(b.ok(), b.status().ToString());
    REQUIRE(b->has_value());
    CHECK((*b)->name == "b");
    CHECK(ValueOf((*b)->global, "endpoint") == "http://b:2 @c.yaml:6");
    CHECK(ValueOf((*b)->global, "no_verify_tls") == "false @c.yaml:7");
    CHECK(ValueOf((*b)->mount, "max_memory") == "2GiB @c.yaml:9");
    auto a = ParseClientProfile(yaml, "c.yaml", "a");
    REQUIRE(a.ok());
    CHECK(ValueOf((*a)->global, "endpoint") == "http://a:1 @c.yaml:4");
    CHECK((*a)->mount.empty());
    // No default_profile and no profile named "default": no profile, not an error.
    auto none = ParseClientProfile("profiles:\n  x: {}\n", "c.yaml", "");
    REQUIRE(none.ok());
    CHECK_FALSE(none->has_value());
    CHECK(ParseClientProfile("", "c.yaml", "").ok());  // an empty file
  }

  TEST_CASE("config: endpoint as a list is the flag's comma list") {
    auto p = ParseClientProfile("profiles:\n  default:\n    endpoint: [http://a:1, http://b:2]\n",
                                "c.yaml", "");
    REQUIRE_MESSAGE(p.ok(), p.status().ToString());
    REQUIRE(p->has_value());
    CHECK(ValueOf((*p)->global, "endpoint") == "http://a:1,http://b:2 @c.yaml:3");
    auto bad = ParseClientProfile("profiles:\n  default:\n    endpoint: [[x]]\n", "c.yaml", "");
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.status().ToString().find("endpoint list items") != std::string::npos);
    auto region = ParseClientProfile("profiles:\n  default:\n    region: [a, b]\n", "c.yaml", "");
    REQUIRE_FALSE(region.ok());  // only endpoint takes a list
  }

  TEST_CASE("config: mistakes name the file and line") {
    auto missing = ParseClientProfile("profiles:\n  a: {}\n", "c.yaml", "b");
    REQUIRE_FALSE(missing.ok());
    CHECK(Mentions(missing.status(), "no profile 'b' in c.yaml (profiles: a)"));
    auto unknown_top = ParseClientProfile("profiles: {}\nendpoint: x\n", "c.yaml", "");
    REQUIRE_FALSE(unknown_top.ok());
    CHECK(Mentions(unknown_top.status(), "c.yaml:2: unknown key 'endpoint'"));
    auto list = ParseClientProfile("profiles:\n  a:\n    region: [x, y]\n", "c.yaml", "a");
    REQUIRE_FALSE(list.ok());
    CHECK(Mentions(list.status(), "c.yaml:3: profile 'a': region must be a single value"));
    auto mount = ParseClientProfile("profiles:\n  a:\n    mount: 3\n", "c.yaml", "a");
    REQUIRE_FALSE(mount.ok());
    CHECK(Mentions(mount.status(), "c.yaml:3: profile 'a': mount must be a mapping"));
    auto bad_yaml = ParseClientProfile("profiles:\n  a: [\n", "c.yaml", "a");
    REQUIRE_FALSE(bad_yaml.ok());
    CHECK(Mentions(bad_yaml.status(), "c.yaml:"));
    auto default_missing = ParseClientProfile("default_profile: z\nprofiles: {}\n", "c", "");
    CHECK_FALSE(default_missing.ok());
  }

  TEST_CASE("config: a later file replaces an earlier one's keys, profile by profile") {
    const auto dir =
        std::filesystem::temp_directory_path() / ("reelfs-config-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string host = (dir / "host.yaml").string();
    const std::string user = (dir / "user.yaml").string();
    std::ofstream(host) << "profiles:\n  default:\n    endpoint: http://h\n    region: r1\n"
                           "    mount:\n      offline: wait\n";
    std::ofstream(user) << "profiles:\n  default:\n    endpoint: http://u\n";
    auto p = LoadClientProfile({host, user, (dir / "absent.yaml").string()}, "", false);
    REQUIRE_MESSAGE(p.ok(), p.status().ToString());
    REQUIRE(p->has_value());
    CHECK((*p)->files == std::vector<std::string>{host, user});
    CHECK(ValueOf((*p)->global, "endpoint") == "http://u @" + user + ":3");
    CHECK(ValueOf((*p)->global, "region") == "r1 @" + host + ":4");
    CHECK(ValueOf((*p)->mount, "offline") == "wait @" + host + ":6");
    // A file named on the command line must exist.
    CHECK_FALSE(LoadClientProfile({(dir / "absent.yaml").string()}, "", true).ok());
    std::filesystem::remove_all(dir);
  }

  TEST_CASE("config: settings become the parser's flags; the command line's win") {
    CLI::App app;
    std::string endpoint, region, aws_profile, max_memory, device;
    int threads = 0;
    bool allow_other = false, verify_off = false;
    app.add_option("--endpoint", endpoint);
    app.add_option("--region", region);
    app.add_option("--profile", aws_profile);
    app.add_flag("--no-verify-tls", verify_off);
    app.fallthrough();
    CLI::App* mount = app.add_subcommand("mount");
    mount->add_option("--max-memory", max_memory);
    mount->add_option("--max-threads", threads);
    mount->add_flag("--allow-other", allow_other);
    mount->add_flag("--rdma{}", device);
    app.parse(std::vector<std::string>{"x", "--region", "mount"});  // reversed: mount --region x
    ClientProfile p{.name = "p",
                    .files = {"c.yaml"},
                    .global = {{"endpoint", "http://e", "c.yaml:3"},
                               {"aws_profile", "tape", "c.yaml:4"},
                               {"no_verify_tls", "false", "c.yaml:5"}},
                    .mount = {{"max_memory", "2GiB", "c.yaml:7"},
                              {"max_threads", "8", "c.yaml:8"},
                              {"allow_other", "yes", "c.yaml:9"},
                              {"rdma", "mlx5_0", "c.yaml:10"}}};
    auto flags = ProfileFlags(p, app, *mount, true);
    REQUIRE_MESSAGE(flags.ok(), flags.status().ToString());
    CHECK(*flags == std::vector<std::string>{"--endpoint=http://e", "--profile=tape",
                                             "--max-memory=2GiB", "--max-threads=8",
                                             "--allow-other", "--rdma=mlx5_0"});
    p.global.push_back({"region", "r2", "c.yaml:6"});  // given on the command line: skipped
    auto again = ProfileFlags(p, app, *mount, false);  // not mounting: no mount flags
    REQUIRE(again.ok());
    CHECK(*again == std::vector<std::string>{"--endpoint=http://e", "--profile=tape"});

    auto bad = [&](ConfigSetting s, bool in_mount) {
      ClientProfile q{.name = "q", .files = {}, .global = {}, .mount = {}};
      (in_mount ? q.mount : q.global).push_back(std::move(s));
      auto r = ProfileFlags(q, app, *mount, true);
      REQUIRE_FALSE(r.ok());
      return std::string(r.status().message());
    };
    CHECK(bad({"max_threads", "many", "c.yaml:12"}, true) ==
          "c.yaml:12: max_threads must be an integer, not 'many'");
    CHECK(bad({"allow_other", "maybe", "c.yaml:13"}, true) ==
          "c.yaml:13: allow_other must be true or false, not 'maybe'");
    CHECK(bad({"max_memory", "1GiB", "c.yaml:14"}, false).rfind("c.yaml:14: unknown key", 0) == 0);
    CHECK(bad({"profile", "x", "c.yaml:15"}, false).find("aws_profile") != std::string::npos);
  }

  TEST_CASE("config: a flag that excludes the profile's setting wins over it") {
    auto profile_flags = [](std::vector<std::string> argv) {
      CLI::App app;
      bool splice = false, no_splice = false;
      CLI::App* mount = app.add_subcommand("mount");
      mount->add_flag("--splice-reads", splice);
      mount->add_flag("--no-splice-reads", no_splice)->excludes("--splice-reads");
      std::reverse(argv.begin(), argv.end());  // CLI11 takes the vector reversed
      app.parse(argv);
      ClientProfile p{.name = "p",
                      .files = {"c.yaml"},
                      .global = {},
                      .mount = {{"no_splice_reads", "true", "c.yaml:2"}}};
      auto flags = ProfileFlags(p, app, *mount, true);
      REQUIRE(flags.ok());
      return *flags;
    };
    CHECK(profile_flags({"mount"}) == std::vector<std::string>{"--no-splice-reads"});
    CHECK(profile_flags({"mount", "--splice-reads"}).empty());
    CHECK(profile_flags({"mount", "--no-splice-reads"}).empty());
  }
}

}  // namespace
}  // namespace reelfs::cli
