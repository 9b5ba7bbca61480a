#include "gateway/credentials.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <random>

#include "common/result.h"
#include "common/unique_fd.h"

namespace reelfs::gateway {
namespace {

std::string RandomString(size_t n, std::string_view alphabet) {
  std::random_device rd;
  std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1);
  std::string out;
  for (size_t i = 0; i < n; ++i) out.push_back(alphabet[pick(rd)]);
  return out;
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
  options->access_key = "RGW" + RandomString(17, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789");
  options->secret_key =
      RandomString(40, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/");
  source.generated = true;
  source.file = internal_dir + "/credentials";
  std::string tmp = source.file + ".tmp";
  ::unlink(tmp.c_str());
  REELFS_ASSIGN_OR_RETURN(UniqueFd fd,
                          UniqueFd::Open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600));
  std::string text = "[default]\naws_access_key_id=" + options->access_key +
                     "\naws_secret_access_key=" + options->secret_key + "\n";
  if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()) ||
      ::fsync(fd.get()) != 0) {
    return ErrnoToStatus(errno, "write " + tmp);
  }
  if (::rename(tmp.c_str(), source.file.c_str()) != 0) {
    return ErrnoToStatus(errno, "rename " + source.file);
  }
  return source;
}

}  // namespace reelfs::gateway
