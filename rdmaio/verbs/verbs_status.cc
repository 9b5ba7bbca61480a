#include "rdmaio/verbs/verbs_status.h"

#include <cerrno>
#include <cstring>
#include <string>

#include <fmt/format.h>

namespace reelfs::rdmaio::verbs {

Status VerbsErrno(int err, std::string_view what) {
  if (err == ENOMEM) {
    // ibv_reg_mr reports an exhausted RLIMIT_MEMLOCK or full NIC translation tables as ENOMEM:
    // retrying the same registration will not help until something is released.
    return Status(
        StatusCode::kResourceExhausted, StatusReason::kSystemError,
        fmt::format("{}: {} (check ulimit -l / the NIC's MR limits)", what, std::strerror(err)),
        StatusDetail{.sys_errno = err});
  }
  return ErrnoToStatus(err, what);
}

Status WcToStatus(const ibv_wc& wc, std::string_view what) {
  std::string msg = fmt::format("{}: work completion {} (status {}, wr_id {}, vendor_err {:#x})",
                                what, ibv_wc_status_str(wc.status), static_cast<int>(wc.status),
                                wc.wr_id, wc.vendor_err);
  switch (wc.status) {
    case IBV_WC_SUCCESS:
      return Status::Ok();
    case IBV_WC_REM_ACCESS_ERR:
    case IBV_WC_REM_INV_REQ_ERR:
    case IBV_WC_REM_OP_ERR:
      return Status::PermissionDenied(std::move(msg));
    case IBV_WC_RETRY_EXC_ERR:
    case IBV_WC_RNR_RETRY_EXC_ERR:
    case IBV_WC_WR_FLUSH_ERR:
    case IBV_WC_REM_ABORT_ERR:
    case IBV_WC_RESP_TIMEOUT_ERR:
    case IBV_WC_FATAL_ERR:
      return Status::Unavailable(std::move(msg));
    default:
      return Status::Internal(std::move(msg));
  }
}

}  // namespace reelfs::rdmaio::verbs
