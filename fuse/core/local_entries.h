// LocalEntries: the names of a mount that S3's listings do not show yet, or still show after
// they are gone: what this mount created, wrote or removed (docs/semantics.md "Writes").
//
//  - kWriting: a file an open handle is uploading. It is visible here (ls, stat of the growing
//    size) and nowhere else until its upload completes.
//  - kDir: a directory made by mkdir. S3 has no directories, so it exists only here until a file
//    is written below it (mountpoint-s3's choice); it disappears if the mount ends first.
//  - kWritten: a file whose upload completed here. A listing made before the upload does not
//    show it, so this mount keeps answering for it until a listing of its directory does (or
//    `max_age` has passed): strong read-after-write on the mount that wrote it.
//  - kRemoved: a name unlinked or removed here that an older listing still shows.
// Lookup consults these before any listing or cache; a directory snapshot is merged with them
// (Merge); a fresh listing of the directory retires what it confirms (Reconcile).
//
// Thread-safety: none; Core serialises every call under its mutex.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "fuse/core/dir_listing.h"
#include "fuse/core/types.h"
#include "s3/types.h"

namespace reelfs::fuse {

enum class LocalKind { kWriting, kDir, kWritten, kRemoved };

struct LocalEntry {
  LocalKind kind = LocalKind::kWriting;
  InodeId ino = 0;         // kWriting, kDir: the inode; kWritten: the inode that wrote it
  s3::ObjectInfo info;     // kWriting: size so far; kWritten: the object as uploaded
  Clock::TimePoint since;  // when the entry was set
};

class LocalEntries {
 public:
  // The entry of `name` in directory `dir`, or null.
  const LocalEntry* Find(InodeId dir, std::string_view name) const;
  LocalEntry* FindMutable(InodeId dir, std::string_view name);
  // Sets (or replaces) an entry. True when `dir` had none before (its first entry).
  bool Set(InodeId dir, std::string_view name, LocalEntry entry);
  // Removes an entry. True when `dir` has none left (its last entry went).
  bool Erase(InodeId dir, std::string_view name);
  bool Has(InodeId dir) const { return dirs_.contains(dir); }
  // Entries of `dir` that are names (every kind but kRemoved): a directory with any is not empty.
  size_t LiveNames(InodeId dir) const;

  // `listing` (may be null: nothing listed) with the entries of `dir` applied: kWriting, kDir and
  // kWritten names added (replacing a listed entry of the same name), kRemoved names taken out,
  // sorted by name. The listing itself when `dir` has no entries.
  std::shared_ptr<const DirListing> Merge(InodeId dir,
                                          std::shared_ptr<const DirListing> listing) const;

  // A fresh listing of `dir` arrived at `now`: kWritten entries it shows as files, kRemoved
  // entries it no longer shows and kDir entries it shows as directories are retired, and so is
  // every kWritten or kRemoved entry older than `max_age`. Returns the inodes of retired kDir
  // entries (directories that now exist in S3). True in `emptied` when `dir` has no entries left.
  std::vector<InodeId> Reconcile(InodeId dir, const DirListing& listing, Clock::TimePoint now,
                                 Clock::Duration max_age, bool* emptied);

  size_t size() const;

 private:
  std::unordered_map<InodeId, std::map<std::string, LocalEntry, std::less<>>> dirs_;
};

}  // namespace reelfs::fuse
