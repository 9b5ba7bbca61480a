// `reelfs mount` flags as typed (MountFlags) and what they mean (MountConfig): the FileSystem's
// MountOptions, the Daemon's options and where logs go. Parsing and validation live here, apart
// from CLI11 and from any mounting, so they are unit-tested (tests/unit/cli/mount_options_test.cc).
//
// Thread-safety: pure functions (ParseMountFlags resolves the mountpoint with realpath).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "cli/rdma_config.h"
#include "common/listen_address.h"
#include "common/result.h"
#include "fuse/core/options.h"
#include "fuse/lowlevel/daemon.h"
#include "hsm/restorer.h"

namespace reelfs::cli {

struct MountFlags {
  std::string source;      // BUCKET[/PREFIX], optionally s3://BUCKET[/PREFIX]
  std::string mountpoint;  // an existing directory
  bool foreground = false;
  bool allow_other = false;
  std::string uid;        // empty: the mounting user's
  std::string gid;        // empty: the mounting user's
  std::string file_mode;  // empty: 0644, or 0444 with --read-only
  std::string dir_mode;   // empty: 0755, or 0555 with --read-only
  std::string metadata_ttl = "1h";
  std::string negative_ttl = "60s";
  std::string max_memory = "1GiB";
  std::string part_size = "8MiB";
  std::string max_window;  // empty: fuse::PrefetchOptions' default
  int lookup_listing_pages = 16;
  int max_threads = 16;
  int64_t read_ahead_kb = 4096;
  bool clone_fd = false;
  std::string log_file;  // empty: stderr in the foreground, syslog in the background
  bool syslog = false;
  // Writes (docs/semantics.md "Writes").
  bool read_only = false;
  bool allow_delete = false;
  bool allow_overwrite = false;
  std::string write_part_size = "8MiB";
  int write_parts_in_flight = 4;            // UploadParts in flight per file being written
  std::string abort_stale_uploads = "24h";  // 0: off
  std::string copy_threshold = "5GiB";      // rename: CopyObject up to this size
  std::string copy_part_size = "512MiB";    // rename: UploadPartCopy part size above it
  // Tape (docs/semantics.md "Offline objects").
  std::string offline = "wait";  // wait | eagain | eacces
  std::string offline_timeout = "30m";
  std::string offline_state_ttl = "5s";   // fuse::TapeOptions::state_ttl
  std::string restore_tier = "standard";  // standard | bulk | expedited
  int restore_days = 7;                   // 0: send no Days (Intelligent-Tiering)
  std::string restore_poll = "1s";        // first HEAD poll; doubles up to restore_poll_max
  std::string restore_poll_max = "60s";
  std::string ledger;  // empty: hsm::Ledger::DefaultPath(); "none": in memory
  // RDMA data path (docs/protocols/rdma.md §7). `--rdma` alone: the first device with an active
  // port; `--rdma=DEV`: that device.
  bool rdma = false;
  std::string rdma_device;
  int rdma_sessions = 4;  // RC sessions (QPs) per gateway
  // auto | rc | dc (docs/protocols/rdma-dc.md "Choosing the transport").
  std::string rdma_transport = "auto";
  // auto | off | an absolute socket path (cli/side_channel_path.h).
  std::string side_channel = "auto";
  // Print the side channel, GPU probe and data path once mounted.
  bool verbose = false;
  // Pin prefetch buffers for CUDA (cudaHostRegister) where a GPU is usable (docs/gpu.md).
  bool cuda_pin = false;
  // HOST:PORT for the Prometheus exposition (GET /metrics); empty: none.
  std::string metrics_listen;
  // The local object cache (docs/cache.md): a directory, empty for none; its size limit (empty:
  // what the file system holds above the floor) and free-space floor (empty: 5% of it).
  std::string cache;
  std::string cache_size;
  std::string cache_min_free;
  bool no_passthrough = false;  // serve cached files through the daemon even where the kernel could
  // Splice sequential reads of large objects from the GET's socket into /dev/fuse
  // (fuse/core/splicing_prefetcher.h, docs/semantics.md "Spliced reads"): --splice-reads
  // always (where the endpoint allows), --no-splice-reads never; neither: SpliceMode::kAuto.
  bool splice_reads = false;
  bool no_splice_reads = false;
  // A spliced stream slower than its reader over this many bytes goes to the parallel GETs
  // (SpliceOptions::slow_window); 0: never.
  std::string splice_slow_window = "8MiB";
  // Files opened for reading skip the kernel's page cache (FOPEN_DIRECT_IO): each read() reaches
  // the daemon at its own size (docs/semantics.md "Direct I/O reads").
  bool direct_io = false;
};

// --cache: where and how big. dir empty: no cache. A limit or floor left unset is decided when the
// cache opens, from the file system it lands on (ResolveCacheLimits).
struct CacheConfig {
  std::string dir;  // absolute
  std::optional<uint64_t> max_bytes;
  std::optional<uint64_t> min_free_bytes;
};

// Spliced reads (docs/semantics.md "Spliced reads"). kAuto: on over one plain-http endpoint
// without a proxy, unless --cache or --rdma must see the bytes, where the pipes hold READs of the
// mount's max_read; off elsewhere. kOn: wherever the endpoint allows (a warning elsewhere), READs
// capped at what the pipes hold.
enum class SpliceMode { kAuto, kOn, kOff };

struct MountConfig {
  fuse::MountOptions mount;
  fuse::DaemonOptions daemon;
  hsm::RestorerOptions restorer;  // endpoint and bucket filled by RunMount
  RdmaConfig rdma;
  bool foreground = false;
  std::string log_file;
  bool syslog = false;
  bool verbose = false;
  bool cuda_pin = false;
  std::optional<ListenAddress> metrics_listen;  // cli/metrics_listener.h
  CacheConfig cache;
  SpliceMode splice = SpliceMode::kAuto;
};

// Splits "bucket/a/b" into bucket "bucket" and prefix "a/b/" ("" for the whole bucket).
Status ParseMountSource(std::string_view source, std::string* bucket, std::string* prefix);

// "0444" -> 0444. Octal digits only, at most 07777.
Result<uint32_t> ParseMode(std::string_view text);

Result<MountConfig> ParseMountFlags(const MountFlags& flags);

}  // namespace reelfs::cli
