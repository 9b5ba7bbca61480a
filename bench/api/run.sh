#!/usr/bin/env bash
# The side channel (docs/protocols/side-channel.md) against raw HTTP (curl), the FUSE mount
# (buffered and O_DIRECT) and s3fs: one reelfs-gateway, one dataset, one run, rounds alternated,
# medians and ratios at the end. See bench/api/README.md for what each number means.
#
#   bench/api/run.sh                                    # 1 GiB + 5 000 x 64 KiB, 3 rounds
#   LARGE_MIB=256 SMALL_FILES=1000 ROUNDS=1 bench/api/run.sh   # a quick look
#
# Environment (all optional): BUILD_DIR=build, LARGE_MIB=1024, SMALL_FILES=5000, SMALL_KIB=64,
# ROUNDS=3, CASES="large small", API_THREADS=2 and API_DEPTH=4 (side channel: connections and
# READs in flight each: 8 in flight, like the 8 reader threads of the mount and s3fs cases),
# RESULT_FILE (default /tmp/reelfs-api-bench-DATE.md), BENCH_TMP=/tmp, KEEP_WORK=1.
#
# Every reelfs case gets a fresh mount (no prefetch state or page cache carried over); the CPU
# columns are the daemon's (reelfs or s3fs), the gateway's and the reader's own, per GiB or per
# file, sampled from /proc around the command.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=bench/fuse/lib.sh
. bench/fuse/lib.sh
BUILD_DIR=${BUILD_DIR:-build}
LARGE_MIB=${LARGE_MIB:-1024}
SMALL_FILES=${SMALL_FILES:-5000}
SMALL_KIB=${SMALL_KIB:-64}
ROUNDS=${ROUNDS:-3}
CASES=${CASES:-"large small"}
API_THREADS=${API_THREADS:-2}
API_DEPTH=${API_DEPTH:-4}
RESULT_FILE=${RESULT_FILE:-/tmp/reelfs-api-bench-$(date -u +%Y%m%d-%H%M%S).md}
PYTHON=${PYTHON:-$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || command -v python3 )}
bench_require_single "$BUILD_DIR" curl dd fusermount3 "$PYTHON"
api=$BUILD_DIR/bench/reelfs-api-bench
[ -x "$api" ] || { echo "missing $api (cmake --build $BUILD_DIR --target reelfs-api-bench)" >&2; exit 77; }
have_s3fs=1; command -v s3fs >/dev/null || have_s3fs=0

work=$(mktemp -d "${BENCH_TMP:-${TMPDIR:-/tmp}}/api-bench.XXXXXX")
gw_pid=""
cleanup() {
  local m
  for m in "$work"/mnt*; do
    grep -qs " $m fuse" /proc/mounts && { fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m"; }
  done
  [ -n "$gw_pid" ] && kill "$gw_pid" 2>/dev/null
  wait 2>/dev/null
  [ "${KEEP_WORK:-0}" = 1 ] && echo "work kept in $work" >&2 || rm -rf "$work"
}
trap cleanup EXIT
log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
bench_credentials
mkdir -p "$work/root" "$work/mnt" "$work/mnt-s3fs" "$work/s3fs-tmp" "$work/logs"
log "dataset: ${LARGE_MIB} MiB + $SMALL_FILES x $SMALL_KIB KiB"
"$PYTHON" bench/fuse/bench.py gen "$work/root/bench" --large-mib "$LARGE_MIB" \
  --small-files "$SMALL_FILES" --small-kib "$SMALL_KIB" --dir-entries 0
manifest=$work/root/small.manifest
large_crc=$("$PYTHON" -c 'import sys, zlib
c = 0
with open(sys.argv[1], "rb") as f:
    while b := f.read(1 << 24): c = zlib.crc32(b, c)
print(c)' "$work/root/bench/large.bin")
bench_start_gateway "$gw" "$work/root" "$work" "$work/logs/gateway.log" || exit 1
url=$("$PYTHON" bench/fuse/bench.py urls "$endpoint" bench large.bin)
printf '%s:%s\n' "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY" >"$work/s3fs.passwd"
chmod 600 "$work/s3fs.passwd"

hz=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
daemon_pid=""
mount_reelfs() {
  "$reelfs" mount bench "$work/mnt" --endpoint "$endpoint" \
    --log-file "$work/logs/reelfs.log" >"$work/logs/mount.out" 2>&1 || { cat "$work/logs/mount.out" >&2; return 1; }
  daemon_pid=$(pgrep -n -f "reelfs mount bench $work/mnt")
}
mount_s3fs() {
  s3fs bench "$work/mnt-s3fs" -o "url=$endpoint,use_path_request_style,passwd_file=$work/s3fs.passwd,sigv4,endpoint=us-east-1,listobjectsv2,ro,complement_stat,tmpdir=$work/s3fs-tmp,dbglevel=warn" \
    >"$work/logs/s3fs.out" 2>&1 || return 1
  local i
  for i in $(seq 100); do grep -qs " $work/mnt-s3fs fuse" /proc/mounts && break; sleep 0.1; done
  daemon_pid=$(pgrep -n -f "s3fs bench $work/mnt-s3fs")
}
unmount() { fusermount3 -u "$1" 2>/dev/null || { sleep 1; fusermount3 -uz "$1"; }; daemon_pid=""; sleep 0.3; }

# measure CASE TOOL CMD...: runs CMD, checks its output (check_output), appends one line to
# $work/raw: "case tool seconds daemon_cpu gateway_cpu reader_cpu" (CPU in seconds). The
# seconds are the tool's own JSON "seconds" when it prints one (bench.py, reelfs-api-bench),
# else the wall time.
measure() {
  local case=$1 tool=$2 d0=0 d1=0 g0 g1 t0 t1 times out secs
  shift 2
  g0=$(ticks "$gw_pid"); [ -n "$daemon_pid" ] && d0=$(ticks "$daemon_pid")
  t0=$(date +%s.%N)
  times=$( { TIMEFORMAT='%U %S'; time "$@" >"$work/logs/out" 2>"$work/logs/err"; } 2>&1 | tail -1)
  t1=$(date +%s.%N)
  g1=$(ticks "$gw_pid"); [ -n "$daemon_pid" ] && d1=$(ticks "$daemon_pid")
  out=$(tail -1 "$work/logs/out")
  if ! check_output "$case" "$tool" "$out"; then
    log "$case/$tool FAILED: $out $(tail -2 "$work/logs/err")"
    echo "$case $tool failed" >>"$work/raw"
    return
  fi
  secs=$(printf '%s' "$out" | "$PYTHON" -c 'import json, sys
try: print(json.loads(sys.stdin.read())["seconds"])
except Exception: print("")')
  [ -n "$secs" ] || secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
  awk -v c="$case" -v t="$tool" -v s="$secs" -v d=$((d1 - d0)) -v g=$((g1 - g0)) -v r="$times" \
    -v hz="$hz" 'BEGIN { split(r, a, " "); printf "%s %s %.4f %.4f %.4f %.4f\n", c, t, s,
      d / hz, g / hz, a[1] + a[2] }' >>"$work/raw"
  log "$(tail -1 "$work/raw")"
}
# Every byte is checked: crc32 of the large file, size and crc32 of every small file.
check_output() {
  local case=$1 tool=$2 out=$3
  case $case/$tool in
    large/api) printf '%s' "$out" | "$PYTHON" -c 'import json, sys
j = json.loads(sys.stdin.read()); sys.exit(0 if j["ok"] else 1)' ;;
    large/*) return 0 ;;  # dd and curl: size below; content is not what they measure
    small/api|small/api-fd) printf '%s' "$out" | "$PYTHON" -c 'import json, sys
j = json.loads(sys.stdin.read()); sys.exit(0 if j["ok"] and j["verified"] == j["files"] else 1)' ;;
    small/*) printf '%s' "$out" | "$PYTHON" -c 'import json, sys
j = json.loads(sys.stdin.read()); sys.exit(0 if j["errors"] == 0 and j["ok"] == j["files"] else 1)' ;;
  esac
}
# The timed side-channel run computes no checksum (curl's computes none either); a second,
# unmeasured pass on the same mount folds crc32 and must match the source.
verify_large_api() {
  local out
  out=$("$api" large "$work/mnt/large.bin" --read-mib 8 --depth 4 --checksum 2>&1 | tail -1)
  if ! printf '%s' "$out" | "$PYTHON" -c 'import json, sys
j = json.loads(sys.stdin.read()); sys.exit(0 if j["ok"] and j["crc32"] == int(sys.argv[1]) else 1)' "$large_crc"; then
    log "large/api: checksum pass FAILED: $out"
    echo "large api failed" >>"$work/raw"
  fi
}
size_is() { [ "$(stat -c %s "$1")" = $((LARGE_MIB * 1048576)) ]; }

: >"$work/raw"
for r in $(seq "$ROUNDS"); do
  log "round $r of $ROUNDS"
  for c in $CASES; do
    case $c in
      large)
        daemon_pid=""
        measure large curl curl -sS -f -o /dev/null "$url"
        mount_reelfs && { measure large api "$api" large "$work/mnt/large.bin" --read-mib 8 --depth 4
                          verify_large_api; unmount "$work/mnt"; }
        mount_reelfs && { size_is "$work/mnt/large.bin" && measure large mount dd if="$work/mnt/large.bin" of=/dev/null bs=1M; unmount "$work/mnt"; }
        mount_reelfs && { measure large odirect dd if="$work/mnt/large.bin" of=/dev/null bs=1M iflag=direct; unmount "$work/mnt"; }
        ;;
      small)
        mount_reelfs && { measure small api "$api" small "$work/mnt" "$manifest" --threads "$API_THREADS" --depth "$API_DEPTH"; unmount "$work/mnt"; }
        mount_reelfs && { measure small api-fd "$api" small "$work/mnt" "$manifest" --threads "$API_THREADS" --depth "$API_DEPTH" --by-fd; unmount "$work/mnt"; }
        mount_reelfs && { measure small mount "$PYTHON" bench/fuse/bench.py smallfiles "$work/mnt" "$manifest" --threads 8; unmount "$work/mnt"; }
        if [ "$have_s3fs" = 1 ]; then
          mount_s3fs && { measure small s3fs "$PYTHON" bench/fuse/bench.py smallfiles "$work/mnt-s3fs" "$manifest" --threads 8; unmount "$work/mnt-s3fs"; }
        fi
        ;;
      *) echo "unknown case $c (large small)" >&2; exit 2 ;;
    esac
  done
done

# Medians per (case, tool), then the ratios the issue sets targets for.
"$PYTHON" - "$work/raw" "$LARGE_MIB" "$SMALL_FILES" "$SMALL_KIB" "$ROUNDS" >"$RESULT_FILE" <<'PY'
import statistics, sys
raw, large_mib, files, kib, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
runs, failed = {}, set()
for line in open(raw):
    f = line.split()
    if f[2] == "failed":
        failed.add((f[0], f[1])); continue
    runs.setdefault((f[0], f[1]), []).append([float(x) for x in f[2:]])
def med(case, tool, i):
    v = runs.get((case, tool))
    return statistics.median(r[i] for r in v) if v else None
names = {"api": "side channel -> memfd", "api-fd": "side channel, open(2) + OPEN_FILE per file",
         "curl": "curl (raw HTTP)", "mount": "FUSE mount, buffered",
         "odirect": "FUSE mount, O_DIRECT", "s3fs": "s3fs"}
print(f"Dataset: {large_mib} MiB object; {files} x {kib} KiB objects. Medians of {rounds} rounds.\n")
for case, unit in (("large", "MiB/s"), ("small", "files/s")):
    tools = [t for t in ("api", "api-fd", "curl", "mount", "odirect", "s3fs") if (case, t) in runs or (case, t) in failed]
    if not tools: continue
    per = "GiB" if case == "large" else "file"
    print(f"| {case} | {unit} | daemon CPU s/{per} | gateway CPU s/{per} | reader CPU s/{per} |")
    print("|---|---|---|---|---|")
    for t in tools:
        if (case, t) not in runs:
            print(f"| {names[t]} | failed | | | |"); continue
        s = med(case, t, 0)
        amount = large_mib / 1024 if case == "large" else files
        rate = (large_mib if case == "large" else files) / s
        cells = [f"{med(case, t, i) / amount:.4f}" if case == "large" else f"{med(case, t, i) / amount * 1e3:.3f} ms"
                 for i in (1, 2, 3)]
        if t == "curl": cells[0] = "-"
        print(f"| {names[t]} | {rate:.1f} | " + " | ".join(cells) + " |")
    print()
def ratio(case, a, b):
    if (case, a) not in runs or (case, b) not in runs: return "n/a"
    return f"{med(case, b, 0) / med(case, a, 0):.2f}"
print("| ratio | value | target |")
print("|---|---|---|")
print(f"| large: side channel / curl | {ratio('large', 'api', 'curl')} | >= 0.9 |")
print(f"| large: side channel / mount buffered | {ratio('large', 'api', 'mount')} | above 1 |")
print(f"| large: side channel / mount O_DIRECT | {ratio('large', 'api', 'odirect')} | above 1 |")
print(f"| small: side channel / s3fs | {ratio('small', 'api', 's3fs')} | >= 5 |")
print(f"| small: side channel / mount | {ratio('small', 'api', 'mount')} | >= 1.5 |")
print(f"| small: side channel by fd / mount | {ratio('small', 'api-fd', 'mount')} | (READ_PATH's gain) |")
PY
cat "$RESULT_FILE"
log "written to $RESULT_FILE"
