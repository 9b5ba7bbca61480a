// Core's RENAME of a file (docs/semantics.md "Writes"): the checks, a HEAD of the source, a
// server-side copy (object_copy.h), the DeleteObject of the source, and the caches and the inode
// moved to the new name, as the kernel moves its dentry.
#include <cstdio>
#include <string>
#include <utility>

#include "common/log.h"
#include "common/mutex.h"
#include "common/status.h"
#include "fuse/core/core_internal.h"
#include "fuse/core/name_rules.h"
#include "fuse/core/object_copy.h"
#include "hsm/state.h"

namespace reelfs::fuse::detail {
namespace {

// renameat2 flags (<stdio.h> with _GNU_SOURCE); a kernel without them never sends them.
#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

Status NotFound(const std::string& key) {
  return Status(StatusCode::kNotFound, StatusReason::kKnownAbsent,
                fmt::format("rename '{}': no such file", PrintableKey(key)));
}

// A rename is continued on the store's thread: what each step hands to the next.
struct RenameJob {
  std::shared_ptr<Core> core;
  InodeId parent = 0;
  std::string name;
  InodeId new_parent = 0;
  std::string new_name;
  unsigned flags = 0;
  s3::ObjectInfo source;
  std::function<void(Status)> done;
};

}  // namespace

Status Core::RefuseReplace(const RenameSteps& steps, unsigned flags) const {
  if ((flags & RENAME_NOREPLACE) != 0) {
    return Status::AlreadyExists(fmt::format("rename onto '{}' with RENAME_NOREPLACE: it exists",
                                             PrintableKey(steps.dest_key)));
  }
  if (!options_.write.allow_overwrite) {
    return Status(
        StatusCode::kPermissionDenied, StatusReason::kNotPermitted,
        fmt::format("rename '{}' onto '{}': the object exists; replacing objects needs reelfs "
                    "mount --allow-overwrite",
                    PrintableKey(steps.source_key), PrintableKey(steps.dest_key)));
  }
  return Status::Ok();
}

Result<Core::RenameSteps> Core::CheckRenameLocked(InodeId parent, std::string_view name,
                                                  InodeId new_parent, std::string_view new_name,
                                                  unsigned flags, InodeId* busy) {
  if ((flags & ~static_cast<unsigned>(RENAME_NOREPLACE)) != 0) {
    // RENAME_EXCHANGE would be two copies and no atomicity at all; EINVAL is what rename(2) says
    // a file system answers for a flag it does not support.
    return Status::InvalidArgument(fmt::format(
        "rename with flags {:#x}: only RENAME_NOREPLACE is supported (no RENAME_EXCHANGE)", flags));
  }
  if (CheckName(new_name) != NameProblem::kNone) {
    const NameProblem p = CheckName(new_name);
    return Status(StatusCode::kInvalidArgument,
                  p == NameProblem::kTooLong ? StatusReason::kNameTooLong : StatusReason::kNone,
                  fmt::format("rename to '{}': {}", PrintableKey(new_name), NameProblemText(p)));
  }
  REELFS_ASSIGN_OR_RETURN(InodeRecord * p, FindLocked(parent, Want::kDir, "rename in"));
  REELFS_ASSIGN_OR_RETURN(InodeRecord * np, FindLocked(new_parent, Want::kDir, "rename into"));
  RenameSteps steps;
  steps.source_key = p->id.key + std::string(name);
  steps.dest_key = np->id.key + std::string(new_name);

  const std::optional<NameIs> source = KnownNameLocked(*p, name);
  const InodeRecord* child = inodes_.FindChild(parent, name);
  const NameIs src = source.value_or(child == nullptr   ? NameIs::kFile  // the HEAD decides
                                     : child->id.is_dir ? NameIs::kDir
                                                        : NameIs::kFile);
  switch (src) {
    case NameIs::kAbsent:
      return NotFound(steps.source_key);
    case NameIs::kDir:
      return Status(StatusCode::kInvalidArgument, StatusReason::kCrossDevice,
                    fmt::format("rename of directory '{}': directories are not renamed (each "
                                "key would be copied and deleted); mv copies them instead",
                                PrintableKey(steps.source_key)));
    case NameIs::kWriting:
      if (busy != nullptr && child != nullptr) *busy = child->id.ino;
      return Status(StatusCode::kFailedPrecondition, StatusReason::kBusy,
                    fmt::format("rename '{}': it is being written by a handle of this mount "
                                "(close it first)",
                                PrintableKey(steps.source_key)));
    case NameIs::kFile:
      break;
  }
  // rename(2) of a name onto itself does nothing (Rename answers it without asking S3).
  if (steps.source_key == steps.dest_key) return steps;
  const std::optional<NameIs> dest = KnownNameLocked(*np, new_name);
  if (dest.has_value()) {
    steps.dest_known = true;
    switch (*dest) {
      case NameIs::kAbsent:
        break;
      case NameIs::kDir:
        return Status(StatusCode::kInvalidArgument, StatusReason::kIsADirectory,
                      fmt::format("rename onto '{}': a directory has this name",
                                  PrintableKey(steps.dest_key)));
      case NameIs::kWriting:
        if (const InodeRecord* d = inodes_.FindChild(new_parent, new_name);
            busy != nullptr && d != nullptr) {
          *busy = d->id.ino;
        }
        return Status(StatusCode::kFailedPrecondition, StatusReason::kBusy,
                      fmt::format("rename onto '{}': it is being written by a handle of this "
                                  "mount",
                                  PrintableKey(steps.dest_key)));
      case NameIs::kFile:
        steps.dest_exists = true;
        REELFS_RETURN_IF_ERROR(RefuseReplace(steps, flags));
        break;
    }
  }
  return steps;
}

void Core::Rename(InodeId parent, std::string_view name, InodeId new_parent,
                  std::string_view new_name, unsigned flags, std::function<void(Status)> done) {
  RenameOnce(parent, std::string(name), new_parent, std::string(new_name), flags,
             /*may_wait=*/true, std::move(done));
}

void Core::RenameOnce(InodeId parent, std::string name, InodeId new_parent, std::string new_name,
                      unsigned flags, bool may_wait, std::function<void(Status)> done) {
  if (options_.write.read_only) return done(ReadOnly("rename"));
  RenameSteps steps;
  {
    MutexLock lock(mutex_);
    InodeId busy = 0;
    Result<RenameSteps> checked =
        CheckRenameLocked(parent, name, new_parent, new_name, flags, &busy);
    if (!checked.ok()) {
      lock.unlock();
      if (busy != 0 && may_wait) {
        // An empty new file is uploaded at its RELEASE, which the kernel sends after close has
        // returned: `touch f && mv f g` (rsync with an empty file) can arrive first. Wait for
        // that upload, briefly, then decide again (EBUSY if the file is still being written).
        auto held = std::make_shared<std::function<void(Status)>>(std::move(done));
        auto again = [self = shared_from_this(), parent, name, new_parent, new_name, flags,
                      held]() {
          self->RenameOnce(parent, name, new_parent, new_name, flags, /*may_wait=*/false,
                           std::move(*held));
        };
        if (writes_.AfterEmptyClose(busy, options_.write.release_wait, std::move(again))) return;
        // No handle waits for its RELEASE: either the file is still being written (EBUSY again)
        // or its upload finished between the check above and now (the RELEASE raced this
        // rename, and won): decide again, once, rather than answer the stale EBUSY.
        return RenameOnce(parent, std::move(name), new_parent, std::move(new_name), flags,
                          /*may_wait=*/false, std::move(*held));
      }
      return done(std::move(checked).status());
    }
    steps = std::move(*checked);
  }
  if (steps.source_key == steps.dest_key) return done(Status::Ok());  // rename(2): nothing to do

  auto job = std::make_shared<RenameJob>();
  job->core = shared_from_this();
  job->parent = parent;
  job->name = std::string(name);
  job->new_parent = new_parent;
  job->new_name = std::string(new_name);
  job->flags = flags;
  job->done = std::move(done);

  // The copy and the delete, once the destination is known to be free (or replaceable).
  auto copy = [job, steps]() {
    Core& core = *job->core;
    CopyPlan plan;
    plan.bucket = core.options_.bucket;
    plan.source_key = steps.source_key;
    plan.dest_key = steps.dest_key;
    plan.source = job->source;
    plan.threshold = core.options_.write.copy_threshold;
    plan.part_size = core.options_.write.copy_part_size;
    plan.max_in_flight = core.options_.write.max_parts_in_flight;
    CopyWholeObject(core.store_, std::move(plan), [job, steps](Result<CopyOutcome> copied) {
      Core& c = *job->core;
      // Nothing was created: the source stays as it was.
      if (!copied.ok()) {
        if (copied.status().reason() == StatusReason::kArchived) {
          // Released to tape since its HEAD: the same advice as above.
          return job->done(std::move(copied).status().WithContext(
              "rename: the source went offline; stage it first (reelfs stage)"));
        }
        return job->done(std::move(copied).status());
      }
      Count(c.stats_.copy_parts, copied->parts);
      s3::ObjectInfo dest = job->source;
      dest.key = steps.dest_key;
      dest.etag = copied->etag;
      dest.last_modified = c.clock_.WallNow();
      // A copy is a new object in the default class (CopyObject without x-amz-storage-class).
      dest.storage_class = "STANDARD";
      dest.restore.reset();
      dest.restore_header.clear();
      dest.hints.clear();
      c.store_->DeleteObject(
          {c.options_.bucket, steps.source_key}, [job, steps, dest](Status deleted) {
            Core& owner = *job->core;
            {
              MutexLock lock(owner.mutex_);
              owner.FinishRenameLocked(job->parent, job->name, job->new_parent, job->new_name,
                                       steps, dest, deleted.ok());
            }
            if (!deleted.ok()) {
              // Both names hold the bytes now: the rename failed, and says so.
              return job->done(std::move(deleted).WithContext(fmt::format(
                  "rename: '{}' was copied to '{}', but DeleteObject of the source failed; both "
                  "exist",
                  PrintableKey(steps.source_key), PrintableKey(steps.dest_key))));
            }
            Count(owner.stats_.renames);
            job->done(Status::Ok());
          });
    });
  };

  // The source's HEAD: it exists, its size picks the copy, and an archived one is refused here
  // with a word on what to do (CopyObject would only answer InvalidObjectState).
  Count(stats_.head_requests);
  store_->HeadObject(
      {options_.bucket, steps.source_key}, [job, steps, copy](Result<s3::ObjectInfo> head) {
        Core& core = *job->core;
        if (!head.ok()) {
          if (head.status().code() == StatusCode::kNotFound) {
            return job->done(NotFound(steps.source_key));
          }
          return job->done(std::move(head).status().WithContext("HeadObject " + steps.source_key));
        }
        if (!hsm::IsReadable(hsm::Classify(*head, {}, core.clock_.WallNow()))) {
          return job->done(
              Status(StatusCode::kFailedPrecondition, StatusReason::kArchived,
                     fmt::format("rename '{}': the object is archived ({}) and not restored, so it "
                                 "cannot be copied; stage it first (reelfs stage, or setfattr -n "
                                 "user.hsm.request -v stage) and rename it once it is online",
                                 PrintableKey(steps.source_key), head->storage_class)));
        }
        job->source = std::move(*head);
        if (steps.dest_known) return copy();
        // The kernel looked the destination up, but no cache of ours remembers the answer: ask.
        Count(core.stats_.head_requests);
        core.store_->HeadObject(
            {core.options_.bucket, steps.dest_key}, [job, steps, copy](Result<s3::ObjectInfo> d) {
              Core& c = *job->core;
              if (d.ok()) {
                if (Status refused = c.RefuseReplace(steps, job->flags); !refused.ok()) {
                  return job->done(std::move(refused));
                }
              } else if (d.status().code() != StatusCode::kNotFound) {
                return job->done(std::move(d).status().WithContext("HeadObject " + steps.dest_key));
              }
              copy();
            });
      });
}

void Core::FinishRenameLocked(InodeId parent, std::string_view name, InodeId new_parent,
                              std::string_view new_name, const RenameSteps& steps,
                              const s3::ObjectInfo& dest, bool deleted) {
  const Clock::TimePoint now = clock_.Now();
  // The destination exists in S3 now, whatever the delete said.
  SetLocalLocked(new_parent, new_name, LocalEntry{LocalKind::kWritten, 0, dest, now});
  negative_.Erase(steps.dest_key);
  PublishedBelowLocked(new_parent);
  if (!deleted) {
    // The kernel keeps the source's dentry (the rename failed); the destination is found by the
    // next lookup. An inode the destination had describes the old object: asked again.
    if (InodeRecord* d = inodes_.FindChild(new_parent, new_name); d != nullptr) {
      d->attrs.expiry = now;
    }
    return;
  }
  // As the kernel does with its dentries: the source's inode takes the new name, and an inode
  // that had the new name (the replaced object) lives on unnamed until it is forgotten.
  InodeRecord* src = inodes_.FindChild(parent, name);
  if (src != nullptr && !src->id.is_dir) {
    if (InodeRecord* old = inodes_.FindChild(new_parent, new_name); old != nullptr && old != src) {
      old->attrs.expiry = now;
      inodes_.RemoveName(new_parent, new_name, old->id.ino);
    }
    inodes_.Move(src->id.ino, new_parent, new_name, steps.dest_key);
    RecordObjectLocked(src, dest, now);
    if (LocalEntry* e = local_.FindMutable(new_parent, new_name); e != nullptr) {
      e->ino = src->id.ino;
    }
  }
  SetLocalLocked(parent, name, LocalEntry{LocalKind::kRemoved, 0, {}, now});
  negative_.Insert(steps.source_key, now);
}

}  // namespace reelfs::fuse::detail
