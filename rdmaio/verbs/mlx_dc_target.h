// MlxDcTargetProvider: the real DcTargetProvider (rdmaio/channel/dc_target.h, which explains DC
// targets and their fence): DCTs on rdma-core with mlx5dv (ConnectX-5 or newer).
//
// Thread-safety: as DcTargetProvider: any thread.
#pragma once

#include <cstdint>
#include <memory>

#include "common/result.h"
#include "rdmaio/channel/dc_target.h"
#include "rdmaio/data_channel.h"
#include "rdmaio/verbs/device.h"

namespace reelfs::rdmaio::verbs {

struct DcOptions {
  // The shared secret of DC: the server's initiators must use the same one. Default 0xffeeddcc,
  // every cuObject server's default (vgwrdma --rdma-dc-key, NooBaa, Ceph).
  uint64_t dc_key = 0xffeeddcc;
  // GID index; -1 (default): the first RoCEv2 GID that is IPv4-mapped, else the first RoCEv2
  // one, else 0 (the rule rdma_cm and RcQueuePair use).
  int gid_index = -1;
  // Receive work requests of the shared receive queue a DCT needs (writes consume none; only
  // SEND / WRITE_WITH_IMM would). Default 64.
  uint32_t srq_entries = 64;
  uint32_t cq_entries = 64;
};

// The real provider: DCTs on `pd`'s device and `port`. Every window registered on `pd` (by any
// VerbsRegistrar on it, RC's included) can be named in a DC token. Create probes the device:
//   kUnimplemented       reelfs was built without mlx5dv;
//   kFailedPrecondition  the device is not an mlx5 one ("rxe0 cannot do DC: not an mlx5
//                        (ConnectX) device; DC needs ConnectX-5 or newer"), or creating a probe
//                        DCT failed (the message carries the errno).
struct DcShared;  // mlx_dc_target.cc: the PD, CQ and SRQ every target of a provider shares
class MlxDcTargetProvider final : public channel::DcTargetProvider {
 public:
  static Result<std::shared_ptr<MlxDcTargetProvider>> Create(std::shared_ptr<ProtectionDomain> pd,
                                                             const DevicePort& where,
                                                             DcOptions options = {});
  ~MlxDcTargetProvider() override;

  Result<std::unique_ptr<channel::DcTarget>> CreateTarget() override;
  Result<channel::WindowAddress> Locate(const RegisteredWindow& window) const override;
  MemoryRegistrar& registrar() override;

 private:
  explicit MlxDcTargetProvider(std::shared_ptr<DcShared> shared);
  std::shared_ptr<DcShared> shared_;  // PD, CQ, SRQ: kept alive by every target too
};

// Whether reelfs was built with mlx5dv (REELFS_HAVE_MLX5DV).
bool BuiltWithDc();

}  // namespace reelfs::rdmaio::verbs
