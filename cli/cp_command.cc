#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <iostream>

#include "cli/commands.h"
#include "cli/ranged_reader.h"
#include "cli/s3_url.h"
#include "common/unique_fd.h"
#include "s3/await.h"

namespace reelfs::cli {
namespace {

// Writes all of `data`, at `offset` (pwrite) or at the current position (offset < 0, pipes),
// retrying short writes and EINTR.
Status WriteAll(int fd, std::span<const std::byte> data, int64_t offset) {
  while (!data.empty()) {
    ssize_t n = offset >= 0 ? ::pwrite(fd, data.data(), data.size(), offset)
                            : ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoToStatus(errno, "write");
    data = data.subspan(static_cast<size_t>(n));
    if (offset >= 0) offset += n;
  }
  return Status::Ok();
}

// Parallel ranged GETs written at their offsets into DEST.reelfs-partial, renamed into place
// only when complete, so a failed copy never leaves a truncated file under the final name.
Status CopyToFile(s3::ObjectStore& store, const S3Url& url, const s3::ObjectInfo& info,
                  const CpArgs& args) {
  std::string tmp = args.dest + ".reelfs-partial";
  REELFS_ASSIGN_OR_RETURN(UniqueFd fd, UniqueFd::Open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644));
  Status s = ReadRanges(store, url.bucket, url.key, info,
                        {.concurrency = args.concurrency, .part_size = args.part_size},
                        [&fd](uint64_t offset, std::span<const std::byte> data) {
                          return WriteAll(fd.get(), data, static_cast<int64_t>(offset));
                        });
  if (s.ok() && ::fsync(fd.get()) != 0) s = ErrnoToStatus(errno, "fsync " + tmp);
  if (s.ok() && ::rename(tmp.c_str(), args.dest.c_str()) != 0) {
    s = ErrnoToStatus(errno, "rename to " + args.dest);
  }
  if (!s.ok()) ::unlink(tmp.c_str());
  return s;
}

}  // namespace

int RunCp(s3::ObjectStore& store, const CpArgs& args) {
  auto url = ParseS3Url(args.url);
  if (!url.ok() || url->key.empty()) {
    std::cerr << "reelfs cp: expected s3://bucket/key, got '" << args.url << "'\n";
    return 2;
  }
  auto info = s3::Await<s3::ObjectInfo>(
      [&](auto cb) { store.HeadObject({.bucket = url->bucket, .key = url->key}, cb); });
  Status s = info.status();
  if (s.ok() && args.dest == "-") {
    // Pipes need the bytes in order; ranges still overlap in flight.
    s = ReadRanges(store, url->bucket, url->key, *info,
                   {.concurrency = args.concurrency, .part_size = args.part_size, .in_order = true},
                   [](uint64_t, std::span<const std::byte> data) {
                     return WriteAll(STDOUT_FILENO, data, -1);
                   });
  } else if (s.ok()) {
    s = CopyToFile(store, *url, *info, args);
  }
  if (!s.ok()) {
    std::cerr << "reelfs cp: " << args.url << ": " << s.ToString() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace reelfs::cli
