#include "rdmaio/channel/transport_router.h"

#include <utility>

#include "common/log.h"

namespace reelfs::rdmaio::channel {

TransportRouter::TransportRouter(std::shared_ptr<DataChannel> first,
                                 std::shared_ptr<DataChannel> second,
                                 std::function<bool()> use_second, std::string description)
    : first_(std::move(first)),
      second_(std::move(second)),
      use_second_(std::move(use_second)),
      description_(std::move(description)) {}

void TransportRouter::Fetch(FetchRequest request, FetchCallback done) {
  if (second_ != nullptr && use_second_ && use_second_()) {
    if (!switched_.exchange(true, std::memory_order_relaxed)) {
      REELFS_LOG_INFO("rdma", "{}: later fetches go through the second transport", description_);
    }
    second_fetches_.fetch_add(1, std::memory_order_relaxed);
    second_->Fetch(std::move(request), std::move(done));
    return;
  }
  first_fetches_.fetch_add(1, std::memory_order_relaxed);
  first_->Fetch(std::move(request), std::move(done));
}

}  // namespace reelfs::rdmaio::channel
