// Core's directories: OPENDIR (a handle on a snapshot of the listing, reused while fresh),
// READDIR / READDIRPLUS from that snapshot, the kernel's acceptance of READDIRPLUS entries, and
// RELEASEDIR.

#include <cerrno>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <sys/stat.h>

#include "common/log.h"
#include "common/mutex.h"
#include "fuse/core/core_internal.h"

namespace reelfs::fuse::detail {
namespace {

// d_ino for plain READDIR entries that have no inode yet. The kernel does not use it to find the
// file (it LOOKUPs the name), and allocating an inode the kernel never counts would leak it.
constexpr InodeId kUnknownIno = 0xffffffff;  // FUSE_UNKNOWN_INO

}  // namespace

void Core::OpenDir(InodeId ino, Callback<uint64_t> done) {
  std::string prefix;
  {
    MutexLock lock(mutex_);
    InodeRecord* rec = FindOrFail(lock, ino, Want::kDir, "opendir of", done);
    if (rec == nullptr) return;
    if (rec->listing != nullptr && clock_.Now() < rec->listing_expiry) {
      uint64_t dh = next_handle_++;
      dir_handles_[dh] = DirHandle{
          ino, rec->parent, rec->listing, rec->listing_expiry - options_.metadata_ttl, {}};
      ++rec->pins;
      lock.unlock();
      done(dh);
      return;
    }
    prefix = rec->key;
  }
  auto self = shared_from_this();
  ListDirectory(
      store_, options_.bucket, std::move(prefix), warn_,
      [self] { self->list_requests_.fetch_add(1, std::memory_order_relaxed); },
      [self, ino, done = std::move(done)](Result<std::shared_ptr<const DirListing>> listing) {
        if (!listing.ok()) {
          done(listing.status());
          return;
        }
        Result<uint64_t> out = Stale(ino);
        {
          MutexLock lock(self->mutex_);
          if (InodeRecord* rec = self->inodes_.Find(ino); rec != nullptr) {
            rec->listing = *listing;
            rec->listing_expiry = self->Expiry();
            uint64_t dh = self->next_handle_++;
            self->dir_handles_[dh] = DirHandle{ino, rec->parent, *listing, self->clock_.Now(), {}};
            ++rec->pins;
            out = dh;
          }
        }
        done(std::move(out));
      });
}

void Core::ReadDir(InodeId ino, uint64_t dh, uint64_t offset, size_t max_entries, bool plus,
                   Callback<std::vector<DirEntry>> done) {
  std::vector<DirEntry> out;
  {
    MutexLock lock(mutex_);
    auto it = dir_handles_.find(dh);
    if (it == dir_handles_.end() || it->second.ino != ino) {
      lock.unlock();
      done(ErrnoToStatus(EBADF, fmt::format("directory handle {} is not open", dh)));
      return;
    }
    DirHandle& h = it->second;
    const auto& entries = h.snapshot->entries;
    // Offsets: 0 starts, entry i (0 ".", 1 "..", i >= 2 the children) carries i + 1.
    const uint64_t total = entries.size() + 2;
    for (uint64_t i = offset; i < total && out.size() < max_entries; ++i) {
      DirEntry d;
      d.offset = i + 1;
      if (i < 2) {
        d.name = i == 0 ? "." : "..";
        InodeId target = i == 0 ? h.ino : h.parent;
        InodeRecord* rec = inodes_.Find(target);
        if (rec == nullptr) rec = inodes_.Find(h.ino);  // parent forgotten: show ourselves
        if (rec != nullptr) d.entry = MakeEntry(*rec);
        d.entry.attr.ino = target;
        out.push_back(std::move(d));
        continue;
      }
      const ListedEntry& le = entries[i - 2];
      d.name = le.name;
      if (plus) {
        Result<Entry> e =
            AddEntryLocked(ino, le.name, le.is_dir, &le.info, /*count=*/false, h.listed_at);
        if (!e.ok()) {
          lock.unlock();
          done(e.status());
          return;
        }
        d.entry = std::move(e).value();
        // Pinned until ReleaseDir so it survives until AcceptDirEntries counts it.
        if (InodeRecord* c = inodes_.Find(d.entry.attr.ino); c != nullptr) ++c->pins;
        h.pinned.push_back(d.entry.attr.ino);
      } else {
        InodeRecord* c = inodes_.FindChild(ino, le.name);
        d.entry.attr.ino = c != nullptr && c->is_dir == le.is_dir ? c->ino : kUnknownIno;
        d.entry.attr.is_dir = le.is_dir;
        d.entry.attr.mode =
            le.is_dir ? (S_IFDIR | options_.dir_mode) : (S_IFREG | options_.file_mode);
      }
      out.push_back(std::move(d));
    }
  }
  done(std::move(out));
}

void Core::AcceptDirEntries(const std::vector<DirEntry>& accepted) {
  MutexLock lock(mutex_);
  for (const DirEntry& d : accepted) {
    // The kernel takes no reference for "." and ".." (fuse_direntplus_link skips them).
    if (d.name == "." || d.name == ".." || d.entry.attr.ino == 0) continue;
    if (InodeRecord* rec = inodes_.Find(d.entry.attr.ino); rec != nullptr) {
      ++rec->lookups;
    } else {
      REELFS_LOG_ERROR("fuse", "accepted directory entry for unknown inode {}", d.entry.attr.ino);
    }
  }
}

void Core::ReleaseDir(uint64_t dh) {
  MutexLock lock(mutex_);
  auto it = dir_handles_.find(dh);
  if (it == dir_handles_.end()) return;
  DirHandle h = std::move(it->second);
  dir_handles_.erase(it);
  for (InodeId child : h.pinned) inodes_.Unpin(child);
  inodes_.Unpin(h.ino);
}

}  // namespace reelfs::fuse::detail
