// Status conversions for rdma-core results (docs/conventions.md "Errors": each foreign code is
// converted in the module that owns it).
//
// rdma-core reports failures three ways: constructors return NULL and set errno (ibv_alloc_pd,
// ibv_reg_mr, rdma_create_id), most calls return -1 and set errno (rdma_*), and some return the
// errno value itself (ibv_modify_qp, ibv_post_send, ibv_query_port). Callers capture the number
// right after the call and pass it here.
//
// Thread-safety: pure functions.
#pragma once

#include <string_view>

#include <infiniband/verbs.h>

#include "common/status.h"

namespace reelfs::rdmaio::verbs {

// ErrnoToStatus with "call: strerror" text; `what` names the call and its object, e.g.
// "ibv_reg_mr(4 MiB at 0x7f..)". kResourceExhausted for ENOMEM (memlock limit, NIC tables).
Status VerbsErrno(int err, std::string_view what);

// A failed work completion: kUnavailable for transport faults (retry exceeded, flushed: the
// connection is gone, a new one may work), kPermissionDenied for remote access errors (wrong or
// revoked rkey, out-of-bounds address), kInternal for local protection or length errors (our bug).
// The message names ibv_wc_status_str, the wr_id and the vendor error.
Status WcToStatus(const ibv_wc& wc, std::string_view what);

}  // namespace reelfs::rdmaio::verbs
