#!/usr/bin/env bash
# CPU cost per GiB of one sequential read, per process: reelfs-gateway, the client (curl, or the
# reelfs daemon), and the reader (dd through the mount). Throughput on a machine whose CPUs are
# shared by the gateway and the client is bounded by CPUs / (CPU seconds per byte), so the ratio
# of these costs bounds "reelfs / raw HTTP" whatever the load (bench/RESULTS.md).
#
#   BUILD_DIR=build SIZE_MIB=1024 ROUNDS=3 bench/fuse/cpu_per_byte.sh
#
# Also the client's minor page faults and context switches per GiB: on a paravirtualised guest a
# page fault or a munmap's TLB shootdown costs microseconds, and the daemon's slow rounds were
# those that faulted (bench/RESULTS.md "the bimodal read path").
# HOG=1 runs a one-CPU busy loop (nice 0) beside every round, as a GPU host's feeding threads would.
#
# Needs: reelfs-gateway and reelfs in BUILD_DIR, curl, dd, fusermount3, python3 (the presigned
# URL: bench/fuse/bench.py urls).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/fuse/lib.sh
. "$here/lib.sh"
BUILD_DIR=${BUILD_DIR:-build}
SIZE_MIB=${SIZE_MIB:-1024}
ROUNDS=${ROUNDS:-3}
HOG=${HOG:-0}
REELFS_OPTS=${REELFS_OPTS:-}
bench_require_single "$BUILD_DIR" curl dd fusermount3 python3
bench_single_file cpu-per-byte "$SIZE_MIB" || exit 1
url=$(python3 "$here/bench.py" urls "$endpoint" bench large.bin)
gw_real=$gw_pid
hz=$(getconf CLK_TCK)
# response body bytes the gateway has sent: per byte read, above 1.00 means data fetched twice
sent_bytes() { curl -sS "$endpoint/metrics" | awk '/^reelfs_gateway_http_sent_bytes_total/ { n += $2 } END { printf "%.0f", n }'; }
# run LABEL CMD...: prints "LABEL MiB/s wall_s gateway_cpu_s client_cpu_s reader_cpu_s
# client_minflt client_ctxsw" (per GiB) and the gateway's body bytes sent per byte read
# $client_pid (a daemon) is sampled around the command; the command's own CPU is the reader's.
measure() {
  local label=$1; shift
  local g0 c0=0 g1 c1=0 t0 t1 out f0=0 f1=0 x0=0 x1=0 s0 s1
  s0=$(sent_bytes)
  g0=$(bench_ticks "$gw_real")
  if [ -n "${client_pid:-}" ]; then c0=$(bench_ticks "$client_pid"); f0=$(bench_minflt "$client_pid"); x0=$(bench_ctxsw "$client_pid"); fi
  t0=$(date +%s.%N)
  out=$( { TIMEFORMAT='%U %S'; time "$@" >/dev/null 2>&1; } 2>&1 | tail -1)
  t1=$(date +%s.%N)
  g1=$(bench_ticks "$gw_real")
  s1=$(sent_bytes)
  if [ -n "${client_pid:-}" ]; then c1=$(bench_ticks "$client_pid"); f1=$(bench_minflt "$client_pid"); x1=$(bench_ctxsw "$client_pid"); fi
  awk -v l="$label" -v t0="$t0" -v t1="$t1" -v g=$((g1 - g0)) -v c=$((c1 - c0)) -v hz="$hz" \
    -v r="$out" -v mib="$SIZE_MIB" -v f=$((f1 - f0)) -v x=$((x1 - x0)) -v sent=$((s1 - s0)) 'BEGIN { split(r, a, " ");
      gib = mib / 1024; printf "%-16s %7.0f %6.2f %6.3f %6.3f %6.3f %8.0f %8.0f %5.2f\n", l, mib / (t1 - t0),
      t1 - t0, g / hz / gib, c / hz / gib, (a[1] + a[2]) / gib, f / gib, x / gib,
      sent / (mib * 1048576) }'
}
hog_pid=""
if [ "$HOG" = 1 ]; then
  ( while :; do :; done ) &
  hog_pid=$!
  trap 'kill "$hog_pid" 2>/dev/null; bench_cleanup_single' EXIT
fi
echo "# path MiB/s wall_s gateway_cpu_s client_cpu_s reader_cpu_s client_minflt client_ctxsw (per GiB) gateway_sent/bytes_read${hog_pid:+; one-CPU hog running}"
for _ in $(seq "$ROUNDS"); do
  client_pid=""
  measure curl curl -sS -f -o /dev/null "$url"
  # shellcheck disable=SC2086
  "$reelfs" mount bench "$work/mnt" --endpoint "$endpoint" --log-file "$work/reelfs.log" $REELFS_OPTS >"$work/mount.log" 2>&1
  client_pid=$(pgrep -n -f "reelfs mount bench $work/mnt")
  [ "${DROP_CACHES:-1}" = 1 ] && { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true; }
  measure reelfs-buffered dd if="$work/mnt/large.bin" of=/dev/null bs=1M
  fusermount3 -u "$work/mnt"; sleep 0.5
  # shellcheck disable=SC2086
  "$reelfs" mount bench "$work/mnt" --endpoint "$endpoint" --log-file "$work/reelfs.log" $REELFS_OPTS >"$work/mount.log" 2>&1
  client_pid=$(pgrep -n -f "reelfs mount bench $work/mnt")
  measure reelfs-odirect dd if="$work/mnt/large.bin" of=/dev/null bs=1M iflag=direct
  fusermount3 -u "$work/mnt"; sleep 0.5
done
