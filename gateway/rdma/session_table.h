// SessionTable: the gateway's hipobj-rc-v2 sessions by id, with idle expiry and LRU eviction.
//
// A session (one server QP connected to one client QP) stays after its transfer for reuse by
// session GETs / PUTs; clients that vanish never CANCEL, so without expiry every dead client
// would pin a QP and `max_sessions` would fill up with them. Rules:
//   * a session is idle from its last Return (or Insert) and busy between Take and Return;
//   * ReapIdle drops sessions idle longer than `idle_timeout` (0: never);
//   * Insert at `max_sessions` drops the least recently used idle session to make room, and
//     refuses (kUnavailable) only when every session is busy;
//   * a busy session is never dropped by expiry or eviction (Erase, the client's CANCEL, may:
//     the transfer holds its own reference and ends first).
// Dropped values are handed back to the caller so that their destruction (ibv_destroy_qp) runs
// outside the table's lock. Generic over the session type so it is tested with a fake clock and
// no device.
//
// Thread-safety: every method may be called from any thread (one internal mutex, a leaf lock).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/result.h"
#include "common/thread_annotations.h"

namespace reelfs::gateway {

struct SessionTableOptions {
  size_t max_sessions = 256;
  Clock::Duration idle_timeout = std::chrono::minutes(10);  // 0: sessions never expire
};

template <class T>
class SessionTable {
 public:
  using Ptr = std::shared_ptr<T>;

  SessionTable(SessionTableOptions options, const Clock& clock)
      : options_(options), clock_(clock) {}

  // A fresh id ("rc-N"), to store in the session before Insert makes it visible.
  std::string NewId() {
    MutexLock lock(mutex_);
    return "rc-" + std::to_string(next_id_++);
  }

  // Adds an idle session. At capacity the least recently used idle one goes into *dropped;
  // kUnavailable when all are busy (or max_sessions is 0).
  Status Insert(const std::string& id, Ptr value, std::vector<Ptr>* dropped) {
    MutexLock lock(mutex_);
    if (entries_.size() >= options_.max_sessions) {
      auto lru = entries_.end();
      for (auto it = entries_.begin(); it != entries_.end(); ++it) {
        if (!it->second.busy &&
            (lru == entries_.end() || it->second.last_used < lru->second.last_used)) {
          lru = it;
        }
      }
      if (lru == entries_.end()) return Status::Unavailable("too many RDMA sessions, all busy");
      dropped->push_back(std::move(lru->second.value));
      entries_.erase(lru);
    }
    entries_[id] = Entry{std::move(value), false, clock_.Now()};
    return Status::Ok();
  }

  // Marks the session busy and returns it: kNotFound (unknown, expired, dropped) or
  // kUnavailable (busy with another transfer).
  Result<Ptr> Take(const std::string& id) {
    MutexLock lock(mutex_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return Status::NotFound("unknown RDMA session");
    if (it->second.busy) return Status::Unavailable("RDMA session busy");
    it->second.busy = true;
    return it->second.value;
  }

  // Ends a Take: the session is idle from now, or dropped when !keep (its QP failed). Returns
  // what was dropped (null when kept or already erased).
  Ptr Return(const std::string& id, bool keep) {
    MutexLock lock(mutex_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return nullptr;
    if (keep) {
      it->second.busy = false;
      it->second.last_used = clock_.Now();
      return nullptr;
    }
    Ptr gone = std::move(it->second.value);
    entries_.erase(it);
    return gone;
  }

  // Removes the session whatever its state (CANCEL); null when unknown.
  Ptr Erase(const std::string& id) {
    MutexLock lock(mutex_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return nullptr;
    Ptr gone = std::move(it->second.value);
    entries_.erase(it);
    return gone;
  }

  // Drops every idle session unused for longer than idle_timeout.
  std::vector<Ptr> ReapIdle() {
    std::vector<Ptr> dropped;
    if (options_.idle_timeout.count() <= 0) return dropped;
    MutexLock lock(mutex_);
    const Clock::TimePoint now = clock_.Now();
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (!it->second.busy && now - it->second.last_used > options_.idle_timeout) {
        dropped.push_back(std::move(it->second.value));
        it = entries_.erase(it);
      } else {
        ++it;
      }
    }
    return dropped;
  }

  size_t size() const {
    MutexLock lock(mutex_);
    return entries_.size();
  }

 private:
  struct Entry {
    Ptr value;
    bool busy = false;
    Clock::TimePoint last_used;
  };

  const SessionTableOptions options_;
  const Clock& clock_;
  mutable Mutex mutex_;
  std::map<std::string, Entry> entries_ GUARDED_BY(mutex_);
  uint64_t next_id_ GUARDED_BY(mutex_) = 1;
};

}  // namespace reelfs::gateway
