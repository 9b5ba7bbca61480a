#include "rdmaio/channel/channel_base.h"

#include <fmt/format.h>

namespace reelfs::rdmaio::channel {

Status CheckWindow(const RegisteredWindow& window, uint64_t limit, std::string_view who) {
  if (!window.region || window.length == 0) {
    return Status::InvalidArgument(fmt::format("{}: empty window", who));
  }
  if (window.length > limit) {
    return Status::InvalidArgument(
        fmt::format("{}: {} bytes is over the {}-byte limit", who, window.length, limit));
  }
  return Status::Ok();
}

std::string DescribeFetch(const FetchRequest& request) {
  return fmt::format("GET {}/{} [{}, +{})", request.bucket, request.key, request.object_offset,
                     request.window.length);
}

}  // namespace reelfs::rdmaio::channel
