// Opening `--rdma` for a command: the mount's data path (reads, upload parts) and `reelfs cp
// --rdma` uploads, which send their parts exactly as the mount does (a pool of buffers registered
// with the channel and the channel's PartSender, fuse/core/part_sender.h). Both fall back to HTTP
// with one warning when no RDMA port is usable, as reads do (docs/protocols/rdma-put.md).
//
// Built in reelfs_cli_mount, which knows whether rdma-core was built in (REELFS_HAVE_RDMA).
//
// Thread-safety: call from one thread (setup); what they return is thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "cli/rdma_config.h"
#include "cli/rdma_data_path.h"
#include "cli/s3_clients.h"
#include "cli/uploader.h"
#include "common/result.h"

namespace reelfs::cli {

// Whether this binary was built with rdma-core (cli/CMakeLists.txt).
bool BuiltWithRdma();

// Registration pins pages: every registered buffer counts against RLIMIT_MEMLOCK unless the
// process may exceed it (root, CAP_IPC_LOCK). A buffer past the limit stays unregistered and its
// bytes go over HTTP, which works but is not what --rdma asked for: one warning, up front.
void WarnIfMemlockLow(uint64_t max_memory);

// The data path over `s3` (data GETs share its client; control POSTs its endpoint and
// credentials). Empty when rdma-core is not built in or no port is usable: a warning under
// `subject` then says so, ending "; " + `fallback` (e.g. "reading over HTTP").
RdmaDataPath OpenRdmaOrWarn(const RdmaConfig& config, const S3Clients& s3, std::string_view subject,
                            std::string_view fallback);

// The channel's memory registrar, sharing ownership of the channel (an aliasing pointer: the
// registrar lives as long as its channel); null when `rdma` has no channel.
std::shared_ptr<rdmaio::MemoryRegistrar> ChannelRegistrar(const RdmaDataPath& rdma);

// `reelfs cp --rdma`: the data path, a registered pool of `max_memory` and the channel's sender,
// the data path owned by the result. kFailedPrecondition when built without rdma-core; with no
// usable port, the warning above and an empty transport (every part over HTTP).
Result<UploadTransport> OpenRdmaUploads(const RdmaConfig& config, const S3Clients& s3,
                                        uint64_t max_memory);

}  // namespace reelfs::cli
