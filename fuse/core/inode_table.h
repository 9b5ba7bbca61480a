// InodeTable: inode numbers for the names the kernel knows, with exact lookup counts.
//
// Numbers start at 2 (1 is the root, the mount's prefix) and increase monotonically; they are
// never reused, so a stale or forged number finds nothing (ESTALE) instead of another file
// (libfuse memfs_ll, mountpoint-s3 superblock.rs). Each record's identity keeps:
//  - `lookups`: Entries handed to the kernel minus what it forgot;
//  - `pins`: open file handles and directory snapshots that still refer to it.
// A record is dropped when both reach zero (the root never is). (parent, name) maps to the
// current inode of that name; a name whose kind changed (file <-> directory) gets a new inode and
// the old one lives on, unnamed, until the kernel forgets it.
//
// Thread-safety: none; the owner (FileSystem) serialises every call under its mutex.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "fuse/core/dir_listing.h"
#include "fuse/core/types.h"
#include "s3/types.h"

namespace reelfs::fuse {

// The kernel's view of an inode: its number, where it sits in the tree and who still refers to it.
// Only InodeTable changes ino, parent, name, key and is_dir.
struct InodeIdentity {
  InodeId ino = 0;
  InodeId parent = 0;
  std::string name;
  // Files: the object key. Directories: the prefix, "" or ending in '/'.
  std::string key;
  bool is_dir = false;
  uint64_t lookups = 0;  // Entries handed to the kernel minus what it forgot
  uint64_t pins = 0;     // open file handles and directory snapshots that refer to it
};

// The attributes the kernel is given, and until when they are trusted.
struct AttrCache {
  Attributes attr;
  std::string etag;  // files: as last seen in a listing or HEAD
  Clock::TimePoint expiry{};
};

// Files: the object as the latest listing or HEAD described it (storage class, restore info, raw
// x-amz-restore, tape hints), and when that was observed; the tape state is derived from it
// (hsm::Classify). A GET answering InvalidObjectState at offline_at overrides it
// (offline_by_get): the object is offline whatever the older description said (the releaser
// race), until a listing or HEAD made at or after offline_at says otherwise.
struct TapeState {
  s3::ObjectInfo object;
  Clock::TimePoint observed{};
  Clock::TimePoint offline_at{};
  bool offline_by_get = false;
};

// Directories: the cached listing and until when it answers lookups (null: none).
struct ListingCache {
  std::shared_ptr<const DirListing> listing;
  Clock::TimePoint expiry{};
};

// Files: the ETag at the previous open, for keep_cache.
struct OpenHistory {
  bool opened_before = false;
  std::string last_open_etag;
};

// What this mount made that S3 does not have yet (local_entries.h): a file being written (its
// attributes are the handle's, never a HEAD's) or a directory made by mkdir that holds nothing
// uploaded yet.
struct LocalState {
  bool writing = false;  // files: an open handle is uploading it
  bool dir = false;      // directories: made here; pinned by itself while local
};

// One inode: each concept in its own member, so code that uses one does not touch the others.
struct InodeRecord {
  InodeIdentity id;
  AttrCache attrs;
  TapeState tape;
  ListingCache dir;
  OpenHistory opens;
  LocalState local;
};

class InodeTable {
 public:
  // `root`: its identity is set to the root's (kRootInode, a directory).
  explicit InodeTable(InodeRecord root);

  // The record of `ino`, or null when unknown or dropped.
  InodeRecord* Find(InodeId ino);
  // The current inode of (parent, name), or null.
  InodeRecord* FindChild(InodeId parent, std::string_view name);
  // The current inode of (parent, name) if it has kind `is_dir`; otherwise a new record (with
  // lookups = pins = 0) that becomes the name's inode. `key` is the child's key (see above).
  InodeRecord* FindOrCreateChild(InodeId parent, std::string_view name, bool is_dir,
                                 std::string key);

  // Forgets the name (parent, name) if it still maps to `ino`: the record lives on, unnamed, until
  // the kernel forgets it (unlink, rmdir, an upload that failed).
  void RemoveName(InodeId parent, std::string_view name, InodeId ino);

  // Rename: `ino` (a file) becomes the inode of (new_parent, new_name) with key `new_key`, as the
  // kernel moves its dentry; its old name is forgotten if it still maps to it, and an inode that
  // had the new name lives on unnamed, as after RemoveName. False when `ino` is unknown.
  bool Move(InodeId ino, InodeId new_parent, std::string_view new_name, std::string new_key);

  // Subtracts `n` lookups (clamped at zero) and drops the record if unused. False when `ino` is
  // unknown.
  bool Forget(InodeId ino, uint64_t n);
  // Removes one pin and drops the record if unused.
  void Unpin(InodeId ino);
  // Drops the record if it has no lookups and no pins (not the root).
  void DropIfUnused(InodeId ino);

  size_t size() const { return inodes_.size(); }
  // Every record, in no particular order; valid until a record is added or dropped.
  std::vector<InodeRecord*> All();

 private:
  std::unordered_map<InodeId, std::unique_ptr<InodeRecord>> inodes_;
  std::map<std::pair<InodeId, std::string>, InodeId, std::less<>> by_name_;
  InodeId next_ino_ = kRootInode + 1;
};

}  // namespace reelfs::fuse
