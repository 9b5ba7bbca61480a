// S3Clients: what a composition root gets when it builds the S3 client. Both views of one
// client: the concrete S3Client for what only it knows (the endpoint it really sends to, the
// options an RDMA control plane reuses, its counters) and the ObjectStore the layers above read
// through. Handing out both is what spares the caller a dynamic_cast back from the interface.
//
// Thread-safety: a plain pair of shared pointers; the objects are thread-safe (s3_client.h).
#pragma once

#include <memory>
#include <utility>

#include "s3/client/s3_client.h"
#include "s3/object_store.h"

namespace reelfs::cli {

struct S3Clients {
  std::shared_ptr<s3::S3Client> client;
  // What the mount and the RDMA data GETs go through: `client` itself, or a decorator over it.
  std::shared_ptr<s3::ObjectStore> store;

  static S3Clients Of(std::unique_ptr<s3::S3Client> created) {
    std::shared_ptr<s3::S3Client> shared = std::move(created);
    return S3Clients{.client = shared, .store = shared};
  }
};

}  // namespace reelfs::cli
