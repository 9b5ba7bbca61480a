#include "gateway/archive/archive.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "common/json.h"
#include "common/log.h"
#include "common/mutex.h"
#include "gateway/archive/personality.h"
#include "gateway/store/catalog.h"
#include "gateway/store/key_validation.h"

namespace reelfs::gateway {
namespace {

std::string Id(const std::string& bucket, const std::string& key) { return bucket + "/" + key; }

std::string DefaultVsn(uint32_t i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "RL%04uL9", i);
  return buf;
}

}  // namespace

std::string ArchiveRunReport::ToJson() const {
  Json cartridges = Json::object();
  for (const auto& [vsn, n] : per_cartridge) cartridges[vsn] = n;
  return DumpJson(Json{{"archived", archived},
                       {"bytes", bytes},
                       {"skipped", skipped},
                       {"released", released},
                       {"cartridges", std::move(cartridges)},
                       {"errors", errors}});
}

Result<std::unique_ptr<Archive>> Archive::Create(Store& store, tape::Library& library,
                                                 ArchiveOptions options, bool serve) {
  REELFS_ASSIGN_OR_RETURN(TapeImages images, TapeImages::Open(store.fs().internal_path() + "/tapes",
                                                              library.BlockBytes()));
  std::unique_ptr<Archive> archive(
      new Archive(store, library, std::move(options), std::move(images)));
  archive->gate_->archive = archive.get();
  REELFS_ASSIGN_OR_RETURN(auto cartridges, store.catalog().Cartridges());
  for (const CartridgeRecord& c : cartridges) {
    REELFS_RETURN_IF_ERROR(library.AddCartridge(c.vsn));
  }
  if (serve) REELFS_RETURN_IF_ERROR(archive->Start());
  return archive;
}

Status Archive::Start() {
  const int copiers = std::max(1, options_.copy_threads);
  for (int i = 0; i < copiers; ++i) threads_.emplace_back([this] { CopyLoop(); });
  threads_.emplace_back([this] { ReleaserLoop(); });
  // Recalls a previous process left running (it stopped or crashed first): submit them again.
  Catalog::ArchiveQuery q;
  q.staging_only = true;
  while (true) {
    REELFS_ASSIGN_OR_RETURN(auto rows, store_.catalog().ListArchive(q));
    if (rows.empty()) break;
    for (const auto& row : rows) {
      REELFS_LOG_INFO("gateway", "archive: resuming the recall of {}/{}", row.bucket, row.key);
      {
        MutexLock lock(mu_);
        inflight_.emplace(Id(row.bucket, row.key), Recall{});
      }
      Submit(row.bucket, row.key, row.archive);
    }
    q.after_bucket = rows.back().bucket;
    q.after_key = rows.back().key;
  }
  return Status::Ok();
}

Archive::~Archive() {
  {
    MutexLock lock(gate_->mu);
    gate_->archive = nullptr;
  }
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

// ---- writer ----

Result<ArchiveRunReport> Archive::Run(const ArchiveRunOptions& run) {
  MutexLock run_lock(run_mu_);
  if (run.cartridge.empty() && run.cartridges == 0) {
    return Status::InvalidArgument("archive: cartridges must be >= 1");
  }
  std::vector<std::string> buckets;
  if (!run.bucket.empty()) {
    REELFS_RETURN_IF_ERROR(store_.HeadBucket(run.bucket));
    buckets.push_back(run.bucket);
  } else {
    REELFS_ASSIGN_OR_RETURN(auto all, store_.ListBuckets());
    for (const auto& b : all) buckets.push_back(b.name);
  }
  ArchiveRunReport report;
  struct Candidate {
    std::string bucket;
    ObjectRecord rec;
  };
  std::vector<Candidate> todo;
  uint64_t total = 0;
  for (const std::string& bucket : buckets) {
    std::string lower = run.prefix;
    bool inclusive = true;
    while (true) {
      REELFS_ASSIGN_OR_RETURN(auto rows,
                              store_.catalog().ListObjects(bucket, lower, inclusive, "", 1000));
      bool done = rows.empty();
      for (ObjectRecord& r : rows) {
        if (!r.key.starts_with(run.prefix)) {
          done = true;
          break;
        }
        lower = r.key;
        inclusive = false;
        if (IsDirectoryMarker(r.key) || r.size == 0 || r.archive.has_value()) {
          ++report.skipped;
          continue;
        }
        total += r.size;
        todo.push_back({bucket, std::move(r)});
      }
      if (done) break;
    }
  }

  // Cartridges and their next free blocks.
  std::vector<std::string> vsns;
  if (!run.cartridge.empty()) {
    vsns.push_back(run.cartridge);
  } else {
    for (uint32_t i = 0; i < run.cartridges; ++i) vsns.push_back(DefaultVsn(i));
  }
  std::map<std::string, uint64_t> next;
  REELFS_ASSIGN_OR_RETURN(auto known, store_.catalog().Cartridges());
  for (const auto& c : known) next[c.vsn] = c.next_block;
  for (const std::string& vsn : vsns) {
    REELFS_RETURN_IF_ERROR(library_.AddCartridge(vsn));
    next.emplace(vsn, 0);
  }
  const uint64_t capacity = library_.CapacityBlocks();
  const uint64_t per_cartridge = vsns.empty() ? total : (total + vsns.size() - 1) / vsns.size();
  size_t current = 0;
  uint64_t current_bytes = 0;
  for (size_t i = 0; i < todo.size(); ++i) {
    const std::string& bucket = todo[i].bucket;
    const ObjectRecord& rec = todo[i].rec;
    size_t which;
    if (run.striped) {
      which = i % vsns.size();
    } else {
      if (current_bytes >= per_cartridge && current + 1 < vsns.size()) {
        ++current;
        current_bytes = 0;
      }
      which = current;
      current_bytes += rec.size;
    }
    const std::string& vsn = vsns[which];
    auto fail = [&](const Status& st) {
      report.errors.push_back(Id(bucket, rec.key) + ": " + std::string(st.message()));
    };
    auto opened = store_.Open(bucket, rec.key);
    if (!opened.ok()) {
      fail(opened.status());
      continue;
    }
    const ObjectRecord& now = opened->record;
    if (now.archive.has_value() || now.etag != rec.etag || now.size != rec.size) {
      ++report.skipped;  // changed since the scan; the next run takes it
      continue;
    }
    const uint64_t start = next[vsn];
    const uint64_t blocks = images_.BlocksFor(now.size);
    if (start + blocks > capacity) {
      fail(Status::ResourceExhausted("cartridge " + vsn + " is full"));
      continue;
    }
    // The blocks are spent before anything is written: a crash never hands them out twice.
    next[vsn] = start + blocks;
    if (Status st = store_.catalog().PutCartridge({vsn, start + blocks}); !st.ok()) {
      fail(st);
      continue;
    }
    auto md5 = images_.Write(vsn, start, opened->fd.get(), now.size);
    if (!md5.ok()) {
      fail(md5.status());
      continue;
    }
    ArchiveRecord a;
    a.state = ArchiveState::kPremigrated;
    a.cartridge = vsn;
    a.start_block = start;
    a.bytes = now.size;
    a.content_md5 = *md5;
    a.archived_ns = NowNs();
    a.size = now.size;
    a.etag = now.etag;
    a.mtime_ns = now.mtime_ns;
    a.content_type = now.content_type;
    a.storage_class = now.storage_class;
    a.user_meta = EncodeUserMetadata(now.user_meta);
    if (Status st = store_.MarkArchived(bucket, now, a); !st.ok()) {
      fail(st);
      continue;
    }
    ++report.archived;
    report.bytes += now.size;
    ++report.per_cartridge[vsn];
    archived_objects_.fetch_add(1);
    archived_bytes_.fetch_add(now.size);
    if (run.release) {
      if (Status st = store_.Release(bucket, now.key); !st.ok()) {
        fail(st);
      } else {
        ++report.released;
        released_objects_.fetch_add(1);
        released_bytes_.fetch_add(now.size);
      }
    }
  }
  REELFS_LOG_INFO("gateway",
                  "archive: {} objects ({} bytes) written, {} skipped, {} released, {} "
                  "errors",
                  report.archived, report.bytes, report.skipped, report.released,
                  report.errors.size());
  return report;
}

// ---- recall ----

Result<RestoreStart> Archive::Restore(const std::string& bucket, const std::string& key,
                                      std::optional<int> days) {
  MutexLock lock(mu_);
  if (inflight_.count(Id(bucket, key))) {
    recalls_joined_.fetch_add(1);
    return RestoreStart::kJoined;
  }
  REELFS_ASSIGN_OR_RETURN(std::optional<ArchiveRecord> a, store_.catalog().GetArchive(bucket, key));
  if (!a.has_value()) return RestoreStart::kNotArchived;
  ArchiveRecord marked;
  bool on_disk = false;
  REELFS_RETURN_IF_ERROR(store_.UpdateArchive(bucket, key, [&](ArchiveRecord& r) -> Status {
    if (r.state != ArchiveState::kOffline) {
      on_disk = true;
      return Status::Ok();
    }
    r.staging = true;
    r.stage_fail = false;
    r.restore_requested_ns = NowNs();
    marked = r;
    return Status::Ok();
  }));
  if (on_disk) return RestoreStart::kOnDisk;
  // Registered before the lock is dropped: a concurrent request joins this recall.
  inflight_.emplace(Id(bucket, key), Recall{days});
  lock.unlock();
  Submit(bucket, key, marked);
  return RestoreStart::kStarted;
}

void Archive::Submit(const std::string& bucket, const std::string& key, const ArchiveRecord& a) {
  const std::string id = Id(bucket, key);
  recalls_submitted_.fetch_add(1);
  tape::RecallRequest request;
  request.label = id;
  request.extent = {a.cartridge, a.start_block, a.bytes};
  // The callback runs on the simulation thread (or inside Submit): enqueue only.
  library_.Submit(std::move(request), [gate = gate_, bucket, key](const tape::RecallCompletion& c) {
    MutexLock gate_lock(gate->mu);
    Archive* self = gate->archive;
    if (self == nullptr) return;  // archive gone: the catalog still says staging; resumed later
    {
      MutexLock lock(self->mu_);
      self->jobs_.push_back(Job{bucket, key, c});
    }
    self->cv_.notify_all();
  });
}

Result<bool> Archive::ExtendRestore(const std::string& bucket, const std::string& key, int days) {
  bool already = false;
  REELFS_RETURN_IF_ERROR(store_.UpdateArchive(bucket, key, [&](ArchiveRecord& r) -> Status {
    if (r.state != ArchiveState::kPremigrated) {
      return Status::FailedPrecondition("object is not on disk");
    }
    const int64_t now = NowNs();
    already = r.restored_ns > 0 && r.expiry_ns > 0;
    if (!already) r.restored_ns = now;  // the disk copy serves as the restored copy at once
    r.expiry_ns = RestoreExpiryNs(now, days);
    return Status::Ok();
  }));
  return already;
}

void Archive::CopyLoop() {
  while (true) {
    Job job;
    {
      MutexLock lock(mu_);
      cv_.wait(lock, [&]() REQUIRES(mu_) { return stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping, nothing left
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    Complete(job);
    {
      MutexLock lock(mu_);
      inflight_.erase(Id(job.bucket, job.key));
      releaser_kick_ = true;
    }
    cv_.notify_all();
  }
}

void Archive::Fail(const std::string& bucket, const std::string& key, const std::string& why) {
  recalls_failed_.fetch_add(1);
  REELFS_LOG_WARN("gateway", "archive: recall of {}/{} failed: {}", bucket, key, why);
  Status st = store_.UpdateArchive(bucket, key, [](ArchiveRecord& r) {
    r.staging = false;
    r.stage_fail = true;
    return Status::Ok();
  });
  if (!st.ok() && st.code() != StatusCode::kNotFound) {
    REELFS_LOG_ERROR("gateway", "archive: cannot record the failed recall of {}/{}: {}", bucket,
                     key, st.ToString());
  }
}

void Archive::Complete(const Job& job) {
  const tape::RecallCompletion& c = job.completion;
  if (c.outcome == tape::RecallOutcome::kShutdown) return;  // staging stays: resumed at start
  auto a = store_.catalog().GetArchive(job.bucket, job.key);
  if (!a.ok() || !a->has_value()) return;  // deleted or overwritten meanwhile
  if (c.outcome != tape::RecallOutcome::kOk) {
    return Fail(job.bucket, job.key,
                std::string(c.outcome == tape::RecallOutcome::kMediaError ? "media error"
                                                                          : "stage failure") +
                    (c.detail.empty() ? "" : ": " + c.detail));
  }
  const ArchiveRecord& from = **a;
  auto tmp = store_.fs().CreateTmp("recall");
  if (!tmp.ok()) return Fail(job.bucket, job.key, tmp.status().ToString());
  auto md5 = images_.Read(from.cartridge, from.start_block, from.bytes, *tmp);
  if (!md5.ok()) return Fail(job.bucket, job.key, md5.status().ToString());
  if (tmp->size() != from.bytes || *md5 != from.content_md5) {
    return Fail(job.bucket, job.key,
                "cartridge " + from.cartridge + ": extent at block " +
                    std::to_string(from.start_block) + " does not match what was archived");
  }
  std::optional<int> days;
  {
    MutexLock lock(mu_);
    if (auto it = inflight_.find(Id(job.bucket, job.key)); it != inflight_.end()) {
      days = it->second.days;
    }
  }
  const int64_t now = NowNs();
  Status st = store_.CompleteRecall(job.bucket, job.key, from, *tmp, [&](ArchiveRecord& r) {
    r.staging = false;
    r.stage_fail = false;
    r.restored_ns = now;
    r.expiry_ns = days.has_value() ? RestoreExpiryNs(now, *days) : 0;
  });
  if (!st.ok()) {
    if (st.code() == StatusCode::kFailedPrecondition) {
      REELFS_LOG_INFO("gateway", "archive: {}", st.message());  // overwritten: nothing to do
      return;
    }
    return Fail(job.bucket, job.key, st.ToString());
  }
  recalls_ok_.fetch_add(1);
  recalled_bytes_.fetch_add(from.bytes);
  REELFS_LOG_DEBUG("gateway", "archive: recalled {}/{} ({} bytes, drive {}, {:.1f} s simulated)",
                   job.bucket, job.key, from.bytes, c.drive, (c.done - c.submitted).count());
}

bool Archive::WaitIdle(std::chrono::milliseconds timeout) {
  MutexLock lock(mu_);
  return cv_.wait_for(lock, timeout,
                      [&]() REQUIRES(mu_) { return inflight_.empty() && jobs_.empty(); });
}

// ---- releaser ----

Result<uint64_t> Archive::ReleaseRows(const Catalog::ArchiveQuery& query, uint64_t stop_at_bytes,
                                      uint64_t* bytes_left) {
  uint64_t released = 0;
  Catalog::ArchiveQuery q = query;
  while (true) {
    REELFS_ASSIGN_OR_RETURN(auto rows, store_.catalog().ListArchive(q));
    if (rows.empty()) return released;
    for (const auto& row : rows) {
      if (bytes_left != nullptr && *bytes_left <= stop_at_bytes) return released;
      Status st = store_.Release(row.bucket, row.key);
      if (st.ok()) {
        ++released;
        released_objects_.fetch_add(1);
        released_bytes_.fetch_add(row.archive.bytes);
        if (bytes_left != nullptr) *bytes_left -= std::min(*bytes_left, row.archive.bytes);
      } else if (st.code() != StatusCode::kFailedPrecondition) {
        return st;
      }
    }
    if (q.restored_only) {
      // Ordered by restore time, not by key: the rows released are gone from the next query;
      // a row that could not be released would come back, so stop after one pass.
      if (rows.size() < static_cast<size_t>(q.limit)) return released;
      continue;
    }
    q.after_bucket = rows.back().bucket;
    q.after_key = rows.back().key;
  }
}

Result<uint64_t> Archive::ReleaseAll(const std::string& bucket, const std::string& prefix) {
  Catalog::ArchiveQuery q;
  q.bucket = bucket;
  q.prefix = prefix;
  q.state = ArchiveState::kPremigrated;
  return ReleaseRows(q, 0, nullptr);
}

Status Archive::RunReleaser() {
  // One pass at a time: two passes computing from the same total would release twice as much.
  MutexLock pass(releaser_mu_);
  if (options_.release_high_bytes > 0) {
    REELFS_ASSIGN_OR_RETURN(uint64_t on_disk, store_.catalog().RestoredBytes());
    if (on_disk > options_.release_high_bytes) {
      Catalog::ArchiveQuery q;
      q.state = ArchiveState::kPremigrated;
      q.restored_only = true;  // least recently restored first
      q.limit = 256;
      REELFS_ASSIGN_OR_RETURN(uint64_t n, ReleaseRows(q, options_.release_low_bytes, &on_disk));
      REELFS_LOG_INFO("gateway", "archive: releaser: {} objects released, {} restored bytes left",
                      n, on_disk);
    }
  }
  if (options_.personality != Personality::kVersitygw) {
    // Expired restored copies go offline again (versitygw's expiry is fake: docs/gateway.md
    // "Archive").
    const int64_t now = NowNs();
    Catalog::ArchiveQuery q;
    q.state = ArchiveState::kPremigrated;
    q.restored_only = true;
    q.limit = 1000;
    REELFS_ASSIGN_OR_RETURN(auto rows, store_.catalog().ListArchive(q));
    for (const auto& row : rows) {
      if (row.archive.expiry_ns == 0 || row.archive.expiry_ns > now) continue;
      Status st = store_.Release(row.bucket, row.key);
      if (st.ok()) {
        released_objects_.fetch_add(1);
        released_bytes_.fetch_add(row.archive.bytes);
      }
    }
  }
  return Status::Ok();
}

void Archive::ScheduleFaults(std::vector<LibraryFault> faults) {
  std::vector<LibraryFault> now;
  {
    MutexLock lock(mu_);
    for (LibraryFault& f : faults) {
      if (f.at.count() <= 0) {
        now.push_back(std::move(f));
      } else {
        pending_faults_.push_back(std::move(f));
      }
    }
  }
  for (const LibraryFault& f : now) {
    library_.Inject(f.fault);
    faults_injected_.fetch_add(1);
  }
  cv_.notify_all();
}

void Archive::ReleaserLoop() {
  auto last_release = std::chrono::steady_clock::now();
  while (true) {
    std::vector<LibraryFault> due;
    bool run_releaser = false;
    {
      MutexLock lock(mu_);
      // Faults at a simulated time need a fine tick (x1000: 10 ms real = 10 s simulated).
      auto tick =
          pending_faults_.empty() ? std::chrono::milliseconds(500) : std::chrono::milliseconds(5);
      cv_.wait_for(lock, tick, [&]() REQUIRES(mu_) { return stop_ || releaser_kick_; });
      if (stop_) return;
      const double sim_now = library_.Now().count();
      for (auto it = pending_faults_.begin(); it != pending_faults_.end();) {
        if (it->at.count() <= sim_now) {
          due.push_back(std::move(*it));
          it = pending_faults_.erase(it);
        } else {
          ++it;
        }
      }
      const auto now = std::chrono::steady_clock::now();
      run_releaser = releaser_kick_ || now - last_release >= std::chrono::milliseconds(500);
      releaser_kick_ = false;
      if (run_releaser) last_release = now;
    }
    for (const LibraryFault& f : due) {
      library_.Inject(f.fault);
      faults_injected_.fetch_add(1);
    }
    if (run_releaser) {
      if (Status st = RunReleaser(); !st.ok()) {
        REELFS_LOG_ERROR("gateway", "archive: releaser: {}", st.ToString());
      }
    }
  }
}

Json Archive::MetricsDocument() {
  uint64_t staging = 0;
  {
    MutexLock lock(mu_);
    staging = inflight_.size();
  }
  auto restored = store_.catalog().RestoredBytes();
  return Json{{"archived_objects", archived_objects_.load()},
              {"archived_bytes", archived_bytes_.load()},
              {"recalls_submitted", recalls_submitted_.load()},
              {"recalls_joined", recalls_joined_.load()},
              {"recalls_ok", recalls_ok_.load()},
              {"recalls_failed", recalls_failed_.load()},
              {"recalled_bytes", recalled_bytes_.load()},
              {"released_objects", released_objects_.load()},
              {"released_bytes", released_bytes_.load()},
              {"library_faults_injected", faults_injected_.load()},
              {"recalls_in_flight", staging},
              {"restored_bytes_on_disk", restored.ok() ? *restored : 0},
              {"personality", PersonalityName(options_.personality)}};
}

}  // namespace reelfs::gateway
