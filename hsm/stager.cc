#include "hsm/stager.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <span>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "common/log.h"
#include "hsm/restore_policy.h"
#include "hsm/tape_order.h"
#include "s3/list_pages.h"

namespace reelfs::hsm {
namespace {

using namespace std::chrono_literals;

// A ledger "requested" entry older than this is not trusted on its own when the server says the
// object is offline with no restore running: the request was lost, or its copy released long
// ago (the Restorer's trust_requested default). Servers that report "ongoing" override it.
constexpr auto kTrustRequested = std::chrono::hours(1);
// RestoreObject tries per object when the store still answers a retryable error (503 SlowDown,
// throttling) after its own retries: a bulk submission is what servers throttle.
constexpr int kSubmitTries = 5;
constexpr Clock::Duration kSubmitBackoff = 200ms;
// One ledger transaction per this many objects (a transaction per object costs a sync each).
constexpr size_t kLedgerBatch = 500;

// Runs asynchronous requests with at most `limit` outstanding and hands their completions back
// to the thread that issued them, so results, the ledger and the objects are touched by that
// thread only. The store's callbacks only queue a closure and wake it.
class Fanout {
 public:
  explicit Fanout(size_t limit) : limit_(std::max<size_t>(1, limit)) {}
  Fanout(const Fanout&) = delete;
  Fanout& operator=(const Fanout&) = delete;
  // Callbacks hold a pointer to this: wait for every one of them.
  ~Fanout() {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return outstanding_ == 0; });
  }

  // Blocks until fewer than `limit` requests are outstanding, running completions meanwhile,
  // then counts one more.
  void Acquire() {
    for (;;) {
      Drain();
      std::unique_lock<std::mutex> lock(mutex_);
      if (outstanding_ < limit_) {
        ++outstanding_;
        return;
      }
      cv_.wait(lock, [&] { return outstanding_ < limit_ || !done_.empty(); });
    }
  }
  // From any thread: queues the completion of one acquired request.
  void Post(std::function<void()> completion) {
    std::lock_guard<std::mutex> lock(mutex_);
    done_.push_back(std::move(completion));
    --outstanding_;
    cv_.notify_all();
  }
  // Runs the queued completions on the calling thread.
  void Drain() {
    std::deque<std::function<void()>> batch;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      batch.swap(done_);
    }
    for (auto& fn : batch) fn();
  }
  // Blocks until a completion is queued or nothing is outstanding, then runs what is queued.
  void WaitAny() {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return !done_.empty() || outstanding_ == 0; });
    }
    Drain();
  }
  // Runs completions until nothing is outstanding.
  void Finish() {
    for (;;) {
      WaitAny();
      std::lock_guard<std::mutex> lock(mutex_);
      if (outstanding_ == 0 && done_.empty()) return;
    }
  }
  size_t outstanding() {
    std::lock_guard<std::mutex> lock(mutex_);
    return outstanding_;
  }

 private:
  const size_t limit_;
  std::mutex mutex_;
  std::condition_variable cv_;
  size_t outstanding_ = 0;
  std::deque<std::function<void()>> done_;
};

// A token bucket on `clock`: Take() blocks (clock.SleepFor) until a token is there.
class TokenBucket {
 public:
  TokenBucket(Clock& clock, double rate, double burst)
      : clock_(clock),
        rate_(rate),
        burst_(std::max(1.0, burst)),
        tokens_(burst_),
        last_(clock.Now()) {}
  void Take() {
    if (rate_ <= 0) return;  // unlimited
    for (;;) {
      Clock::TimePoint now = clock_.Now();
      tokens_ =
          std::min(burst_, tokens_ + std::chrono::duration<double>(now - last_).count() * rate_);
      last_ = now;
      if (tokens_ >= 1) {
        tokens_ -= 1;
        return;
      }
      clock_.SleepFor(std::chrono::duration_cast<Clock::Duration>(
          std::chrono::duration<double>((1 - tokens_) / rate_)));
    }
  }

 private:
  Clock& clock_;
  const double rate_;
  const double burst_;
  double tokens_;
  Clock::TimePoint last_;
};

// A failure that no further request will cure: the server could not be reached at all (no HTTP
// answer after the store's retries) or it rejects our credentials.
bool StopsEverything(const Status& status) {
  if (status.code() == StatusCode::kUnauthenticated) return true;
  return IsRetryable(status) && status.detail().http_status == 0;
}

bool LedgerTrusted(const LedgerEntry& entry, const StageObject& object, s3::WallTime now) {
  if (entry.phase != LedgerPhase::kRequested) return false;
  if (!entry.etag.empty() && !object.etag.empty() && entry.etag != object.etag) return false;
  return now - entry.updated_at < kTrustRequested;
}

void Absorb(StageObject& object, const s3::ObjectInfo& info) {
  object.size = info.size;
  object.etag = info.etag;
  object.storage_class = info.storage_class;
  object.restore = info.restore;
  object.restore_header = info.restore_header;
  if (auto hint = TapeHintOf(info)) object.hint = std::move(hint);
}

s3::ObjectInfo InfoOf(const StageObject& object) {
  s3::ObjectInfo info;
  info.key = object.key;
  info.size = object.size;
  info.etag = object.etag;
  info.storage_class = object.storage_class;
  info.restore = object.restore;
  return info;
}

std::string ErrorText(const Status& status) {
  std::string text(status.message());
  const StatusDetail& d = status.detail();
  if (!d.s3_code.empty())
    text += " (" + d.s3_code + ")";
  else if (d.http_status != 0)
    text += " (http " + std::to_string(d.http_status) + ")";
  return text;
}

}  // namespace

StageSummary StageSummary::Of(const std::vector<StageObject>& objects) {
  StageSummary s;
  std::map<std::string, bool> cartridges;  // cartridge -> holds a non-readable object
  for (const StageObject& o : objects) {
    size_t i = static_cast<size_t>(o.state);
    s.objects[i] += 1;
    s.bytes[i] += o.size;
    s.total_objects += 1;
    s.total_bytes += o.size;
    if (!o.error.empty()) s.failed += 1;
    if (o.hint) {
      bool& pending = cartridges[o.hint->cartridge];
      pending = pending || !IsReadable(o.state);
    }
  }
  s.cartridges = cartridges.size();
  for (const auto& [vsn, pending] : cartridges) s.cartridges_pending += pending ? 1 : 0;
  return s;
}

Stager::Stager(s3::ObjectStore& store, Ledger& ledger, std::string endpoint, std::string bucket,
               Clock& clock, StageOptions options)
    : store_(store),
      ledger_(ledger),
      endpoint_(std::move(endpoint)),
      bucket_(std::move(bucket)),
      clock_(clock),
      options_(std::move(options)),
      start_(clock.Now()) {}

Result<std::vector<StageObject>> Stager::Enumerate(const std::vector<StageTarget>& targets) {
  std::map<std::string, StageObject> found;  // by key: sorted, and overlapping targets merge
  std::map<std::string, LedgerEntry> ledger;
  std::vector<std::string> keys;  // key targets, HEADed below
  std::map<std::string, std::string> key_display;

  for (const StageTarget& target : targets) {
    if (!target.is_prefix) {
      keys.push_back(target.key);
      key_display.emplace(target.key, target.display);
      continue;
    }
    s3::ListObjectsRequest req;
    req.bucket = bucket_;
    req.prefix = target.key;
    req.fetch_restore_status = true;
    req.fetch_tape_hints = true;
    // The one paging loop (s3/list_pages.h): a server repeating its continuation token fails the
    // listing. The pages arrive one after the other while this thread waits.
    Status listed = s3::ListPagesBlocking(store_, req, [&](s3::ListObjectsPage page, bool) {
      for (const s3::ObjectInfo& info : page.objects) {
        // A directory marker ("a/b/") is not data to stage.
        if (!info.key.empty() && info.key.back() == '/' && info.size == 0) continue;
        StageObject& o = found[info.key];
        o.key = info.key;
        if (o.display.empty() && !target.display.empty()) {
          o.display =
              target.display + info.key.substr(std::min(target.key.size(), info.key.size()));
        }
        Absorb(o, info);
      }
      return true;
    });
    if (!listed.ok()) return listed.WithContext("listing s3://" + bucket_ + "/" + req.prefix);
    auto entries = ledger_.FindPrefix(endpoint_, bucket_, target.key);
    if (!entries.ok()) {
      REELFS_LOG_WARN("hsm", "ledger: {}", entries.status().ToString());
    } else {
      for (LedgerEntry& e : *entries) ledger.emplace(e.id.key, std::move(e));
    }
  }

  // HEAD: the key targets, and archive-class objects the listing said nothing about restores
  // for (versitygw lists no RestoreStatus: only a HEAD tells staging and restored apart).
  std::vector<std::string> heads = keys;
  for (const auto& [key, o] : found) {
    if (IsArchiveClass(o.storage_class) && !o.restore.has_value()) heads.push_back(key);
  }
  std::sort(heads.begin(), heads.end());
  heads.erase(std::unique(heads.begin(), heads.end()), heads.end());
  Status fatal;
  std::set<std::string> missing;
  std::set<std::string> unknown;
  {
    Fanout fanout(options_.max_in_flight);
    for (const std::string& key : heads) {
      if (!fatal.ok()) break;
      fanout.Acquire();
      store_.HeadObject(s3::HeadObjectRequest{bucket_, key}, [&, key](Result<s3::ObjectInfo> r) {
        fanout.Post([&, key, r = std::move(r)]() {
          if (r.ok()) {
            StageObject& o = found[key];
            o.key = key;
            Absorb(o, *r);
            return;
          }
          if (r.status().code() == StatusCode::kNotFound) {
            missing.insert(key);
          } else if (StopsEverything(r.status())) {
            if (fatal.ok()) fatal = r.status().WithContext("HEAD s3://" + bucket_ + "/" + key);
          } else {
            // Exists (listed, or a key target) but not classifiable now: unknown, no error.
            found[key].key = key;
            unknown.insert(key);
            REELFS_LOG_WARN("hsm", "HEAD {}: {}", key, r.status().ToString());
          }
        });
      });
    }
    fanout.Finish();
  }
  REELFS_RETURN_IF_ERROR(fatal);
  for (const std::string& key : keys) {
    if (missing.count(key) != 0 && found.count(key) == 0) {
      return Status::NotFound("s3://" + bucket_ + "/" + key + ": no such object");
    }
    auto it = found.find(key);
    if (it == found.end()) continue;
    if (it->second.display.empty()) it->second.display = key_display[key];
    if (ledger.count(key) == 0) {
      auto entry = ledger_.Find(LedgerKey{endpoint_, bucket_, key});
      if (entry.ok() && entry->has_value()) ledger.emplace(key, std::move(**entry));
    }
  }
  for (const std::string& key : missing) found.erase(key);  // deleted between list and HEAD

  const s3::WallTime now = clock_.WallNow();
  std::vector<StageObject> out;
  out.reserve(found.size());
  for (auto& [key, o] : found) {
    LedgerView view;
    auto it = ledger.find(key);
    if (it != ledger.end()) {
      view.requested = LedgerTrusted(it->second, o, now);
      o.attempts = it->second.attempts;
    }
    // A HEAD that failed leaves kUnknown; everything else is classified.
    o.state = unknown.count(key) != 0 ? State::kUnknown : Classify(InfoOf(o), view, now);
    out.push_back(std::move(o));
  }
  return out;
}

std::vector<size_t> Stager::Plan(const std::vector<StageObject>& objects) {
  std::vector<size_t> wanted;
  std::vector<TapeOrderItem> items;
  for (size_t i = 0; i < objects.size(); ++i) {
    const StageObject& o = objects[i];
    if (o.state != State::kOffline || !o.error.empty()) continue;
    wanted.push_back(i);
    items.push_back({o.key, o.hint ? &*o.hint : nullptr});
  }
  // The one restore order (hsm/tape_order.h), shared with the mount's directory staging.
  std::vector<size_t> plan;
  plan.reserve(wanted.size());
  for (size_t i : TapeOrder(items)) plan.push_back(wanted[i]);
  return plan;
}

namespace {

// What SendRestores needs of a Stager.
struct SendContext {
  s3::ObjectStore& store;
  const std::string& bucket;
  Clock& clock;
  const StageOptions& options;
  uint64_t& requests_sent;
};

// Sends RestoreObject for objects[indices] in that order, at most max_requests_per_second and
// max_in_flight; retryable errors are tried again after a backoff (kSubmitTries in all);
// Expedited refused with GlacierExpeditedRetrievalNotAvailable is sent again as Standard. Calls
// accepted(index, tier) or refused(index, tier, status) on this thread. Returns the error that
// stops everything (StopsEverything), after the requests in flight have ended.
Status SendRestores(SendContext ctx, const std::vector<StageObject>& objects,
                    const std::vector<size_t>& indices,
                    const std::function<void(size_t, s3::RestoreTier)>& accepted,
                    const std::function<void(size_t, s3::RestoreTier, const Status&)>& refused) {
  struct Pending {
    size_t index;
    int tries;
    s3::RestoreTier tier;
    Clock::TimePoint due;
  };
  const double rate = ctx.options.max_requests_per_second;
  TokenBucket bucket(
      ctx.clock, rate,
      std::min(rate, static_cast<double>(std::max<size_t>(1, ctx.options.max_in_flight))));
  std::deque<Pending> todo;
  for (size_t i : indices) todo.push_back({i, 0, ctx.options.params.tier, {}});
  std::vector<Pending> backoff;
  Status fatal;
  Fanout fanout(ctx.options.max_in_flight);

  auto done = [&](Pending p, const Result<s3::RestoreOutcome>& r) {
    if (r.ok()) {
      accepted(p.index, p.tier);
      return;
    }
    const Status& st = r.status();
    if (p.tier == s3::RestoreTier::kExpedited && st.reason() == StatusReason::kTierUnavailable) {
      p.tier = s3::RestoreTier::kStandard;
      todo.push_front(p);
      return;
    }
    if (IsRetryable(st) && p.tries + 1 < kSubmitTries && fatal.ok()) {
      p.due = ctx.clock.Now() + kSubmitBackoff * (1 << p.tries);
      p.tries += 1;
      backoff.push_back(p);
      return;
    }
    if (StopsEverything(st)) {
      if (fatal.ok())
        fatal = st.WithContext("RestoreObject s3://" + ctx.bucket + "/" + objects[p.index].key);
      return;
    }
    refused(p.index, p.tier, st);
  };

  for (;;) {
    fanout.Drain();
    if (!fatal.ok()) break;
    const Clock::TimePoint now = ctx.clock.Now();
    for (auto it = backoff.begin(); it != backoff.end();) {
      if (it->due <= now) {
        todo.push_back(*it);
        it = backoff.erase(it);
      } else {
        ++it;
      }
    }
    if (!todo.empty()) {
      bucket.Take();
      fanout.Acquire();
      if (!fatal.ok() || todo.empty()) {  // Acquire ran completions: look again
        fanout.Post([] {});
        continue;
      }
      Pending p = todo.front();
      todo.pop_front();
      s3::RestoreObjectRequest req;
      req.bucket = ctx.bucket;
      req.key = objects[p.index].key;
      req.days = ctx.options.params.days;
      req.tier = p.tier;
      ctx.requests_sent += 1;
      ctx.store.RestoreObject(req, [&fanout, &done, p](Result<s3::RestoreOutcome> r) {
        fanout.Post([&done, p, r = std::move(r)] { done(p, r); });
      });
    } else if (fanout.outstanding() > 0) {
      fanout.WaitAny();
    } else if (!backoff.empty()) {
      Clock::TimePoint due = backoff.front().due;
      for (const Pending& p : backoff) due = std::min(due, p.due);
      if (due > now) ctx.clock.SleepFor(due - now);
    } else {
      break;
    }
  }
  fanout.Finish();
  return fatal;
}

LedgerEntry EntryFor(const std::string& endpoint, const std::string& bucket, const StageObject& o,
                     s3::RestoreTier tier, const StageOptions& options, s3::WallTime now) {
  LedgerEntry e;
  e.id = LedgerKey{endpoint, bucket, o.key};
  e.phase = LedgerPhase::kRequested;
  e.etag = o.etag;
  e.size = o.size;
  e.tier = tier;
  e.days = options.params.days;
  e.requested_at = now;
  e.updated_at = now;
  e.attempts = std::max(1, o.attempts);
  e.batch = options.batch;
  return e;
}

}  // namespace

Result<uint64_t> Stager::Submit(std::vector<StageObject>& objects, const ProgressFn& progress) {
  const std::vector<size_t> plan = Plan(objects);
  std::vector<LedgerEntry> batch;
  uint64_t requested = 0;
  auto flush = [&] {
    if (!batch.empty()) {
      if (Status st = ledger_.UpsertMany(batch); !st.ok()) {
        REELFS_LOG_WARN("hsm", "ledger: {}", st.ToString());
      }
      batch.clear();
    }
    if (progress) {
      progress(StageProgress{StageSummary::Of(objects), clock_.Now() - start_, std::nullopt,
                             requests_sent_});
    }
  };
  auto accepted = [&](size_t i, s3::RestoreTier tier) {
    StageObject& o = objects[i];
    o.state = State::kStaging;
    o.attempts += 1;
    o.error.clear();
    requested += 1;
    batch.push_back(EntryFor(endpoint_, bucket_, o, tier, options_, clock_.WallNow()));
    if (batch.size() >= kLedgerBatch) flush();
  };
  auto refused = [&](size_t i, s3::RestoreTier tier, const Status& st) {
    StageObject& o = objects[i];
    o.attempts += 1;
    o.error = ErrorText(st);
    LedgerEntry e = EntryFor(endpoint_, bucket_, o, tier, options_, clock_.WallNow());
    e.phase = LedgerPhase::kFailed;
    e.last_error = st.ToString();
    batch.push_back(std::move(e));
    if (batch.size() >= kLedgerBatch) flush();
  };
  Status fatal = SendRestores(SendContext{store_, bucket_, clock_, options_, requests_sent_},
                              objects, plan, accepted, refused);
  flush();
  REELFS_RETURN_IF_ERROR(fatal);
  return requested;
}

namespace {

// What Stager::Wait needs of a Stager.
struct WaitContext {
  SendContext send;
  Ledger& ledger;
  const std::string& endpoint;
  Clock::TimePoint start;  // the Stager's (progress counts from it)
};

// One Stager::Wait over `objects`: what is known of each object's request, and the steps of a
// poll round. DecideRestore (hsm/restore_policy.h) says what each HEAD answer leads to; this
// class observes and acts. Everything runs on the calling thread (Fanout hands HEAD and
// RestoreObject completions back to it).
class WaitRun {
 public:
  WaitRun(WaitContext ctx, std::vector<StageObject>& objects)
      : ctx_(ctx),
        objects_(objects),
        rules_{.poll_min = ctx.send.options.poll_min,
               .poll_max = ctx.send.options.poll_max,
               .max_attempts = ctx.send.options.max_attempts,
               .request_unrequested = false},  // `reelfs wait` asks for nothing new
        requested_(objects.size(), false) {}

  const RestoreRules& rules() const { return rules_; }
  bool progressed() const { return progressed_; }

  // Reads what the ledger knows of the objects: which were requested, since when, how often.
  void LoadRequests();
  // The objects still to HEAD; fails those offline with no request known (kNotRequested).
  std::vector<size_t> Pending();
  // HEADs `pending`, max_in_flight at a time, and carries out DecideRestore for each answer.
  Status PollRound(const std::vector<size_t>& pending);
  // Sends the requests the round decided to send again, and records their answers.
  Status RequestAgain();
  // Writes the round's ledger updates, kLedgerBatch to a transaction.
  void FlushLedger();
  StageProgress Progress(Clock::TimePoint now) const;
  // Every object readable or failed.
  bool Settled() const;
  bool AnyFailed() const;

 private:
  Clock& clock() const { return ctx_.send.clock; }
  void OnHead(size_t i, const Result<s3::ObjectInfo>& r);
  RestoreObservation Observe(size_t i, State seen) const;

  const WaitContext ctx_;
  std::vector<StageObject>& objects_;
  const RestoreRules rules_;
  std::unordered_map<std::string, LedgerEntry> entries_;  // the ledger's, by key
  Clock::TimePoint wait_start_;
  uint64_t readable_at_start_ = 0;
  // Whether a restore of objects_[i] is known to have been asked for, and since when (clock()).
  std::vector<bool> requested_;
  std::vector<Clock::TimePoint> requested_at_;
  std::vector<LedgerEntry> updates_;
  // This round's.
  bool progressed_ = false;  // something came online
  std::vector<size_t> again_;
  Status fatal_;
};

void WaitRun::LoadRequests() {
  const size_t n = objects_.size();
  // One query: the longest common prefix of the keys.
  if (n > 0) {
    std::string prefix = objects_.front().key;
    for (const StageObject& o : objects_) {
      size_t k = 0;
      while (k < prefix.size() && k < o.key.size() && prefix[k] == o.key[k]) ++k;
      prefix.resize(k);
    }
    auto found = ctx_.ledger.FindPrefix(ctx_.endpoint, ctx_.send.bucket, prefix);
    if (!found.ok()) {
      REELFS_LOG_WARN("hsm", "ledger: {}", found.status().ToString());
    } else {
      for (LedgerEntry& e : *found) entries_.emplace(e.id.key, std::move(e));
    }
  }
  wait_start_ = clock().Now();
  requested_at_.assign(n, wait_start_);
  const s3::WallTime wall = clock().WallNow();
  for (size_t i = 0; i < n; ++i) {
    StageObject& o = objects_[i];
    auto it = entries_.find(o.key);
    if (it != entries_.end() && it->second.phase == LedgerPhase::kRequested &&
        (it->second.etag.empty() || o.etag.empty() || it->second.etag == o.etag)) {
      requested_[i] = true;
      requested_at_[i] =
          wait_start_ - std::chrono::duration_cast<Clock::Duration>(wall - it->second.requested_at);
      o.attempts = std::max(o.attempts, it->second.attempts);
    }
    if (o.state == State::kStaging) requested_[i] = true;
  }
  for (const StageObject& o : objects_) readable_at_start_ += IsReadable(o.state) ? 1 : 0;
}

std::vector<size_t> WaitRun::Pending() {
  std::vector<size_t> pending;
  for (size_t i = 0; i < objects_.size(); ++i) {
    StageObject& o = objects_[i];
    if (IsReadable(o.state) || !o.error.empty()) continue;
    if (o.state == State::kOffline && !requested_[i]) {
      o.error = kNotRequested;
      continue;
    }
    pending.push_back(i);
  }
  return pending;
}

Status WaitRun::PollRound(const std::vector<size_t>& pending) {
  progressed_ = false;
  again_.clear();
  {
    Fanout fanout(ctx_.send.options.max_in_flight);
    for (size_t i : pending) {
      if (!fatal_.ok()) break;
      fanout.Acquire();
      ctx_.send.store.HeadObject(s3::HeadObjectRequest{ctx_.send.bucket, objects_[i].key},
                                 [this, &fanout, i](Result<s3::ObjectInfo> r) {
                                   fanout.Post([this, i, r = std::move(r)] { OnHead(i, r); });
                                 });
    }
    fanout.Finish();
  }
  return fatal_;
}

RestoreObservation WaitRun::Observe(size_t i, State seen) const {
  return RestoreObservation{.seen = seen,
                            .requested = requested_[i],
                            .since_request = clock().Now() - requested_at_[i],
                            .attempts = objects_[i].attempts};
}

void WaitRun::OnHead(size_t i, const Result<s3::ObjectInfo>& r) {
  StageObject& o = objects_[i];
  if (!r.ok()) {
    if (r.status().code() == StatusCode::kNotFound) {
      o.error = "deleted while staging";
    } else if (StopsEverything(r.status())) {
      if (fatal_.ok()) {
        fatal_ = r.status().WithContext("HEAD s3://" + ctx_.send.bucket + "/" + o.key);
      }
    } else {
      REELFS_LOG_WARN("hsm", "HEAD {}: {}", o.key, r.status().ToString());
    }
    return;
  }
  Absorb(o, *r);
  const State seen = Classify(*r, LedgerView{}, clock().WallNow());
  const RestoreStep step = DecideRestore(Observe(i, seen), rules_);
  auto entry = entries_.find(o.key);
  switch (step.action) {
    case RestoreAction::kDone:
      o.state = seen;
      progressed_ = true;
      if (entry != entries_.end() && entry->second.phase != *step.record) {
        entry->second.phase = *step.record;
        entry->second.updated_at = clock().WallNow();
        updates_.push_back(entry->second);
      }
      break;
    case RestoreAction::kWait:
      o.state = State::kStaging;  // running, or too soon for the server to show our request
      // Someone asked: if it shows offline later, that is a release, not "never requested".
      if (seen == State::kStaging) requested_[i] = true;
      break;
    case RestoreAction::kRequest:  // not with request_unrequested = false
    case RestoreAction::kRequestAgain:
      o.state = State::kOffline;
      again_.push_back(i);
      break;
    case RestoreAction::kGiveUp:
      o.state = State::kOffline;
      o.error = step.failure.message();
      if (step.record && entry != entries_.end()) {
        entry->second.phase = *step.record;
        entry->second.last_error = o.error;
        entry->second.updated_at = clock().WallNow();
        updates_.push_back(entry->second);
      }
      break;
  }
}

Status WaitRun::RequestAgain() {
  if (again_.empty()) return Status::Ok();
  // Both answers count an attempt and replace the object's ledger entry.
  auto entry_for = [&](size_t i, s3::RestoreTier tier) {
    StageObject& o = objects_[i];
    o.attempts += 1;
    LedgerEntry e =
        EntryFor(ctx_.endpoint, ctx_.send.bucket, o, tier, ctx_.send.options, clock().WallNow());
    e.attempts = o.attempts;
    return e;
  };
  auto record = [&](LedgerEntry e) {
    entries_[e.id.key] = e;
    updates_.push_back(std::move(e));
  };
  auto accepted = [&](size_t i, s3::RestoreTier tier) {
    objects_[i].state = State::kStaging;
    requested_at_[i] = clock().Now();
    record(entry_for(i, tier));
  };
  auto refused = [&](size_t i, s3::RestoreTier tier, const Status& st) {
    objects_[i].error = ErrorText(st);
    LedgerEntry e = entry_for(i, tier);
    e.phase = LedgerPhase::kFailed;
    e.last_error = st.ToString();
    record(std::move(e));
  };
  return SendRestores(ctx_.send, objects_, again_, accepted, refused);
}

void WaitRun::FlushLedger() {
  for (size_t off = 0; off < updates_.size(); off += kLedgerBatch) {
    std::span<const LedgerEntry> part(updates_.data() + off,
                                      std::min(kLedgerBatch, updates_.size() - off));
    if (Status st = ctx_.ledger.UpsertMany(part); !st.ok()) {
      REELFS_LOG_WARN("hsm", "ledger: {}", st.ToString());
    }
  }
  updates_.clear();
}

StageProgress WaitRun::Progress(Clock::TimePoint now) const {
  StageProgress p{StageSummary::Of(objects_), now - ctx_.start, std::nullopt,
                  ctx_.send.requests_sent};
  uint64_t readable = p.summary.objects[static_cast<size_t>(State::kOnline)] +
                      p.summary.objects[static_cast<size_t>(State::kRestored)];
  uint64_t left = p.summary.total_objects - readable - p.summary.failed;
  if (readable > readable_at_start_ && now > wait_start_) {
    p.eta = std::chrono::duration_cast<Clock::Duration>(
        (now - wait_start_) * (static_cast<double>(left) / (readable - readable_at_start_)));
  }
  return p;
}

bool WaitRun::Settled() const {
  return std::all_of(objects_.begin(), objects_.end(),
                     [](const StageObject& o) { return IsReadable(o.state) || !o.error.empty(); });
}

bool WaitRun::AnyFailed() const {
  return std::any_of(objects_.begin(), objects_.end(),
                     [](const StageObject& o) { return !o.error.empty(); });
}

}  // namespace

Result<WaitEnd> Stager::Wait(std::vector<StageObject>& objects, Clock::TimePoint deadline,
                             const ProgressFn& progress) {
  WaitRun run(WaitContext{SendContext{store_, bucket_, clock_, options_, requests_sent_}, ledger_,
                          endpoint_, start_},
              objects);
  run.LoadRequests();
  std::optional<Clock::Duration> interval;  // NextPoll's `previous`
  for (;;) {
    const std::vector<size_t> pending = run.Pending();
    if (pending.empty()) break;
    REELFS_RETURN_IF_ERROR(run.PollRound(pending));
    REELFS_RETURN_IF_ERROR(run.RequestAgain());
    run.FlushLedger();
    const Clock::TimePoint now = clock_.Now();
    if (progress) progress(run.Progress(now));
    if (run.Settled()) break;
    if (now >= deadline) return WaitEnd::kTimedOut;
    // Back to poll_min after a round in which something came online (the library is working
    // through a cartridge: more will follow soon).
    if (run.progressed()) interval.reset();
    const PollStep step = NextPoll(interval, run.rules());
    clock_.SleepFor(std::min<Clock::Duration>(step.delay, deadline - now));
    interval = step.next;
  }
  return run.AnyFailed() ? WaitEnd::kFailed : WaitEnd::kDone;
}

}  // namespace reelfs::hsm
