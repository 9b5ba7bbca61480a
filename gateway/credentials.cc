#include "gateway/credentials.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string_view>

#include <openssl/err.h>
#include <openssl/rand.h>

#include "common/result.h"
#include "common/unique_fd.h"

namespace reelfs::gateway {
namespace {

// `n` characters drawn uniformly from `alphabet` (at most 256 of them) by OpenSSL's CSPRNG: a
// generated secret must not be predictable, which std::random_device does not promise everywhere.
// Bytes at or above the largest multiple of the alphabet's size are skipped, so that no character
// is likelier than another.
Result<std::string> RandomString(size_t n, std::string_view alphabet) {
  const size_t limit = 256 - 256 % alphabet.size();
  std::string out;
  unsigned char bytes[64];
  while (out.size() < n) {
    if (RAND_bytes(bytes, sizeof bytes) != 1) {
      char why[256];
      ERR_error_string_n(ERR_get_error(), why, sizeof why);
      return Status::Internal(std::string("no random bytes for the credentials (RAND_bytes): ") +
                              why);
    }
    for (unsigned char b : bytes) {
      if (b < limit && out.size() < n) out.push_back(alphabet[b % alphabet.size()]);
    }
  }
  return out;
}

// A front end given no keys takes the pair its owner generated (read once, at start).
Result<CredentialSource> ReadOwnerCredentials(Options* options, const std::string& file) {
  std::ifstream in(file);
  if (!in) {
    return Status::FailedPrecondition(
        "front end: no credentials given and no " + file +
        " written by the owning gateway; give --access-key/--secret-key (the owner's) or start "
        "the owner first");
  }
  std::string line;
  while (std::getline(in, line)) {
    auto take = [&](std::string_view name, std::string* out) {
      if (line.rfind(name, 0) == 0 && line.size() > name.size() && line[name.size()] == '=') {
        *out = line.substr(name.size() + 1);
      }
    };
    take("aws_access_key_id", &options->access_key);
    take("aws_secret_access_key", &options->secret_key);
  }
  if (options->access_key.empty() || options->secret_key.empty()) {
    return Status::FailedPrecondition("front end: " + file + " does not hold a key pair");
  }
  return CredentialSource{};
}

}  // namespace

Result<CredentialSource> ResolveCredentials(Options* options, const std::string& internal_dir) {
  if (options->access_key.empty() && options->secret_key.empty()) {
    const char* ak = std::getenv("REELFS_GATEWAY_ACCESS_KEY");
    const char* sk = std::getenv("REELFS_GATEWAY_SECRET_KEY");
    if (ak && *ak) options->access_key = ak;
    if (sk && *sk) options->secret_key = sk;
  }
  if (options->access_key.empty() != options->secret_key.empty()) {
    return Status::InvalidArgument("give both an access key and a secret key, or neither");
  }
  CredentialSource source;
  if (!options->access_key.empty()) return source;
  if (options->front_end) return ReadOwnerCredentials(options, internal_dir + "/credentials");
  REELFS_ASSIGN_OR_RETURN(std::string access,
                          RandomString(17, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"));
  REELFS_ASSIGN_OR_RETURN(
      std::string secret,
      RandomString(40, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"));
  options->access_key = "RGW" + access;
  options->secret_key = std::move(secret);
  source.generated = true;
  source.file = internal_dir + "/credentials";
  return source;
}

Status WriteGeneratedCredentials(const Options& options, const CredentialSource& source) {
  if (!source.generated) return Status::Ok();
  std::string tmp = source.file + ".tmp";
  ::unlink(tmp.c_str());
  REELFS_ASSIGN_OR_RETURN(UniqueFd fd,
                          UniqueFd::Open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600));
  std::string text = "[default]\naws_access_key_id=" + options.access_key +
                     "\naws_secret_access_key=" + options.secret_key + "\n";
  if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()) ||
      ::fsync(fd.get()) != 0) {
    return ErrnoToStatus(errno, "write " + tmp);
  }
  if (::rename(tmp.c_str(), source.file.c_str()) != 0) {
    return ErrnoToStatus(errno, "rename " + source.file);
  }
  return Status::Ok();
}

}  // namespace reelfs::gateway
