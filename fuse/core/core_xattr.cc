// Core's extended attributes: user.s3.* and user.hsm.* of a file (its tape state, refreshed by one
// shared HEAD when stale), user.hsm.summary of a directory (one subtree listing, cached),
// user.hsm.request=stage for a file or a whole tree (restore requests in tape order), and the
// root's user.reelfs.mount / user.reelfs.metrics.

#include <algorithm>
#include <cerrno>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/json.h"
#include "common/log.h"
#include "common/mutex.h"
#include "common/time_format.h"
#include "fuse/core/core_internal.h"
#include "hsm/state.h"
#include "s3/protocol/restore_header.h"

namespace reelfs::fuse::detail {
namespace {

constexpr std::string_view kXattrRequest = "user.hsm.request";
constexpr std::string_view kXattrSummary = "user.hsm.summary";
constexpr std::string_view kXattrMount = "user.reelfs.mount";
constexpr std::string_view kXattrMetrics = "user.reelfs.metrics";
constexpr std::string_view kXattrStorageClass = "user.s3.storage_class";
constexpr std::string_view kXattrEtag = "user.s3.etag";
constexpr std::string_view kXattrRestore = "user.s3.restore";
constexpr std::string_view kXattrState = "user.hsm.state";
constexpr std::string_view kXattrExpiry = "user.hsm.restore_expiry";
constexpr std::string_view kXattrTape = "user.hsm.tape";
constexpr std::string_view kXattrPosition = "user.hsm.position";

Status NoData(InodeId ino, std::string_view name) {
  return ErrnoToStatus(ENODATA, fmt::format("inode {} has no attribute {}", ino, name));
}

// user.hsm.position: the parts of the tape hint that say where the object is.
std::string PositionText(const hsm::TapeHint& h) {
  std::string out;
  auto add = [&out](std::string_view k, uint64_t v) {
    if (!out.empty()) out += ',';
    out += fmt::format("{}={}", k, v);
  };
  if (h.block) add("block", *h.block);
  if (h.wrap) add("wrap", *h.wrap);
  if (h.lpos) add("lpos", *h.lpos);
  return out;
}

}  // namespace

std::string Core::FileXattrValue(const FileXattrView& v, std::string_view name) {
  if (name == kXattrStorageClass) return v.object.storage_class;
  if (name == kXattrEtag) return v.etag;
  if (name == kXattrRestore) {
    // The header as the server sent it (HEAD). Listings carry RestoreStatus, not the header:
    // then its AWS form, so the attribute does not depend on which request came last.
    if (!v.object.restore_header.empty()) return v.object.restore_header;
    return v.object.restore ? s3::FormatRestoreHeader(*v.object.restore) : "";
  }
  if (name == kXattrState) {
    hsm::State state = ClassifyWithRequests(v.object);
    if (v.offline_by_get) {
      state = restorer_ != nullptr && restorer_->IsRequested(v.key) ? hsm::State::kStaging
                                                                    : hsm::State::kOffline;
    }
    return std::string(hsm::StateName(state));
  }
  if (name == kXattrExpiry) {
    const auto& r = v.object.restore;
    if (!r || !r->expiry || r->expiry_is_placeholder) return "";
    std::string text = FormatIso8601Seconds(*r->expiry);
    // versitygw's fixed "2 Dec 2050" is no expiry, also where no parser flagged it (listings).
    if (text.starts_with("2050-")) return "";
    return text;
  }
  return "";
}

void Core::GetXattr(InodeId ino, std::string_view name, Callback<std::string> done) {
  const std::string n(name);
  FileXattrView view;
  {
    MutexLock lock(mutex_);
    InodeRecord* rec = FindOrFail(lock, ino, Want::kAny, "getxattr of", done);
    if (rec == nullptr) return;
    if (rec->is_dir) {
      std::string prefix = rec->key;
      lock.unlock();
      if (n == kXattrSummary) return Summary(ino, std::move(prefix), std::move(done));
      if (n == kXattrMount && ino == kRootInode) return done(MountJson());
      if (n == kXattrMetrics && ino == kRootInode) return done(MetricsJson());
      return done(NoData(ino, n));
    }
    const bool hsm_name =
        n == kXattrState || n == kXattrExpiry || n == kXattrTape || n == kXattrPosition;
    const bool s3_name = n == kXattrStorageClass || n == kXattrEtag || n == kXattrRestore;
    if (!hsm_name && !s3_name) {
      lock.unlock();
      done(NoData(ino, n));
      return;
    }
    if (n == kXattrTape || n == kXattrPosition) {
      std::optional<hsm::TapeHint> hint = hsm::TapeHintOf(rec->object);
      lock.unlock();
      if (!hint) return done(NoData(ino, n));
      return done(n == kXattrTape ? hint->cartridge : PositionText(*hint));
    }
    // A state that is not readable goes stale quickly (a restore may have finished): one HEAD
    // refreshes it, shared by every getxattr of the inode meanwhile.
    const Clock::TimePoint seen = std::max(rec->observed, rec->offline_at);
    if (hsm_name && !ReadableLocked(*rec) && clock_.Now() - seen > options_.tape.state_ttl) {
      auto& waiters = xattr_waiters_[ino];
      waiters.push_back(XattrWaiter{n, std::move(done)});
      if (waiters.size() > 1) return;
      std::string key = rec->key;
      lock.unlock();
      xattr_refreshes_.fetch_add(1, std::memory_order_relaxed);
      auto self = shared_from_this();
      RefreshFile(ino, std::move(key), [self, ino](Result<InodeRecord> r) {
        if (!r.ok()) {
          REELFS_LOG_DEBUG("fuse", "xattr refresh of inode {} failed: {}", ino,
                           r.status().ToString());
        }
        std::vector<XattrWaiter> ready;
        FileXattrView fresh;
        bool gone = false;
        {
          MutexLock relock(self->mutex_);
          auto it = self->xattr_waiters_.find(ino);
          if (it != self->xattr_waiters_.end()) {
            ready = std::move(it->second);
            self->xattr_waiters_.erase(it);
          }
          InodeRecord* now = self->inodes_.Find(ino);
          gone = now == nullptr;
          if (!gone) {
            fresh = FileXattrView{now->key, now->etag, now->object, now->offline_by_get};
          }
        }
        for (XattrWaiter& w : ready) {
          // A failed HEAD answers from what we knew: stale beats an error for a status query.
          if (gone) {
            w.done(Stale(ino));
          } else {
            w.done(self->FileXattrValue(fresh, w.name));
          }
        }
      });
      return;
    }
    view = FileXattrView{rec->key, rec->etag, rec->object, rec->offline_by_get};
  }
  done(FileXattrValue(view, n));
}

void Core::ListXattr(InodeId ino, Callback<std::vector<std::string>> done) {
  std::vector<std::string> names;
  {
    MutexLock lock(mutex_);
    InodeRecord* rec = FindOrFail(lock, ino, Want::kAny, "listxattr of", done);
    if (rec == nullptr) return;
    if (rec->is_dir) {
      names.emplace_back(kXattrSummary);
      if (ino == kRootInode) {
        names.emplace_back(kXattrMount);
        names.emplace_back(kXattrMetrics);
      }
    } else {
      for (std::string_view n :
           {kXattrStorageClass, kXattrEtag, kXattrRestore, kXattrState, kXattrExpiry}) {
        names.emplace_back(n);
      }
      if (hsm::TapeHintOf(rec->object)) {
        names.emplace_back(kXattrTape);
        names.emplace_back(kXattrPosition);
      }
    }
  }
  done(std::move(names));
}

void Core::Summary(InodeId ino, std::string prefix, Callback<std::string> done) {
  {
    MutexLock lock(mutex_);
    SummaryCache& c = summaries_[ino];
    if (!c.in_flight && !c.value.empty() && clock_.Now() < c.expiry) {
      std::string value = c.value;
      lock.unlock();
      done(std::move(value));
      return;
    }
    c.waiters.push_back(std::move(done));
    if (c.in_flight) return;  // single-flight: the computation in progress answers us too
    c.in_flight = true;
  }
  struct Tally {
    uint64_t objects[5] = {};
    uint64_t bytes[5] = {};
  };
  auto tally = std::make_shared<Tally>();
  auto self = shared_from_this();
  ListSubtree(
      store_, options_.bucket, std::move(prefix),
      [self] { self->list_requests_.fetch_add(1, std::memory_order_relaxed); },
      // Pages arrive one after the other, so the tally needs no lock.
      [self, tally](const std::vector<s3::ObjectInfo>& objects) {
        for (const s3::ObjectInfo& o : objects) {
          if (!o.key.empty() && o.key.back() == '/') continue;  // directory markers
          const auto i = static_cast<size_t>(self->ClassifyWithRequests(o));
          ++tally->objects[i];
          tally->bytes[i] += o.size;
        }
      },
      [self, ino, tally](Status s) {
        // A Result is built from an error Status only (an OK one carries no value).
        Result<std::string> out = std::string();
        if (!s.ok()) {
          out = s;
        } else {
          constexpr hsm::State kOrder[] = {hsm::State::kOnline, hsm::State::kOffline,
                                           hsm::State::kStaging, hsm::State::kRestored,
                                           hsm::State::kUnknown};
          Json objects = Json::object();
          Json bytes = Json::object();
          for (hsm::State st : kOrder) {
            const auto i = static_cast<size_t>(st);
            objects[std::string(hsm::StateName(st))] = tally->objects[i];
            bytes[std::string(hsm::StateName(st))] = tally->bytes[i];
          }
          out = DumpJson(Json{{"objects", std::move(objects)}, {"bytes", std::move(bytes)}});
        }
        std::vector<Callback<std::string>> waiters;
        {
          MutexLock lock(self->mutex_);
          SummaryCache& c = self->summaries_[ino];
          waiters = std::move(c.waiters);
          c.waiters.clear();
          c.in_flight = false;
          if (out.ok()) {
            c.value = *out;
            c.expiry = self->clock_.Now() + self->options_.tape.summary_ttl;
          }
        }
        for (auto& w : waiters) w(out);
      });
}

void Core::SetXattr(InodeId ino, std::string_view name, std::string_view value,
                    std::function<void(Status)> done) {
  if (name != kXattrRequest) {
    done(ErrnoToStatus(EROFS, fmt::format("setxattr {} on inode {}: read-only", name, ino)));
    return;
  }
  // setfattr sends the bare value; tolerate a trailing NUL or newline from other writers.
  while (!value.empty() && (value.back() == '\0' || value.back() == '\n')) value.remove_suffix(1);
  if (value != "stage") {
    done(ErrnoToStatus(EINVAL, fmt::format("{}: '{}' is not a request (want 'stage')",
                                           kXattrRequest, PrintableKey(value))));
    return;
  }
  if (restorer_ == nullptr) {
    done(ErrnoToStatus(EOPNOTSUPP, "this mount cannot request restores"));
    return;
  }
  std::string key;
  std::string etag;
  uint64_t size = 0;
  {
    MutexLock lock(mutex_);
    InodeRecord* rec = FindOrFail(lock, ino, Want::kAny, "setxattr of", done);
    if (rec == nullptr) return;
    if (rec->is_dir) {
      std::string prefix = rec->key;
      lock.unlock();
      StageTree(std::move(prefix), std::move(done));
      return;
    }
    if (ReadableLocked(*rec)) {
      lock.unlock();
      done(Status::Ok());  // nothing to restore
      return;
    }
    key = rec->key;
    etag = rec->etag;
    size = rec->attr.size;
  }
  restorer_->Request(key, etag, size, std::move(done));
}

void Core::StageTree(std::string prefix, std::function<void(Status)> done) {
  auto wanted = std::make_shared<std::vector<s3::ObjectInfo>>();
  auto self = shared_from_this();
  ListSubtree(
      store_, options_.bucket, std::move(prefix),
      [self] { self->list_requests_.fetch_add(1, std::memory_order_relaxed); },
      [self, wanted](const std::vector<s3::ObjectInfo>& objects) {
        const s3::WallTime now = self->clock_.WallNow();
        for (const s3::ObjectInfo& o : objects) {
          if (!o.key.empty() && o.key.back() == '/') continue;
          if (hsm::IsReadable(hsm::Classify(o, {}, now))) continue;
          wanted->push_back(o);
        }
      },
      [self, wanted, done = std::move(done)](Status s) mutable {
        if (!s.ok()) {
          done(s);
          return;
        }
        // Tape order when the server tells it (one pass per cartridge), else key order (usually
        // write order): docs/tape.md.
        struct Item {
          std::optional<hsm::TapeHint> hint;
          const s3::ObjectInfo* info;
        };
        std::vector<Item> items;
        items.reserve(wanted->size());
        for (const auto& o : *wanted) items.push_back({hsm::TapeHintOf(o), &o});
        std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
          if (a.hint.has_value() != b.hint.has_value()) return a.hint.has_value();
          if (a.hint && a.hint->cartridge != b.hint->cartridge) {
            return a.hint->cartridge < b.hint->cartridge;
          }
          if (a.hint) {
            const uint64_t ba = a.hint->block.value_or(std::numeric_limits<uint64_t>::max());
            const uint64_t bb = b.hint->block.value_or(std::numeric_limits<uint64_t>::max());
            if (ba != bb) return ba < bb;
          }
          return a.info->key < b.info->key;
        });
        if (items.empty()) {
          done(Status::Ok());
          return;
        }
        struct Join {
          Mutex mutex;
          size_t remaining = 0;
          bool answered = false;
          std::function<void(Status)> done;
        };
        auto join = std::make_shared<Join>();
        join->remaining = items.size();
        join->done = std::move(done);
        // Every request is handed over at once, in order; the Restorer queues and paces them.
        for (const Item& it : items) {
          self->restorer_->Request(it.info->key, it.info->etag, it.info->size,
                                   [join, wanted](Status r) {
                                     std::function<void(Status)> answer;
                                     {
                                       MutexLock lock(join->mutex);
                                       --join->remaining;
                                       if (join->answered) return;
                                       if (!r.ok() || join->remaining == 0) {
                                         join->answered = true;
                                         answer = std::move(join->done);
                                       }
                                     }
                                     if (answer) answer(std::move(r));
                                   });
        }
      });
}

}  // namespace reelfs::fuse::detail
