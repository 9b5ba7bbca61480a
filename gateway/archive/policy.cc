#include "gateway/archive/policy.h"

#include <chrono>
#include <map>
#include <vector>

#include "common/log.h"
#include "gateway/archive/archive.h"
#include "gateway/archive/policy_batches.h"

namespace reelfs::gateway {

ArchivePolicy::ArchivePolicy(Archive& archive, Store& store, ArchivePolicyOptions options,
                             std::function<int64_t()> now_ns)
    : archive_(archive), store_(store), options_(std::move(options)), now_ns_(std::move(now_ns)) {}

ArchivePolicy::~ArchivePolicy() { Stop(); }

void ArchivePolicy::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void ArchivePolicy::Stop() {
  {
    MutexLock lock(mu_);
    stop_requested_ = true;
  }
  cancel_.store(true);
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ArchivePolicy::Loop() {
  while (true) {
    auto report = ScanOnce();
    if (!report.ok() && report.status().code() != StatusCode::kCancelled) {
      REELFS_LOG_ERROR("gateway", "archive policy: {}", report.status().ToString());
    }
    MutexLock lock(mu_);
    cv_.wait_for(lock, options_.scan_interval, [&]() REQUIRES(mu_) { return stop_requested_; });
    if (stop_requested_) return;
  }
}

Result<PolicyScanReport> ArchivePolicy::ScanOnce() {
  MutexLock scan(scan_mu_);
  PolicyScanReport report;
  for (const ArchiveSet& set : options_.sets) {
    if (cancel_.load()) return Status::Cancelled("archive policy stopped");
    if (Status st = ScanSet(set, &report); !st.ok()) {
      if (st.code() == StatusCode::kCancelled) return st;
      ++report.errors;
      REELFS_LOG_WARN("gateway", "archive policy: set '{}': {}", set.name, st.ToString());
    }
    if (Status st = ReleaseDue(set, &report); !st.ok()) {
      ++report.errors;
      REELFS_LOG_WARN("gateway", "archive policy: set '{}': release: {}", set.name, st.ToString());
    }
  }
  scans_.fetch_add(1);
  due_.fetch_add(report.due);
  batches_.fetch_add(report.batches);
  archived_.fetch_add(report.archived);
  bytes_.fetch_add(report.bytes);
  skipped_.fetch_add(report.skipped);
  released_.fetch_add(report.released);
  errors_.fetch_add(report.errors);
  last_scan_ns_.store(now_ns_());
  if (report.due > 0 || report.released > 0) {
    REELFS_LOG_INFO("gateway",
                    "archive policy: {} due, {} batches, {} archived ({} bytes), {} skipped, {} "
                    "released, {} errors",
                    report.due, report.batches, report.archived, report.bytes, report.skipped,
                    report.released, report.errors);
  }
  return report;
}

Status ArchivePolicy::ScanSet(const ArchiveSet& set, PolicyScanReport* report) {
  if (Status st = store_.HeadBucket(set.bucket); !st.ok()) {
    return st.code() == StatusCode::kNotFound ? Status::Ok() : st;  // not created yet
  }
  const int64_t now = now_ns_();
  std::vector<ObjectRecord> due;
  std::string lower = set.prefix;
  bool inclusive = true;
  while (true) {
    REELFS_ASSIGN_OR_RETURN(auto rows,
                            store_.catalog().ListObjects(set.bucket, lower, inclusive, "", 1000));
    bool done = rows.empty();
    for (ObjectRecord& r : rows) {
      if (!r.key.starts_with(set.prefix)) {
        done = true;
        break;
      }
      lower = r.key;
      inclusive = false;
      if (DueForArchive(set, r, now)) due.push_back(std::move(r));
    }
    if (done) break;
  }
  if (due.empty()) return Status::Ok();
  report->due += due.size();

  const uint64_t block = archive_.library().BlockBytes();
  const uint64_t capacity = archive_.library().CapacityBlocks();
  for (auto& batch : MakeBatches(set, std::move(due))) {
    if (cancel_.load()) return Status::Cancelled("archive policy stopped");
    // Free space now (the admin writer may have appended since the last batch).
    std::map<std::string, uint64_t> next_block;
    REELFS_ASSIGN_OR_RETURN(auto cartridges, store_.catalog().Cartridges());
    for (const CartridgeRecord& c : cartridges) next_block[c.vsn] = c.next_block;
    REELFS_ASSIGN_OR_RETURN(std::string vsn,
                            PickCartridge(set, next_block, BatchBlocks(batch, block), capacity));
    std::vector<ArchiveCandidate> candidates;
    candidates.reserve(batch.size());
    for (ObjectRecord& rec : batch) candidates.push_back({set.bucket, std::move(rec)});
    ArchiveRunReport written;
    ++report->batches;
    Status st = archive_.WriteBatch(vsn, candidates, /*release=*/false, &cancel_, &written);
    report->archived += written.archived;
    report->bytes += written.bytes;
    report->skipped += written.skipped;
    report->errors += written.errors.size();
    for (const std::string& e : written.errors) {
      REELFS_LOG_WARN("gateway", "archive policy: set '{}': {}", set.name, e);
    }
    REELFS_RETURN_IF_ERROR(st);
    REELFS_LOG_INFO("gateway", "archive policy: set '{}': {} objects ({} bytes) written to {}",
                    set.name, written.archived, written.bytes, vsn);
  }
  return Status::Ok();
}

Status ArchivePolicy::ReleaseDue(const ArchiveSet& set, PolicyScanReport* report) {
  if (set.release_after.count() <= 0) return Status::Ok();
  const int64_t now = now_ns_();
  Catalog::ArchiveQuery q;
  q.bucket = set.bucket;
  q.prefix = set.prefix;
  q.state = ArchiveState::kPremigrated;
  q.limit = 1000;
  while (true) {
    REELFS_ASSIGN_OR_RETURN(auto rows, store_.catalog().ListArchive(q));
    if (rows.empty()) return Status::Ok();
    for (const auto& row : rows) {
      const ArchiveRecord& a = row.archive;
      // A restored copy follows the releaser (watermarks, expiry): a client that staged it to
      // read it must not lose it to the age of its first archive write.
      if (a.restored_ns > 0 || a.staging) continue;
      if (now - a.archived_ns < set.release_after.count()) continue;
      Status st = archive_.ReleaseOne(row.bucket, row.key, a.bytes);
      if (st.ok()) {
        ++report->released;
      } else if (st.code() != StatusCode::kFailedPrecondition) {
        return st;
      }
    }
    q.after_bucket = rows.back().bucket;
    q.after_key = rows.back().key;
  }
}

Json ArchivePolicy::MetricsDocument() const {
  Json sets = Json::array();
  for (const ArchiveSet& s : options_.sets) sets.push_back(s.name);
  return Json{{"sets", std::move(sets)},
              {"scans", scans_.load()},
              {"due", due_.load()},
              {"batches", batches_.load()},
              {"archived_objects", archived_.load()},
              {"archived_bytes", bytes_.load()},
              {"skipped_changed", skipped_.load()},
              {"released_objects", released_.load()},
              {"errors", errors_.load()},
              {"last_scan_ns", last_scan_ns_.load()}};
}

}  // namespace reelfs::gateway
