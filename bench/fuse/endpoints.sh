#!/usr/bin/env bash
# bench/fuse/endpoints.sh: one mount over 1, 2 and 3 gateway front ends (`--endpoint A,B,C`,
# docs/s3-client.md "Several endpoints") under 8 readers: throughput and how the bytes spread
# over the endpoints; then the failover gap: a reader streaming a file while one of three
# gateways is SIGKILLed, the longest read() stall around the kill against the median read.
#
#   bench/fuse/endpoints.sh                     # FILES=8 FILE_MIB=128 ROUNDS=3 STREAM_MIB=1024
#   BUILD_DIR=build RESULT_FILE=/tmp/e.md bench/fuse/endpoints.sh
#
# The gateways serve one root: gateway 0 owns it, 1 and 2 are `--front-end` processes over it
# (docs/gateway.md "Several front ends over one root"), as in tests/e2e/endpoints.sh. On a 2-CPU
# machine more front ends cannot add throughput (the
# gateways and the mount share the CPUs); the numbers to read are the balance and the gap.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
BUILD_DIR=${BUILD_DIR:-build}
FILES=${FILES:-8}
FILE_MIB=${FILE_MIB:-128}
ROUNDS=${ROUNDS:-3}
STREAM_MIB=${STREAM_MIB:-1024}  # the failover-gap file (killed at a quarter of it)
RESULT_FILE=${RESULT_FILE:-/tmp/reelfs-endpoints-bench-$(date -u +%Y%m%dT%H%M%SZ).md}
bench_credentials
bench_require_single "$BUILD_DIR" getfattr python3
work=$(mktemp -d "${TMPDIR:-/dev/shm}/reelfs-endpoints-bench.XXXXXX")
pids=()
cleanup() {
  grep -qs " $work/mnt fuse" /proc/mounts && fusermount3 -u "$work/mnt" 2>/dev/null
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }

log "$FILES files of $FILE_MIB MiB, one root and three gateways (an owner, 2 front ends) under $work"
mkdir -p "$work/root/bench" "$work/mnt"
for i in $(seq 0 $((FILES - 1))); do
  head -c $((FILE_MIB * 1048576)) /dev/urandom >"$work/root/bench/f$i.bin"
done
head -c $((STREAM_MIB * 1048576)) /dev/urandom >"$work/root/bench/stream.bin"
eps=()
gws=()
for i in 0 1 2; do
  mkdir -p "$work/g$i"; rm -f "$work/g$i/port"
  BENCH_FRONT_END=$(( i > 0 )) bench_start_gateway "$gw" "$work/root" "$work/g$i" "$work/g$i.log"
  eps+=("$endpoint"); gws+=("$gw_pid"); pids+=("$gw_pid")
done

mount_n() {  # mount_n N: the mount over the first N endpoints
  local list
  list=$(IFS=,; echo "${eps[*]:0:$1}")
  "$reelfs" mount bench "$work/mnt" --endpoint "$list" --log-file "$work/mount.log" >/dev/null 2>&1
  for _ in $(seq 100); do grep -qs " $work/mnt fuse" /proc/mounts && return; sleep 0.1; done
  echo "mount failed" >&2; exit 1
}
umount_n() { fusermount3 -u "$work/mnt"; sleep 0.3; }
bytes_per_endpoint() {
  getfattr --absolute-names --only-values -n user.reelfs.metrics "$work/mnt" |
    python3 -c 'import json,sys; print(" ".join(str(e["bytes"] >> 20) for e in json.load(sys.stdin)["endpoints"]))'
}

{
  echo "# bench/fuse/endpoints.sh ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, $FILES readers x $FILE_MIB MiB, $ROUNDS rounds)"
  echo
  echo "| front ends | MiB/s (median; rounds) | MiB per endpoint (last round) | largest share / even share |"
  echo "|---|---|---|---|"
} >"$RESULT_FILE"
for n in 1 2 3; do
  rates=()
  for r in $(seq "$ROUNDS"); do
    mount_n "$n"
    t0=$(date +%s.%N)
    readers=()
    for i in $(seq 0 $((FILES - 1))); do cat "$work/mnt/f$i.bin" >/dev/null & readers+=($!); done
    wait "${readers[@]}"
    t1=$(date +%s.%N)
    rates+=("$(python3 -c "print(round($FILES * $FILE_MIB / ($t1 - $t0), 1))")")
    spread=$(bytes_per_endpoint)
    umount_n
  done
  med=$(bench_median "${rates[@]}")
  share=$(python3 -c "v=[int(x) for x in '$spread'.split()]; print(round(max(v) / (sum(v) / len(v)), 2))")
  log "$n front end(s): $med MiB/s (${rates[*]}), MiB per endpoint: $spread"
  echo "| $n | $med (${rates[*]}) | $spread | $share |" >>"$RESULT_FILE"
done

log "failover gap: $STREAM_MIB MiB streamed over 3 front ends, gateway 0 SIGKILLed at a quarter"
mount_n 3
gap=$(python3 - "$work/mnt/stream.bin" "${gws[0]}" $((STREAM_MIB / 4)) <<'PY'
import os, signal, statistics, sys, time
path, victim = sys.argv[1], int(sys.argv[2])
lat, done, killed_at, after = [], 0, None, []
with open(path, "rb", buffering=0) as f:
    while True:
        t = time.monotonic()
        b = f.read(1 << 20)
        dt = time.monotonic() - t
        if not b:
            break
        done += len(b)
        lat.append(dt)
        if killed_at is not None and t - killed_at < 5:
            after.append(dt)
        if done == int(sys.argv[3]) << 20:
            os.kill(victim, signal.SIGKILL)
            killed_at = time.monotonic()
print(f"{statistics.median(lat) * 1e3:.2f} {max(after) * 1e3:.1f} {len(after)}")
PY
)
read -r med_ms max_ms n_after <<<"$gap"
echo "   endpoints after the kill (MiB): $(bytes_per_endpoint)" >&2
umount_n
{
  echo
  echo "Failover gap: $STREAM_MIB MiB read in 1 MiB read() calls over 3 front ends, gateway 0 SIGKILLed at $((STREAM_MIB / 4)) MiB:"
  echo "median read() $med_ms ms; longest read() in the 5 s after the kill $max_ms ms ($n_after reads)."
} >>"$RESULT_FILE"
cat "$RESULT_FILE"
