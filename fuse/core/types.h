// Value types fuse/core hands to fuse/lowlevel: attributes, entries, directory entries, open
// results and read data. No libfuse types here: fuse/lowlevel translates.
//
// Thread-safety: plain values, except ReadData whose keepalive may be released from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <sys/types.h>

#include "common/result.h"
#include "common/unique_fd.h"

namespace reelfs::fuse {

using InodeId = uint64_t;
inline constexpr InodeId kRootInode = 1;  // FUSE_ROOT_ID

template <class T>
using Callback = std::function<void(Result<T>)>;

struct Attributes {
  InodeId ino = 0;
  bool is_dir = false;
  uint64_t size = 0;
  uint32_t mode = 0;  // including S_IFDIR / S_IFREG
  uint32_t nlink = 1;
  uid_t uid = 0;
  gid_t gid = 0;
  std::chrono::system_clock::time_point mtime{};
  // 512-byte blocks resident: ceil(size / 512) for readable objects, 1 for objects that are not
  // (0 when empty), so du and ls -s show what is on disk (docs/semantics.md "Offline objects").
  uint64_t blocks = 0;
  // How long the kernel may cache these attributes: metadata_ttl, or tape.state_ttl for objects
  // that are not readable (so st_blocks follows a restore).
  std::chrono::duration<double> cache_ttl{0};
};

// A looked-up name: the kernel keeps it for entry_timeout and its attributes for attr_timeout.
// Every Entry returned with ino != 0 counts one lookup that the kernel will Forget.
struct Entry {
  Attributes attr;
  uint64_t generation = 0;
  std::chrono::duration<double> entry_timeout{0};
  std::chrono::duration<double> attr_timeout{0};
};

struct DirEntry {
  std::string name;
  Entry entry;      // for READDIRPLUS; plain READDIR uses entry.attr.ino and mode only
  uint64_t offset;  // the offset the kernel passes back to continue after this entry
};

struct OpenedFile {
  uint64_t fh = 0;
  bool keep_cache = false;  // FOPEN_KEEP_CACHE: the object's ETag is unchanged since cached
  bool noflush = true;      // FOPEN_NOFLUSH: read-only opens have nothing to flush
  // FOPEN_DIRECT_IO, for files being written: each write() goes from the writer's pages to the
  // daemon, without a page-cache copy the upload never reads (docs/semantics.md "Writes"); and
  // for reads under --direct-io (MountOptions::direct_io_reads).
  bool direct_io = false;
  // Set only after FileSystem::SetBackingFiles(true): the local cache's file holding the whole
  // object, verified, for the kernel to read itself (FUSE passthrough). Reads through this handle
  // that do reach the FileSystem are served as usual.
  std::shared_ptr<const UniqueFd> backing_file;
};

// Bytes for a READ reply: one or more pieces, valid until `keepalive` is released (after the
// reply has been written to /dev/fuse). Pieces may point into prefetch buffers.
struct ReadData {
  std::vector<std::span<const std::byte>> pieces;
  // Or, instead of pieces, the bytes are in a file descriptor: with fd_offset -1 a pipe (a spliced
  // read, splicing_prefetcher.h) holding exactly fd_bytes of them, to be moved on with splice(2)
  // or read(2) once; with fd_offset >= 0 a regular file (the local cache's, cached_file_reads.h)
  // holding them at that offset, to be spliced or pread. fd -1: none.
  int fd = -1;
  int64_t fd_offset = -1;
  size_t fd_bytes = 0;
  std::shared_ptr<const void> keepalive;
  size_t size() const {
    size_t n = fd >= 0 ? fd_bytes : 0;
    for (auto p : pieces) n += p.size();
    return n;
  }
};

struct FsStats {
  uint64_t block_size = 4096;
  uint64_t blocks = 0;      // total; all of them free (S3 reports no capacity)
  uint64_t files = 0;       // total inodes: a large constant
  uint64_t files_used = 0;  // the inodes this mount knows now (<= files)
  uint64_t max_name = 255;
};

}  // namespace reelfs::fuse
