#!/bin/sh
# The gateway side of RDMA PUT (docs/protocols/rdma-put.md "Gateway") inside the Soft-RoCE VM:
# what in_vm_gateway.sh does not cover, each case checked on the stored file and the gateway log.
#
#   1. --rdma-fault qp-error: the RDMA READ fails (500, nothing stored), the client falls back to
#      HTTP, and the object is the file;
#   2. --rdma-fault timeout: the READ is held past the client's timeout; the client fences its QP
#      and PUTs over HTTP; the late READ then fails on the fenced QP and does not touch the object;
#   3. --rdma-session-idle 1s: a PUT over RDMA, then the idle session is dropped by the reaper
#      (its info line in the gateway log).
# Run it alone: tests/rdma/rxe_vm.sh tests/rdma/in_vm_put_gateway.sh with REELFS_GATEWAY and
# REELFS_RDMA_GET set (the binaries of a build) and REELFS_VM_GATEWAY_LIB the absolute path of
# tests/rdma/vm_gateway_lib.sh. Exit 0 when every case holds.
set -u
me=in_vm_put_gateway
# rxe_vm.sh runs a copy of SCRIPT: run alone, REELFS_VM_GATEWAY_LIB names the library.
# shellcheck source=vm_gateway_lib.sh
. "${REELFS_VM_GATEWAY_LIB:-$(dirname "$0")/vm_gateway_lib.sh}"
vm_setup rdma-put-gw
head -c $((3 * 1024 * 1024 + 77)) /dev/urandom >"$work/up"

# logged NAME PATTERN: the gateway log since the last start_gateway holds PATTERN.
logged() {
  if grep -q "$2" "$work/gateway.log"; then
    echo "in_vm_put_gateway: $1: log has '$2'"
  else
    echo "in_vm_put_gateway: $1: log lacks '$2'"
    fail=1
  fi
}

: >"$work/gateway.log"
if start_gateway --rdma "$dev" --rdma-fault qp-error; then
  put_object qp-error fallback put-qp-error --parallel 1
  logged qp-error "RDMA READ failed"
fi
stop_gateway
: >"$work/gateway.log"
if start_gateway --rdma "$dev" --rdma-fault timeout --rdma-fault-delay 5s; then
  put_object timeout fallback put-timeout --parallel 1 --timeout-ms 2000
  # The held READ runs after the client fenced its QP (and exited): it must fail, on an error
  # completion or on the gateway's 10 s completion timeout; wait for it, at most 30 s.
  i=0
  while ! grep -q "RDMA READ failed" "$work/gateway.log" && [ $i -lt 300 ]; do
    sleep 0.1
    i=$((i + 1))
  done
  if cmp -s "$work/up" "$root/bkt/put-timeout"; then
    echo "in_vm_put_gateway: timeout: object unchanged after the late READ"
  else
    echo "in_vm_put_gateway: timeout: object changed by the late READ"
    fail=1
  fi
  logged timeout "RDMA READ failed"
fi
stop_gateway
: >"$work/gateway.log"
# The reaper logs at info.
gw_log_level=info
if start_gateway --rdma "$dev" --rdma-session-idle 1s; then
  put_object idle rdma put-idle --parallel 1
  sleep 2
  logged idle "dropped 1 RDMA session(s) idle"
fi
gw_log_level=warn
stop_gateway
if [ "$fail" -ne 0 ]; then
  echo "in_vm_put_gateway: gateway log:"
  tail -40 "$work/gateway.log"
fi
rm -rf "$work"
exit "$fail"
