// TapeView (tape_view.h): user.s3.* / user.hsm.* xattrs, user.hsm.summary, user.hsm.request=stage,
// the root's user.reelfs.mount / user.reelfs.metrics.

#include "fuse/core/tape_view.h"

#include <algorithm>
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
#include "hsm/tape_order.h"
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
  return Status(StatusCode::kNotFound, StatusReason::kNoSuchAttribute,
                fmt::format("inode {} has no attribute {}", ino, name));
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

std::string TapeView::FileXattrValue(const FileXattrView& v, std::string_view name) {
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
      hsm::Restorer* restorer = core_.restorer();
      state = restorer != nullptr && restorer->IsRequested(v.key) ? hsm::State::kStaging
                                                                  : hsm::State::kOffline;
    }
    // Not readable at the server, but every byte is in this host's cache: readable here, no
    // recall (docs/cache.md).
    if (!hsm::IsReadable(state) && core_.CachedWhole(v.key, v.etag)) return "cached";
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

hsm::State TapeView::ClassifyWithRequests(const s3::ObjectInfo& info) {
  hsm::LedgerView ledger;
  // Only an archived object the server says nothing about needs the ledger; skipping the rest
  // keeps ledger lookups off large listings of online objects.
  hsm::Restorer* restorer = core_.restorer();
  if (restorer != nullptr && hsm::IsArchiveClass(info.storage_class) && !info.restore) {
    ledger.requested = restorer->IsRequested(info.key);
  }
  return hsm::Classify(info, ledger, core_.clock().WallNow());
}

void TapeView::GetXattr(InodeId ino, std::string_view name, Callback<std::string> done) {
  const std::string n(name);
  Result<InodeFacts> facts = core_.Facts(ino, Core::Want::kAny, "getxattr of");
  if (!facts.ok()) {
    done(facts.status());
    return;
  }
  if (facts->is_dir) {
    if (n == kXattrSummary) return Summary(ino, std::move(facts->key), std::move(done));
    if (n == kXattrMount && ino == kRootInode) return done(core_.MountJson());
    if (n == kXattrMetrics && ino == kRootInode) return done(core_.MetricsJson());
    return done(NoData(ino, n));
  }
  const bool hsm_name =
      n == kXattrState || n == kXattrExpiry || n == kXattrTape || n == kXattrPosition;
  const bool s3_name = n == kXattrStorageClass || n == kXattrEtag || n == kXattrRestore;
  if (!hsm_name && !s3_name) {
    done(NoData(ino, n));
    return;
  }
  if (n == kXattrTape || n == kXattrPosition) {
    std::optional<hsm::TapeHint> hint = hsm::TapeHintOf(facts->tape.object);
    if (!hint) return done(NoData(ino, n));
    return done(n == kXattrTape ? hint->cartridge : PositionText(*hint));
  }
  // A state that is not readable goes stale quickly (a restore may have finished): one HEAD
  // refreshes it, shared by every getxattr of the inode meanwhile.
  if (hsm_name && !facts->readable &&
      core_.clock().Now() - facts->seen > core_.options().tape.state_ttl) {
    RefreshThenAnswer(ino, std::move(facts->key), n, std::move(done));
    return;
  }
  const FileXattrView view{std::move(facts->key), std::move(facts->etag),
                           std::move(facts->tape.object), facts->tape.offline_by_get};
  done(FileXattrValue(view, n));
}

std::vector<XattrWaiter> TapeView::TakeXattrWaiters(InodeId ino) {
  std::vector<XattrWaiter> ready;
  MutexLock lock(mutex_);
  auto it = xattr_waiters_.find(ino);
  if (it != xattr_waiters_.end()) {
    ready = std::move(it->second);
    xattr_waiters_.erase(it);
  }
  return ready;
}

void TapeView::RefreshThenAnswer(InodeId ino, std::string key, std::string name,
                                 Callback<std::string> done) {
  {
    MutexLock lock(mutex_);
    auto& waiters = xattr_waiters_[ino];
    waiters.push_back(XattrWaiter{std::move(name), std::move(done)});
    if (waiters.size() > 1) return;
  }
  Count(core_.stats().xattr_refreshes);
  auto self = core_.shared_from_this();
  core_.RefreshFile(ino, std::move(key), [self, ino](Result<AttrCache> r) {
    if (!r.ok()) {
      REELFS_LOG_DEBUG("fuse", "xattr refresh of inode {} failed: {}", ino, r.status().ToString());
    }
    std::vector<XattrWaiter> ready = self->tape().TakeXattrWaiters(ino);
    Result<InodeFacts> now = self->Facts(ino, Core::Want::kAny, "getxattr of");
    if (!now.ok()) {
      for (XattrWaiter& w : ready) w.done(Stale(ino));
      return;
    }
    const FileXattrView fresh{now->key, now->etag, now->tape.object, now->tape.offline_by_get};
    // A failed HEAD answers from what we knew: stale beats an error for a status query.
    for (XattrWaiter& w : ready) w.done(self->tape().FileXattrValue(fresh, w.name));
  });
}

void TapeView::ListXattr(InodeId ino, Callback<std::vector<std::string>> done) {
  Result<InodeFacts> facts = core_.Facts(ino, Core::Want::kAny, "listxattr of");
  if (!facts.ok()) {
    done(facts.status());
    return;
  }
  std::vector<std::string> names;
  if (facts->is_dir) {
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
    if (hsm::TapeHintOf(facts->tape.object)) {
      names.emplace_back(kXattrTape);
      names.emplace_back(kXattrPosition);
    }
  }
  done(std::move(names));
}

std::vector<Callback<std::string>> TapeView::FinishSummary(InodeId ino,
                                                           const Result<std::string>& out) {
  std::vector<Callback<std::string>> waiters;
  MutexLock lock(mutex_);
  SummaryCache& c = summaries_[ino];
  waiters = std::move(c.waiters);
  c.waiters.clear();
  c.in_flight = false;
  if (out.ok()) {
    c.value = *out;
    c.expiry = core_.clock().Now() + core_.options().tape.summary_ttl;
  }
  return waiters;
}

void TapeView::Summary(InodeId ino, std::string prefix, Callback<std::string> done) {
  {
    MutexLock lock(mutex_);
    SummaryCache& c = summaries_[ino];
    if (!c.in_flight && !c.value.empty() && core_.clock().Now() < c.expiry) {
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
  auto self = core_.shared_from_this();
  ListSubtree(
      core_.store(), core_.options().bucket, std::move(prefix),
      [self] { Count(self->stats().list_requests); },
      // Pages arrive one after the other, so the tally needs no lock.
      [self, tally](const std::vector<s3::ObjectInfo>& objects) {
        for (const s3::ObjectInfo& o : objects) {
          if (!o.key.empty() && o.key.back() == '/') continue;  // directory markers
          const auto i = static_cast<size_t>(self->tape().ClassifyWithRequests(o));
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
        for (auto& w : self->tape().FinishSummary(ino, out)) w(out);
      });
}

void TapeView::SetXattr(InodeId ino, std::string_view name, std::string_view value,
                        std::function<void(Status)> done) {
  if (name != kXattrRequest) {
    // S3 keeps no such attributes: EROFS on a read-only mount, EOPNOTSUPP on a writable one.
    if (core_.options().write.read_only) {
      return done(core_.ReadOnly(fmt::format("setxattr {} on inode {}", name, ino)));
    }
    return done(Status(
        StatusCode::kUnimplemented, StatusReason::kNotSupported,
        fmt::format("setxattr {} on inode {}: only user.hsm.request can be set", name, ino)));
  }
  // setfattr sends the bare value; tolerate a trailing NUL or newline from other writers.
  while (!value.empty() && (value.back() == '\0' || value.back() == '\n')) value.remove_suffix(1);
  if (value == "refresh") {
    // No S3 call: what this mount knew of the tape state under `ino` is old news now.
    const size_t n = core_.ForgetTapeState(ino);
    REELFS_LOG_DEBUG("fuse", "user.hsm.request=refresh of inode {}: {} offline file(s) forgotten",
                     ino, n);
    done(Status::Ok());
    return;
  }
  if (value != "stage") {
    done(
        Status::InvalidArgument(fmt::format("{}: '{}' is not a request (want 'stage' or 'refresh')",
                                            kXattrRequest, PrintableKey(value))));
    return;
  }
  if (core_.restorer() == nullptr) {
    done(Status(StatusCode::kUnimplemented, StatusReason::kNotSupported,
                "this mount cannot request restores"));
    return;
  }
  Result<InodeFacts> facts = core_.Facts(ino, Core::Want::kAny, "setxattr of");
  if (!facts.ok()) {
    done(facts.status());
    return;
  }
  if (facts->is_dir) {
    StageTree(std::move(facts->key), std::move(done));
    return;
  }
  if (facts->readable) {
    done(Status::Ok());  // nothing to restore
    return;
  }
  core_.restorer()->Request(facts->key, facts->etag, facts->size, std::move(done));
}

void TapeView::StageTree(std::string prefix, std::function<void(Status)> done) {
  auto wanted = std::make_shared<std::vector<s3::ObjectInfo>>();
  auto self = core_.shared_from_this();
  ListSubtree(
      core_.store(), core_.options().bucket, std::move(prefix),
      [self] { Count(self->stats().list_requests); },
      [self, wanted](const std::vector<s3::ObjectInfo>& objects) {
        const s3::WallTime now = self->clock().WallNow();
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
        if (wanted->empty()) {
          done(Status::Ok());
          return;
        }
        // The one restore order of reelfs (hsm/tape_order.h), the one `reelfs stage` uses.
        std::vector<std::optional<hsm::TapeHint>> hints;
        hints.reserve(wanted->size());
        for (const auto& o : *wanted) hints.push_back(hsm::TapeHintOf(o));
        std::vector<hsm::TapeOrderItem> items;
        items.reserve(wanted->size());
        for (size_t i = 0; i < wanted->size(); ++i) {
          items.push_back({(*wanted)[i].key, hints[i] ? &*hints[i] : nullptr});
        }
        const std::vector<size_t> order = hsm::TapeOrder(items);
        struct Join {
          Mutex mutex;
          size_t remaining = 0;
          bool answered = false;
          std::function<void(Status)> done;
        };
        auto join = std::make_shared<Join>();
        join->remaining = order.size();
        join->done = std::move(done);
        // Every request is handed over at once, in order; the Restorer queues and paces them.
        for (size_t i : order) {
          const s3::ObjectInfo& o = (*wanted)[i];
          self->restorer()->Request(o.key, o.etag, o.size, [join, wanted](Status r) {
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
