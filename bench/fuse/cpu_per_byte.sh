#!/usr/bin/env bash
# CPU cost per GiB of one sequential read, per process: reelfs-gateway, the client (curl, or the
# reelfs daemon), and the reader (dd through the mount). Throughput on a machine whose CPUs are
# shared by the gateway and the client is bounded by CPUs / (CPU seconds per byte), so the ratio
# of these costs bounds "reelfs / raw HTTP" whatever the load (bench/RESULTS.md).
#
#   BUILD_DIR=build SIZE_MIB=1024 ROUNDS=3 bench/fuse/cpu_per_byte.sh
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
bench_require_single "$BUILD_DIR" curl dd fusermount3 python3
work=$(mktemp -d /dev/shm/cpu-per-byte.XXXXXX)
gw_pid=""
trap bench_cleanup_single EXIT
bench_credentials
mkdir -p "$work/root/bench" "$work/mnt"
head -c $((SIZE_MIB * 1048576)) /dev/urandom >"$work/root/bench/large.bin"
bench_start_gateway "$gw" "$work/root" "$work" "$work/gateway.log" || exit 1
url=$(python3 "$here/bench.py" urls "$endpoint" bench large.bin)
gw_real=$gw_pid
hz=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }  # utime + stime of a live process
# run LABEL CMD...: prints "LABEL wall_s gateway_cpu_s client_cpu_s reader_cpu_s"
# $client_pid (a daemon) is sampled around the command; the command's own CPU is the reader's.
measure() {
  local label=$1; shift
  local g0 c0=0 g1 c1=0 t0 t1 out
  g0=$(ticks "$gw_real"); [ -n "${client_pid:-}" ] && c0=$(ticks "$client_pid")
  t0=$(date +%s.%N)
  out=$( { TIMEFORMAT='%U %S'; time "$@" >/dev/null 2>&1; } 2>&1 | tail -1)
  t1=$(date +%s.%N)
  g1=$(ticks "$gw_real"); [ -n "${client_pid:-}" ] && c1=$(ticks "$client_pid")
  awk -v l="$label" -v t0="$t0" -v t1="$t1" -v g=$((g1 - g0)) -v c=$((c1 - c0)) -v hz="$hz" \
    -v r="$out" -v mib="$SIZE_MIB" 'BEGIN { split(r, a, " ");
      gib = mib / 1024; printf "%s %.2f %.3f %.3f %.3f\n", l, t1 - t0, g / hz / gib, c / hz / gib,
      (a[1] + a[2]) / gib }'
}
echo "# path wall_s gateway_cpu_s_per_GiB client_cpu_s_per_GiB reader_cpu_s_per_GiB"
for r in $(seq "$ROUNDS"); do
  client_pid=""
  measure curl curl -sS -f -o /dev/null "$url"
  "$reelfs" mount bench "$work/mnt" --endpoint "$endpoint" --log-file "$work/reelfs.log" >"$work/mount.log" 2>&1
  client_pid=$(pgrep -n -f "reelfs mount bench $work/mnt")
  measure reelfs-buffered dd if="$work/mnt/large.bin" of=/dev/null bs=1M
  fusermount3 -u "$work/mnt"; sleep 0.5
  "$reelfs" mount bench "$work/mnt" --endpoint "$endpoint" --log-file "$work/reelfs.log" >"$work/mount.log" 2>&1
  client_pid=$(pgrep -n -f "reelfs mount bench $work/mnt")
  measure reelfs-odirect dd if="$work/mnt/large.bin" of=/dev/null bs=1M iflag=direct
  fusermount3 -u "$work/mnt"; sleep 0.5
done
