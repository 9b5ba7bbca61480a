// CHandle: unique_ptr over a C library handle with a stateless deleter (docs/conventions.md
// "C handles and teardown order").
//
//   using CurlEasy = CHandle<CURL, curl_easy_cleanup>;
//   CurlEasy easy(curl_easy_init());   // owned from the line it is created
//
// Thread-safety: as std::unique_ptr.
#pragma once

#include <memory>

namespace reelfs {

template <auto DestroyFn>
struct CDeleter {
  template <class T>
  void operator()(T* p) const noexcept {
    if (p != nullptr) DestroyFn(p);
  }
};

template <class T, auto DestroyFn>
using CHandle = std::unique_ptr<T, CDeleter<DestroyFn>>;

}  // namespace reelfs
