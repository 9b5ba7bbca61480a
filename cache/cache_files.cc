// PosixCacheFiles (cache_files.h): open, act, close, with errno in every Status.

#include "cache/cache_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include <sys/stat.h>
#include <sys/statvfs.h>

#include "common/c_handle.h"
#include "common/unique_fd.h"
#include "fmt/format.h"

namespace reelfs::cache {
namespace {

using Dir = CHandle<DIR, closedir>;

class PosixFiles final : public CacheFiles {
 public:
  Status WriteAt(const std::string& path, uint64_t offset,
                 std::span<const std::byte> data) override {
    REELFS_ASSIGN_OR_RETURN(UniqueFd fd, UniqueFd::Open(path, O_WRONLY | O_CREAT, 0600));
    size_t done = 0;
    while (done < data.size()) {
      const ssize_t n = ::pwrite(fd.get(), data.data() + done, data.size() - done,
                                 static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return ErrnoToStatus(errno, fmt::format("write {}", path));
      if (n == 0) return ErrnoToStatus(EIO, fmt::format("write {}: no progress", path));
      done += static_cast<size_t>(n);
    }
    return Status::Ok();
  }

  Status ReadAt(const std::string& path, uint64_t offset, std::span<std::byte> dst) override {
    REELFS_ASSIGN_OR_RETURN(UniqueFd fd, UniqueFd::Open(path, O_RDONLY));
    size_t done = 0;
    while (done < dst.size()) {
      const ssize_t n = ::pread(fd.get(), dst.data() + done, dst.size() - done,
                                static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return ErrnoToStatus(errno, fmt::format("read {}", path));
      if (n == 0) {
        return Status::DataLoss(fmt::format("read {}: the file ends at {} of {} bytes", path,
                                            offset + done, offset + dst.size()));
      }
      done += static_cast<size_t>(n);
    }
    return Status::Ok();
  }

  Status Remove(const std::string& path) override {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return ErrnoToStatus(errno, fmt::format("remove {}", path));
    }
    return Status::Ok();
  }

  Result<uint64_t> Size(const std::string& path) override {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return ErrnoToStatus(errno, fmt::format("stat {}", path));
    return static_cast<uint64_t>(st.st_size);
  }

  Result<std::vector<std::string>> List(const std::string& dir) override {
    Dir d(::opendir(dir.c_str()));
    if (!d) return ErrnoToStatus(errno, fmt::format("list {}", dir));
    std::vector<std::string> names;
    while (const dirent* e = ::readdir(d.get())) {
      if (e->d_type == DT_REG) names.emplace_back(e->d_name);
    }
    return names;
  }

  Result<uint64_t> FreeBytes(const std::string& dir) override {
    struct statvfs st {};
    if (::statvfs(dir.c_str(), &st) != 0) {
      return ErrnoToStatus(errno, fmt::format("statvfs {}", dir));
    }
    return static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
  }
};

}  // namespace

std::shared_ptr<CacheFiles> PosixCacheFiles() { return std::make_shared<PosixFiles>(); }

}  // namespace reelfs::cache
