#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <vector>

#include "cli/commands.h"
#include "cli/s3_url.h"
#include "common/unique_fd.h"
#include "s3/await.h"

namespace reelfs::cli {
namespace {

// Writes all of `data` at `offset`, retrying short writes.
Status PwriteAll(int fd, std::span<const std::byte> data, uint64_t offset) {
  while (!data.empty()) {
    ssize_t n = ::pwrite(fd, data.data(), data.size(), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoToStatus(errno, "write");
    data = data.subspan(static_cast<size_t>(n));
    offset += static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

// Streams the object to stdout in order, through the sink (no buffer of the object's size).
Status CopyToStdout(s3::ObjectStore& store, const S3Url& url) {
  s3::GetObjectRequest req{.bucket = url.bucket, .key = url.key};
  req.sink = [](std::span<const std::byte> chunk) -> Status {
    if (std::fwrite(chunk.data(), 1, chunk.size(), stdout) != chunk.size()) {
      return ErrnoToStatus(errno, "stdout");
    }
    return Status::Ok();
  };
  auto got = s3::Await<s3::GetObjectResult>([&](auto cb) { store.GetObject(req, cb); });
  std::fflush(stdout);
  return got.status();
}

// Ranged GETs of `part_size`, `concurrency` in flight, each slot with its own buffer, written at
// their offsets. The ETag of the first answer pins the object: a change mid-copy fails the copy.
Status CopyToFile(s3::ObjectStore& store, const S3Url& url, const CpArgs& args) {
  auto info = s3::Await<s3::ObjectInfo>(
      [&](auto cb) { store.HeadObject({.bucket = url.bucket, .key = url.key}, cb); });
  REELFS_RETURN_IF_ERROR(info.status());
  std::string tmp = args.dest + ".reelfs-partial";
  REELFS_ASSIGN_OR_RETURN(UniqueFd fd, UniqueFd::Open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644));
  // No more slots than parts and no buffer larger than the object: small objects are common and
  // zero-filling 8 x 8 MiB for a 4 KiB file would dominate the copy.
  const uint64_t parts = std::max<uint64_t>(1, (info->size + args.part_size - 1) / args.part_size);
  const int slots = static_cast<int>(std::min<uint64_t>(std::max(1, args.concurrency), parts));
  const size_t buffer_size = std::min<uint64_t>(args.part_size, std::max<uint64_t>(1, info->size));
  std::vector<std::vector<std::byte>> buffers(slots, std::vector<std::byte>(buffer_size));
  std::mutex mu;
  std::condition_variable cv;
  uint64_t next = 0;  // GUARDED_BY(mu)
  int in_flight = 0;  // GUARDED_BY(mu)
  Status error;       // GUARDED_BY(mu)
  std::function<void(int)> issue = [&](int slot) {
    uint64_t offset;
    {
      std::lock_guard lock(mu);
      if (next >= info->size || !error.ok()) return;
      offset = next;
      next += args.part_size;
      ++in_flight;
    }
    uint64_t len = std::min<uint64_t>(args.part_size, info->size - offset);
    s3::GetObjectRequest req{.bucket = url.bucket,
                             .key = url.key,
                             .range = s3::ByteRange{offset, len},
                             .buffer = std::span<std::byte>(buffers[slot].data(), len),
                             .if_match = info->etag};
    store.GetObject(req, [&, slot, offset, len](Result<s3::GetObjectResult> r) {
      Status s = r.status();
      if (s.ok() && r->bytes != len) s = Status::DataLoss("short ranged GET");
      if (s.ok()) s = PwriteAll(fd.get(), std::span(buffers[slot].data(), len), offset);
      {
        std::lock_guard lock(mu);
        --in_flight;
        if (!s.ok() && error.ok()) error = s;
      }
      issue(slot);
      cv.notify_all();
    });
  };
  for (int s = 0; s < slots; ++s) issue(s);
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return in_flight == 0 && (next >= info->size || !error.ok()); });
  }
  if (!error.ok()) {
    ::unlink(tmp.c_str());
    return error;
  }
  if (::fsync(fd.get()) != 0) return ErrnoToStatus(errno, "fsync " + tmp);
  if (::rename(tmp.c_str(), args.dest.c_str()) != 0) return ErrnoToStatus(errno, "rename");
  return Status::Ok();
}

}  // namespace

int RunCp(s3::ObjectStore& store, const CpArgs& args) {
  auto url = ParseS3Url(args.url);
  if (!url.ok() || url->key.empty()) {
    std::cerr << "reelfs cp: expected s3://bucket/key, got '" << args.url << "'\n";
    return 2;
  }
  Status s = args.dest == "-" ? CopyToStdout(store, *url) : CopyToFile(store, *url, args);
  if (!s.ok()) {
    std::cerr << "reelfs cp: " << args.url << ": " << s.ToString() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace reelfs::cli
