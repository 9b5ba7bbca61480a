#!/bin/sh
# Every rdma check, run inside one Soft-RoCE VM boot by rxe_vm.sh (ctest -L rdma: test rdma_vm).
# In here a skip (77) is a failure: the VM exists to provide the device.
echo "in_vm: kernel $(uname -r), booted in $(cut -d' ' -f1 /proc/uptime) s"
rdma link show
ibv_devinfo -d "$REELFS_RDMA_DEVICE" | grep -E 'hca_id|state|link_layer'
fail=0
step() {
  name=$1
  shift
  start=$(cut -d' ' -f1 /proc/uptime)
  "$@"
  rc=$?
  echo "in_vm: $name exit $rc ($(awk -v s="$start" '{printf "%.1f", $1 - s}' /proc/uptime) s)"
  [ "$rc" -eq 0 ] || fail=1
}
step verbs_test "$REELFS_VERBS_TEST"
step rdma_smoke "$REELFS_RDMA_SMOKE" --ip "$REELFS_RDMA_IP" --device "$REELFS_RDMA_DEVICE"
# S3 over RDMA end to end (gateway + RcChannel); skipped when its binaries are not given.
if [ -n "${REELFS_IN_VM_GATEWAY:-}" ] && [ -x "${REELFS_GATEWAY:-}" ] &&
  [ -x "${REELFS_RDMA_GET:-}" ]; then
  step s3_over_rdma sh "$REELFS_IN_VM_GATEWAY"
else
  echo "in_vm: s3_over_rdma not run (REELFS_GATEWAY / REELFS_RDMA_GET not built)"
  fail=1
fi
# The gateway's side of RDMA PUT under injected faults and session expiry (in_vm_put_gateway.sh).
if [ -n "${REELFS_IN_VM_PUT_GATEWAY:-}" ] && [ -x "${REELFS_GATEWAY:-}" ] &&
  [ -x "${REELFS_RDMA_GET:-}" ]; then
  step put_faults sh "$REELFS_IN_VM_PUT_GATEWAY"
else
  echo "in_vm: put_faults not run (REELFS_GATEWAY / REELFS_RDMA_GET not built)"
  fail=1
fi
# reelfs mount --rdma through FUSE against the same gateway (in_vm_mount.sh).
if [ -n "${REELFS_IN_VM_MOUNT:-}" ] && [ -x "${REELFS_GATEWAY:-}" ] && [ -x "${REELFS_CLI:-}" ]; then
  step mount_over_rdma sh "$REELFS_IN_VM_MOUNT"
else
  echo "in_vm: mount_over_rdma not run (REELFS_GATEWAY / REELFS_CLI not built)"
  fail=1
fi
grep -E 'HugePages_(Total|Free)' /proc/meminfo
exit "$fail"
