#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <iostream>
#include <unordered_set>

#include <fmt/format.h>
#include <sys/stat.h>

#include "cli/commands.h"
#include "cli/explain.h"
#include "cli/interrupt.h"
#include "cli/local_sources.h"
#include "cli/progress.h"
#include "cli/ranged_reader.h"
#include "cli/s3_url.h"
#include "cli/uploader.h"
#include "common/unique_fd.h"
#include "fuse/core/upload.h"
#include "s3/await.h"
#include "s3/list_pages.h"

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
                  const std::string& dest, const CpArgs& args) {
  std::string tmp = dest + ".reelfs-partial";
  REELFS_ASSIGN_OR_RETURN(UniqueFd fd, UniqueFd::Open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644));
  Progress progress(args.progress, info.size, /*total_known=*/true, /*files=*/1);
  Status s = ReadRanges(store, url.bucket, url.key, info,
                        {.concurrency = args.concurrency, .part_size = args.part_size},
                        [&fd, &progress](uint64_t offset, std::span<const std::byte> data) {
                          progress.AddBytes(data.size());
                          return WriteAll(fd.get(), data, static_cast<int64_t>(offset));
                        });
  if (s.ok() && ::fsync(fd.get()) != 0) s = ErrnoToStatus(errno, "fsync " + tmp);
  if (s.ok() && ::rename(tmp.c_str(), dest.c_str()) != 0) {
    s = ErrnoToStatus(errno, "rename to " + dest);
  }
  if (s.ok()) progress.FileDone();
  progress.Finish();
  if (!s.ok()) ::unlink(tmp.c_str());
  return s;
}

bool IsS3Url(const std::string& s) { return s.rfind("s3://", 0) == 0; }

}  // namespace

Result<std::string> DownloadPath(const std::string& dest, const std::string& key) {
  struct stat st {};
  const bool is_dir = !dest.empty() && (dest.back() == '/' ||
                                        (::stat(dest.c_str(), &st) == 0 && S_ISDIR(st.st_mode)));
  if (!is_dir) return dest;
  // Into a directory, under the key's last component, as cp and `aws s3 cp` do.
  const size_t slash = key.find_last_of('/');
  const std::string name = slash == std::string::npos ? key : key.substr(slash + 1);
  if (name.empty() || name == "." || name == "..") {
    return Status::InvalidArgument(
        fmt::format("key '{}' has no file name to write into directory {}", key, dest));
  }
  return dest + (dest.back() == '/' ? "" : "/") + name;
}

namespace {

// Removes from `list` the sources whose key already names an object, each with a problem line.
// One HEAD for a single source, else one listing of the prefix the keys share.
Status RefuseExisting(s3::ObjectStore& store, const std::string& bucket, const std::string& prefix,
                      LocalSourceList* list) {
  std::unordered_set<std::string> existing;
  if (list->sources.size() == 1) {
    const std::string& key = list->sources.front().key;
    auto head = s3::Await<s3::ObjectInfo>(
        [&](auto cb) { store.HeadObject({.bucket = bucket, .key = key}, cb); });
    const StatusCode code = head.status().code();
    if (head.ok()) {
      existing.insert(key);
    } else if (code == StatusCode::kPermissionDenied || code == StatusCode::kUnauthenticated) {
      // A refused HEAD has no body, so no S3 code says why (bad keys? no read permission?). A
      // one-key listing does say, and answers the question too where listing is allowed.
      s3::ListObjectsRequest req;
      req.bucket = bucket;
      req.prefix = key;
      req.max_keys = 1;
      auto page = s3::Await<s3::ListObjectsPage>([&](auto cb) { store.ListObjects(req, cb); });
      if (!page.ok()) {
        return page.status().WithContext(fmt::format(
            "checking whether s3://{}/{} exists (--overwrite skips the check)", bucket, key));
      }
      if (!page->objects.empty() && page->objects.front().key == key) existing.insert(key);
    } else if (code != StatusCode::kNotFound) {
      return head.status().WithContext(fmt::format("HEAD s3://{}/{}", bucket, key));
    }
  } else if (!list->sources.empty()) {
    s3::ListObjectsRequest req;
    req.bucket = bucket;
    req.prefix = prefix;
    Status s = s3::ListPagesBlocking(store, req, [&](s3::ListObjectsPage page, bool) {
      for (s3::ObjectInfo& o : page.objects) existing.insert(std::move(o.key));
      return true;
    });
    if (!s.ok()) return s.WithContext(fmt::format("listing s3://{}/{}", bucket, prefix));
  }
  if (existing.empty()) return Status::Ok();
  std::vector<LocalSource> kept;
  for (LocalSource& src : list->sources) {
    if (existing.contains(src.key)) {
      list->problems.push_back(
          fmt::format("{} -> s3://{}/{}: the object exists; not replaced (--overwrite replaces it)",
                      src.path == "-" ? "(stdin)" : src.path, bucket, src.key));
    } else {
      kept.push_back(std::move(src));
    }
  }
  list->sources = std::move(kept);
  return Status::Ok();
}

int RunUpload(s3::ObjectStore& store, const CpArgs& args) {
  auto url = ParseS3Url(args.dest);
  if (!url.ok()) {
    std::cerr << "reelfs cp: expected s3://bucket/key or s3://bucket/prefix/, got '" << args.dest
              << "'\n";
    return 2;
  }
  if (args.part_size < fuse::kMinPartSize || args.part_size > fuse::kMaxPartSize) {
    std::cerr << fmt::format(
        "reelfs cp: --part-size {} for an upload: S3 takes parts of {} to {} bytes\n",
        args.part_size, fuse::kMinPartSize, fuse::kMaxPartSize);
    return 2;
  }
  if (args.concurrency < 1 || args.files_in_flight < 1) {
    std::cerr << "reelfs cp: --concurrency and --files-in-flight must be at least 1\n";
    return 2;
  }
  auto listed =
      ListLocalSources(args.source, url->key,
                       {.recursive = args.recursive, .follow_symlinks = args.follow_symlinks});
  if (!listed.ok()) {
    std::cerr << "reelfs cp: " << listed.status().message() << "\n";
    return listed.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  LocalSourceList list = std::move(listed).value();
  if (!args.overwrite) {
    const std::string prefix =
        url->key.empty() || url->key.back() == '/' ? url->key : url->key + "/";
    if (Status s = RefuseExisting(store, url->bucket, prefix, &list); !s.ok()) {
      std::cerr << "reelfs cp: " << Explain(s, {.bucket = url->bucket, .key = url->key}) << "\n";
      return 1;
    }
  }
  for (const std::string& note : list.notes) std::cerr << "reelfs cp: " << note << "\n";
  for (const std::string& problem : list.problems) std::cerr << "reelfs cp: " << problem << "\n";

  uint64_t total = 0;
  bool total_known = true;
  for (const LocalSource& src : list.sources) {
    total += src.size;
    total_known = total_known && src.size_known;
  }
  // Ctrl-C aborts the uploads in flight rather than leaving them on the server.
  auto cancel = CancellationToken::Create();
  auto interrupt = InterruptCancel::Install(cancel);
  if (!interrupt.ok()) {
    std::cerr << "reelfs cp: " << interrupt.status().ToString() << "\n";
    return 1;
  }
  UploadTransport transport;
  if (args.open_rdma) {
    auto opened = args.open_rdma();
    if (!opened.ok()) {
      std::cerr << "reelfs cp: " << opened.status().message() << "\n";
      return 2;
    }
    transport = std::move(opened).value();
  }
  Progress progress(args.progress, total, total_known, list.sources.size());
  // The store outlives the copy: UploadSources returns once every request has been answered.
  std::shared_ptr<s3::ObjectStore> shared(std::shared_ptr<s3::ObjectStore>(), &store);
  UploadReport report =
      UploadSources(shared, url->bucket, list.sources,
                    {.part_size = args.part_size,
                     .parts_in_flight = static_cast<uint32_t>(args.concurrency),
                     .files_in_flight = static_cast<uint32_t>(args.files_in_flight),
                     .max_memory = args.max_memory,
                     .cancel = cancel,
                     .pool = transport.pool,
                     .sender = transport.sender},
                    progress);
  progress.Finish();
  if (args.open_rdma) {
    // Which path the bytes took: --rdma asked for RDMA, so say where they did not.
    const fuse::PutCounters& c = report.puts;
    std::cerr << fmt::format(
        "reelfs cp: over RDMA PUT {} bytes ({} payloads); over HTTP {} bytes ({} payloads, {} "
        "fallbacks){}\n",
        c.rdma_put_bytes, c.rdma_put_parts, c.http_put_bytes, c.http_put_parts, c.put_fallbacks,
        transport.sender == nullptr ? "; no RDMA data path" : "");
  }
  if (const int sig = (*interrupt)->signal(); sig != 0) {
    std::cerr << fmt::format(
        "reelfs cp: interrupted (signal {}): the uploads in flight were aborted; {} file(s) "
        "uploaded, {} not\n",
        sig, report.uploaded, report.failed + report.not_started);
    return 128 + sig;
  }
  const uint64_t not_copied = report.failed + report.not_started + list.problems.size();
  if (not_copied > 0 && report.uploaded + not_copied > 1) {
    std::cerr << fmt::format(
        "reelfs cp: {} file(s) not uploaded ({} failed, {} not started after a failure that "
        "stops the copy, {} refused before the upload); {} uploaded ({} bytes)\n",
        not_copied, report.failed, report.not_started, list.problems.size(), report.uploaded,
        report.bytes);
  }
  return not_copied > 0 ? 1 : 0;
}

}  // namespace

int RunCp(s3::ObjectStore& store, const CpArgs& args) {
  if (IsS3Url(args.dest)) {
    if (IsS3Url(args.source)) {
      std::cerr << "reelfs cp: copies between two s3:// URLs are not supported\n";
      return 2;
    }
    return RunUpload(store, args);
  }
  if (args.recursive) {
    std::cerr << "reelfs cp: -r copies a local tree to s3://; a download copies one object\n";
    return 2;
  }
  if (args.open_rdma) {
    // A download is ranged GETs into a local file; the mount (`reelfs mount --rdma`) and its side
    // channel are where reads land over RDMA.
    std::cerr << "reelfs cp: --rdma sends an upload's parts over RDMA; a download reads over "
                 "HTTP (reelfs mount --rdma reads over RDMA)\n";
    return 2;
  }
  auto url = ParseS3Url(args.source);
  if (!url.ok() || url->key.empty()) {
    std::cerr << "reelfs cp: expected s3://bucket/key as the source or the destination, got '"
              << args.source << "' and '" << args.dest << "'\n";
    return 2;
  }
  std::string dest = args.dest;
  if (dest != "-") {
    auto resolved = DownloadPath(dest, url->key);
    if (!resolved.ok()) {
      std::cerr << "reelfs cp: " << resolved.status().message() << "\n";
      return 2;
    }
    dest = std::move(resolved).value();
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
    s = CopyToFile(store, *url, *info, dest, args);
  }
  if (!s.ok()) {
    std::cerr << "reelfs cp: " << args.source << ": "
              << Explain(s, {.bucket = url->bucket, .key = url->key}) << "\n";
    return 1;
  }
  return 0;
}

}  // namespace reelfs::cli
