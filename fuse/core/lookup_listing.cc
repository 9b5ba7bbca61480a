#include "fuse/core/lookup_listing.h"

#include <algorithm>
#include <utility>

namespace reelfs::fuse {
namespace {

// S3's page size, as ListDirectory asks for: the budget is counted in these pages.
constexpr int kListPageKeys = 1000;

struct BoundedListState {
  std::shared_ptr<s3::ObjectStore> store;
  s3::ListObjectsRequest request;
  std::shared_ptr<WarnOnce> warn;
  uint32_t max_pages = 1;
  std::function<void()> on_request;
  std::function<void(uint32_t)> on_more;
  Callback<std::shared_ptr<const DirListing>> done;
  std::vector<s3::ListObjectsPage> pages;
};

void RequestNextBoundedPage(std::shared_ptr<BoundedListState> state) {
  if (state->on_request) state->on_request();
  // Copy the request: the callback below may run before ListObjects returns and mutate state.
  s3::ListObjectsRequest request = state->request;
  state->store->ListObjects(request, [state](Result<s3::ListObjectsPage> page) {
    if (!page.ok()) {
      auto done = std::move(state->done);
      done(page.status());
      return;
    }
    bool more = page->is_truncated && !page->next_continuation_token.empty();
    state->request.continuation_token = page->next_continuation_token;
    state->pages.push_back(std::move(page).value());
    if (!more) {
      auto listing = std::make_shared<const DirListing>(
          BuildDirListing(state->request.prefix, state->pages, *state->warn));
      state->pages.clear();
      auto done = std::move(state->done);
      done(std::shared_ptr<const DirListing>(std::move(listing)));
      return;
    }
    const auto fetched = static_cast<uint32_t>(state->pages.size());
    if (fetched >= state->max_pages) {
      state->pages.clear();
      auto done = std::move(state->done);
      done(std::shared_ptr<const DirListing>());
      return;
    }
    // Before the next request: the waiters it releases go to HEAD+LIST now, not a page later.
    if (state->on_more) state->on_more(fetched);
    RequestNextBoundedPage(state);
  });
}

}  // namespace

void ListDirectoryBounded(std::shared_ptr<s3::ObjectStore> store, std::string bucket,
                          std::string prefix, std::shared_ptr<WarnOnce> warn, uint32_t max_pages,
                          std::function<void()> on_request,
                          std::function<void(uint32_t pages)> on_more,
                          Callback<std::shared_ptr<const DirListing>> done) {
  auto state = std::make_shared<BoundedListState>();
  state->store = std::move(store);
  state->request.bucket = std::move(bucket);
  state->request.prefix = std::move(prefix);
  state->request.delimiter = "/";
  state->request.max_keys = kListPageKeys;
  state->warn = std::move(warn);
  state->max_pages = std::max<uint32_t>(max_pages, 1);
  state->on_request = std::move(on_request);
  state->on_more = std::move(on_more);
  state->done = std::move(done);
  RequestNextBoundedPage(std::move(state));
}

bool LookupListings::TryStart(InodeId dir, Clock::TimePoint now) {
  if (flights_.contains(dir)) return false;
  if (auto it = held_off_.find(dir); it != held_off_.end()) {
    if (now < it->second) return false;
    held_off_.erase(it);
  }
  flights_.emplace(dir, std::vector<ListingWaiter>{});
  return true;
}

void LookupListings::Wait(InodeId dir, ListingWaiter waiter) {
  flights_[dir].push_back(std::move(waiter));
}

std::vector<ListingWaiter> LookupListings::TakeImpatient(InodeId dir, uint32_t pages) {
  std::vector<ListingWaiter> out;
  auto it = flights_.find(dir);
  if (it == flights_.end()) return out;
  auto& waiters = it->second;
  auto keep =
      std::stable_partition(waiters.begin(), waiters.end(),
                            [pages](const ListingWaiter& w) { return w.max_pages > pages; });
  out.assign(std::make_move_iterator(keep), std::make_move_iterator(waiters.end()));
  waiters.erase(keep, waiters.end());
  return out;
}

std::vector<ListingWaiter> LookupListings::Finish(InodeId dir) {
  std::vector<ListingWaiter> out;
  if (auto node = flights_.extract(dir); !node.empty()) out = std::move(node.mapped());
  return out;
}

void LookupListings::HoldOff(InodeId dir, Clock::TimePoint now, Clock::Duration duration) {
  if (duration <= Clock::Duration::zero()) return;
  if (held_off_.size() >= kMaxHeldOff && !held_off_.contains(dir)) {
    std::erase_if(held_off_, [now](const auto& kv) { return kv.second <= now; });
    // Still full of live entries: forget one. The cost is one more bounded listing of it.
    if (held_off_.size() >= kMaxHeldOff) held_off_.erase(held_off_.begin());
  }
  held_off_[dir] = now + duration;
}

}  // namespace reelfs::fuse
