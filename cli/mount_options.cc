#include "cli/mount_options.h"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>
#include <sys/stat.h>

#include "cli/side_channel_path.h"
#include "common/units.h"
#include "fuse/core/upload.h"

namespace reelfs::cli {
namespace {

constexpr uint32_t kMaxMode = 07777;
constexpr int kMaxThreads = 1024;
// 1 GiB of readahead per mount is already absurd; anything above is a typo.
constexpr int64_t kMaxReadAheadKb = 1 << 20;
// S3's largest part is 5 GiB; a prefetch part larger than that cannot be one ranged GET that a
// gateway will serve reasonably.
constexpr uint64_t kMaxPartSize = 5ull << 30;

Result<uint32_t> ParseId(std::string_view what, std::string_view text) {
  uint32_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    return Status::InvalidArgument(fmt::format("{}: '{}' is not a number", what, text));
  }
  return v;
}

Result<std::chrono::seconds> ParseSeconds(std::string_view what, std::string_view text) {
  auto d = ParseDuration(text);
  if (!d.ok()) return d.status().WithContext(what);
  if (d->count() < 0) return Status::InvalidArgument(fmt::format("{}: negative", what));
  return std::chrono::duration_cast<std::chrono::seconds>(*d);
}

Result<uint64_t> ParseSize(std::string_view what, std::string_view text) {
  auto n = ParseByteSize(text);
  if (!n.ok()) return n.status().WithContext(what);
  if (*n == 0) return Status::InvalidArgument(fmt::format("{}: must be more than 0", what));
  return *n;
}

Result<fuse::OfflineMode> ParseOfflineMode(std::string_view text) {
  if (text == "wait") return fuse::OfflineMode::kWait;
  if (text == "eagain") return fuse::OfflineMode::kEagain;
  if (text == "eacces") return fuse::OfflineMode::kEacces;
  return Status::InvalidArgument(
      fmt::format("--offline: '{}' is not one of wait, eagain, eacces", text));
}

Result<s3::RestoreTier> ParseTier(std::string_view text) {
  if (text == "standard") return s3::RestoreTier::kStandard;
  if (text == "bulk") return s3::RestoreTier::kBulk;
  if (text == "expedited") return s3::RestoreTier::kExpedited;
  return Status::InvalidArgument(
      fmt::format("--restore-tier: '{}' is not one of standard, bulk, expedited", text));
}

// A duration that must be positive (a zero wait or poll makes no sense).
Result<std::chrono::seconds> ParsePositiveSeconds(std::string_view what, std::string_view text) {
  REELFS_ASSIGN_OR_RETURN(std::chrono::seconds d, ParseSeconds(what, text));
  if (d.count() <= 0) return Status::InvalidArgument(fmt::format("{}: at least 1s", what));
  return d;
}

// Restore polls may be shorter than a second: a simulated library on a fast clock (the tape e2e
// tests, bench/tape) finishes a recall in milliseconds of real time.
Result<std::chrono::milliseconds> ParsePositiveMillis(std::string_view what,
                                                      std::string_view text) {
  auto d = ParseDuration(text);
  if (!d.ok()) return d.status().WithContext(what);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*d);
  if (ms.count() <= 0) return Status::InvalidArgument(fmt::format("{}: at least 1ms", what));
  return ms;
}

}  // namespace

Status ParseMountSource(std::string_view source, std::string* bucket, std::string* prefix) {
  if (source.substr(0, 5) == "s3://") source.remove_prefix(5);
  const size_t slash = source.find('/');
  *bucket = std::string(source.substr(0, slash));
  *prefix = slash == std::string_view::npos ? "" : std::string(source.substr(slash + 1));
  if (bucket->empty()) {
    return Status::InvalidArgument(fmt::format("'{}': expected BUCKET[/PREFIX]", source));
  }
  while (!prefix->empty() && prefix->front() == '/') prefix->erase(0, 1);
  if (!prefix->empty() && prefix->back() != '/') prefix->push_back('/');
  if (prefix->find("//") != std::string::npos) {
    return Status::InvalidArgument(fmt::format("'{}': empty path component in prefix", source));
  }
  return Status::Ok();
}

Result<uint32_t> ParseMode(std::string_view text) {
  uint32_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, 8);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v > kMaxMode) {
    return Status::InvalidArgument(fmt::format("'{}' is not an octal mode (e.g. 0444)", text));
  }
  return v;
}

Result<MountConfig> ParseMountFlags(const MountFlags& f) {
  MountConfig c;
  fuse::MountOptions& m = c.mount;
  REELFS_RETURN_IF_ERROR(ParseMountSource(f.source, &m.bucket, &m.prefix));

  if (f.mountpoint.empty()) return Status::InvalidArgument("MOUNTPOINT is required");
  char resolved[PATH_MAX];
  if (realpath(f.mountpoint.c_str(), resolved) == nullptr) {
    return ErrnoToStatus(errno, "mountpoint " + f.mountpoint);
  }
  struct stat st {};
  if (stat(resolved, &st) != 0) return ErrnoToStatus(errno, "mountpoint " + f.mountpoint);
  if (!S_ISDIR(st.st_mode)) return ErrnoToStatus(ENOTDIR, "mountpoint " + f.mountpoint);

  if (f.uid.empty()) {
    m.uid = getuid();
  } else {
    REELFS_ASSIGN_OR_RETURN(m.uid, ParseId("--uid", f.uid));
  }
  if (f.gid.empty()) {
    m.gid = getgid();
  } else {
    REELFS_ASSIGN_OR_RETURN(m.gid, ParseId("--gid", f.gid));
  }
  // Writable by default: the kernel checks these bits (default_permissions), so a writable
  // mount shows writable modes.
  auto file_mode = ParseMode(f.file_mode.empty() ? (f.read_only ? "0444" : "0644") : f.file_mode);
  if (!file_mode.ok()) return file_mode.status().WithContext("--file-mode");
  auto dir_mode = ParseMode(f.dir_mode.empty() ? (f.read_only ? "0555" : "0755") : f.dir_mode);
  if (!dir_mode.ok()) return dir_mode.status().WithContext("--dir-mode");
  m.file_mode = *file_mode;
  m.dir_mode = *dir_mode;
  REELFS_ASSIGN_OR_RETURN(m.metadata_ttl, ParseSeconds("--metadata-ttl", f.metadata_ttl));
  REELFS_ASSIGN_OR_RETURN(m.negative_ttl, ParseSeconds("--negative-ttl", f.negative_ttl));
  REELFS_ASSIGN_OR_RETURN(m.max_memory, ParseSize("--max-memory", f.max_memory));
  REELFS_ASSIGN_OR_RETURN(m.prefetch.part_size, ParseSize("--part-size", f.part_size));
  if (m.prefetch.part_size > kMaxPartSize) {
    return Status::InvalidArgument("--part-size: at most 5GiB");
  }
  m.write.read_only = f.read_only;
  m.write.allow_delete = f.allow_delete;
  m.write.allow_overwrite = f.allow_overwrite;
  REELFS_ASSIGN_OR_RETURN(m.write.part_size, ParseSize("--write-part-size", f.write_part_size));
  REELFS_ASSIGN_OR_RETURN(m.write.abort_stale_uploads,
                          ParseSeconds("--abort-stale-uploads", f.abort_stale_uploads));
  if (m.write.part_size < fuse::kMinPartSize || m.write.part_size > kMaxPartSize) {
    return Status::InvalidArgument("--write-part-size: 5MiB..5GiB (S3's part size limits)");
  }
  if (f.write_parts_in_flight < 1 || f.write_parts_in_flight > 64) {
    return Status::InvalidArgument("--write-parts-in-flight: 1..64");
  }
  m.write.max_parts_in_flight = static_cast<uint32_t>(f.write_parts_in_flight);
  REELFS_ASSIGN_OR_RETURN(m.write.copy_threshold, ParseSize("--copy-threshold", f.copy_threshold));
  if (m.write.copy_threshold > kMaxPartSize) {
    return Status::InvalidArgument("--copy-threshold: at most 5GiB (S3's CopyObject limit)");
  }
  REELFS_ASSIGN_OR_RETURN(m.write.copy_part_size, ParseSize("--copy-part-size", f.copy_part_size));
  {
    auto window = ParseByteSize(f.splice_slow_window);  // 0 allowed: never hand over
    if (!window.ok()) return window.status().WithContext("--splice-slow-window");
    m.splice.slow_window = *window;
  }
  if (m.write.copy_part_size < fuse::kMinPartSize || m.write.copy_part_size > kMaxPartSize) {
    return Status::InvalidArgument("--copy-part-size: 5MiB..5GiB (S3's part size limits)");
  }
  if (!f.max_window.empty()) {
    REELFS_ASSIGN_OR_RETURN(m.prefetch.max_window, ParseSize("--max-window", f.max_window));
    if (m.prefetch.max_window < m.prefetch.part_size) {
      return Status::InvalidArgument("--max-window: at least one part (--part-size)");
    }
  }

  if (f.lookup_listing_pages < 0 || f.lookup_listing_pages > 100'000) {
    return Status::InvalidArgument("--lookup-listing-pages: 0..100000");
  }
  m.lookup_listing_pages = static_cast<uint32_t>(f.lookup_listing_pages);
  if (f.max_threads < 1 || f.max_threads > kMaxThreads) {
    return Status::InvalidArgument(fmt::format("--max-threads: 1..{}", kMaxThreads));
  }
  if (f.read_ahead_kb < 0 || f.read_ahead_kb > kMaxReadAheadKb) {
    return Status::InvalidArgument(fmt::format("--read-ahead-kb: 0..{}", kMaxReadAheadKb));
  }
  if (!f.log_file.empty() && f.syslog) {
    return Status::InvalidArgument("--log-file and --syslog exclude each other");
  }

  // Tape (docs/semantics.md "Offline objects").
  REELFS_ASSIGN_OR_RETURN(m.tape.offline, ParseOfflineMode(f.offline));
  REELFS_ASSIGN_OR_RETURN(m.tape.offline_wait,
                          ParsePositiveSeconds("--offline-timeout", f.offline_timeout));
  REELFS_ASSIGN_OR_RETURN(m.tape.state_ttl,
                          ParsePositiveSeconds("--offline-state-ttl", f.offline_state_ttl));
  hsm::RestorerOptions& r = c.restorer;
  REELFS_ASSIGN_OR_RETURN(r.params.tier, ParseTier(f.restore_tier));
  if (f.restore_days < 0) return Status::InvalidArgument("--restore-days: 0 or more");
  // 0 sends no Days: Intelligent-Tiering archive tiers refuse it.
  r.params.days = f.restore_days == 0 ? std::nullopt : std::optional<int>(f.restore_days);
  REELFS_ASSIGN_OR_RETURN(std::chrono::milliseconds poll,
                          ParsePositiveMillis("--restore-poll", f.restore_poll));
  REELFS_ASSIGN_OR_RETURN(std::chrono::milliseconds poll_max,
                          ParsePositiveMillis("--restore-poll-max", f.restore_poll_max));
  if (poll_max < poll) {
    return Status::InvalidArgument("--restore-poll-max: at least --restore-poll");
  }
  r.poll_min = poll;
  r.poll_max = poll_max;
  r.bucket = m.bucket;
  // As typed ("" default path, "none" in memory); RunMount opens it and stores the path used.
  m.ledger_path = f.ledger;

  // RDMA: whether this build can do it is RunMount's question (it knows how it was linked).
  if (!f.rdma && (!f.rdma_device.empty() || f.rdma_sessions != 4 || f.rdma_transport != "auto")) {
    return Status::InvalidArgument("--rdma-sessions, --rdma-transport and a device need --rdma");
  }
  RdmaTransport transport = RdmaTransport::kAuto;
  if (f.rdma_transport == "rc") {
    transport = RdmaTransport::kRc;
  } else if (f.rdma_transport == "dc") {
    transport = RdmaTransport::kDc;
  } else if (f.rdma_transport != "auto") {
    return Status::InvalidArgument("--rdma-transport: auto, rc or dc");
  }
  if (f.rdma_sessions < 1 || f.rdma_sessions > 64) {
    return Status::InvalidArgument("--rdma-sessions: 1..64");
  }
  c.rdma = RdmaConfig{.enabled = f.rdma,
                      .device = f.rdma_device,
                      .sessions = static_cast<size_t>(f.rdma_sessions),
                      .transport = transport};

  fuse::DaemonOptions& d = c.daemon;
  d.mountpoint = resolved;
  d.fsname = "reelfs:" + m.bucket + (m.prefix.empty() ? "" : "/" + m.prefix);
  if (d.fsname.back() == '/') d.fsname.pop_back();
  d.allow_other = f.allow_other;
  d.max_threads = f.max_threads;
  d.clone_fd = f.clone_fd;
  d.read_ahead_kb = static_cast<uint32_t>(f.read_ahead_kb);
  // The kernel waits for async O_DIRECT reads uninterruptibly: only where reads never wait.
  d.async_dio = m.tape.offline != fuse::OfflineMode::kWait;
  REELFS_ASSIGN_OR_RETURN(m.side_channel_path,
                          ResolveSideChannelPath(f.side_channel, d.mountpoint, geteuid(),
                                                 std::getenv("XDG_RUNTIME_DIR")));
  c.foreground = f.foreground;
  c.verbose = f.verbose;
  c.cuda_pin = f.cuda_pin;
  if (f.splice_reads && f.no_splice_reads) {
    return Status::InvalidArgument("--splice-reads and --no-splice-reads: choose one");
  }
  c.splice = f.splice_reads      ? SpliceMode::kOn
             : f.no_splice_reads ? SpliceMode::kOff
                                 : SpliceMode::kAuto;
  if (!f.metrics_listen.empty()) {
    auto listen = ParseListenAddress(f.metrics_listen);
    if (!listen.ok()) return listen.status().WithContext("--metrics-listen");
    c.metrics_listen = *listen;
  }
  if (f.cache.empty() && (!f.cache_size.empty() || !f.cache_min_free.empty() || f.no_passthrough)) {
    return Status::InvalidArgument(
        "--cache-size, --cache-min-free and --no-passthrough need --cache DIR");
  }
  d.passthrough = !f.cache.empty() && !f.no_passthrough;
  m.direct_io_reads = f.direct_io;
  d.direct_io = f.direct_io;
  if (!f.cache.empty()) {
    // Absolute now: the daemon changes its working directory.
    std::error_code ec;
    c.cache.dir = std::filesystem::absolute(f.cache, ec).lexically_normal().string();
    if (ec) return Status::InvalidArgument(fmt::format("--cache {}: {}", f.cache, ec.message()));
    if (!f.cache_size.empty()) {
      REELFS_ASSIGN_OR_RETURN(c.cache.max_bytes, ParseSize("--cache-size", f.cache_size));
      if (*c.cache.max_bytes == 0) return Status::InvalidArgument("--cache-size: more than 0");
    }
    if (!f.cache_min_free.empty()) {
      REELFS_ASSIGN_OR_RETURN(c.cache.min_free_bytes,
                              ParseSize("--cache-min-free", f.cache_min_free));
    }
  }
  c.log_file = f.log_file;
  c.syslog = f.syslog;
  return c;
}

}  // namespace reelfs::cli
