#!/bin/sh
# put_timeout_loop.sh: a diagnosis tool, not a CTest: in ONE Soft-RoCE VM boot, measures what an
# HTTP PUT of the test's 3 MiB object costs there and whether a held RDMA READ delays it, then
# runs in_vm_put_gateway.sh's case 2 (--rdma-fault timeout) N times and counts the failures.
#
#   REELFS_GATEWAY=build/gateway/reelfs-gateway REELFS_RDMA_GET=build/tests/rdma/reelfs-rdma-get \
#   REELFS_VM_GATEWAY_LIB=$PWD/tests/rdma/vm_gateway_lib.sh REELFS_LOOP_RUNS=30 \
#   RXE_VM_TIMEOUT=1500 tests/rdma/rxe_vm.sh tests/rdma/put_timeout_loop.sh
#
# Phases (each line starts "loop:"; the logs of every run go to $REELFS_VM_SHARED/loop/, which
# rxe_vm.sh leaves in its run dir):
#   cost    sha256sum / md5sum of the object, and 3 plain curl PUTs (SigV4) of it to a gateway
#           without a fault: what the fallback costs in this VM (the gateway logs ms= for each);
#   held    an RDMA PUT whose READ the gateway holds 60 s; during the hold a curl PUT of the same
#           key and one of another key must be answered (a lock or a slot held across the
#           transfer would make them wait for the hold);
#   case2   REELFS_LOOP_RUNS (default 30) runs of case 2 as in_vm_put_gateway.sh runs it
#           (--rdma-fault-delay REELFS_LOOP_DELAY, default 12s; --timeout-ms
#           REELFS_LOOP_TIMEOUT_MS, default 10000), with the client's and the gateway's logs
#           (timestamps) kept per run; with REELFS_BEFORE_GATEWAY and REELFS_BEFORE_RDMA_GET (the
#           binaries of a build before issue 21's fix) each run is also done with those and the
#           case as it was then (5s, 2000), interleaved, and both failure counts are printed.
# Exit 0 when every case-2 run of this build passed.
set -u
me=put_timeout_loop
# shellcheck source=vm_gateway_lib.sh
. "${REELFS_VM_GATEWAY_LIB:-$(dirname "$0")/vm_gateway_lib.sh}"
vm_setup put-timeout-loop
runs=${REELFS_LOOP_RUNS:-30}
logs=${REELFS_VM_SHARED:-$work}/loop
mkdir -p "$logs"
head -c $((3 * 1024 * 1024 + 77)) /dev/urandom >"$work/up"
head -c $((3 * 1024 * 1024 + 77)) /dev/urandom >"$work/up2"
now() { date +%s.%N | cut -c1-14; }
ms_since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%d", (b - a) * 1000 }'; }
echo "loop: $(uname -r), $(nproc) vCPUs, $(grep -c . /proc/cpuinfo) cpuinfo lines," \
  "sha_ni=$(grep -c -w sha_ni /proc/cpuinfo)"

# REELFS_LOOP_CASE2_ONLY=1: straight to case2.
if [ -z "${REELFS_LOOP_CASE2_ONLY:-}" ]; then
# --- cost -------------------------------------------------------------------------------------
t=$(now); sha256sum "$work/up" >/dev/null; echo "loop: cost: sha256sum of 3 MiB: $(ms_since "$t") ms"
t=$(now); md5sum "$work/up" >/dev/null; echo "loop: cost: md5sum of 3 MiB: $(ms_since "$t") ms"
# curl_put KEY FILE: a SigV4 PUT with the payload's SHA-256 (as the reelfs client signs it); prints
# "HTTP-status seconds".
curl_put() {
  sha=$(sha256sum "$2" | cut -d' ' -f1)
  curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 60 \
    --aws-sigv4 "aws:amz:us-east-1:s3" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
    -H "x-amz-content-sha256: $sha" -H "Expect:" -T "$2" "$endpoint/bkt/$1"
}
gw_log_level=warn,gateway.http=info
: >"$work/gateway.log"
if start_gateway --rdma "$dev"; then
  for k in 1 2 3; do
    echo "loop: cost: curl PUT $k: $(curl_put plain-$k "$work/up") s"
  done
  cmp -s "$work/up" "$root/bkt/plain-3" || { echo "loop: cost: plain-3 differs"; fail=1; }
fi
stop_gateway
cp "$work/gateway.log" "$logs/cost-gateway.log"

# --- held -------------------------------------------------------------------------------------
# An RDMA PUT whose READ the gateway holds 60 s (the client waits: no timeout); once the gateway
# logs the hold, a curl PUT of the same key and one of another key must be answered before the
# hold is over (nothing waits on a held transfer: no per-key lock, no worker slot, no io thread).
gw_log_level=warn,gateway.http=info,gateway.rdma=info
held_fail=0
: >"$work/gateway.log"
if start_gateway --rdma "$dev" --rdma-fault timeout --rdma-fault-delay 60s; then
  "$get" --endpoint "$endpoint" --bucket bkt --key held --put "$work/up" --device "$dev" \
    --expect rdma --parallel 1 >"$logs/held-client.log" 2>&1 &
  client=$!
  k=0
  while ! grep -q "holding the transfer" "$work/gateway.log" && [ $k -lt 600 ]; do
    sleep 0.1
    k=$((k + 1))
  done
  same=$(curl_put held "$work/up2")
  other=$(curl_put held-other "$work/up2")
  over=$(grep -c "hold over" "$work/gateway.log")
  echo "loop: held: during the hold: curl PUT same key: $same s, other key: $other s;" \
    "hold over lines: $over"
  [ "$over" -eq 0 ] || { echo "loop: held: answered only after the hold"; held_fail=1; }
  case "$same $other" in "200 "*" 200 "*) ;; *) echo "loop: held: a PUT failed"; held_fail=1 ;; esac
  cmp -s "$work/up2" "$root/bkt/held" || { echo "loop: held: same key differs"; held_fail=1; }
  cmp -s "$work/up2" "$root/bkt/held-other" || { echo "loop: held: other key differs"; held_fail=1; }
  kill "$client" 2>/dev/null
  wait "$client" 2>/dev/null
fi
stop_gateway
cp "$work/gateway.log" "$logs/held-gateway.log"
gw_log_level=warn,gateway.http=debug,gateway.rdma=debug

fi
held_fail=${held_fail:-0}
# The access log (ms= of each PUT) and the hold's lines.
gw_log_level=warn,gateway.http=debug,gateway.rdma=debug

# --- case2 ------------------------------------------------------------------------------------
# case2 LABEL N: one run of in_vm_put_gateway.sh's case 2 with $gw and $get; counts a failure in
# failures_LABEL.
failures_before=0 failures_after=0
case2() {
  : >"$work/gateway.log"
  fail=0
  put_ms='?' late='?'
  if start_gateway --rdma "$dev" --rdma-fault timeout --rdma-fault-delay "$delay"; then
    t=$(now)
    export REELFS_LOG=warn,rdma=debug,s3=debug,curl=trace
    put_object timeout fallback put-timeout --parallel 1 --timeout-ms "$timeout_ms" \
      >"$logs/case2-$1-$2-client.log" 2>&1
    unset REELFS_LOG
    put_ms=$(ms_since "$t")
    k=0
    while ! grep -q "RDMA READ failed" "$work/gateway.log" && [ $k -lt 300 ]; do
      sleep 0.1
      k=$((k + 1))
    done
    late=$(ms_since "$t")
    cmp -s "$work/up" "$root/bkt/put-timeout" || { echo "loop: case2 $1 $2: object changed"; fail=1; }
    grep -q "RDMA READ failed" "$work/gateway.log" || { echo "loop: case2 $1 $2: no late READ failure"; fail=1; }
  fi
  stop_gateway
  cp "$work/gateway.log" "$logs/case2-$1-$2-gateway.log"
  put_line=$(grep "PutObject" "$work/gateway.log" | grep -o "status=.*" | tr '\n' ' ')
  echo "loop: case2 $1 $2: fail=$fail client $put_ms ms, late READ failed at $late ms;" \
    "gateway PUTs: ${put_line:-none}"
  if [ "$fail" -ne 0 ]; then
    eval "failures_$1=\$((failures_$1 + 1))"
    grep "rdma_put" "$logs/case2-$1-$2-client.log" | tail -3
  fi
  rm -f "$root/bkt/put-timeout"
}
after_gw=$gw after_get=$get
# This build's case 2 (in_vm_put_gateway.sh); the one before the fix ran 5s / 2000.
after_delay=${REELFS_LOOP_DELAY:-12s} after_timeout_ms=${REELFS_LOOP_TIMEOUT_MS:-10000}
n=1
while [ "$n" -le "$runs" ]; do
  # Interleaved, so both builds see the same load on the host.
  if [ -n "${REELFS_BEFORE_GATEWAY:-}" ]; then
    gw=$REELFS_BEFORE_GATEWAY get=$REELFS_BEFORE_RDMA_GET delay=5s timeout_ms=2000
    case2 before "$n"
  fi
  gw=$after_gw get=$after_get delay=$after_delay timeout_ms=$after_timeout_ms
  case2 after "$n"
  n=$((n + 1))
done
[ -n "${REELFS_BEFORE_GATEWAY:-}" ] && echo "loop: case2 before: $failures_before failures / $runs runs"
echo "loop: case2 after: $failures_after failures / $runs runs"
rm -rf "$work"
[ "$failures_after" -eq 0 ] && [ "$held_fail" -eq 0 ]
