// KeyLocks: the writers of one key are serialized across threads *and* across the gateway
// processes that serve one root (docs/gateway.md "Several front ends over one root"), so that a
// file change and its catalog write are never interleaved with another writer's.
//
// 64 stripes. A stripe is an in-process mutex plus an open-file-description lock
// (fcntl F_OFD_SETLKW) on byte `stripe` of ROOT/.reelfs-gateway/keylocks. OFD locks belong to
// the open file description: threads of one process share it and do not exclude each other
// (the mutex does that), other processes' descriptions do, and the kernel drops a dead process's
// locks, so a SIGKILLed front end never leaves a key locked.
//
// Thread-safety: Lock may be called from any thread; a Guard belongs to the thread that took it.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>

#include "common/result.h"
#include "common/unique_fd.h"

namespace reelfs::gateway {

class KeyLocks {
 public:
  static constexpr size_t kStripes = 64;

  // Opens (creating) the lock file in the root's internal directory.
  [[nodiscard]] static Result<std::unique_ptr<KeyLocks>> Open(const std::string& internal_dir);

  // Holds one stripe until destroyed; a default-constructed Guard holds nothing.
  class Guard {
   public:
    Guard() = default;
    Guard(Guard&& other) noexcept;
    Guard& operator=(Guard&& other) noexcept;
    ~Guard();

   private:
    friend class KeyLocks;
    void Release();
    std::unique_lock<std::mutex> local_;
    int fd_ = -1;  // the KeyLocks' fd while the byte is locked; -1 otherwise
    size_t stripe_ = 0;
  };

  // Blocks until this process's threads and every other process have let go of the key's stripe.
  [[nodiscard]] Result<Guard> Lock(const std::string& bucket, const std::string& key);

  static size_t StripeOf(const std::string& bucket, const std::string& key);

 private:
  explicit KeyLocks(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
  std::array<std::mutex, kStripes> local_;
};

}  // namespace reelfs::gateway
