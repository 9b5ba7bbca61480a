#include "gateway/archive/tape_image.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include <sys/stat.h>

#include "common/unique_fd.h"
#include "s3/protocol/crypto.h"

namespace reelfs::gateway {
namespace {

constexpr size_t kCopyChunk = 1 << 20;

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
  s3::Digest md5(s3::Digest::Algorithm::kMd5);
  std::vector<char> buf(kCopyChunk);
  uint64_t done = 0;
  const uint64_t base = start_block * block_bytes_;
  while (done < length) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), length - done));
    ssize_t n = ::pread(src_fd, buf.data(), want, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoToStatus(errno, "read object for archiving");
    if (n == 0) return Status::DataLoss("object shorter than its catalog size while archiving");
    size_t off = 0;
    while (off < static_cast<size_t>(n)) {
      ssize_t w = ::pwrite(img.get(), buf.data() + off, static_cast<size_t>(n) - off,
                           static_cast<off_t>(base + done + off));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return ErrnoToStatus(errno, "write tape image " + std::string(vsn));
      off += static_cast<size_t>(w);
    }
    md5.Update(std::string_view(buf.data(), static_cast<size_t>(n)));
    done += static_cast<uint64_t>(n);
  }
  // The image must cover the extent's last block even when the object ends inside it, so that a
  // later truncation is detectable as such.
  struct stat st {};
  if (::fstat(img.get(), &st) != 0) return ErrnoToStatus(errno, "stat tape image");
  const uint64_t end = base + BlocksFor(length) * block_bytes_;
  if (static_cast<uint64_t>(st.st_size) < end && ::ftruncate(img.get(), static_cast<off_t>(end))) {
    return ErrnoToStatus(errno, "extend tape image " + std::string(vsn));
  }
  if (::fdatasync(img.get()) != 0) return ErrnoToStatus(errno, "sync tape image");
  return s3::HexEncode(md5.Finish());
}

Result<std::string> TapeImages::Read(std::string_view vsn, uint64_t start_block, uint64_t length,
                                     TmpFile& out) const {
  auto img = UniqueFd::Open(PathOf(vsn), O_RDONLY | O_CLOEXEC);
  if (!img.ok()) {
    return Status::DataLoss("cartridge " + std::string(vsn) +
                            ": image unreadable: " + std::string(img.status().message()));
  }
  s3::Digest md5(s3::Digest::Algorithm::kMd5);
  std::vector<char> buf(kCopyChunk);
  uint64_t done = 0;
  const uint64_t base = start_block * block_bytes_;
  while (done < length) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), length - done));
    ssize_t n = ::pread(img->get(), buf.data(), want, static_cast<off_t>(base + done));
    if (n < 0 && errno == EINTR) continue;
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
    std::string_view chunk(buf.data(), static_cast<size_t>(n));
    md5.Update(chunk);
    REELFS_RETURN_IF_ERROR(out.Write(chunk));
    done += static_cast<uint64_t>(n);
  }
  return s3::HexEncode(md5.Finish());
}

}  // namespace reelfs::gateway
