#!/bin/sh
# S3 over RDMA end to end, inside the Soft-RoCE VM (run by in_vm.sh in the same boot):
# reelfs-gateway --rdma on rxe0 (HTTP on 127.0.0.1 only), and reelfs-rdma-get reading objects
# through the hipobj-rc-v2 channel, every byte checked against the source file.
#
#   1. a plain RDMA gateway: a 5 MiB + 123 B object in 1 MiB windows, 2 sessions, 2 rounds (the
#      sessions are reused), and a 3000-byte object: every byte over RDMA;
#   2. declines and failures, each fall back to HTTP with correct data: vgwrdma's 500, NooBaa's
#      and AIStor's 501, the draft spec's 501 with the object in the body, Ceph RGW ignoring the
#      token, a QP put in error before the write, an answer held past the client's
#      timeout; a gateway without hipobj-rc-v2 (501) and one without --rdma: HTTP only;
#   3. uploads (docs/protocols/rdma-put.md): a 5 MiB + 123 B file PUT over RDMA twice (PREPARE +
#      READY, then, after a session GET, a session PUT) and as a 3-part multipart upload over
#      RDMA, each read back over plain HTTP and compared on disk in the gateway's root; against a
#      gateway without hipobj-rc-v2 and one without --rdma the PUT goes over HTTP, and the object
#      is the file, never 0 bytes; a QP put in error before the server's READ: fenced, then HTTP.
# Exit 0 when every case holds.
set -u
me=in_vm_gateway
# shellcheck source=vm_gateway_lib.sh
. "$(dirname "$0")/vm_gateway_lib.sh"
vm_setup rdma-gw
head -c $((5 * 1024 * 1024 + 123)) /dev/urandom >"$root/bkt/big"
head -c 3000 /dev/urandom >"$root/bkt/small"
head -c $((2 * 1024 * 1024)) /dev/urandom >"$root/bkt/two"
# Upload sources live outside the gateway's root.
head -c $((5 * 1024 * 1024 + 123)) /dev/urandom >"$work/up"
# Parts of ~1.7 MiB: below S3's 5 MiB minimum, which this gateway is told to allow.
printf 'min_part_size: 1MiB\n' >"$work/gateway.yaml"

# check NAME EXPECT KEY [rdma-get args...]
check() {
  name=$1 expect=$2 key=$3
  shift 3
  "$get" --endpoint "$endpoint" --bucket bkt --key "$key" --source "$root/bkt/$key" \
    --device "$dev" --expect "$expect" "$@"
  rc=$?
  echo "in_vm_gateway: $name: exit $rc (uptime $(cut -d" " -f1 /proc/uptime) s)"
  [ "$rc" -eq 0 ] || fail=1
}

if start_gateway --rdma "$dev" --config "$work/gateway.yaml"; then
  check rdma-big rdma big --window 1048576 --parallel 2 --rounds 2
  check rdma-small rdma small --window 65536 --parallel 1
  put_object rdma-put rdma put-obj --rounds 2 --parallel 1
  put_object rdma-put-parts rdma put-parts --put-parts 3 --parallel 2
fi
if start_gateway --rdma "$dev" --rdma-emulate vgwrdma; then
  check vgwrdma-500 fallback big --window 1048576 --parallel 1
fi
for server in noobaa aistor draft-spec; do
  if start_gateway --rdma "$dev" --rdma-emulate "$server"; then
    check "$server" fallback two --window 1048576 --parallel 1
  fi
done
if start_gateway --rdma "$dev" --rdma-emulate ceph-rgw; then
  check ceph-ignores-token fallback big --window 1048576 --parallel 1
fi
if start_gateway --rdma "$dev" --rdma-fault qp-error; then
  check qp-error fallback big --window 1048576 --parallel 1
  put_object qp-error-put fallback put-qp-error
fi
if start_gateway --rdma "$dev" --rdma-fault timeout --rdma-fault-delay 20s; then
  # The READY of a GET is not held, the session GET of the second window is, and a session GET
  # goes through the S3 client (S3ControlPlane::Get), so that client's limit ends it here. The
  # limit also bounds each fallback GET of a 1 MiB window: 6 s is several times what one costs in
  # this emulated VM (issue 21), and two held attempts (12 s) still end inside the 20 s hold.
  check timeout fallback two --window 1048576 --parallel 1 --timeout-ms 2000 \
    --http-timeout-ms 6000
fi
if start_gateway --rdma "$dev" --rdma-emulate hipobj-unsupported; then
  check hipobj-unsupported http big --window 1048576 --parallel 2
  put_object hipobj-unsupported-put http put-declined
fi
if start_gateway; then
  check no-rdma-gateway http small --window 65536 --parallel 1
  put_object no-rdma-gateway-put http put-plain
fi
stop_gateway
if [ "$fail" -ne 0 ]; then
  echo "in_vm_gateway: gateway log:"
  tail -40 "$work/gateway.log"
fi
rm -rf "$work"
exit "$fail"
