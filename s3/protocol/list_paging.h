// ListPaging: follows a ListObjectsV2 listing page by page and refuses a server that would make
// it run for ever. The client's one paging loop, s3::ListPages (s3/list_pages.h), uses one for
// every listing, so a broken server fails the listing instead of looping:
//
//   ListPaging paging;
//   for (;;) {
//     page = ListObjects(req);                       // with req.continuation_token
//     REELFS_ASSIGN_OR_RETURN(auto next, paging.Next(page));
//     if (!next) break;                              // the last page
//     req.continuation_token = *next;
//   }
//
// Refused, as kDataLoss (the server broke the protocol; the mount answers EIO): a
// NextContinuationToken the server already handed out in this listing (a repeat, or a cycle),
// IsTruncated without a token (the listing would end silently short), and more than `max_pages`
// pages.
//
// Thread-safety: one listing, one thread at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_set>

#include "common/result.h"
#include "s3/types.h"

namespace reelfs::s3 {

// 100 M keys at S3's 1000 keys a page.
inline constexpr uint32_t kDefaultMaxListPages = 100'000;

class ListPaging {
 public:
  explicit ListPaging(uint32_t max_pages = kDefaultMaxListPages) : max_pages_(max_pages) {}

  // Call once per page received, in order: nullopt after the last page, else the token to send
  // for the next one; an error when the page cannot be followed.
  Result<std::optional<std::string>> Next(const ListObjectsPage& page);

  uint32_t pages() const { return pages_; }

 private:
  uint32_t max_pages_;
  uint32_t pages_ = 0;
  std::unordered_set<std::string> tokens_;  // every token handed out so far
};

}  // namespace reelfs::s3
