// ListPages: the one loop that pages a ListObjectsV2 listing through its continuation tokens, used
// by every listing of the client (fuse/core's directory and subtree listings, `reelfs ls`,
// hsm::Stager's enumeration).
//
//   ListPages(store, request, {.on_page = [](ListObjectsPage page, bool last) {
//                                ...;            // one page, in order
//                                return true;    // false: stop here (done gets OK)
//                              },
//                              .done = [](Status s) { ... }});
//
// Each page's NextContinuationToken is checked by s3::ListPaging (s3/protocol/list_paging.h): a
// server that repeats or cycles its token, says IsTruncated without one, or pages for ever ends
// the listing with kDataLoss (logged once, with the listing named in the context) instead of
// looping or ending silently short. A page that fails ends it with the store's Status, unchanged.
//
// Thread-safety: ListPages may be called from any thread; `on_request`, `on_page` and `done` run
// one after the other (never concurrently) on the store's callback thread or the caller's.
// ListPagesBlocking waits on the calling thread, so never call it from a store callback
// (s3/await.h).
#pragma once

#include <functional>
#include <memory>

#include "common/status.h"
#include "s3/object_store.h"

namespace reelfs::s3 {

struct ListPagesCallbacks {
  // Runs before each ListObjects call (request counters); optional.
  std::function<void()> on_request;
  // Runs once per page, in order; `last` is true for the final page. Returns whether to go on.
  std::function<bool(ListObjectsPage page, bool last)> on_page;
  // Runs exactly once: OK after the last page or when on_page stopped, else the error.
  std::function<void(Status)> done;
};

// Lists `request` (its continuation_token, if any, is the first page's) page by page.
void ListPages(std::shared_ptr<ObjectStore> store, ListObjectsRequest request,
               ListPagesCallbacks callbacks);

// ListPages, waiting for its end: `on_page` as above; returns what `done` would receive.
Status ListPagesBlocking(ObjectStore& store, ListObjectsRequest request,
                         std::function<bool(ListObjectsPage page, bool last)> on_page);

}  // namespace reelfs::s3
