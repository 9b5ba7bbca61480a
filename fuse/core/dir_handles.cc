// DirHandles (dir_handles.h): OPENDIR, READDIR / READDIRPLUS from the handle's snapshot,
// RELEASEDIR.

#include "fuse/core/dir_handles.h"

#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "fuse/core/core_internal.h"

namespace reelfs::fuse::detail {

uint64_t DirHandles::Add(InodeId ino, InodeId parent, std::shared_ptr<const DirListing> snapshot,
                         Clock::TimePoint listed_at) {
  const uint64_t dh = core_.NextHandle();
  MutexLock lock(mutex_);
  handles_[dh] = DirHandle{ino, parent, std::move(snapshot), listed_at, {}};
  return dh;
}

void DirHandles::OpenDir(InodeId ino, Callback<uint64_t> done) {
  Result<Core::DirToOpen> dir = core_.DirectoryToOpen(ino);
  if (!dir.ok()) {
    done(dir.status());
    return;
  }
  if (dir->pinned) {
    done(Add(ino, dir->parent, std::move(dir->listing), dir->listed_at));
    return;
  }
  auto self = core_.shared_from_this();
  ListDirectory(
      core_.store(), core_.options().bucket, std::move(dir->prefix), core_.warn(),
      [self] { Count(self->stats().list_requests); },
      [self, ino, done = std::move(done)](Result<std::shared_ptr<const DirListing>> listing) {
        if (!listing.ok()) {
          done(listing.status());
          return;
        }
        Result<Core::DirToOpen> installed = self->InstallListing(ino, *listing);
        if (!installed.ok()) {
          done(installed.status());
          return;
        }
        done(self->dirs().Add(ino, installed->parent, std::move(installed->listing),
                              installed->listed_at));
      });
}

void DirHandles::ReadDir(InodeId ino, uint64_t dh, uint64_t offset, size_t max_entries, bool plus,
                         Callback<std::vector<DirEntry>> done) {
  InodeId parent = 0;
  std::shared_ptr<const DirListing> snapshot;
  Clock::TimePoint listed_at{};
  {
    MutexLock lock(mutex_);
    auto it = handles_.find(dh);
    if (it == handles_.end() || it->second.ino != ino) {
      lock.unlock();
      done(Status(StatusCode::kInvalidArgument, StatusReason::kBadHandle,
                  fmt::format("directory handle {} is not open", dh)));
      return;
    }
    parent = it->second.parent;
    snapshot = it->second.snapshot;  // immutable: read without the lock
    listed_at = it->second.listed_at;
  }
  std::vector<InodeId> pinned;
  Result<std::vector<DirEntry>> entries = core_.ReadDirEntries(
      ino, parent, *snapshot, listed_at, offset, max_entries, plus, plus ? &pinned : nullptr);
  if (!pinned.empty()) {
    // Pinned until ReleaseDir so each survives until AcceptDirEntries counts it.
    bool released = false;
    {
      MutexLock lock(mutex_);
      auto it = handles_.find(dh);
      if (it == handles_.end()) {
        released = true;  // a RELEASEDIR raced with this READDIR: nothing will unpin them
      } else {
        it->second.pinned.insert(it->second.pinned.end(), pinned.begin(), pinned.end());
      }
    }
    if (released) core_.Unpin(pinned);
  }
  done(std::move(entries));
}

void DirHandles::ReleaseDir(uint64_t dh) {
  DirHandle h;
  {
    MutexLock lock(mutex_);
    auto it = handles_.find(dh);
    if (it == handles_.end()) return;
    h = std::move(it->second);
    handles_.erase(it);
  }
  h.pinned.push_back(h.ino);
  core_.Unpin(h.pinned);
}

void DirHandles::Clear() {
  MutexLock lock(mutex_);
  handles_.clear();
}

}  // namespace reelfs::fuse::detail
