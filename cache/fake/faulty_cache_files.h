// FaultyCacheFiles: a CacheFiles decorator that fails or tears on command, for the unit tests of
// the object cache's crash consistency (tests/unit/cache): "the process died after N writes, the
// last one half done", "the disk is full", "the file system went read-only", "N bytes free".
//
// Thread-safety: all methods may be called from any thread.
#pragma once

#include <cerrno>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "cache/cache_files.h"

namespace reelfs::cache {

class FaultyCacheFiles final : public CacheFiles {
 public:
  explicit FaultyCacheFiles(std::shared_ptr<CacheFiles> inner) : inner_(std::move(inner)) {}

  // After `ops` more successful mutating calls (WriteAt, Remove), the process "dies": every later
  // mutating call fails with EIO and changes nothing, except that with `tear` the first failing
  // WriteAt writes the first half of its bytes (a crash in the middle of a write).
  void CrashAfter(int ops, bool tear) {
    std::lock_guard lock(mutex_);
    crash_after_ = ops;
    tear_ = tear;
  }
  // Every WriteAt fails with `err` (ENOSPC, EROFS) and writes nothing; 0 heals.
  void FailWritesWith(int err) {
    std::lock_guard lock(mutex_);
    write_errno_ = err;
  }
  // FreeBytes answers this instead of the file system's (nullopt: the real value).
  void SetFreeBytes(std::optional<uint64_t> free) {
    std::lock_guard lock(mutex_);
    free_bytes_ = free;
  }
  int mutating_calls() const {
    std::lock_guard lock(mutex_);
    return mutating_calls_;
  }

  Status WriteAt(const std::string& path, uint64_t offset,
                 std::span<const std::byte> data) override {
    {
      std::lock_guard lock(mutex_);
      if (write_errno_ != 0) return ErrnoToStatus(write_errno_, "write " + path);
      if (Crashed()) {
        if (tear_ && !torn_) {
          torn_ = true;
          inner_->WriteAt(path, offset, data.first(data.size() / 2)).IgnoreError();
        }
        return ErrnoToStatus(EIO, "write " + path + " (crashed)");
      }
      ++mutating_calls_;
    }
    return inner_->WriteAt(path, offset, data);
  }
  Status ReadAt(const std::string& path, uint64_t offset, std::span<std::byte> dst) override {
    return inner_->ReadAt(path, offset, dst);
  }
  Status Remove(const std::string& path) override {
    {
      std::lock_guard lock(mutex_);
      if (Crashed()) return ErrnoToStatus(EIO, "remove " + path + " (crashed)");
      ++mutating_calls_;
    }
    return inner_->Remove(path);
  }
  Result<uint64_t> Size(const std::string& path) override { return inner_->Size(path); }
  Result<std::vector<std::string>> List(const std::string& dir) override {
    return inner_->List(dir);
  }
  Result<uint64_t> FreeBytes(const std::string& dir) override {
    {
      std::lock_guard lock(mutex_);
      if (free_bytes_) return *free_bytes_;
    }
    return inner_->FreeBytes(dir);
  }

 private:
  bool Crashed() const { return crash_after_ >= 0 && mutating_calls_ >= crash_after_; }

  const std::shared_ptr<CacheFiles> inner_;
  mutable std::mutex mutex_;
  int crash_after_ = -1;
  bool tear_ = false;
  bool torn_ = false;
  int write_errno_ = 0;
  std::optional<uint64_t> free_bytes_;
  int mutating_calls_ = 0;
};

}  // namespace reelfs::cache
