#!/usr/bin/env bash
# A/B of reelfs binaries on ONE gateway and ONE dataset: the small-files, random-read and
# sequential-read cases of run.sh, each binary on a fresh mount, alternated round by round
# (A B A B ...), medians at the end. run.sh compares tools; this compares builds, where two
# separate run.sh runs on a shared 2-CPU machine differ by more than most changes are worth.
#
#   bench/fuse/ab.sh /tmp/base/reelfs build-c/cli/reelfs [more binaries...]
#
# Environment (all optional): ROUNDS=3, CASES="small rand" (also: seq, seqd: O_DIRECT), SMALL_FILES=5000,
# SMALL_KIB=64, LARGE_MIB=1024, RAND_SECONDS=10, GATEWAY=build/gateway/reelfs-gateway,
# REELFS_OPTS (appended to every mount), PROFILE=1 (per mount: FUSE ops by type from the
# daemon's debug log and the S3 requests it sent, in logs/; slower, so not for the numbers),
# PERF=1 (perf record -g of each daemon during its case, then the top of perf report in logs/),
# KEEP_WORK=1, BENCH_TMP=/tmp.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
here=bench/fuse
# shellcheck source=bench/fuse/lib.sh
. "$here/lib.sh"
[ $# -ge 1 ] || { sed -n 2,14p "$0" >&2; exit 2; }
bins=("$@")
ROUNDS=${ROUNDS:-3}
CASES=${CASES:-"small rand"}
SMALL_FILES=${SMALL_FILES:-5000}
SMALL_KIB=${SMALL_KIB:-64}
LARGE_MIB=${LARGE_MIB:-1024}
RAND_SECONDS=${RAND_SECONDS:-10}
GATEWAY=${GATEWAY:-build/gateway/reelfs-gateway}
REELFS_OPTS=${REELFS_OPTS:-}
PYTHON=${PYTHON:-$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || command -v python3 )}
log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
for b in "${bins[@]}" "$GATEWAY"; do [ -x "$b" ] || { echo "not executable: $b" >&2; exit 1; }; done

work=$(mktemp -d "${BENCH_TMP:-/tmp}/reelfs-ab.XXXXXX")
mkdir -p "$work/logs" "$work/mnt"
gw_pid=""
mnt=""
is_mounted() { grep -qs " $1 fuse" /proc/mounts; }
unmount() {
  local i
  for i in 1 2 3 4 5; do is_mounted "$1" || break; fusermount3 -u "$1" 2>/dev/null && break; sleep 1; done
  is_mounted "$1" && fusermount3 -uz "$1" 2>/dev/null
  # the daemon exits after the unmount; wait for it so the next mount starts on a quiet machine
  for i in $(seq 50); do pgrep -f -- "$1" >/dev/null || break; sleep 0.1; done
}
cleanup() {
  [ -n "$mnt" ] && is_mounted "$mnt" && unmount "$mnt"
  [ -n "$gw_pid" ] && { kill "$gw_pid" 2>/dev/null; wait "$gw_pid" 2>/dev/null; }
  if [ "${KEEP_WORK:-0}" = 1 ]; then log "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bench_credentials
"$PYTHON" $here/bench.py gen "$work/root/bench" --large-mib "$LARGE_MIB" --small-files "$SMALL_FILES" \
  --small-kib "$SMALL_KIB" --dir-entries 1 || exit 1
bench_start_gateway "$GATEWAY" "$work/root" "$work" "$work/logs/gateway.log" || exit 1
url=$("$PYTHON" $here/bench.py urls "$endpoint" bench large.bin)
curl -sS -f -o /dev/null "$url" || exit 1   # the gateway's page cache, warm for every mount

declare -A vals
seq_no=0
mount_bin() {  # BIN -> mnt (seq_no is advanced by the caller: one() runs in a subshell)
  mnt=$work/mnt/m$seq_no
  mkdir -p "$mnt"
  local extra=()
  [ "${PROFILE:-0}" = 1 ] && extra=(--log-level info,fuse=trace)
  # shellcheck disable=SC2086
  AWS_ENDPOINT_URL=$endpoint timeout 120 "$1" mount bench "$mnt" --max-memory 1GiB \
    --log-file "$work/logs/m$seq_no.log" "${extra[@]}" $REELFS_OPTS >"$work/logs/m$seq_no.out" 2>&1
  for _ in $(seq 300); do is_mounted "$mnt" && return 0; sleep 0.1; done
  echo "mount of $1 failed:" >&2; cat "$work/logs/m$seq_no.out" >&2; return 1
}
one() {  # BIN CASE -> number
  local bin=$1 c=$2 v
  mount_bin "$bin" || { echo "failed"; return; }
  local perf_pid=""
  if [ "${PERF:-0}" = 1 ]; then
    perf record -F 499 -g -o "$work/logs/perf.$seq_no.data" -p "$(pgrep -f -- "$mnt" | head -1)" \
      >/dev/null 2>&1 &
    perf_pid=$!
    sleep 0.5
  elif [ "${PERF:-0}" = stat ]; then
    perf stat -e task-clock,context-switches,cpu-migrations -p "$(pgrep -f -- "$mnt" | head -1)" \
      -o "$work/logs/perf.$seq_no.txt" >/dev/null 2>&1 &
    perf_pid=$!
    sleep 0.5
  fi
  case $c in
    small)
      v=$(timeout 600 "$PYTHON" $here/bench.py smallfiles "$mnt" "$work/root/small.manifest" \
            --threads 8 --timeout 300 | tail -1 | "$PYTHON" -c 'import json,sys; j=json.load(sys.stdin)
print(j["files_per_s"] if not j["errors"] and not j["skipped"] else "failed: %s" % j["first_error"])') ;;
    rand)
      fio --name=rand --filename="$mnt/large.bin" --readonly --rw=randread --bs=256k --ioengine=psync \
        --numjobs=1 --size="${LARGE_MIB}M" --time_based --runtime="$RAND_SECONDS" --randrepeat=1 \
        --norandommap --invalidate=1 --output-format=json --output="$work/logs/fio.$seq_no.json" \
        >/dev/null 2>&1
      v=$("$PYTHON" $here/bench.py fio "$work/logs/fio.$seq_no.json") ;;
    seq)
      # One buffered sequential pass over the whole large object (the prefetcher's case).
      fio --name=seq --filename="$mnt/large.bin" --readonly --rw=read --bs=1m --ioengine=psync \
        --numjobs=1 --size="${LARGE_MIB}M" --invalidate=1 --output-format=json \
        --output="$work/logs/fio.$seq_no.json" >/dev/null 2>&1
      v=$("$PYTHON" $here/bench.py fio "$work/logs/fio.$seq_no.json") ;;
    seqd)
      # The same pass with O_DIRECT: one READ at a time, so the READ size shows.
      fio --name=seqd --filename="$mnt/large.bin" --readonly --rw=read --bs=1m --ioengine=psync \
        --direct=1 --numjobs=1 --size="${LARGE_MIB}M" --output-format=json \
        --output="$work/logs/fio.$seq_no.json" >/dev/null 2>&1
      v=$("$PYTHON" $here/bench.py fio "$work/logs/fio.$seq_no.json") ;;
  esac
  if [ -n "$perf_pid" ]; then
    kill -INT "$perf_pid"; wait "$perf_pid" 2>/dev/null
    [ "${PERF}" = 1 ] && perf report -i "$work/logs/perf.$seq_no.data" --no-children --sort comm,dso,symbol --stdio 2>/dev/null |
      grep -v '^#' | grep '%' | head -40 >"$work/logs/perf.$seq_no.txt"
  fi
  unmount "$mnt"
  if [ "${PROFILE:-0}" = 1 ]; then
    { echo "== m$seq_no $bin $c"; grep -o 'req=[0-9]* [a-z_]*' "$work/logs/m$seq_no.log" |
        awk '{ n[$2]++ } END { for (k in n) printf "  %s %d\n", k, n[k] }' | sort
      grep -o 'unmounted .*' "$work/logs/m$seq_no.log" | tail -1
    } >>"$work/logs/profile.txt"
  fi
  echo "$v"
}

for c in $CASES; do
  for r in $(seq "$ROUNDS"); do
    for i in "${!bins[@]}"; do
      seq_no=$((seq_no + 1))
      v=$(one "${bins[$i]}" "$c")
      log "$c round $r ${bins[$i]}: $v"
      vals[$c/$i]+="$v "
    done
  done
done

echo "| case | $(for b in "${bins[@]}"; do printf '%s | ' "$b"; done)"
echo "|---|$(for b in "${bins[@]}"; do printf -- '---|'; done)"
for c in $CASES; do
  unit="files/s"; [ "$c" != small ] && unit="MiB/s"
  printf '| %s (%s, median of %s) |' "$c" "$unit" "$ROUNDS"
  for i in "${!bins[@]}"; do
    # shellcheck disable=SC2086
    printf ' %s (%s) |' "$(bench_median ${vals[$c/$i]})" "$(echo ${vals[$c/$i]})"
  done
  echo
done
[ "${PROFILE:-0}" = 1 ] && cat "$work/logs/profile.txt"
if [ "${PERF:-0}" = stat ]; then
  for f in "$work"/logs/perf.*.txt; do echo "== $(basename "$f")"; grep -E 'task-clock|context-switches|migrations|elapsed' "$f"; done
fi
exit 0
