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
gw=$REELFS_GATEWAY
get=$REELFS_RDMA_GET
dev=${REELFS_RDMA_DEVICE:-rxe0}
work=$(mktemp -d /tmp/rdma-put-gw.XXXXXX)
root=$work/root
mkdir -p "$root/bkt"
head -c $((3 * 1024 * 1024 + 77)) /dev/urandom >"$work/up"
export AWS_ACCESS_KEY_ID=rdmatestkey AWS_SECRET_ACCESS_KEY=rdmatestsecret
fail=0
# rxe_vm.sh runs a copy of SCRIPT: run alone, REELFS_VM_GATEWAY_LIB names the library.
# shellcheck source=vm_gateway_lib.sh
. "${REELFS_VM_GATEWAY_LIB:-$(dirname "$0")/vm_gateway_lib.sh}"

# put NAME EXPECT KEY [rdma-get args...]: upload $work/up as bkt/KEY, compare the stored file.
put() {
  name=$1 expect=$2 key=$3
  shift 3
  "$get" --endpoint "$endpoint" --bucket bkt --key "$key" --put "$work/up" \
    --device "$dev" --expect "$expect" "$@"
  rc=$?
  if [ "$rc" -eq 0 ] && ! cmp -s "$work/up" "$root/bkt/$key"; then
    echo "in_vm_put_gateway: $name: stored object differs ($(wc -c <"$root/bkt/$key") bytes)"
    rc=1
  fi
  echo "in_vm_put_gateway: $name: exit $rc (uptime $(cut -d" " -f1 /proc/uptime) s)"
  [ "$rc" -eq 0 ] || fail=1
}

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
  put qp-error fallback put-qp-error --parallel 1
  logged qp-error "RDMA READ failed"
fi
stop_gateway
: >"$work/gateway.log"
if start_gateway --rdma "$dev" --rdma-fault timeout --rdma-fault-delay 5s; then
  put timeout fallback put-timeout --parallel 1 --timeout-ms 2000
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
# The reaper logs at info; start_gateway fixes warn, so this one starts by hand.
rm -f "$work/port"
"$gw" --root "$root" --listen 127.0.0.1:0 --port-file "$work/port" \
  --access-key "$AWS_ACCESS_KEY_ID" --secret-key "$AWS_SECRET_ACCESS_KEY" \
  --log-level info --rdma "$dev" --rdma-session-idle 1s >>"$work/gateway.log" 2>&1 &
gw_pid=$!
i=0
while [ ! -s "$work/port" ] && [ $i -lt 600 ]; do
  sleep 0.1
  i=$((i + 1))
done
if [ -s "$work/port" ]; then
  endpoint=http://127.0.0.1:$(cat "$work/port")
  put idle rdma put-idle --parallel 1
  sleep 2
  logged idle "dropped 1 RDMA session(s) idle"
else
  echo "in_vm_put_gateway: idle: gateway did not start"
  fail=1
fi
stop_gateway
if [ "$fail" -ne 0 ]; then
  echo "in_vm_put_gateway: gateway log:"
  tail -40 "$work/gateway.log"
fi
rm -rf "$work"
exit "$fail"
