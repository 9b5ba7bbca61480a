// FileSystem: BUCKET/PREFIX as a directory tree that reads and writes, with the semantics of every
// FUSE operation and no libfuse type (fuse/lowlevel translates).
//
// Names and directories come from ListObjectsV2 with delimiter '/': a common prefix "a/" is a
// directory whether or not a marker object "a/" exists; an object "a" is a file. When a file "a"
// and a prefix "a/" both exist, the directory wins and the file is hidden (docs/semantics.md).
// Keys that cannot be names (empty components, "." or "..", components over 255 bytes, NUL) are
// skipped with one warning each.
//
// Inode numbers increase monotonically and are never reused; the kernel's lookup counts are kept
// exactly (every Entry returned counts one, Forget subtracts), and an unknown or forgotten inode
// is an ESTALE-class error, never a wild pointer.
//
// Metadata is cached for MountOptions::metadata_ttl (entries, attributes, listings), negative
// lookups for negative_ttl in a bounded cache; the kernel gets the same timeouts. A lookup that
// needs S3 lists its directory once in the background (within lookup_listing_pages) and lookups
// arriving meanwhile wait for that listing instead of sending HEAD+LIST each (lookup_listing.h).
//
// Tape (docs/semantics.md "Offline objects", "Extended attributes"): each file keeps what the
// latest listing or HEAD said about it (storage class, restore info, tape hints) and its state is
// hsm::Classify of that plus the Restorer's knowledge of live requests. Objects that are not
// readable report st_blocks 1 and are cached only tape.state_ttl. A read of an offline object
// answers per tape.offline (wait: one restore through the Restorer and an asynchronous,
// interruptible wait; eagain; eacces); O_NONBLOCK handles always get EAGAIN. Xattrs expose the
// state (user.s3.*, user.hsm.*, user.reelfs.mount) and user.hsm.request=stage requests restores.
// The root's user.reelfs.metrics is a JSON snapshot of FsCounters and the data path's counters.
//
// With a DataPath channel (`reelfs mount --rdma`) every prefetcher reads through it (prefetcher.h)
// and every upload sends its parts through it (DataChannel::Put, part_sender.h); metadata,
// listings, HEADs and the multipart create / complete / abort stay on the ObjectStore.
//
// Every method replies through its callback exactly once, never blocking the calling thread on
// the network (callbacks may run on the ObjectStore's thread). Errors are Status values; the one
// errno mapping is fuse/lowlevel/errno_map.h.
//
// Thread-safety: all methods may be called concurrently from any thread.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cache/object_cache.h"
#include "common/cancel.h"
#include "common/clock.h"
#include "common/json.h"
#include "fuse/core/buffer_pool.h"
#include "fuse/core/memory_budget.h"
#include "fuse/core/options.h"
#include "fuse/core/types.h"
#include "hsm/restorer.h"
#include "rdmaio/data_channel.h"
#include "s3/body_stream.h"
#include "s3/object_store.h"

namespace reelfs::fuse {

struct FsCounters {
  uint64_t lookups = 0;
  uint64_t list_requests = 0;
  uint64_t head_requests = 0;
  uint64_t open_handles = 0;
  uint64_t inodes = 0;
  uint64_t bytes_read = 0;
  uint64_t direct_reads = 0;     // ReadTo answered with bytes (one GET or fetch each)
  uint64_t offline_reads = 0;    // reads that found their object offline (GET or cached state)
  uint64_t restore_waits = 0;    // waits for a restore (--offline=wait) started
  uint64_t xattr_refreshes = 0;  // HEADs sent to refresh a stale state for a user.hsm.* xattr
  uint64_t write_handles = 0;    // files being written now
  uint64_t bytes_written = 0;    // bytes accepted by WRITE
  uint64_t files_written = 0;    // uploads completed (the object is in S3)
  uint64_t uploads_failed = 0;   // uploads that failed or were aborted (nothing became visible)
  // Upload payloads (parts and single PUTs) by the path their bytes took (part_sender.h): read by
  // the gateway over RDMA (--rdma), or sent as HTTP bodies; put_fallbacks: of the HTTP ones,
  // those offered to the data channel first.
  uint64_t rdma_put_parts = 0;
  uint64_t rdma_put_bytes = 0;
  uint64_t http_put_parts = 0;
  uint64_t http_put_bytes = 0;
  uint64_t put_fallbacks = 0;
  uint64_t deletes = 0;     // objects deleted by unlink / rmdir
  uint64_t renames = 0;     // files renamed (copied to the new key, the old key deleted)
  uint64_t copy_parts = 0;  // UploadPartCopy parts of renames above --copy-threshold
  // Opens answered with the local cache's file for the kernel to read (FUSE passthrough).
  uint64_t backing_opens = 0;
  // Spliced reads (splicing_prefetcher.h): READs answered from a pipe, their bytes, the GET body
  // streams opened, handles that went back to the ordinary path, gaps a stream dropped, and
  // handles that went back because their stream was slower than their reader.
  uint64_t spliced_reads = 0;
  uint64_t spliced_bytes = 0;
  uint64_t splice_streams = 0;
  uint64_t splice_fallbacks = 0;
  uint64_t splice_gaps_skipped = 0;
  uint64_t splice_slow_streams = 0;
  // Cached-file reads (cached_file_reads.h): handles answered from the cache's file, their READs
  // and bytes, and handles that went back to the checked path because the file changed.
  uint64_t cached_file_opens = 0;
  uint64_t cached_file_reads = 0;
  uint64_t cached_file_bytes = 0;
  uint64_t cached_file_fallbacks = 0;
};

// How file bytes travel besides the ObjectStore. Empty: every read is a GET through the store.
struct DataPath {
  // Reads fetch through this channel into registered buffers, and upload parts are sent from them
  // (give the FileSystem a BufferPool from CreateRegisteredBufferPool over channel->registrar());
  // null: through the store.
  std::shared_ptr<rdmaio::DataChannel> channel;
  // The channel's counters as a JSON value (per endpoint: requests and bytes over RDMA and over
  // HTTP), the "data_path" member of user.reelfs.metrics; unset or a null value: `null`. Called
  // from any thread.
  std::function<Json()> metrics_json;
  // The side channel's counters (api/server), the "side_channel" member of user.reelfs.metrics;
  // unset or a null value: `null`. Called from any thread.
  std::function<Json()> side_channel_json;
  // The S3 endpoints' counters and state (s3/client/endpoint_set.h), the "endpoints" member of
  // user.reelfs.metrics; unset: `null`. Called from any thread.
  std::function<Json()> endpoints_json;
  // The local object cache (`reelfs mount --cache`, docs/cache.md); null: none. The store given
  // to CreateFileSystem must then be a CachingStore over it (cache/caching_store.h): reads fill it
  // and are served from it. The FileSystem asks it which objects are here whole: those read
  // without the server (readable while their archive copy is offline: full st_blocks, no restore,
  // user.hsm.state "cached"), and never through the RDMA channel; a channel given with a cache
  // is a CachingChannel over it (caching_channel.h), so its reads fill the cache too. Its
  // counters are the "cache" member of user.reelfs.metrics.
  std::shared_ptr<cache::ObjectCache> cache;
  // Spliced reads (`--splice-reads`, splicing_prefetcher.h): sequential reads of large objects
  // move from the GET's socket to /dev/fuse by splice(2). Null: off. Not used for a file read
  // through the channel or the cache (both need the bytes in memory).
  std::shared_ptr<s3::BodySource> body_source;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // A missing name is a kNotFound Status; the kernel may cache that for options().negative_ttl
  // (fuse/lowlevel replies with a negative entry, ino 0, with that timeout).
  virtual void Lookup(InodeId parent, std::string_view name, Callback<Entry> done) = 0;
  // The kernel dropped `nlookup` references to `ino`.
  virtual void Forget(InodeId ino, uint64_t nlookup) = 0;
  virtual void GetAttr(InodeId ino, Callback<Attributes> done) = 0;

  // Directory handles hold a snapshot of the listing, so offsets stay stable while it is read.
  virtual void OpenDir(InodeId ino, Callback<uint64_t> done) = 0;
  // Entries of the snapshot after `offset` (0 = from the start, including "." and ".."), at most
  // `max_entries`. With `plus`, each returned entry carries a full Entry but does NOT yet count
  // as a lookup: the caller calls AcceptDirEntries with the number it actually passed to the
  // kernel (the reply buffer may fill before all of them fit).
  virtual void ReadDir(InodeId ino, uint64_t dh, uint64_t offset, size_t max_entries, bool plus,
                       Callback<std::vector<DirEntry>> done) = 0;
  // "." and ".." are never counted (the kernel takes no reference for them). Children that a
  // READDIRPLUS returned but nobody accepted are dropped at ReleaseDir.
  virtual void AcceptDirEntries(const std::vector<DirEntry>& accepted) = 0;
  virtual void ReleaseDir(uint64_t dh) = 0;

  // Opens for reading. Write access to an existing object is EPERM-class (objects are never
  // changed in place; docs/semantics.md "Writes"), except O_TRUNC with write access on a mount
  // with write.allow_overwrite: the handle then writes a new object that replaces the old one at
  // close, as Create's do (`pid` names the writer, see Flush). EROFS-class on a read-only mount;
  // a file this mount is writing is EBUSY-class. Opening an offline object always succeeds;
  // O_NONBLOCK is remembered for its reads.
  virtual void Open(InodeId ino, int flags, uint32_t pid, Callback<OpenedFile> done) = 0;
  // An offline object: see tape.offline. `interrupt` (may be null) cancels a wait for a restore:
  // the read then answers kCancelled (EINTR) at once.
  virtual void Read(InodeId ino, uint64_t fh, uint64_t offset, size_t size,
                    std::shared_ptr<CancellationToken> interrupt, Callback<ReadData> done) = 0;
  // A read whose bytes go to the caller's memory rather than into a reply (the side channel,
  // api/server): the same semantics as Read (offline modes, ESTALE, the answer checks) but no
  // prefetch buffer in between, for callers that name large ranges themselves. Exactly one target:
  //  * `sink`: one ranged GET through the ObjectStore whose body is handed over as it arrives,
  //    `sink(at, bytes)` in order, `at` relative to `offset`, never past `size` (one copy, as
  //    curl makes); a non-OK Status from it aborts the GET and is the answer;
  //  * `window`: one DataChannel::Fetch into a window of a region registered with the mount's
  //    channel (DataPath::channel->registrar(); without a channel kFailedPrecondition): the server
  //    writes it over RDMA, or the channel's HTTP fallback copies into it (`via` says which). The
  //    channel's fencing rule holds: once `done` has run nothing writes into the window.
  // `done` gets the byte count (short at the end of the object). On an error the target may
  // have received bytes that are not the file's (a server that ignored If-Match): the caller
  // treats them as undefined.
  using ReadSink = std::function<Status(uint64_t at, std::span<const std::byte> bytes)>;
  struct ReadTarget {
    ReadSink sink;
    rdmaio::RegisteredWindow window;  // used when window.region is set
  };
  struct ReadToResult {
    uint64_t bytes = 0;
    rdmaio::DataPath via = rdmaio::DataPath::kHttp;
  };
  virtual void ReadTo(InodeId ino, uint64_t fh, uint64_t offset, size_t size, ReadTarget target,
                      std::shared_ptr<CancellationToken> interrupt,
                      Callback<ReadToResult> done) = 0;
  // RELEASE of a handle from Open or Create. A file being written that no Flush completed is
  // completed now (errors are only logged: release has no answer).
  virtual void Release(uint64_t fh) = 0;

  // Writes (docs/semantics.md "Writes"); every one is EROFS-class with write.read_only.
  // A new file `name` in `parent`: its inode and a handle writing it. The object appears in S3
  // when the handle is flushed (close), fsynced or released; until then only this mount shows the
  // name (size so far), and opening it again is EBUSY-class. A name S3 already has: EPERM-class
  // (no overwrite), a directory: EISDIR-class. `pid` is the calling thread (0: unknown): the
  // process it belongs to is the file's writer (see Flush).
  struct CreatedFile {
    Entry entry;
    OpenedFile file;
  };
  virtual void Create(InodeId parent, std::string_view name, int flags, uint32_t pid,
                      Callback<CreatedFile> done) = 0;
  // Appends `data` (copied before Write returns) at `offset`, which must be the bytes written so
  // far (EINVAL-class otherwise, logged with both offsets). `done` gets the byte count, possibly
  // later: a write that fills a part waits while too many parts are in flight (upload.h).
  virtual void Write(InodeId ino, uint64_t fh, uint64_t offset, std::span<const std::byte> data,
                     Callback<size_t> done) = 0;
  // FLUSH (each close) and FSYNC: a handle writing a file completes its upload and answers how it
  // went (ENOSPC, EACCES, EIO, ...); afterwards the file is an ordinary object and further writes
  // to the handle are EBADF-class. Other handles: OK at once.
  // A FLUSH of a file with nothing written yet is answered OK and completes nothing (dd and shell
  // redirections open, dup and close before they write; mountpoint-s3 defers the same way): the
  // next flush, an fsync or the release completes it. `fsync` completes even an empty file.
  // A FLUSH from another process than the writer (`pid`, the calling thread, in another thread
  // group: a child closing its inherited copy at exec or exit) is answered OK and completes
  // nothing; the writer's close or the release does (mountpoint-s3 does the same).
  virtual void Flush(InodeId ino, uint64_t fh, bool fsync, uint32_t pid,
                     std::function<void(Status)> done) = 0;
  // A directory of this mount only, until a file is written below it (S3 has no directories).
  virtual void MkDir(InodeId parent, std::string_view name, Callback<Entry> done) = 0;
  // DeleteObject of file `name` (EPERM-class without write.allow_delete).
  virtual void Unlink(InodeId parent, std::string_view name, std::function<void(Status)> done) = 0;
  // RENAME of file `name` in `parent` to `new_name` in `new_parent` (docs/semantics.md "Writes"):
  // a server-side copy (CopyObject up to write.copy_threshold, a multipart UploadPartCopy above),
  // then DeleteObject of the old key; the inode keeps its number under the new name. `flags`
  // are renameat2's: RENAME_NOREPLACE onto an existing name is EEXIST-class, RENAME_EXCHANGE
  // (and any other flag) EINVAL-class. A directory is EXDEV-class (mv then copies and deletes);
  // an existing destination EPERM-class without write.allow_overwrite; an archived source that
  // is not restored EACCES-class (kArchived); a file being written EBUSY-class, except an empty
  // one its writer has closed: that rename waits (write.release_wait at most) for the RELEASE
  // that uploads it.
  virtual void Rename(InodeId parent, std::string_view name, InodeId new_parent,
                      std::string_view new_name, unsigned flags,
                      std::function<void(Status)> done) = 0;
  // An empty directory: one made here goes at once; one S3 has needs write.allow_delete and goes
  // with its marker object. ENOTEMPTY-class when anything is below it.
  virtual void RmDir(InodeId parent, std::string_view name, std::function<void(Status)> done) = 0;
  // SETATTR. Mode, owner and times are accepted and ignored (every file shows the mount's fixed
  // ones; S3 keeps no such metadata). A size: the file's own size is a no-op; 0 on a file being
  // written before any part was sent drops what was written; anything else EPERM-class.
  struct SetAttrRequest {
    std::optional<uint64_t> size;
  };
  virtual void SetAttr(InodeId ino, const SetAttrRequest& request, Callback<Attributes> done) = 0;

  // Extended attributes (docs/semantics.md "Extended attributes"). Only "user." names reach
  // here. A missing attribute is ENODATA-class; the caller handles size probes and ERANGE.
  virtual void GetXattr(InodeId ino, std::string_view name, Callback<std::string> done) = 0;
  virtual void ListXattr(InodeId ino, Callback<std::vector<std::string>> done) = 0;
  // user.hsm.request = "stage": requests restores (a file, or every non-readable object below a
  // directory, in tape order). EINVAL-class for another value, EROFS-class for other names.
  virtual void SetXattr(InodeId ino, std::string_view name, std::string_view value,
                        std::function<void(Status)> done) = 0;

  // FUSE passthrough (docs/cache.md "Served by the kernel"): with `on`, an open of an object the
  // local cache (DataPath::cache) holds whole answers with OpenedFile::backing_file. The adapter
  // turns it on once the kernel granted passthrough, and off again if the kernel refuses a file.
  virtual void SetBackingFiles(bool on) = 0;

  virtual FsStats StatFs() = 0;
  virtual FsCounters counters() const = 0;
  // The kernel timeouts that match the caches.
  virtual const MountOptions& options() const = 0;
};

// `restorer` (may be null: reads of offline objects then answer EACCES, nothing is requested)
// must use the same clock as `clock` for its deadlines.
std::unique_ptr<FileSystem> CreateFileSystem(std::shared_ptr<s3::ObjectStore> store,
                                             MountOptions options, std::shared_ptr<BufferPool> pool,
                                             std::shared_ptr<MemoryBudget> budget, Clock& clock,
                                             std::shared_ptr<hsm::Restorer> restorer = nullptr,
                                             DataPath data_path = {});

}  // namespace reelfs::fuse
