// cli/mount_stack: what Build makes of the config and the client (no FUSE session: Mount is not
// called, so no /dev/fuse), and that a failing client factory fails Build with its Status.
#include "cli/mount_stack.h"

#include <doctest/doctest.h>

#include "cli/mount_options.h"

namespace reelfs::cli {
namespace {

MountConfig Config() {
  MountFlags f;
  f.source = "bucket/pre";
  f.mountpoint = "/tmp";
  f.ledger = "none";
  auto c = ParseMountFlags(f);
  REQUIRE(c.ok());
  return *c;
}

// A client that never sends: Build makes no request.
Result<S3Clients> LocalClient(const std::string& endpoint) {
  s3::ClientOptions options;
  options.endpoint = endpoint;
  options.credentials = {"AK", "SK", ""};
  REELFS_ASSIGN_OR_RETURN(auto client, s3::S3Client::Create(std::move(options)));
  return S3Clients::Of(std::move(client));
}

TEST_SUITE("cli") {
  TEST_CASE("S3Clients::Of: both views are the one client") {
    auto clients = LocalClient("http://127.0.0.1:9");
    REQUIRE(clients.ok());
    CHECK(clients->client != nullptr);
    CHECK(clients->store.get() == static_cast<s3::ObjectStore*>(clients->client.get()));
  }

  TEST_CASE("mount stack: the client's endpoint and the ledger opened reach the mount options") {
    int built = 0;
    auto stack = MountStack::Build(Config(), [&]() -> Result<S3Clients> {
      ++built;
      return LocalClient("http://127.0.0.1:9");
    });
    REQUIRE(stack.ok());
    CHECK(built == 1);
    const fuse::MountOptions& mount = (*stack)->mount();
    CHECK(mount.endpoint == "http://127.0.0.1:9");
    CHECK(mount.bucket == "bucket");
    CHECK(mount.prefix == "pre/");
    CHECK(mount.ledger_path == ":memory:");
    CHECK(mount.tape.offline_wait.count() > 0);
    CHECK(mount.tape.offline_wait <= Config().mount.tape.offline_wait);
    // Destroyed here without a session: the teardown of a stack whose Mount never ran.
  }

  TEST_CASE("mount stack: a client that cannot be built fails Build with its Status") {
    auto stack = MountStack::Build(Config(), []() -> Result<S3Clients> {
      return Status::InvalidArgument("no endpoint today");
    });
    REQUIRE_FALSE(stack.ok());
    CHECK(stack.status().code() == StatusCode::kInvalidArgument);
    CHECK(stack.status().message() == "no endpoint today");
  }
}

}  // namespace
}  // namespace reelfs::cli
