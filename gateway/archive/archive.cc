#include "gateway/archive/archive.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include <sys/stat.h>

#include "common/json.h"
#include "common/log.h"
#include "common/mutex.h"
#include "gateway/archive/personality.h"
#include "gateway/archive/policy.h"
#include "gateway/store/catalog.h"
#include "gateway/store/key_validation.h"

namespace reelfs::gateway {
namespace {

std::string Id(const std::string& bucket, const std::string& key) { return bucket + "/" + key; }

constexpr const char* kRequestsFifo = "/recall-requests";

// Wakes the owner's request loop: one byte into the FIFO, never blocking. No owner running (no
// reader: ENXIO; never started: ENOENT) or a full pipe (it is awake already) is fine: the request
// is in the catalog, and the owner scans it at start and every second.
void WakeOwner(const std::string& fifo) {
  UniqueFd fd(::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) return;
  const char byte = 1;
  [[maybe_unused]] ssize_t n = ::write(fd.get(), &byte, 1);
}

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
                                                 ArchiveOptions options, bool serve,
                                                 ArchiveRole role) {
  REELFS_ASSIGN_OR_RETURN(TapeImages images, TapeImages::Open(store.fs().internal_path() + "/tapes",
                                                              library.BlockBytes()));
  std::unique_ptr<Archive> archive(
      new Archive(store, library, std::move(options), std::move(images), role));
  archive->gate_->archive = archive.get();
  REELFS_ASSIGN_OR_RETURN(auto cartridges, store.catalog().Cartridges());
  for (const CartridgeRecord& c : cartridges) {
    REELFS_RETURN_IF_ERROR(library.AddCartridge(c.vsn));
  }
  if (serve && role == ArchiveRole::kOwner) REELFS_RETURN_IF_ERROR(archive->Start());
  return archive;
}

Status Archive::Start() {
  if (!options_.policy.sets.empty()) {
    policy_ = std::make_unique<ArchivePolicy>(*this, store_, options_.policy, NowNs);
    policy_->Start();
  }
  const int copiers = std::max(1, options_.copy_threads);
  for (int i = 0; i < copiers; ++i) threads_.emplace_back([this] { CopyLoop(); });
  threads_.emplace_back([this] { ReleaserLoop(); });
  // Recalls a previous process left running (it stopped or crashed first) and requests front
  // ends recorded while no owner ran: submit them before serving.
  REELFS_RETURN_IF_ERROR(SubmitRequested(/*at_start=*/true).status());
  const std::string fifo = store_.fs().internal_path() + kRequestsFifo;
  if (::mkfifo(fifo.c_str(), 0600) != 0 && errno != EEXIST) {
    return ErrnoToStatus(errno, "create " + fifo);
  }
  requests_fifo_ = UniqueFd(::open(fifo.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC));
  if (requests_fifo_.get() < 0) return ErrnoToStatus(errno, "open " + fifo);
  threads_.emplace_back([this] { RequestLoop(); });
  return Status::Ok();
}

Result<uint64_t> Archive::SubmitRequested(bool at_start) {
  uint64_t submitted = 0;
  Catalog::ArchiveQuery q;
  q.staging_only = true;
  while (true) {
    REELFS_ASSIGN_OR_RETURN(auto rows, store_.catalog().ListArchive(q));
    if (rows.empty()) break;
    for (const auto& row : rows) {
      const std::string id = Id(row.bucket, row.key);
      std::optional<ArchiveRecord> now;
      {
        MutexLock lock(mu_);
        if (stop_ || inflight_.count(id)) continue;
        // Read again under mu_: a recall of this process that completed between the listing and
        // here has cleared staging (Complete writes the row before CopyLoop drops the id).
        REELFS_ASSIGN_OR_RETURN(now, store_.catalog().GetArchive(row.bucket, row.key));
        if (!now.has_value() || !now->staging || now->state != ArchiveState::kOffline) continue;
        inflight_.insert(id);
      }
      if (at_start) {
        REELFS_LOG_INFO("gateway", "archive: resuming the recall of {}", id);
      } else {
        REELFS_LOG_DEBUG("gateway", "archive: recall of {} requested through a front end", id);
      }
      Submit(row.bucket, row.key, *now);
      ++submitted;
    }
    q.after_bucket = rows.back().bucket;
    q.after_key = rows.back().key;
  }
  return submitted;
}

void Archive::RequestLoop() {
  while (true) {
    pollfd p{requests_fifo_.get(), POLLIN, 0};
    // The catalog is scanned at least every second even unwoken: a front end that found the FIFO
    // full, or wrote while this process was starting, is never forgotten.
    ::poll(&p, 1, 1000);
    char drain[256];
    while (::read(requests_fifo_.get(), drain, sizeof drain) > 0) {
    }
    {
      MutexLock lock(mu_);
      if (stop_) return;
    }
    auto n = SubmitRequested(/*at_start=*/false);
    if (!n.ok()) REELFS_LOG_ERROR("gateway", "archive: recall requests: {}", n.status().ToString());
  }
}

Archive::~Archive() {
  // The policy engine first: it calls into the archive (WriteBatch) until its thread is joined.
  policy_.reset();
  {
    MutexLock lock(gate_->mu);
    gate_->archive = nullptr;
  }
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (requests_fifo_.get() >= 0) {
    const char byte = 0;  // wakes RequestLoop's poll
    [[maybe_unused]] ssize_t n = ::write(requests_fifo_.get(), &byte, 1);
  }
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
  std::vector<ArchiveCandidate> todo;
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
  for (const std::string& vsn : vsns) REELFS_RETURN_IF_ERROR(library_.AddCartridge(vsn));
  // Cartridge of each object: contiguous key ranges of about total/N bytes, or round-robin. Each
  // cartridge's objects are then one batch (one mount), in key order.
  const uint64_t per_cartridge = vsns.empty() ? total : (total + vsns.size() - 1) / vsns.size();
  std::vector<std::vector<ArchiveCandidate>> batches(vsns.size());
  size_t current = 0;
  uint64_t current_bytes = 0;
  for (size_t i = 0; i < todo.size(); ++i) {
    size_t which;
    if (run.striped) {
      which = i % vsns.size();
    } else {
      if (current_bytes >= per_cartridge && current + 1 < vsns.size()) {
        ++current;
        current_bytes = 0;
      }
      which = current;
      current_bytes += todo[i].rec.size;
    }
    batches[which].push_back({todo[i].bucket, std::move(todo[i].rec)});
  }
  for (size_t i = 0; i < vsns.size(); ++i) {
    if (batches[i].empty()) continue;
    REELFS_RETURN_IF_ERROR(WriteBatchLocked(vsns[i], batches[i], run.release, nullptr, &report));
  }
  REELFS_LOG_INFO("gateway",
                  "archive: {} objects ({} bytes) written, {} skipped, {} released, {} "
                  "errors",
                  report.archived, report.bytes, report.skipped, report.released,
                  report.errors.size());
  return report;
}

Status Archive::WriteBatch(const std::string& vsn, const std::vector<ArchiveCandidate>& batch,
                           bool release, const std::atomic<bool>* cancel,
                           ArchiveRunReport* report) {
  MutexLock run_lock(run_mu_);
  REELFS_RETURN_IF_ERROR(library_.AddCartridge(vsn));
  return WriteBatchLocked(vsn, batch, release, cancel, report);
}

Status Archive::WriteBatchLocked(const std::string& vsn, const std::vector<ArchiveCandidate>& batch,
                                 bool release, const std::atomic<bool>* cancel,
                                 ArchiveRunReport* report) {
  uint64_t next = 0;
  REELFS_ASSIGN_OR_RETURN(auto known, store_.catalog().Cartridges());
  for (const auto& c : known) {
    if (c.vsn == vsn) next = c.next_block;
  }
  const uint64_t capacity = library_.CapacityBlocks();
  const uint64_t first_block = next;
  struct Copied {
    const ArchiveCandidate* from;
    ObjectRecord now;  // what was copied (the record when the file was opened)
    ArchiveRecord archive;
  };
  std::vector<Copied> copied;
  auto fail = [&](const ArchiveCandidate& c, const Status& st) {
    report->errors.push_back(Id(c.bucket, c.rec.key) + ": " + std::string(st.message()));
  };
  for (const ArchiveCandidate& c : batch) {
    auto opened = store_.Open(c.bucket, c.rec.key);
    if (!opened.ok()) {
      if (opened.status().code() == StatusCode::kNotFound) {
        ++report->skipped;  // deleted since the scan
      } else {
        fail(c, opened.status());
      }
      continue;
    }
    const ObjectRecord& now = opened->record;
    if (now.archive.has_value() || now.etag != c.rec.etag || now.size != c.rec.size) {
      ++report->skipped;  // changed since the scan; the next run takes it
      continue;
    }
    const uint64_t blocks = images_.BlocksFor(now.size);
    if (next + blocks > capacity) {
      fail(c, Status::ResourceExhausted("cartridge " + vsn + " is full"));
      continue;
    }
    const uint64_t start = next;
    // The blocks are spent before anything is written: a crash never hands them out twice.
    next = start + blocks;
    if (Status st = store_.catalog().PutCartridge({vsn, next}); !st.ok()) {
      fail(c, st);
      continue;
    }
    // Copied from the descriptor opened above: a PUT that renames new content over the key
    // meanwhile leaves these bytes those of `now`, and MarkArchived below refuses the row.
    auto md5 = images_.Write(vsn, start, opened->fd.get(), now.size);
    if (!md5.ok()) {
      fail(c, md5.status());
      continue;
    }
    // A file rewritten in place (by hand, behind the catalog) would not match its single-part ETag.
    if (now.etag.find('-') == std::string::npos && *md5 != now.etag) {
      ++report->skipped;
      continue;
    }
    ArchiveRecord a;
    a.state = ArchiveState::kPremigrated;
    a.cartridge = vsn;
    a.start_block = start;
    a.bytes = now.size;
    a.content_md5 = *md5;
    a.size = now.size;
    a.etag = now.etag;
    a.mtime_ns = now.mtime_ns;
    a.content_type = now.content_type;
    a.storage_class = now.storage_class;
    a.user_meta = EncodeUserMetadata(now.user_meta);
    copied.push_back({&c, now, std::move(a)});
  }
  if (copied.empty()) return Status::Ok();

  // The drive writes what was appended (whole blocks) in one pass.
  const tape::Extent extent{vsn, first_block, (next - first_block) * library_.BlockBytes()};
  auto written =
      WriteOnTape(extent, vsn + ": " + std::to_string(copied.size()) + " objects", cancel);
  if (!written.ok() || written->outcome != tape::RecallOutcome::kOk) {
    const std::string why = !written.ok()
                                ? std::string(written.status().message())
                                : "cartridge " + vsn + ": write failed" +
                                      (written->detail.empty() ? "" : ": " + written->detail);
    for (const Copied& c : copied) fail(*c.from, Status::Unavailable(why));
    if (!written.ok()) return written.status();
    return Status::Ok();
  }
  for (Copied& c : copied) {
    c.archive.archived_ns = NowNs();
    if (Status st = store_.MarkArchived(c.from->bucket, c.now, c.archive); !st.ok()) {
      if (st.code() == StatusCode::kFailedPrecondition || st.code() == StatusCode::kNotFound) {
        ++report->skipped;  // replaced or deleted during the write: its tape copy is garbage
      } else {
        fail(*c.from, st);
      }
      continue;
    }
    ++report->archived;
    report->bytes += c.now.size;
    ++report->per_cartridge[vsn];
    archived_objects_.fetch_add(1);
    archived_bytes_.fetch_add(c.now.size);
    if (release) {
      if (Status st = ReleaseOne(c.from->bucket, c.now.key, c.now.size); !st.ok()) {
        fail(*c.from, st);
      } else {
        ++report->released;
      }
    }
  }
  return Status::Ok();
}

Result<tape::RecallCompletion> Archive::WriteOnTape(const tape::Extent& extent,
                                                    const std::string& label,
                                                    const std::atomic<bool>* cancel) {
  // Shared with the callback, which may run after this returns (cancelled).
  struct Wait {
    Mutex mu;
    CondVar cv;
    std::optional<tape::RecallCompletion> done GUARDED_BY(mu);
  };
  auto wait = std::make_shared<Wait>();
  tape_writes_.fetch_add(1);
  library_.SubmitWrite(tape::RecallRequest{label, extent}, [wait](const tape::RecallCompletion& c) {
    {
      MutexLock lock(wait->mu);
      wait->done = c;
    }
    wait->cv.notify_all();
  });
  library_.RunUntilIdle();  // kDiscrete (the archive command): runs the write now
  MutexLock lock(wait->mu);
  while (!wait->done.has_value()) {
    if (cancel != nullptr && cancel->load()) {
      return Status::Cancelled("shutting down before the tape write of " + extent.cartridge +
                               " completed");
    }
    wait->cv.wait_for(lock, std::chrono::milliseconds(50));
  }
  if (wait->done->outcome == tape::RecallOutcome::kOk) {
    tape_written_bytes_.fetch_add(extent.bytes);
  } else {
    tape_writes_failed_.fetch_add(1);
  }
  return *wait->done;
}

Status Archive::ReleaseOne(const std::string& bucket, const std::string& key, uint64_t bytes) {
  REELFS_RETURN_IF_ERROR(store_.Release(bucket, key));
  released_objects_.fetch_add(1);
  released_bytes_.fetch_add(bytes);
  return Status::Ok();
}

// ---- recall ----

Result<RestoreStart> Archive::Restore(const std::string& bucket, const std::string& key,
                                      std::optional<int> days) {
  if (role_ == ArchiveRole::kFrontEnd) return RequestRestore(bucket, key, days);
  MutexLock lock(mu_);
  if (inflight_.count(Id(bucket, key))) {
    recalls_joined_.fetch_add(1);
    return RestoreStart::kJoined;
  }
  REELFS_ASSIGN_OR_RETURN(std::optional<ArchiveRecord> a, store_.catalog().GetArchive(bucket, key));
  if (!a.has_value()) return RestoreStart::kNotArchived;
  ArchiveRecord marked;
  bool on_disk = false;
  bool requested = false;  // staging already: a front end's request the loop has not taken yet
  REELFS_RETURN_IF_ERROR(store_.UpdateArchive(bucket, key, [&](ArchiveRecord& r) -> Status {
    if (r.state != ArchiveState::kOffline) {
      on_disk = true;
      return Status::Ok();
    }
    if (r.staging) {
      requested = true;
      return Status::Ok();
    }
    r.staging = true;
    r.stage_fail = false;
    r.restore_requested_ns = NowNs();
    r.restore_days = days.value_or(-1);
    marked = r;
    return Status::Ok();
  }));
  if (on_disk) return RestoreStart::kOnDisk;
  if (requested) {
    recalls_joined_.fetch_add(1);
    lock.unlock();
    WakeOwner(store_.fs().internal_path() + kRequestsFifo);
    return RestoreStart::kJoined;
  }
  // Registered before the lock is dropped: a concurrent request joins this recall.
  inflight_.insert(Id(bucket, key));
  lock.unlock();
  Submit(bucket, key, marked);
  return RestoreStart::kStarted;
}

Result<RestoreStart> Archive::RequestRestore(const std::string& bucket, const std::string& key,
                                             std::optional<int> days) {
  RestoreStart result = RestoreStart::kNotArchived;
  Status st = store_.UpdateArchive(bucket, key, [&](ArchiveRecord& r) -> Status {
    if (r.state != ArchiveState::kOffline) {
      result = RestoreStart::kOnDisk;
    } else if (r.staging) {
      result = RestoreStart::kJoined;
    } else {
      // Under the key's lock, which every process of the root shares: of four front ends asked
      // at once, exactly one finds staging unset.
      r.staging = true;
      r.stage_fail = false;
      r.restore_requested_ns = NowNs();
      r.restore_days = days.value_or(-1);
      result = RestoreStart::kStarted;
    }
    return Status::Ok();
  });
  if (st.code() == StatusCode::kNotFound) return RestoreStart::kNotArchived;
  REELFS_RETURN_IF_ERROR(st);
  if (result == RestoreStart::kStarted) recalls_requested_.fetch_add(1);
  if (result == RestoreStart::kJoined) recalls_joined_.fetch_add(1);
  if (result == RestoreStart::kStarted || result == RestoreStart::kJoined) {
    WakeOwner(store_.fs().internal_path() + kRequestsFifo);
  }
  return result;
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
  const int64_t now = NowNs();
  Status st = store_.CompleteRecall(job.bucket, job.key, from, *tmp, [&](ArchiveRecord& r) {
    r.staging = false;
    r.stage_fail = false;
    r.restored_ns = now;
    // The Days of the request that started the recall, recorded in the row by whichever process
    // took it (a later request joined it and its Days are not applied, as before).
    r.expiry_ns = r.restore_days >= 0 ? RestoreExpiryNs(now, r.restore_days) : 0;
    r.restore_days = -1;
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
              {"recalls_requested_for_owner", recalls_requested_.load()},
              {"role", role_ == ArchiveRole::kOwner ? "owner" : "front-end"},
              {"recalls_ok", recalls_ok_.load()},
              {"recalls_failed", recalls_failed_.load()},
              {"recalled_bytes", recalled_bytes_.load()},
              {"released_objects", released_objects_.load()},
              {"released_bytes", released_bytes_.load()},
              {"library_faults_injected", faults_injected_.load()},
              {"tape_writes", tape_writes_.load()},
              {"tape_writes_failed", tape_writes_failed_.load()},
              {"tape_written_bytes", tape_written_bytes_.load()},
              {"policy", policy_ ? policy_->MetricsDocument() : Json(nullptr)},
              {"recalls_in_flight", staging},
              {"restored_bytes_on_disk", restored.ok() ? *restored : 0},
              {"personality", PersonalityName(options_.personality)}};
}

}  // namespace reelfs::gateway
