// Await: blocking adapters over the asynchronous ObjectStore, for CLIs, tests and tools.
//
//   Result<ObjectInfo> info = Await<ObjectInfo>([&](auto cb) { store.HeadObject(req, cb); });
//
// Never call from an ObjectStore callback (it would wait on the thread that must answer).
// Thread-safety: each call is independent.
#pragma once

#include <functional>
#include <future>

#include "s3/object_store.h"

namespace reelfs::s3 {

template <class T>
Result<T> Await(const std::function<void(Callback<T>)>& start) {
  auto promise = std::make_shared<std::promise<Result<T>>>();
  auto future = promise->get_future();
  start([promise](Result<T> r) { promise->set_value(std::move(r)); });
  return future.get();
}

inline Status AwaitStatus(const std::function<void(StatusCallback)>& start) {
  auto promise = std::make_shared<std::promise<Status>>();
  auto future = promise->get_future();
  start([promise](Status s) { promise->set_value(std::move(s)); });
  return future.get();
}

}  // namespace reelfs::s3
