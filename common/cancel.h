// CancellationToken: a flag an owner raises to ask an in-flight operation to stop early.
//
// Thread-safety: Cancel() and cancelled() may be called from any thread.
#pragma once

#include <atomic>
#include <memory>

namespace reelfs {

class CancellationToken {
 public:
  static std::shared_ptr<CancellationToken> Create() {
    return std::make_shared<CancellationToken>();
  }
  void Cancel() { cancelled_.store(true, std::memory_order_release); }
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }

 private:
  std::atomic<bool> cancelled_{false};
};

}  // namespace reelfs
