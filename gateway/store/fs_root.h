// FsRoot: the gateway's directory root and every filesystem call made under it.
//
// Layout: ROOT/<bucket>/<key path>; ROOT/.reelfs-gateway/{tmp,uploads}/ are internal. Paths are
// never built as strings and handed to open(2): each component is opened with openat(2) and
// O_NOFOLLOW from the bucket's directory fd, so a symlink planted in the root (or a key that
// slipped past validation) cannot reach a file outside it. Such a symlink is not part of the
// namespace: reads through it are NoSuchKey like any missing key, and a write below it (or onto
// it) replaces the link with what it writes, never touching the target. Keys must be validated
// (key_validation.h) before they get here.
//
// Errors carry detail().s3_code for the API layer: NoSuchBucket, NoSuchKey, ObjectParentIsFile,
// ExistingObjectIsDirectory, BucketNotEmpty, BucketAlreadyOwnedByYou.
//
// Thread-safety: FsRoot is safe to use from many threads (it holds only directory fds); a
// TmpFile has a single owner.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"

namespace reelfs::gateway {

struct FileStat {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  bool is_dir = false;
};

// A file under ROOT/.reelfs-gateway/tmp (same filesystem as the buckets, so publishing it is one
// rename). Unlinked on destruction unless it was published.
//
// Or a region of a shared file (Region(): a multipart part written in place in its upload's
// data file, FsRoot::CreatePartInPlace): writes land at `base` onward and may not pass
// `capacity`; dropping it unpublished punches its bytes out of the file (the claim stays).
class TmpFile {
 public:
  TmpFile(int dir_fd, std::string name, UniqueFd fd)
      : dir_fd_(dir_fd), name_(std::move(name)), fd_(std::move(fd)) {}
  static TmpFile Region(UniqueFd fd, uint64_t base, uint64_t capacity);
  ~TmpFile();
  TmpFile(TmpFile&& other) noexcept;
  TmpFile& operator=(TmpFile&&) = delete;
  TmpFile(const TmpFile&) = delete;
  TmpFile& operator=(const TmpFile&) = delete;

  int fd() const { return fd_.get(); }
  int dir_fd() const { return dir_fd_; }
  const std::string& name() const { return name_; }
  uint64_t size() const { return size_; }
  bool is_region() const { return region_; }
  // Appends all of `data` (retries short writes). A region refuses bytes past its capacity.
  Status Write(std::string_view data);
  // fsync: the content is durable before it is published.
  Status Sync();
  // Appends `length` bytes of `src_fd` from `offset` (copy_file_range, read/write fallback).
  Status CopyFrom(int src_fd, uint64_t offset, uint64_t length);
  // Called once the file was renamed away (a region: stored): the destructor then leaves it alone.
  void MarkPublished() {
    name_.clear();
    published_ = true;
  }

 private:
  int dir_fd_;
  std::string name_;
  UniqueFd fd_;
  uint64_t size_ = 0;
  bool region_ = false;
  bool published_ = false;  // region: stored, its bytes are a part now
  uint64_t base_ = 0;       // region: file offset of byte 0
  uint64_t capacity_ = 0;   // region: bytes it may hold
};

class FsRoot {
 public:
  // In-place parts stay within this many bytes of the data file (ext4's largest file is 16 TiB;
  // a part past it goes to its own file).
  static constexpr uint64_t kMaxInPlaceExtent = 4ull << 40;

  // Opens (creating when needed) ROOT and its internal directories. Temporary files go to a
  // directory of this process's own, tmp/<pid>-<random>/, held alive by a flock on its `.alive`
  // file while the FsRoot lives: at Open, the directories of processes that are gone (their
  // lock is free) are emptied and removed, whatever the role; loose files directly in tmp/ (from
  // before per-process directories) only by the owner (`front_end` false), which holds the root.
  static Result<std::unique_ptr<FsRoot>> Open(const std::string& root, bool front_end = false);
  ~FsRoot();
  FsRoot(const FsRoot&) = delete;
  FsRoot& operator=(const FsRoot&) = delete;

  const std::string& path() const { return path_; }
  std::string internal_path() const;
  // This process's temporary directory (tests: what is left in it).
  std::string tmp_path() const;

  // Bucket directories (names that are valid bucket names; the reserved dir never appears).
  Result<std::vector<std::string>> ListBucketDirs() const;
  Status MakeBucketDir(const std::string& bucket);
  Status RemoveBucketDir(const std::string& bucket);
  Result<UniqueFd> OpenBucket(const std::string& bucket) const;

  struct OpenedObject {
    UniqueFd fd;
    FileStat stat;
  };
  // Regular file for a plain key; the directory for a marker key ("a/"). NoSuchKey otherwise.
  Result<OpenedObject> OpenObject(const std::string& bucket, std::string_view key) const;

  Result<TmpFile> CreateTmp(std::string_view purpose);
  // Creates parent directories and renames tmp into place (tmp must have been Sync'ed). Returns
  // the stat of tmp itself, taken before the rename: a stat of the path afterwards could see the
  // file of a concurrent writer.
  Result<FileStat> Publish(TmpFile& tmp, const std::string& bucket, std::string_view key);
  // Creates the directory for a marker key ("a/b/"), parents included.
  Result<FileStat> MakeMarker(const std::string& bucket, std::string_view key);
  // Removes the object (idempotent) and then empty parent directories up to the bucket, except
  // those for which keep_dir("a/b/") returns true (directory markers).
  Status RemoveObject(const std::string& bucket, std::string_view key,
                      const std::function<bool(const std::string&)>& keep_dir);

  // Calls fn(key, stat) for every regular file and every empty directory (as "dir/") under the
  // bucket. Names that are not valid keys, symlinks and special files are skipped.
  Status Walk(const std::string& bucket,
              const std::function<void(const std::string&, const FileStat&)>& fn) const;

  // Multipart staging: ROOT/.reelfs-gateway/uploads/<upload_id>/ holds a part either as its own
  // file "<n>" or in place in the upload's data file "data", at (n - 1) x slot, where the slot
  // is the size of the first part of at least min_slot bytes to arrive (the symlink "slot" holds
  // it: created atomically, read without following) and "<n>.claim" marks that part n was given
  // its region. Only the first upload of a part number is written in place (the claim is taken
  // with O_EXCL): a retry or a concurrent second upload of it gets its own file, which then
  // takes precedence, so a half-written retry never damages a stored part. A whole upload whose
  // parts are all in place, numbered 1..n and all but the last exactly one slot is completed
  // by renaming the data file (TakeUploadData): no byte is copied (docs/gateway.md).
  Status MakeUploadDir(const std::string& upload_id);
  // A region for part `part_number` of `size` bytes, or nullopt when the part cannot go in place
  // (no slot yet and size < min_slot, larger than the slot, part already claimed, or past
  // kMaxInPlaceExtent): the caller then writes it to a CreateTmp file.
  Result<std::optional<TmpFile>> CreatePartInPlace(const std::string& upload_id, int part_number,
                                                   uint64_t size, uint64_t min_slot);
  // Makes a received part the stored one: renames a tmp file to "<n>"; for a region, syncs it and
  // removes any "<n>" left over (a file there would take precedence over the region), and the
  // caller calls tmp.MarkPublished() once the part is recorded (until then, dropping the region
  // frees its bytes).
  Status PublishPart(TmpFile& tmp, const std::string& upload_id, int part_number);
  // Where part n's bytes are: its own file (offset 0) or the data file at its region.
  struct PartLocation {
    UniqueFd fd;
    uint64_t offset = 0;
    bool in_place = false;
  };
  Result<PartLocation> LocatePart(const std::string& upload_id, int part_number) const;
  // When part n was stored (its file's or its claim's mtime).
  Result<FileStat> StatPart(const std::string& upload_id, int part_number) const;
  // The upload's slot size; nullopt while no part went in place.
  Result<std::optional<uint64_t>> UploadSlot(const std::string& upload_id) const;
  // Moves the data file to the tmp directory, cut to `size`: the assembled object, ready for
  // Store::Put. ReturnUploadData puts it back when that publish failed, so the upload can be
  // completed again.
  Result<TmpFile> TakeUploadData(const std::string& upload_id, uint64_t size);
  Status ReturnUploadData(TmpFile& tmp, const std::string& upload_id);
  Status RemoveUploadDir(const std::string& upload_id);

 private:
  FsRoot(std::string path, UniqueFd root, UniqueFd tmp_parent, std::string tmp_name, UniqueFd tmp,
         UniqueFd tmp_alive, UniqueFd uploads)
      : path_(std::move(path)),
        root_(std::move(root)),
        tmp_parent_(std::move(tmp_parent)),
        tmp_name_(std::move(tmp_name)),
        tmp_(std::move(tmp)),
        tmp_alive_(std::move(tmp_alive)),
        uploads_(std::move(uploads)) {}

  std::string path_;
  UniqueFd root_;
  UniqueFd tmp_parent_;   // ROOT/.reelfs-gateway/tmp
  std::string tmp_name_;  // this process's directory in it
  UniqueFd tmp_;          // that directory
  UniqueFd tmp_alive_;    // its `.alive`, flock'ed: the directory's owner is running
  UniqueFd uploads_;
};

// Status with an S3 error code attached (used by the store and the API layer).
Status S3CodeError(StatusCode code, std::string_view s3_code, int http_status, std::string msg);

}  // namespace reelfs::gateway
