// MountOptions: everything fuse/core needs to know about a mount, with defaults. Filled by the CLI
// (flags, later YAML); no parsing here (docs/conventions.md "Options").
//
// Thread-safety: a plain struct, read-only after the mount starts.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <sys/types.h>

namespace reelfs::fuse {

struct PrefetchOptions {
  // Part size of the ranged GETs a prefetcher issues. Default 8 MiB (mountpoint-s3's default).
  uint64_t part_size = 8ull << 20;
  // First request of a stream: small, so random readers pay little. 1 MiB + 128 KiB covers one
  // 1 MiB application read plus the kernel's 128 KiB readahead (mountpoint-s3's reasoning).
  uint64_t initial_request = (1ull << 20) + (128ull << 10);
  // The window doubles on sequential access up to this many bytes ahead of the reader. 64 MiB
  // (8 parts in flight) covers 6 GB/s at 10 ms per GET; larger windows measured slower on
  // loopback (bench/RESULTS.md: 256 MiB gave 0.47x curl with 4 readers and 1037 MiB RSS, 64 MiB
  // 0.68x and 390 MiB): more GETs in flight only spread the same bytes over colder buffers.
  uint64_t max_window = 64ull << 20;
  // Forward jumps up to this far wait for data already in flight instead of resetting.
  uint64_t seek_tolerance = 16ull << 20;
  // Backward jumps up to this far are served from retained data (kernel readahead reorders).
  uint64_t backward_tolerance = 1ull << 20;
};

// Spliced reads (splicing_prefetcher.h); on when the FileSystem's DataPath has a body source.
struct SpliceOptions {
  // Smaller objects are left to the inner Prefetcher (fetched whole at open, one GET).
  uint64_t min_object_size = 16ull << 20;
  // A READ this far ahead of the stream's position waits for the gap instead of ending splicing.
  // The kernel's async readahead keeps up to max_background (128) READs in flight, so a
  // sequential reader's READs can arrive tens of MiB ahead of the oldest one unanswered.
  uint64_t reorder_window = 64ull << 20;
  std::chrono::milliseconds reorder_wait{50};
  // A stream that moves no byte for this long fails (the S3 client's idle timeout); 0: never.
  std::chrono::milliseconds idle_timeout{30'000};
  // A stream whose worker spent more than slow_share of a window (at least slow_window bytes
  // served and slow_time passed) waiting for its socket's next bytes is slower than its reader:
  // the handle goes to the ordinary path, whose parallel part GETs one connection's cap (a remote
  // store's, or a window over a long round trip) does not bound. slow_window 0: never. The time
  // floor keeps a moment's stall (a scheduler tick or two on a busy host; 32 MiB take 15 ms on
  // loopback) from deciding; the share's height keeps a reader that only outruns a busy
  // gateway's CPU (40-55 % waiting on loopback) on its stream, where parallel GETs would only add
  // work (bench/RESULTS.md "Spliced reads by default").
  uint64_t slow_window = 8ull << 20;
  std::chrono::milliseconds slow_time{100};
  double slow_share = 0.75;
};

// What a read of an object that is not online does (docs/semantics.md "Offline objects"). open()
// always succeeds; read() decides.
enum class OfflineMode {
  kWait,    // request (or join) one restore, reply when the object is readable (asynchronously)
  kEagain,  // request a restore, answer EAGAIN at once
  kEacces,  // answer EACCES, request nothing
};

struct TapeOptions {
  OfflineMode offline = OfflineMode::kWait;
  // Longest a read waits in kWait before ETIMEDOUT. Capped below the kernel's FUSE request
  // timeout when one is set (the daemon reads /proc/sys/fs/fuse/*request_timeout and warns).
  std::chrono::seconds offline_wait{1800};
  // Attributes of objects that are not online are trusted this long (kernel and caches), so
  // st_blocks and user.hsm.state follow a restore without waiting for metadata_ttl.
  std::chrono::seconds state_ttl{5};
  // Directory summaries (user.hsm.summary) are cached this long.
  std::chrono::seconds summary_ttl{10};
};

// Writes through the mount (docs/semantics.md "Writes").
struct WriteOptions {
  // Refuse every write with EROFS (statfs then reports ST_RDONLY).
  bool read_only = false;
  // unlink and rmdir of what S3 holds: a delete in an archive is final, so it is asked for.
  bool allow_delete = false;
  // open(O_TRUNC) of an existing object writes its replacement, visible at close. Off by
  // default (mountpoint-s3's choice): the archive's copy of the old object goes with it.
  bool allow_overwrite = false;
  // Base part size of a new file's multipart upload (Upload::Options::part_size); parts grow so
  // that 5 TiB fits in 10 000 (upload.h). 8 MiB, as mountpoint-s3.
  uint64_t part_size = 8ull << 20;
  // Upload parts in flight per file. 4 parts of 8 MiB keep a loopback gateway busy (bench/fuse).
  uint32_t max_parts_in_flight = 4;
  // At mount start, abort the multipart uploads under the mount's prefix initiated more than this
  // before the mount started (left by a killed writer; fuse/core/stale_uploads.h). 24 h: longer
  // than any write through a mount takes (5 TiB at 100 MB/s is 15 h), so another host's upload
  // in progress is never cut. 0: off (docs/semantics.md "Writes").
  std::chrono::seconds abort_stale_uploads{24 * 3600};
  // rename: objects up to this size are one CopyObject (S3 copies at most 5 GiB so); larger ones
  // a multipart upload of UploadPartCopy parts (`--copy-threshold`, for tests; default 5 GiB).
  uint64_t copy_threshold = 5ull << 30;
  // Part size of such a multipart copy (`--copy-part-size`, 5 MiB..5 GiB), doubled until the
  // object fits in 10 000 parts; max_parts_in_flight parts are copied at a time. 512 MiB: each
  // part costs the server one copy and us one request, and a 5 TiB object still fits.
  uint64_t copy_part_size = 512ull << 20;
  // A rename of an empty new file after its close but before its RELEASE (the kernel sends that
  // after close returns; the empty file is uploaded then) waits this long for the upload, then
  // answers EBUSY (core_rename.cc). The RELEASE comes within microseconds unless the writer
  // still holds another descriptor of the file.
  std::chrono::milliseconds release_wait{2000};
};

struct MountOptions {
  std::string bucket;
  std::string prefix;  // "" or ending in '/': the mount's root is this prefix
  // How long the kernel and our caches trust entries and attributes. An archive changes rarely.
  std::chrono::seconds metadata_ttl{3600};
  // How long "no such name" is remembered, and how many such names at most.
  std::chrono::seconds negative_ttl{60};
  size_t negative_cache_entries = 100'000;
  // A lookup that needs S3 in a directory without a fresh listing lists the directory in the
  // background when it fits in this many 1000-key LIST pages, and installs that listing as
  // opendir would; lookups in the directory arriving meanwhile wait for it instead of sending
  // HEAD+LIST each. The first lookup waits for the first page only. Past the budget the listing
  // stops, every waiter falls back to HEAD+LIST and the directory is not listed by lookups again
  // for metadata_ttl. It bounds both what a lookup may cost (requests, memory) and how long a
  // lookup may wait. 0 (or metadata_ttl 0) turns it off. Default 16: 16 000 entries
  // (docs/semantics.md "Lookup").
  uint32_t lookup_listing_pages = 16;
  // Ownership and permission bits shown for every file and directory.
  uid_t uid = 0;
  gid_t gid = 0;
  uint32_t file_mode = 0444;
  uint32_t dir_mode = 0555;
  // One process-wide budget for all prefetch buffers (bytes). Demand reads are served first.
  uint64_t max_memory = 1ull << 30;
  PrefetchOptions prefetch;
  SpliceOptions splice;
  TapeOptions tape;
  WriteOptions write;
  // Published to `reelfs stage/status/wait` through the root's user.reelfs.mount xattr.
  std::string endpoint;     // the S3 endpoint URL as configured
  std::string ledger_path;  // the restore ledger file (hsm/ledger.h), ":memory:" if none
  // The side channel's socket (docs/protocols/side-channel.md), announced in user.reelfs.mount;
  // empty when it is off.
  std::string side_channel_path;
  // The local cache's directory (`--cache`, docs/cache.md), announced in user.reelfs.mount so
  // `reelfs stage/status/wait` see what this host holds; empty without a cache.
  std::string cache_dir;
  // One line on the GPUs the daemon found (cuda::Summary), announced in user.reelfs.mount; empty
  // leaves the member out.
  std::string gpu;
  // `--direct-io`: files opened for reading are answered FOPEN_DIRECT_IO, so the kernel sends
  // every read() to the daemon at its own size and keeps no page cache for them (whole cached
  // files served by the kernel from a backing file excepted). docs/semantics.md "Direct I/O
  // reads".
  bool direct_io_reads = false;
  // With --cache, where the kernel reads no backing file itself: READs of an object the cache
  // holds whole are answered with the cache's file, which libfuse splices into /dev/fuse
  // (cached_file_reads.h, docs/cache.md "Served by the daemon"). Set by the mount where pipes
  // hold a whole READ and spliced reads are not turned off.
  bool splice_cached_files = false;
};

}  // namespace reelfs::fuse
