// Owning handles for every rdma-core object reelfs creates.
//
// Each alias is a unique_ptr with a stateless deleter, so a handle is owned from the line that
// creates it and a failed setup step unwinds whatever came before it. Objects that depend on
// others (a QP on its CQ and PD, an MR on its PD, a CQ on its completion channel, a PD on its
// context) must be destroyed first: classes holding several of these declare them in acquisition
// order, so the compiler's reverse-order member destruction is the teardown order (rping.c's
// rping_free_qp / rping_free_buffers do the same by hand).
//
// The destroy calls return an errno that nobody could act on during teardown (a busy PD means a
// bug: something registered on it is still alive); CDeleter drops it.
//
// Thread-safety: as std::unique_ptr. The verbs objects themselves are thread-safe per rdma-core.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "common/c_handle.h"

namespace reelfs::rdmaio::verbs {

// ibv_get_device_list's array (the ibv_device entries are owned by libibverbs).
using DeviceListHandle = CHandle<ibv_device*, ibv_free_device_list>;
using ContextHandle = CHandle<ibv_context, ibv_close_device>;
using PdHandle = CHandle<ibv_pd, ibv_dealloc_pd>;
using CompChannelHandle = CHandle<ibv_comp_channel, ibv_destroy_comp_channel>;
using CqHandle = CHandle<ibv_cq, ibv_destroy_cq>;
using QpHandle = CHandle<ibv_qp, ibv_destroy_qp>;
using MrHandle = CHandle<ibv_mr, ibv_dereg_mr>;
using EventChannelHandle = CHandle<rdma_event_channel, rdma_destroy_event_channel>;
using CmIdHandle = CHandle<rdma_cm_id, rdma_destroy_id>;
// An RDMA CM event must be acked before the id it names can be destroyed.
using CmEventHandle = CHandle<rdma_cm_event, rdma_ack_cm_event>;
// A QP made by rdma_create_qp lives in its cm id (id->qp) and is destroyed through the id. This
// handle points at the id but owns only the QP: declare it after the CmIdHandle it refers to.
using CmQpHandle = CHandle<rdma_cm_id, rdma_destroy_qp>;

}  // namespace reelfs::rdmaio::verbs
