#include "s3/list_pages.h"

#include <future>
#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "common/log.h"
#include "s3/protocol/list_paging.h"

namespace reelfs::s3 {
namespace {

struct PagingState {
  std::shared_ptr<ObjectStore> store;
  ListObjectsRequest request;
  ListPagesCallbacks callbacks;
  ListPaging paging;
};

// `prefix` with control bytes escaped, for the log line.
std::string Printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

void Finish(const std::shared_ptr<PagingState>& state, Status status) {
  auto done = std::move(state->callbacks.done);
  done(std::move(status));
}

void RequestNextPage(std::shared_ptr<PagingState> state) {
  if (state->callbacks.on_request) state->callbacks.on_request();
  // Copy the request: the callback below may run before ListObjects returns and mutate state.
  ListObjectsRequest request = state->request;
  state->store->ListObjects(request, [state](Result<ListObjectsPage> page) {
    if (!page.ok()) return Finish(state, page.status());
    Result<std::optional<std::string>> next = state->paging.Next(*page);
    if (!next.ok()) {
      // Callers report the listing's failure under their own subject; this line names the
      // listing and what the server did wrong (kDataLoss: the mount answers EIO).
      REELFS_LOG_WARN("s3", "listing s3://{}/{} stopped: {}", state->request.bucket,
                      Printable(state->request.prefix), next.status().message());
      return Finish(state, next.status().WithContext("ListObjectsV2 " + state->request.bucket +
                                                     "/" + state->request.prefix));
    }
    const bool last = !next->has_value();
    if (!last) state->request.continuation_token = **next;
    if (!state->callbacks.on_page(std::move(page).value(), last) || last) {
      return Finish(state, Status::Ok());
    }
    RequestNextPage(state);
  });
}

}  // namespace

void ListPages(std::shared_ptr<ObjectStore> store, ListObjectsRequest request,
               ListPagesCallbacks callbacks) {
  auto state = std::make_shared<PagingState>();
  state->store = std::move(store);
  state->request = std::move(request);
  state->callbacks = std::move(callbacks);
  RequestNextPage(std::move(state));
}

Status ListPagesBlocking(ObjectStore& store, ListObjectsRequest request,
                         std::function<bool(ListObjectsPage page, bool last)> on_page) {
  auto promise = std::make_shared<std::promise<Status>>();
  auto future = promise->get_future();
  // Not owned: this call outlives the listing (it returns once `done` ran).
  std::shared_ptr<ObjectStore> unowned(&store, [](ObjectStore*) {});
  ListPages(std::move(unowned), std::move(request),
            {.on_page = std::move(on_page),
             .done = [promise](Status s) { promise->set_value(std::move(s)); }});
  return future.get();
}

}  // namespace reelfs::s3
