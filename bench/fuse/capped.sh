#!/usr/bin/env bash
# One sequential reader over a gateway that caps each connection's send rate
# (reelfs-gateway --max-connection-rate: a remote object store's per-connection cap, modelled on
# loopback with TCP's own pacing). What it measures is the cost of spliced reads' one connection
# per handle: the mount's variants each read the file once per round on a fresh mount (page
# cache dropped), alternated round by round, beside curl (one connection: the cap itself).
#
#   BUILD_DIR=build SIZE_MIB=512 RATE=100MiB ROUNDS=3 VARIANTS="ordinary spliced spliced-keep" \
#     bench/fuse/capped.sh
#
# Variants: ordinary (--no-splice-reads: parallel ranged GETs), spliced (the default,
# --splice-reads: a stream slower than its reader handed to the parallel GETs), spliced-keep
# (--splice-reads --splice-slow-window 0: the one connection kept). RATE=0: no cap (loopback).
# Per variant: MiB/s (median, and every round), and the mount's splice counters of its last round.
# Needs: reelfs-gateway and reelfs in BUILD_DIR, dd, curl, getfattr, python3, fusermount3.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/fuse/lib.sh
. "$here/lib.sh"
BUILD_DIR=${BUILD_DIR:-build}
SIZE_MIB=${SIZE_MIB:-512}
RATE=${RATE:-100MiB}
ROUNDS=${ROUNDS:-3}
VARIANTS=${VARIANTS:-"ordinary spliced spliced-keep"}
bench_require_single "$BUILD_DIR" dd curl getfattr python3 fusermount3
GATEWAY_OPTS="--max-connection-rate $RATE" bench_single_file capped "$SIZE_MIB" || exit 1

opts_of() {
  case $1 in
    ordinary) echo "--no-splice-reads" ;;
    spliced) echo "--splice-reads" ;;
    spliced-keep) echo "--splice-reads --splice-slow-window 0" ;;
    *) echo "unknown variant $1 (ordinary spliced spliced-keep)" >&2; exit 2 ;;
  esac
}
mib_s() { awk -v t0="$1" -v t1="$2" -v mib="$SIZE_MIB" 'BEGIN { printf "%.0f", mib / (t1 - t0) }'; }
url=$(python3 "$here/bench.py" urls "$endpoint" bench large.bin)

declare -A rates counters
for _ in $(seq "$ROUNDS"); do
  for v in $VARIANTS curl; do
    if [ "$v" = curl ]; then
      t0=$(date +%s.%N)
      curl -sS -f -o /dev/null "$url"
      t1=$(date +%s.%N)
    else
      # shellcheck disable=SC2046  # the variant's flags: several words
      "$reelfs" mount bench "$work/mnt" --endpoint "$endpoint" --log-file "$work/reelfs.log" \
        $(opts_of "$v") >"$work/mount.log" 2>&1
      dd if="$work/mnt/large.bin" iflag=nocache count=0 status=none  # drop the file's pages
      t0=$(date +%s.%N)
      dd if="$work/mnt/large.bin" of=/dev/null bs=1M status=none
      t1=$(date +%s.%N)
      counters[$v]=$(getfattr --absolute-names --only-values -n user.reelfs.metrics "$work/mnt" |
        python3 -c 'import json, sys; f = json.load(sys.stdin)["fs"]; print("%d MiB spliced, %d stream(s), %d slow" % (f["spliced_bytes"] >> 20, f["splice_streams"], f["splice_slow_streams"]))')
      fusermount3 -u "$work/mnt"
      sleep 0.5
    fi
    rates[$v]="${rates[$v]:-} $(mib_s "$t0" "$t1")"
  done
done

echo "# bench/fuse/capped.sh ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, $SIZE_MIB MiB, cap $RATE per connection, $ROUNDS rounds)"
echo
echo "| reader | MiB/s (median) | rounds | ÷ curl | last round |"
echo "|---|---|---|---|---|"
curl_median=$(bench_median ${rates[curl]})
for v in $VARIANTS curl; do
  m=$(bench_median ${rates[$v]})
  echo "| $v | $m |${rates[$v]} | $(awk -v a="$m" -v b="$curl_median" 'BEGIN { printf "%.2f", a / b }') | ${counters[$v]:--} |"
done
