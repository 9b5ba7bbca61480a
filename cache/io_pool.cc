// IoPool (io_pool.h).

#include "cache/io_pool.h"

#include <deque>
#include <utility>

#include "common/mutex.h"
#include "common/thread_annotations.h"

namespace reelfs::cache {

struct IoPool::Queue {
  Mutex mutex;
  CondVar ready;
  std::deque<std::function<void()>> tasks GUARDED_BY(mutex);
  bool stopping GUARDED_BY(mutex) = false;
};

IoPool::IoPool(size_t threads) : queue_(std::make_shared<Queue>()) {
  for (size_t i = 0; i < threads; ++i) {
    threads_.emplace_back([queue = queue_] {
      for (;;) {
        std::function<void()> task;
        {
          MutexLock lock(queue->mutex);
          while (queue->tasks.empty() && !queue->stopping) queue->ready.wait(lock);
          if (queue->tasks.empty()) return;  // stopping and drained
          task = std::move(queue->tasks.front());
          queue->tasks.pop_front();
        }
        task();
      }
    });
  }
}

IoPool::~IoPool() {
  {
    MutexLock lock(queue_->mutex);
    queue_->stopping = true;
  }
  queue_->ready.notify_all();
  for (std::thread& t : threads_) {
    if (t.get_id() == std::this_thread::get_id()) {
      t.detach();
    } else {
      t.join();
    }
  }
}

void IoPool::Post(std::function<void()> task) {
  {
    MutexLock lock(queue_->mutex);
    queue_->tasks.push_back(std::move(task));
  }
  queue_->ready.notify_one();
}

}  // namespace reelfs::cache
