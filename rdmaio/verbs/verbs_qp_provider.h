// VerbsQpProvider: the real RcQpProvider (rdmaio/channel/rc_session_qp.h): RcQueuePairs and
// VerbsRegions on one protection domain and port, so RcChannel runs over rdma-core.
//
// Thread-safety: as RcQpProvider: any thread.
#pragma once

#include <cstdint>
#include <memory>

#include "common/result.h"
#include "rdmaio/channel/rc_session_qp.h"
#include "rdmaio/data_channel.h"
#include "rdmaio/verbs/device.h"
#include "rdmaio/verbs/queue.h"
#include "rdmaio/verbs/registrar.h"

namespace reelfs::rdmaio::verbs {

class VerbsQpProvider final : public channel::RcQpProvider {
 public:
  VerbsQpProvider(std::shared_ptr<ProtectionDomain> pd, uint8_t port, RcOptions options = {})
      : pd_(pd), port_(port), options_(options), registrar_(std::move(pd)) {}

  Result<std::unique_ptr<channel::RcSessionQp>> CreateQp() override;
  Result<channel::WindowAddress> Locate(const RegisteredWindow& window) const override;
  MemoryRegistrar& registrar() override { return registrar_; }
  VerbsRegistrar& verbs_registrar() { return registrar_; }

 private:
  std::shared_ptr<ProtectionDomain> pd_;
  uint8_t port_;
  RcOptions options_;
  VerbsRegistrar registrar_;
};

}  // namespace reelfs::rdmaio::verbs
