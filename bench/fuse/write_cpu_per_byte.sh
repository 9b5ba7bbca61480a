#!/usr/bin/env bash
# CPU cost per GiB of writing one file, per process: reelfs-gateway, the reelfs daemon (mount
# cases) and the writer (dd into the mount, `reelfs cp`, or curl's single PUT). On a machine
# whose CPUs the gateway and the client share, throughput is bounded by CPUs / (CPU seconds per
# byte), so the ratio of these sums bounds "mount / reelfs cp" whatever the load (the write
# table in bench/RESULTS.md). The gateway's root is on tmpfs; every object is compared with its
# source by cmp.
#
#   BUILD_DIR=build SIZE_MIB=1024 ROUNDS=3 bench/fuse/write_cpu_per_byte.sh
#   MOUNT_ARGS="--write-parts-in-flight 8" bench/fuse/write_cpu_per_byte.sh
#
# Needs: reelfs-gateway and reelfs in BUILD_DIR, curl, dd, cmp, fusermount3, python3.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/fuse/lib.sh
. "$here/lib.sh"
BUILD_DIR=${BUILD_DIR:-build}
SIZE_MIB=${SIZE_MIB:-1024}
ROUNDS=${ROUNDS:-3}
MOUNT_ARGS=${MOUNT_ARGS:-}
bench_require_single "$BUILD_DIR" curl dd cmp fusermount3 python3
work=$(mktemp -d /dev/shm/write-cpu.XXXXXX)
gw_pid=""
trap bench_cleanup_single EXIT
bench_credentials
mkdir -p "$work/root/bench" "$work/mnt"
head -c $((SIZE_MIB * 1048576)) /dev/urandom >"$work/src.bin"
bench_start_gateway "$gw" "$work/root" "$work" "$work/gateway.log" || exit 1
gw_real=$gw_pid
hz=$(getconf CLK_TCK)
presign() {
  python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); from s3sign import presign
print(presign(sys.argv[2], sys.argv[3], sys.argv[4], "us-east-1", "PUT", "/bench/" + sys.argv[5]))' \
    "$here" "$endpoint" "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY" "$1"
}
# measure LABEL KEY CMD...: prints "LABEL wall_s MiB/s gateway daemon writer" (CPU s per GiB);
# $client_pid (the daemon) is sampled around the command; the command's own CPU is the writer's.
measure() {
  local label=$1 key=$2; shift 2
  local g0 c0=0 g1 c1=0 t0 t1 out
  g0=$(bench_ticks "$gw_real"); [ -n "${client_pid:-}" ] && c0=$(bench_ticks "$client_pid")
  t0=$(date +%s.%N)
  out=$( { TIMEFORMAT='%U %S'; time "$@" >/dev/null 2>&1; } 2>&1 | tail -1)
  t1=$(date +%s.%N)
  g1=$(bench_ticks "$gw_real"); [ -n "${client_pid:-}" ] && c1=$(bench_ticks "$client_pid")
  cmp -s "$work/src.bin" "$work/root/bench/$key" || { echo "MISMATCH: $key" >&2; exit 1; }
  rm -f "$work/root/bench/$key"
  awk -v l="$label" -v t0="$t0" -v t1="$t1" -v g=$((g1 - g0)) -v c=$((c1 - c0)) -v hz="$hz" \
    -v r="$out" -v mib="$SIZE_MIB" 'BEGIN { split(r, a, " "); gib = mib / 1024;
      printf "%s %.2f %.0f %.3f %.3f %.3f\n", l, t1 - t0, mib / (t1 - t0), g / hz / gib,
      c / hz / gib, (a[1] + a[2]) / gib }'
}
echo "# path wall_s MiB/s gateway_cpu_s_per_GiB daemon_cpu_s_per_GiB writer_cpu_s_per_GiB"
for r in $(seq "$ROUNDS"); do
  client_pid=""
  url=$(presign curl.bin)
  measure curl-put curl.bin curl -sS -f -o /dev/null -T "$work/src.bin" "$url"
  measure reelfs-cp cp.bin env AWS_ENDPOINT_URL="$endpoint" "$reelfs" cp --quiet "$work/src.bin" \
    s3://bench/cp.bin
  # shellcheck disable=SC2086  # MOUNT_ARGS is a list of flags
  "$reelfs" mount bench "$work/mnt" --endpoint "$endpoint" --log-file "$work/reelfs.log" \
    $MOUNT_ARGS >"$work/mount.log" 2>&1
  client_pid=$(pgrep -n -f "reelfs mount bench $work/mnt")
  # A key per round: the gateway's catalog still lists the last round's file, removed behind its
  # back, and the mount would refuse to replace it without --allow-overwrite.
  measure mount-dd "mount$r.bin" dd if="$work/src.bin" of="$work/mnt/mount$r.bin" bs=1M
  fusermount3 -u "$work/mnt"
  sleep 0.5
done
