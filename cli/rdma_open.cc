#include "cli/rdma_open.h"

#include <unistd.h>

#include <memory>
#include <string>
#include <utility>

#include <sys/resource.h>

#include "common/log.h"
#include "common/units.h"
#include "fuse/core/buffer_pool.h"
#include "fuse/core/part_sender.h"

namespace reelfs::cli {

bool BuiltWithRdma() {
#if REELFS_HAVE_RDMA
  return true;
#else
  return false;
#endif
}

void WarnIfMemlockLow(uint64_t max_memory) {
  rlimit limit{};
  if (getrlimit(RLIMIT_MEMLOCK, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return;
  if (geteuid() == 0 || limit.rlim_cur >= max_memory) return;
  REELFS_LOG_WARN("rdma",
                  "--rdma: RLIMIT_MEMLOCK is {} but --max-memory is {}: buffers past the limit "
                  "cannot be registered and their bytes go over HTTP (raise it with ulimit -l)",
                  FormatByteSize(limit.rlim_cur), FormatByteSize(max_memory));
}

RdmaDataPath OpenRdmaOrWarn(const RdmaConfig& config, const S3Clients& s3, std::string_view subject,
                            std::string_view fallback) {
#if REELFS_HAVE_RDMA
  auto path = OpenRdmaDataPath(config, s3.store, s3.client->options());
  if (path.ok()) return std::move(path).value();
  REELFS_LOG_WARN(subject, "--rdma: {}; {}", path.status().ToString(), fallback);
#else
  REELFS_LOG_WARN(subject, "--rdma: built without rdma-core; {}", fallback);
  (void)config;
  (void)s3;
#endif
  return {};
}

std::shared_ptr<rdmaio::MemoryRegistrar> ChannelRegistrar(const RdmaDataPath& rdma) {
  if (rdma.channel == nullptr) return nullptr;
  return std::shared_ptr<rdmaio::MemoryRegistrar>(rdma.channel, &rdma.channel->registrar());
}

Result<UploadTransport> OpenRdmaUploads(const RdmaConfig& config, const S3Clients& s3,
                                        uint64_t max_memory) {
  if (!BuiltWithRdma()) {
    return Status::FailedPrecondition(
        "--rdma: reelfs was built without rdma-core (libibverbs-dev, librdmacm-dev)");
  }
  auto path = std::make_shared<RdmaDataPath>(
      OpenRdmaOrWarn(config, s3, "cp", "uploading every part over HTTP"));
  if (path->channel == nullptr) return UploadTransport{};
  WarnIfMemlockLow(max_memory);
  UploadTransport transport;
  transport.pool = fuse::CreateRegisteredBufferPool(ChannelRegistrar(*path), max_memory);
  transport.sender = fuse::CreateChannelPartSender(path->channel, s3.store);
  transport.owner = std::move(path);
  return transport;
}

}  // namespace reelfs::cli
