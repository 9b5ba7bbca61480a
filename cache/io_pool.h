// IoPool: a few threads that run blocking local I/O (cache reads and writes) off the S3 client's
// event loop, in the order posted.
//
// Every posted task runs exactly once, even when the pool is being destroyed (the destructor waits
// for the queue to drain): a task carries a request's callback, which must always be called. The
// pool may be destroyed from one of its own tasks (the last owner of the cache can be a task's
// capture): that thread is then detached and finishes on its own.
//
// Thread-safety: Post may be called from any thread.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

namespace reelfs::cache {

class IoPool {
 public:
  explicit IoPool(size_t threads);
  ~IoPool();
  IoPool(const IoPool&) = delete;
  IoPool& operator=(const IoPool&) = delete;

  void Post(std::function<void()> task);

 private:
  struct Queue;
  std::shared_ptr<Queue> queue_;  // shared with the threads, which may outlive the pool
  std::vector<std::thread> threads_;
};

}  // namespace reelfs::cache
