#include "gateway/archive/tape_image.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include <sys/stat.h>

#include "common/unique_fd.h"
#include "s3/protocol/crypto.h"

namespace reelfs::gateway {
namespace {

constexpr size_t kCopyChunk = 1 << 20;

// pread that retries EINTR: bytes read (0 at end of file) or -1 with errno set.
ssize_t PreadRetrying(int fd, char* buf, size_t want, uint64_t offset) {
  for (;;) {
    const ssize_t n = ::pread(fd, buf, want, static_cast<off_t>(offset));
    if (n >= 0 || errno != EINTR) return n;
  }
}

// Moves `length` bytes in chunks of at most kCopyChunk: `read(buf, want, done)` fills up to `want`
// bytes of position `done` and answers how many (never 0: an early end is its error), `write`
// takes each chunk. The hex MD5 of the bytes moved: the archive's end-to-end check.
template <class ReadFn, class WriteFn>
Result<std::string> CopyWithMd5(uint64_t length, ReadFn read, WriteFn write) {
  s3::Digest md5(s3::Digest::Algorithm::kMd5);
  std::vector<char> buf(kCopyChunk);
  for (uint64_t done = 0; done < length;) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), length - done));
    REELFS_ASSIGN_OR_RETURN(const size_t n, read(buf.data(), want, done));
    const std::string_view chunk(buf.data(), n);
    REELFS_RETURN_IF_ERROR(write(chunk, done));
    md5.Update(chunk);
    done += n;
  }
  return s3::HexEncode(md5.Finish());
}

}  // namespace

Result<TapeImages> TapeImages::Open(std::string dir, uint64_t block_bytes) {
  if (block_bytes == 0) return Status::InvalidArgument("tape block size must be > 0");
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return ErrnoToStatus(errno, "create tape image directory " + dir);
  }
  return TapeImages(std::move(dir), block_bytes);
}

std::string TapeImages::PathOf(std::string_view vsn) const {
  return dir_ + "/" + std::string(vsn) + ".img";
}

Result<std::string> TapeImages::Write(std::string_view vsn, uint64_t start_block, int src_fd,
                                      uint64_t length) const {
  REELFS_ASSIGN_OR_RETURN(UniqueFd img,
                          UniqueFd::Open(PathOf(vsn), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
  const uint64_t base = start_block * block_bytes_;
  auto read = [&](char* buf, size_t want, uint64_t done) -> Result<size_t> {
    const ssize_t n = PreadRetrying(src_fd, buf, want, done);
    if (n < 0) return ErrnoToStatus(errno, "read object for archiving");
    if (n == 0) return Status::DataLoss("object shorter than its catalog size while archiving");
    return static_cast<size_t>(n);
  };
  auto write = [&](std::string_view chunk, uint64_t done) -> Status {
    for (size_t off = 0; off < chunk.size();) {
      const ssize_t w = ::pwrite(img.get(), chunk.data() + off, chunk.size() - off,
                                 static_cast<off_t>(base + done + off));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return ErrnoToStatus(errno, "write tape image " + std::string(vsn));
      off += static_cast<size_t>(w);
    }
    return Status::Ok();
  };
  REELFS_ASSIGN_OR_RETURN(std::string md5, CopyWithMd5(length, read, write));
  // The image must cover the extent's last block even when the object ends inside it, so that a
  // later truncation is detectable as such.
  struct stat st {};
  if (::fstat(img.get(), &st) != 0) return ErrnoToStatus(errno, "stat tape image");
  const uint64_t end = base + BlocksFor(length) * block_bytes_;
  if (static_cast<uint64_t>(st.st_size) < end && ::ftruncate(img.get(), static_cast<off_t>(end))) {
    return ErrnoToStatus(errno, "extend tape image " + std::string(vsn));
  }
  if (::fdatasync(img.get()) != 0) return ErrnoToStatus(errno, "sync tape image");
  return md5;
}

Result<std::string> TapeImages::Read(std::string_view vsn, uint64_t start_block, uint64_t length,
                                     TmpFile& out) const {
  auto img = UniqueFd::Open(PathOf(vsn), O_RDONLY | O_CLOEXEC);
  if (!img.ok()) {
    return Status::DataLoss("cartridge " + std::string(vsn) +
                            ": image unreadable: " + std::string(img.status().message()));
  }
  const uint64_t base = start_block * block_bytes_;
  auto read = [&](char* buf, size_t want, uint64_t done) -> Result<size_t> {
    const ssize_t n = PreadRetrying(img->get(), buf, want, base + done);
    if (n < 0) {
      return Status::DataLoss("cartridge " + std::string(vsn) + ": read error at block " +
                              std::to_string((base + done) / block_bytes_) + ": " +
                              std::string(ErrnoToStatus(errno, "pread").message()));
    }
    if (n == 0) {
      return Status::DataLoss("cartridge " + std::string(vsn) + ": image ends at byte " +
                              std::to_string(base + done) + ", inside the extent at block " +
                              std::to_string(start_block));
    }
    return static_cast<size_t>(n);
  };
  return CopyWithMd5(length, read,
                     [&](std::string_view chunk, uint64_t) { return out.Write(chunk); });
}

}  // namespace reelfs::gateway
