// RAII owners for libcurl handles: every handle is owned from the line it is made.
//
//   CurlGlobal  curl_global_init/cleanup, reference counted by libcurl (thread-safe since 7.84).
//   CurlEasy    one transfer's handle (reused for many requests: connections live in the multi).
//   CurlMulti   the multi stack one event loop drives.
//   CurlSlist   a header list; AppendHeader keeps ownership on allocation failure.
//
// Thread-safety: as std::unique_ptr; a CURL/CURLM handle is used by one thread at a time.
#pragma once

#include <string>

#include <curl/curl.h>

#include "common/c_handle.h"
#include "common/log.h"
#include "common/status.h"

namespace reelfs::s3 {

// curl_multi_cleanup can fail (CURLM_RECURSIVE_API_CALL: called from inside a callback); the
// handle then leaks, which is worth a line in the log rather than silence.
inline void CurlMultiCleanup(CURLM* multi) noexcept {
  const CURLMcode rc = curl_multi_cleanup(multi);
  if (rc == CURLM_OK) return;
  try {
    REELFS_LOG_WARN("s3", "curl_multi_cleanup failed: {}", curl_multi_strerror(rc));
  } catch (...) {  // a deleter must not throw
  }
}

using CurlEasy = CHandle<CURL, curl_easy_cleanup>;
using CurlMulti = CHandle<CURLM, CurlMultiCleanup>;
using CurlSlist = CHandle<curl_slist, curl_slist_free_all>;

class CurlGlobal {
 public:
  CurlGlobal() : code_(curl_global_init(CURL_GLOBAL_DEFAULT)) {}
  ~CurlGlobal() {
    if (code_ == CURLE_OK) curl_global_cleanup();
  }
  CurlGlobal(const CurlGlobal&) = delete;
  CurlGlobal& operator=(const CurlGlobal&) = delete;

  [[nodiscard]] Status status() const {
    if (code_ == CURLE_OK) return Status::Ok();
    return Status::Internal(std::string("curl_global_init failed: ") + curl_easy_strerror(code_));
  }

 private:
  CURLcode code_;
};

// Appends "line" to the list; on allocation failure the old list stays owned and false is returned.
[[nodiscard]] inline bool AppendHeader(CurlSlist& list, const std::string& line) {
  curl_slist* grown = curl_slist_append(list.get(), line.c_str());
  if (grown == nullptr) return false;
  (void)list.release();  // `grown` is the same list with one more node (or a new head)
  list.reset(grown);
  return true;
}

}  // namespace reelfs::s3
