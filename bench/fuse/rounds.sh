#!/usr/bin/env bash
# Round by round: MOUNTS fresh mounts, ROUNDS sequential buffered reads of one file on each (its
# page cache dropped before each), and per round the reader's MiB/s, the daemon's CPU ms, minor
# page faults and context switches, and the guest's steal time. A fresh mount's first round pays
# what later ones do not (its part buffers' first touch), and a slow round that is the machine's
# shows as steal or in every round alike; run.sh's medians hide both (bench/RESULTS.md "Spliced
# reads after gap skipping").
#
#   BUILD_DIR=build SIZE_MIB=1024 MOUNTS=3 ROUNDS=3 PERF=0 REELFS_OPTS= bench/fuse/rounds.sh
#
# PERF=1 also records the daemon (perf record -F 999) during each round and prints the share of
# its samples in the kernel's page zeroing (clear_page_*) and its top symbol; PERF_KEEP=PREFIX
# keeps each round's perf.data as PREFIX.MOUNT.ROUND for `perf report -i`.
# Needs: reelfs-gateway and reelfs in BUILD_DIR, dd, fusermount3 (and perf with PERF=1).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/fuse/lib.sh
. "$here/lib.sh"
BUILD_DIR=${BUILD_DIR:-build}
SIZE_MIB=${SIZE_MIB:-1024}
MOUNTS=${MOUNTS:-3}
ROUNDS=${ROUNDS:-3}
PERF=${PERF:-0}
REELFS_OPTS=${REELFS_OPTS:-}
needs=(dd fusermount3)
[ "$PERF" = 1 ] && needs+=(perf)
bench_require_single "$BUILD_DIR" "${needs[@]}"
bench_single_file rounds "$SIZE_MIB" || exit 1
hz=$(getconf CLK_TCK)
steal() { awk '/^cpu / {print $9}' /proc/stat; }  # the guest's steal time, all CPUs, in ticks

perf_cols=""
[ "$PERF" = 1 ] && perf_cols=" clear_page% top_symbol"
echo "# mount round MiB/s daemon_cpu_ms daemon_minflt daemon_ctxsw steal_ms$perf_cols"
for m in $(seq "$MOUNTS"); do
  # shellcheck disable=SC2086
  "$reelfs" mount bench "$work/mnt" --endpoint "$endpoint" --log-file "$work/reelfs.log" \
    $REELFS_OPTS >"$work/mount.log" 2>&1
  daemon=$(pgrep -n -f "reelfs mount bench $work/mnt")
  for r in $(seq "$ROUNDS"); do
    dd if="$work/mnt/large.bin" iflag=nocache count=0 status=none  # drop the file's pages
    perf_pid=""
    if [ "$PERF" = 1 ]; then
      perf record -q -F 999 -p "$daemon" -o "$work/perf.data" >/dev/null 2>&1 &
      perf_pid=$!
      sleep 0.3  # perf attaches
    fi
    c0=$(bench_ticks "$daemon"); f0=$(bench_minflt "$daemon"); x0=$(bench_ctxsw "$daemon")
    s0=$(steal); t0=$(date +%s.%N)
    dd if="$work/mnt/large.bin" of=/dev/null bs=1M status=none
    t1=$(date +%s.%N); s1=$(steal)
    c1=$(bench_ticks "$daemon"); f1=$(bench_minflt "$daemon"); x1=$(bench_ctxsw "$daemon")
    extra=""
    if [ -n "$perf_pid" ]; then
      kill -INT "$perf_pid"; wait "$perf_pid" || true
      [ -n "${PERF_KEEP:-}" ] && cp "$work/perf.data" "$PERF_KEEP.$m.$r"
      extra=$(perf report -q -i "$work/perf.data" --no-children --sort sym 2>/dev/null |
        awk '/clear_page/ { z += $1 } NR == 1 { top = $NF } END { printf " %.1f %s", z, top }')
    fi
    awk -v m="$m" -v r="$r" -v t0="$t0" -v t1="$t1" -v mib="$SIZE_MIB" -v hz="$hz" \
      -v c=$((c1 - c0)) -v f=$((f1 - f0)) -v x=$((x1 - x0)) -v s=$((s1 - s0)) -v e="$extra" \
      'BEGIN { printf "%d %d %.0f %.0f %d %d %.0f%s\n", m, r, mib / (t1 - t0), c * 1000 / hz, f, x, s * 1000 / hz, e }'
  done
  fusermount3 -u "$work/mnt"
  sleep 0.5
done
