// Generated gateway credentials: their shape, the 0600 file, a fresh pair every time; given pairs
// and half pairs.
#include "gateway/credentials.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <doctest/doctest.h>
#include <sys/stat.h>

namespace reelfs::gateway {
namespace {

namespace fs = std::filesystem;

bool AllOf(const std::string& s, std::string_view alphabet) {
  return s.find_first_not_of(alphabet) == std::string::npos;
}

TEST_CASE("credentials: generated from the CSPRNG, written 0600") {
  ::unsetenv("REELFS_GATEWAY_ACCESS_KEY");
  ::unsetenv("REELFS_GATEWAY_SECRET_KEY");
  std::string tmpl = (fs::temp_directory_path() / "reelfs-gw-creds.XXXXXX").string();
  const std::string dir = ::mkdtemp(tmpl.data());

  Options first;
  auto source = ResolveCredentials(&first, dir);
  REQUIRE_MESSAGE(source.ok(), source.status().ToString());
  CHECK(source->generated);
  CHECK(source->file == dir + "/credentials");
  // Nothing on disk until the gateway has its port (a busy port leaves no file behind).
  CHECK_FALSE(fs::exists(source->file));
  REQUIRE(WriteGeneratedCredentials(first, *source).ok());
  REQUIRE(first.access_key.size() == 20);
  CHECK(first.access_key.starts_with("RGW"));
  CHECK(AllOf(first.access_key, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"));
  REQUIRE(first.secret_key.size() == 40);
  CHECK(
      AllOf(first.secret_key, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"));
  struct stat st {};
  REQUIRE(::stat(source->file.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  std::ifstream in(source->file);
  std::stringstream text;
  text << in.rdbuf();
  CHECK(text.str() == "[default]\naws_access_key_id=" + first.access_key +
                          "\naws_secret_access_key=" + first.secret_key + "\n");

  Options second;
  REQUIRE(ResolveCredentials(&second, dir).ok());
  CHECK(second.access_key != first.access_key);
  CHECK(second.secret_key != first.secret_key);

  std::error_code ec;
  fs::remove_all(dir, ec);
}

TEST_CASE("credentials: a given pair is kept, half a pair refused") {
  ::unsetenv("REELFS_GATEWAY_ACCESS_KEY");
  ::unsetenv("REELFS_GATEWAY_SECRET_KEY");
  Options given;
  given.access_key = "AK";
  given.secret_key = "SK";
  auto source = ResolveCredentials(&given, "/nonexistent");
  REQUIRE(source.ok());
  CHECK_FALSE(source->generated);
  CHECK(given.access_key == "AK");
  CHECK(WriteGeneratedCredentials(given, *source).ok());  // writes nothing

  Options half;
  half.access_key = "AK";
  CHECK(ResolveCredentials(&half, "/nonexistent").status().code() == StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace reelfs::gateway
