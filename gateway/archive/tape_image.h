// TapeImages: cartridges as plain files, ROOT/.reelfs-gateway/tapes/<VSN>.img. Block n of a
// cartridge is the byte range [n * block_bytes, (n + 1) * block_bytes) of its image; an extent
// starts on a block boundary and the gap up to the next one is a hole (the image is sparse).
// The simulator (tape::Library) decides when a recall completes; these files hold the bytes.
//
// Thread-safety: Write and Read on different extents may run concurrently (pwrite/pread on
// per-call descriptors); allocation of extents is the caller's (Archive serializes writers).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"
#include "gateway/store/fs_root.h"

namespace reelfs::gateway {

class TapeImages {
 public:
  // Creates `dir` when missing.
  static Result<TapeImages> Open(std::string dir, uint64_t block_bytes);

  const std::string& dir() const { return dir_; }
  uint64_t block_bytes() const { return block_bytes_; }
  std::string PathOf(std::string_view vsn) const;
  uint64_t BlocksFor(uint64_t bytes) const {
    return bytes == 0 ? 1 : (bytes + block_bytes_ - 1) / block_bytes_;
  }

  // Copies `length` bytes of src_fd (from offset 0) to the extent at start_block, fdatasyncs the
  // image, and returns the hex MD5 of what was written.
  [[nodiscard]] Result<std::string> Write(std::string_view vsn, uint64_t start_block, int src_fd,
                                          uint64_t length) const;
  // Appends the extent's `length` bytes to `out` and returns their hex MD5. A missing, truncated
  // or unreadable image is kDataLoss naming the cartridge (the recall fails cleanly).
  [[nodiscard]] Result<std::string> Read(std::string_view vsn, uint64_t start_block,
                                         uint64_t length, TmpFile& out) const;

 private:
  TapeImages(std::string dir, uint64_t block_bytes)
      : dir_(std::move(dir)), block_bytes_(block_bytes) {}
  std::string dir_;
  uint64_t block_bytes_;
};

}  // namespace reelfs::gateway
