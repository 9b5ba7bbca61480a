// PendingRequests: the requests the kernel still waits for, by fuse_req_t, so that any of them
// can be answered EINTR whatever the FileSystem is still doing with it: when the kernel sends
// FUSE INTERRUPT (the caller got a signal: Ctrl-C on an `ls` stuck on a listing that never ends),
// and when the mount is torn down (SIGTERM: a request left unanswered would hold the unmount).
//
// The FileSystem's work goes on in the background (it is bounded: listings stop at a page limit,
// GETs time out) and its late answer is dropped, because a Reply sends at most one answer
// (reply.h). A request's cancellation token, where it has one (READ), is cancelled first, so a
// read waiting for a tape restore stops waiting.
//
// libfuse calls the interrupt function with its session lock held when the INTERRUPT came
// before the request was registered (fuse_req_interrupt_func), and a reply takes that lock: so
// Interrupt() only queues, and a thread of this class answers.
//
// Thread-safety: all methods may be called from any thread. Entries hold only weak references;
// the Reply removes its entry when it answers (Reply::Take), before its fuse_req_t is freed.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "common/cancel.h"
#include "common/status.h"
#include "fuse/lowlevel/fuse_api_internal.h"

namespace reelfs::fuse {

class Reply;

class PendingRequests {
 public:
  PendingRequests();
  ~PendingRequests();
  PendingRequests(const PendingRequests&) = delete;
  PendingRequests& operator=(const PendingRequests&) = delete;

  // Registers `req` (answered by `reply`); `cancel` (may be null) is cancelled on interrupt.
  void Add(fuse_req_t req, std::weak_ptr<Reply> reply,
           std::shared_ptr<CancellationToken> cancel = nullptr);
  // Sets the cancellation token of a registered request.
  void SetCancel(fuse_req_t req, std::shared_ptr<CancellationToken> cancel);
  // Forgets `req`: it is being answered. Called by Reply before the answer frees it.
  void Remove(fuse_req_t req);
  // The kernel interrupted `req` (libfuse's interrupt function): it is answered EINTR soon, on
  // this object's thread. Unknown (already answered) requests are ignored.
  void Interrupt(fuse_req_t req);
  // Answers every registered request with `why` (a kCancelled status: EINTR), cancelling its
  // token first; returns how many were answered. For teardown, after the session loop ended.
  size_t AnswerAll(const Status& why);
  size_t size() const;

 private:
  struct Entry {
    std::weak_ptr<Reply> reply;
    std::shared_ptr<CancellationToken> cancel;
  };
  // Cancels the token and answers the reply with `why` unless it already was. No lock held.
  static void Answer(const Entry& entry, const Status& why);
  void RunAnswerer();

  mutable std::mutex mu_;  // leaf: never held while answering or cancelling
  std::condition_variable wake_;
  std::unordered_map<fuse_req_t, Entry> pending_;  // guarded by mu_
  std::deque<Entry> interrupted_;                  // guarded by mu_
  bool stop_ = false;                              // guarded by mu_
  std::thread answerer_;                           // last: started once the rest exists
};

}  // namespace reelfs::fuse
