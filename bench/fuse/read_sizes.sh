#!/usr/bin/env bash
# One buffered reader (`dd` without iflag=direct) of one large object at several read sizes,
# through a default mount (the page cache) and a `--direct-io` mount (no page cache: each read()
# is a READ of its own size), next to curl: what `--direct-io` gains for a reader of large blocks
# and what it costs one of small ones (docs/semantics.md "Direct I/O reads"). dd's buffer is
# page-aligned; a last row reads with Python's `f.read(1 MiB)`, whose buffers are not (malloc's
# header before them), as most applications' are. Both mounts stay up on one gateway; every round
# drops the page cache first and alternates them (A B A B ...).
#
#   ROUNDS=3 SIZE_MIB=1024 BS="1M 256k 64k 16k" bench/fuse/read_sizes.sh
#
# Environment (all optional): BUILD_DIR=build, ROUNDS=3, SIZE_MIB=1024, BS (dd block sizes),
# REELFS_OPTS (appended to both mounts). Prints a markdown table of medians (MiB/s).
# Needs: reelfs-gateway and reelfs in BUILD_DIR, curl, dd, fusermount3, python3; root for
# drop_caches (without it the rounds after the first may read the page cache: the script says so).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/fuse/lib.sh
. "$here/lib.sh"
BUILD_DIR=${BUILD_DIR:-build}
ROUNDS=${ROUNDS:-3}
SIZE_MIB=${SIZE_MIB:-1024}
BS=${BS:-"1M 256k 64k 16k"}
REELFS_OPTS=${REELFS_OPTS:-}
bench_require_single "$BUILD_DIR" curl dd fusermount3 python3
bench_single_file read-sizes "$SIZE_MIB" || exit 1
cleanup() {
  local m
  for m in "$work/mnt" "$work/dio"; do
    grep -qs " $m fuse" /proc/mounts && fusermount3 -u "$m" 2>/dev/null
  done
  bench_cleanup_single
}
trap cleanup EXIT
mkdir -p "$work/dio"
# shellcheck disable=SC2086  # REELFS_OPTS: several words
"$reelfs" mount bench "$work/mnt" --endpoint "$endpoint" --log-file "$work/default.log" \
  $REELFS_OPTS >"$work/mount.log" 2>&1
# shellcheck disable=SC2086
"$reelfs" mount bench "$work/dio" --endpoint "$endpoint" --direct-io --log-file "$work/dio.log" \
  $REELFS_OPTS >>"$work/mount.log" 2>&1
url=$(python3 "$here/bench.py" urls "$endpoint" bench large.bin)
curl -sS -o /dev/null "$url"  # the gateway's copy in its page cache, for every reader alike
drop=1
drop_caches() { [ "$drop" = 1 ] && { sync; echo 3 >/proc/sys/vm/drop_caches; } 2>/dev/null || drop=0; }
rate() {  # rate CMD...: MiB/s of CMD reading SIZE_MIB
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >/dev/null 2>&1
  t1=$(date +%s.%N)
  awk -v m="$SIZE_MIB" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f\n", m / (b - a) }'
}
# Python's read(n) returns a new bytes object per call: a buffer malloc places 16 bytes past a
# page boundary, so a 1 MiB read() spans 257 pages.
pyread() {
  python3 -c 'import sys
with open(sys.argv[1], "rb", buffering=0) as f:
    while f.read(1 << 20): pass' "$1"
}
declare -A v
for r in $(seq "$ROUNDS"); do
  drop_caches
  v[curl]+=" $(rate curl -sS -o /dev/null "$url")"
  for bs in $BS; do
    for m in mnt dio; do
      drop_caches
      v[$m/$bs]+=" $(rate dd if="$work/$m/large.bin" of=/dev/null bs="$bs")"
    done
  done
  for m in mnt dio; do
    drop_caches
    v[$m/py]+=" $(rate pyread "$work/$m/large.bin")"
  done
  echo "round $r: curl${v[curl]##* }; $(for bs in $BS py; do printf '%s %s/%s ' "$bs" "${v[mnt/$bs]##* }" "${v[dio/$bs]##* }"; done)" >&2
done
[ "$drop" = 1 ] || echo "note: drop_caches not writable: rounds after the first may read the page cache" >&2
splice=$(grep -ho 'spliced reads o[nf]*' "$work/default.log" | head -1)
# shellcheck disable=SC2086  # the rounds' values, one word each
curl_m=$(bench_median ${v[curl]})
echo "One buffered reader of a $SIZE_MIB MiB object, medians of $ROUNDS rounds (MiB/s); curl: $curl_m; ${splice:-spliced reads: see the log}."
echo
echo "| reader | default mount (page cache) | --direct-io | --direct-io ÷ default | default ÷ curl | --direct-io ÷ curl |"
echo "|---|---|---|---|---|---|"
for bs in $BS py; do
  # shellcheck disable=SC2086
  a=$(bench_median ${v[mnt/$bs]})
  # shellcheck disable=SC2086
  d=$(bench_median ${v[dio/$bs]})
  awk -v bs="$bs" -v a="$a" -v d="$d" -v c="$curl_m" \
    'BEGIN { r = (bs == "py") ? "python read(1 MiB), unaligned" : "dd bs=" bs
             printf "| %s | %s | %s | %.2f | %.2f | %.2f |\n", r, a, d, d / a, a / c, d / c }'
done
