#include "gateway/store/key_locks.h"

#include <fcntl.h>

#include <cerrno>
#include <functional>
#include <utility>

namespace reelfs::gateway {
namespace {

// F_OFD_SETLK(W) on one byte; kind F_WRLCK or F_UNLCK.
int LockByte(int fd, size_t byte, short kind, bool wait) {
  struct flock fl {};
  fl.l_type = kind;
  fl.l_whence = SEEK_SET;
  fl.l_start = static_cast<off_t>(byte);
  fl.l_len = 1;
  fl.l_pid = 0;  // required by OFD locks
  while (::fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &fl) != 0) {
    if (errno != EINTR) return -1;
  }
  return 0;
}

}  // namespace

Result<std::unique_ptr<KeyLocks>> KeyLocks::Open(const std::string& internal_dir) {
  const std::string path = internal_dir + "/keylocks";
  REELFS_ASSIGN_OR_RETURN(UniqueFd fd, UniqueFd::Open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  return std::unique_ptr<KeyLocks>(new KeyLocks(std::move(fd)));
}

size_t KeyLocks::StripeOf(const std::string& bucket, const std::string& key) {
  // Every process must map a key to the same stripe: std::hash is the same function in every
  // process of one build, and front ends of one root run one build (the catalog version says so).
  const size_t h = std::hash<std::string>{}(bucket)*31 + std::hash<std::string>{}(key);
  return h % kStripes;
}

Result<KeyLocks::Guard> KeyLocks::Lock(const std::string& bucket, const std::string& key) {
  const size_t stripe = StripeOf(bucket, key);
  Guard guard;
  guard.local_ = std::unique_lock(local_[stripe]);
  if (LockByte(fd_.get(), stripe, F_WRLCK, /*wait=*/true) != 0) {
    return ErrnoToStatus(errno, "lock key stripe " + std::to_string(stripe));
  }
  guard.fd_ = fd_.get();
  guard.stripe_ = stripe;
  return guard;
}

KeyLocks::Guard::Guard(Guard&& other) noexcept
    : local_(std::move(other.local_)), fd_(std::exchange(other.fd_, -1)), stripe_(other.stripe_) {}

KeyLocks::Guard& KeyLocks::Guard::operator=(Guard&& other) noexcept {
  if (this != &other) {
    Release();
    local_ = std::move(other.local_);
    fd_ = std::exchange(other.fd_, -1);
    stripe_ = other.stripe_;
  }
  return *this;
}

KeyLocks::Guard::~Guard() { Release(); }

void KeyLocks::Guard::Release() {
  // The byte first, then the mutex: the next thread of this process must find the byte free.
  if (fd_ >= 0) LockByte(fd_, stripe_, F_UNLCK, /*wait=*/false);
  fd_ = -1;
  if (local_.owns_lock()) local_.unlock();
}

}  // namespace reelfs::gateway
