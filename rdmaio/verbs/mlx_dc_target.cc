#include "rdmaio/verbs/mlx_dc_target.h"

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "rdmaio/verbs/registrar.h"
#include "rdmaio/verbs/verbs_status.h"

// REELFS_HAVE_MLX5DV: rdmaio/CMakeLists.txt defines it where mlx5dv.h and libmlx5 were found.
#if defined(REELFS_HAVE_MLX5DV)
#include <infiniband/mlx5dv.h>
#endif

namespace reelfs::rdmaio::verbs {

using channel::DcAddress;
using channel::DcTarget;
using channel::WindowAddress;

namespace {

using SrqHandle = CHandle<ibv_srq, ibv_destroy_srq>;

}  // namespace

// What every target of one provider shares. Members in acquisition order: destroyed SRQ, CQ,
// registrar, PD (a DCT holds the SRQ and CQ, so targets keep this alive: shared_ptr).
struct DcShared {
  std::shared_ptr<ProtectionDomain> pd;
  VerbsRegistrar registrar;
  DevicePort where;
  DcOptions options;
  ibv_mtu mtu = IBV_MTU_1024;
  int gid_index = 0;
  DcAddress address;  // dctn filled per target
  CqHandle cq;
  SrqHandle srq;

  DcShared(std::shared_ptr<ProtectionDomain> p, DevicePort w, DcOptions o)
      : pd(p), registrar(std::move(p)), where(std::move(w)), options(o) {}
};

bool BuiltWithDc() {
#if defined(REELFS_HAVE_MLX5DV)
  return true;
#else
  return false;
#endif
}

#if defined(REELFS_HAVE_MLX5DV)
namespace {

// Same rule as RcQueuePair (and rdma_cm for an IPv4 peer): an IPv4-mapped RoCEv2 GID first,
// then any RoCEv2 one, then index 0 (InfiniBand, or RoCEv1 only).
int PickGidIndex(ibv_context* context, uint8_t port, int table_length) {
  static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  int roce_v2 = -1;
  for (int i = 0; i < table_length; ++i) {
    ibv_gid_entry entry{};
    if (ibv_query_gid_ex(context, port, static_cast<uint32_t>(i), &entry, 0) != 0) continue;
    if (entry.gid_type != IBV_GID_TYPE_ROCE_V2) continue;
    if (std::memcmp(entry.gid.raw, kMapped, sizeof(kMapped)) == 0) return i;
    if (roce_v2 < 0) roce_v2 = i;
  }
  return roce_v2 >= 0 ? roce_v2 : 0;
}

constexpr uint8_t kMinRnrTimer = 12;  // only SEND would need a receive; writes never wait
constexpr uint8_t kHopLimit = 64;

Status CannotDoDc(const DevicePort& where, std::string_view why) {
  return Status::FailedPrecondition(fmt::format("{} cannot do DC: {}", where.device, why));
}

// A DCT in RTR: INIT -> RTR only (a target never sends, so never RTS).
Result<QpHandle> CreateDct(const DcShared& s) {
  ibv_qp_init_attr_ex init{};
  init.qp_type = IBV_QPT_DRIVER;
  init.send_cq = s.cq.get();
  init.recv_cq = s.cq.get();
  init.srq = s.srq.get();
  init.comp_mask = IBV_QP_INIT_ATTR_PD;
  init.pd = s.pd->pd();
  mlx5dv_qp_init_attr dv{};
  dv.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_DC;
  dv.dc_init_attr.dc_type = MLX5DV_DCTYPE_DCT;
  dv.dc_init_attr.dct_access_key = s.options.dc_key;
  QpHandle qp(mlx5dv_create_qp(s.pd->context(), &init, &dv));
  if (!qp) {
    const int err = errno;
    return CannotDoDc(s.where, VerbsErrno(err, "mlx5dv_create_qp(DCT)").message());
  }
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.pkey_index = 0;
  attr.port_num = s.where.port;
  attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  if (int err = ibv_modify_qp(qp.get(), &attr,
                              IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
      err != 0) {
    return CannotDoDc(s.where, VerbsErrno(err, "ibv_modify_qp(DCT INIT)").message());
  }
  ibv_qp_attr rtr{};
  rtr.qp_state = IBV_QPS_RTR;
  rtr.path_mtu = s.mtu;  // DC does not negotiate the MTU: it must match the server's
  rtr.min_rnr_timer = kMinRnrTimer;
  rtr.ah_attr.is_global = 1;
  rtr.ah_attr.grh.sgid_index = static_cast<uint8_t>(s.gid_index);
  rtr.ah_attr.grh.hop_limit = kHopLimit;
  rtr.ah_attr.port_num = s.where.port;
  if (int err = ibv_modify_qp(qp.get(), &rtr,
                              IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER | IBV_QP_AV | IBV_QP_PATH_MTU);
      err != 0) {
    return CannotDoDc(s.where, VerbsErrno(err, "ibv_modify_qp(DCT RTR)").message());
  }
  return qp;
}

class MlxDcTarget final : public DcTarget {
 public:
  MlxDcTarget(std::shared_ptr<DcShared> shared, QpHandle dct)
      : shared_(std::move(shared)), dct_(std::move(dct)) {
    address_ = shared_->address;
    address_.dctn = dct_->qp_num;
  }

  const DcAddress& address() const override { return address_; }

  Status Fence() override {
    // The new DCT first: while the old one exists its number cannot be handed out again, so the
    // new DCTN differs and no stale token names it.
    Result<QpHandle> fresh = CreateDct(*shared_);
    dct_.reset();  // the fence proper: writes for the old DCTN fail from here on
    if (!fresh.ok()) return fresh.status().WithContext("DC fence: recreating the target");
    dct_ = std::move(fresh).value();
    address_.dctn = dct_->qp_num;
    return Status::Ok();
  }

 private:
  std::shared_ptr<DcShared> shared_;  // outlives the DCT (its CQ, SRQ, PD)
  QpHandle dct_;
  DcAddress address_;
};

}  // namespace

Result<std::shared_ptr<MlxDcTargetProvider>> MlxDcTargetProvider::Create(
    std::shared_ptr<ProtectionDomain> pd, const DevicePort& where, DcOptions options) {
  ibv_context* context = pd->context();
  if (!mlx5dv_is_supported(context->device)) {
    return CannotDoDc(where, "not an mlx5 (ConnectX) device; DC needs ConnectX-5 or newer");
  }
  auto shared = std::make_shared<DcShared>(std::move(pd), where, options);
  ibv_port_attr port{};
  if (int err = ibv_query_port(context, where.port, &port); err != 0) {
    return VerbsErrno(err, fmt::format("ibv_query_port({}, {})", where.device, where.port));
  }
  shared->mtu = port.active_mtu;
  shared->gid_index = options.gid_index >= 0 ? options.gid_index
                                             : PickGidIndex(context, where.port, port.gid_tbl_len);
  ibv_gid gid{};
  if (int err = ibv_query_gid(context, where.port, shared->gid_index, &gid); err != 0) {
    return VerbsErrno(err, fmt::format("ibv_query_gid({}, {})", where.port, shared->gid_index));
  }
  shared->address.lid = port.lid;
  // RoCE routes by GID (the token's gid_present = 1); InfiniBand by LID.
  shared->address.gid_present = port.link_layer == IBV_LINK_LAYER_ETHERNET;
  std::memcpy(shared->address.gid.data(), gid.raw, sizeof(gid.raw));
  shared->cq.reset(
      ibv_create_cq(context, static_cast<int>(options.cq_entries), nullptr, nullptr, 0));
  if (!shared->cq) return VerbsErrno(errno, "ibv_create_cq(DC)");
  ibv_srq_init_attr srq{};
  srq.attr.max_wr = options.srq_entries;
  srq.attr.max_sge = 1;
  shared->srq.reset(ibv_create_srq(shared->pd->pd(), &srq));
  if (!shared->srq) return CannotDoDc(where, VerbsErrno(errno, "ibv_create_srq").message());
  // The probe: a device that says mlx5 but cannot make a DCT (ConnectX-4, firmware, a VF
  // without DC) fails here, at mount, with the errno, not on the first read.
  REELFS_ASSIGN_OR_RETURN(QpHandle probe, CreateDct(*shared));
  probe.reset();
  return std::shared_ptr<MlxDcTargetProvider>(new MlxDcTargetProvider(std::move(shared)));
}

Result<std::unique_ptr<DcTarget>> MlxDcTargetProvider::CreateTarget() {
  REELFS_ASSIGN_OR_RETURN(QpHandle dct, CreateDct(*shared_));
  return std::unique_ptr<DcTarget>(new MlxDcTarget(shared_, std::move(dct)));
}

#else  // !REELFS_HAVE_MLX5DV

Result<std::shared_ptr<MlxDcTargetProvider>> MlxDcTargetProvider::Create(
    std::shared_ptr<ProtectionDomain>, const DevicePort& where, DcOptions) {
  return Status::Unimplemented(fmt::format(
      "{} cannot do DC: reelfs was built without mlx5dv (rdma-core's libmlx5 / mlx5dv.h)",
      where.device));
}

Result<std::unique_ptr<DcTarget>> MlxDcTargetProvider::CreateTarget() {
  return Status::Unimplemented("DC target: reelfs was built without mlx5dv");
}

#endif  // REELFS_HAVE_MLX5DV

MlxDcTargetProvider::MlxDcTargetProvider(std::shared_ptr<DcShared> shared)
    : shared_(std::move(shared)) {}

MlxDcTargetProvider::~MlxDcTargetProvider() = default;

MemoryRegistrar& MlxDcTargetProvider::registrar() { return shared_->registrar; }

Result<WindowAddress> MlxDcTargetProvider::Locate(const RegisteredWindow& window) const {
  const auto* region = dynamic_cast<const VerbsRegion*>(window.region.get());
  if (region == nullptr || region->pd() != shared_->pd->pd()) {
    return Status::InvalidArgument("window's region was not registered on the DC target's PD");
  }
  if (window.length == 0 || window.offset > region->length() ||
      window.length > region->length() - window.offset) {
    return Status::InvalidArgument(fmt::format("window [{}, +{}) outside its {}-byte region",
                                               window.offset, window.length, region->length()));
  }
  return WindowAddress{.addr = region->remote_addr() + window.offset, .rkey = region->rkey()};
}

}  // namespace reelfs::rdmaio::verbs
