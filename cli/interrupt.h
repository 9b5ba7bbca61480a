// InterruptCancel: turns SIGINT and SIGTERM into Cancel() of a CancellationToken for the length
// of a command, so `reelfs cp` can abort its multipart uploads instead of leaving them on the
// server when a user presses Ctrl-C.
//
// The handler only writes the signal number to a pipe (async-signal-safe); a thread of this
// object reads it, records the signal, restores the default action (a second Ctrl-C kills at
// once) and cancels the token. A signal whose disposition was SIG_IGN when this was built (a
// background job of a non-interactive shell gets SIGINT ignored) stays ignored. The destructor
// stops the thread and puts the old actions back.
//
// Thread-safety: build and destroy on one thread, one at a time per process; signal() may be read
// from any thread.
#pragma once

#include <signal.h>

#include <atomic>
#include <memory>
#include <thread>

#include "common/cancel.h"
#include "common/result.h"
#include "common/unique_fd.h"

namespace reelfs::cli {

class InterruptCancel {
 public:
  static Result<std::unique_ptr<InterruptCancel>> Install(std::shared_ptr<CancellationToken> token);
  ~InterruptCancel();
  InterruptCancel(const InterruptCancel&) = delete;
  InterruptCancel& operator=(const InterruptCancel&) = delete;

  // The signal that cancelled the token, 0 if none did.
  int signal() const { return signal_.load(); }

 private:
  InterruptCancel(std::shared_ptr<CancellationToken> token, UniqueFd read_end, UniqueFd write_end);
  void Watch();

  const std::shared_ptr<CancellationToken> token_;
  UniqueFd read_end_;
  UniqueFd write_end_;
  std::atomic<int> signal_{0};
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
  bool installed_int_ = false;
  bool installed_term_ = false;
  std::thread watcher_;  // last: started once everything above exists
};

}  // namespace reelfs::cli
