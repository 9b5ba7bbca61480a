// CacheFiles: the file operations the object cache makes in its directory, behind an interface so
// unit tests can fail or tear any of them (cache/fake/faulty_cache_files.h) and check that the
// cache never serves a wrong byte afterwards.
//
// Paths are absolute. Every call opens, acts and closes: the cache holds no descriptor between
// calls, so a file removed or replaced behind its back is simply seen as it now is.
//
// Thread-safety: implementations are safe to call from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"

namespace reelfs::cache {

class CacheFiles {
 public:
  virtual ~CacheFiles() = default;
  // Writes all of `data` at `offset` of `path`, creating it (0600) if missing. Anything short of
  // every byte written is an error (errno in the Status: ENOSPC, EROFS, EIO...).
  [[nodiscard]] virtual Status WriteAt(const std::string& path, uint64_t offset,
                                       std::span<const std::byte> data) = 0;
  // Reads exactly dst.size() bytes at `offset`; a file that ends sooner is kDataLoss, a missing
  // one kNotFound.
  [[nodiscard]] virtual Status ReadAt(const std::string& path, uint64_t offset,
                                      std::span<std::byte> dst) = 0;
  // Removes `path`; a missing file is not an error.
  [[nodiscard]] virtual Status Remove(const std::string& path) = 0;
  // The file's length (kNotFound when missing).
  [[nodiscard]] virtual Result<uint64_t> Size(const std::string& path) = 0;
  // The names (not paths) of the regular files in `dir`.
  [[nodiscard]] virtual Result<std::vector<std::string>> List(const std::string& dir) = 0;
  // Bytes an unprivileged writer may still use on the file system holding `dir` (statvfs).
  [[nodiscard]] virtual Result<uint64_t> FreeBytes(const std::string& dir) = 0;
};

// The real file system (pread/pwrite/unlink/statvfs).
std::shared_ptr<CacheFiles> PosixCacheFiles();

}  // namespace reelfs::cache
