#include "fuse/lowlevel/pending_requests.h"

#include <utility>
#include <vector>

#include "common/log.h"
#include "fuse/lowlevel/reply.h"

namespace reelfs::fuse {

PendingRequests::PendingRequests() : answerer_([this] { RunAnswerer(); }) {}

PendingRequests::~PendingRequests() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  answerer_.join();
}

void PendingRequests::Add(fuse_req_t req, std::weak_ptr<Reply> reply,
                          std::shared_ptr<CancellationToken> cancel) {
  std::lock_guard<std::mutex> lock(mu_);
  pending_[req] = Entry{std::move(reply), std::move(cancel)};
}

void PendingRequests::SetCancel(fuse_req_t req, std::shared_ptr<CancellationToken> cancel) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pending_.find(req);
  if (it != pending_.end()) it->second.cancel = std::move(cancel);
}

void PendingRequests::Remove(fuse_req_t req) {
  std::lock_guard<std::mutex> lock(mu_);
  pending_.erase(req);
}

void PendingRequests::Interrupt(fuse_req_t req) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(req);
    if (it == pending_.end()) return;  // answered already
    interrupted_.push_back(it->second);
  }
  wake_.notify_one();
}

size_t PendingRequests::AnswerAll(const Status& why) {
  std::vector<Entry> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    all.reserve(pending_.size());
    for (const auto& [req, entry] : pending_) all.push_back(entry);
  }
  size_t answered = 0;
  for (const Entry& entry : all) {
    std::shared_ptr<Reply> reply = entry.reply.lock();
    if (reply == nullptr || reply->answered()) continue;
    Answer(entry, why);
    ++answered;
  }
  return answered;
}

size_t PendingRequests::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_.size();
}

void PendingRequests::Answer(const Entry& entry, const Status& why) {
  // The token first: a read waiting for a restore may answer itself (EINTR) right here.
  if (entry.cancel != nullptr) entry.cancel->Cancel();
  if (std::shared_ptr<Reply> reply = entry.reply.lock()) reply->Interrupted(why);
}

void PendingRequests::RunAnswerer() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [this] { return stop_ || !interrupted_.empty(); });
    if (interrupted_.empty()) return;  // stop_
    Entry entry = std::move(interrupted_.front());
    interrupted_.pop_front();
    lock.unlock();
    REELFS_LOG_DEBUG("fuse", "interrupt: answering EINTR");
    Answer(entry, Status::Cancelled("interrupted by the caller (FUSE INTERRUPT)"));
    entry = Entry{};  // the last reference to the Reply may go here, with no lock held
    lock.lock();
  }
}

}  // namespace reelfs::fuse
