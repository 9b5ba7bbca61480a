#!/usr/bin/env bash
# CPU cost per small file, per process: reelfs-gateway, the client (the reelfs or s3fs daemon, or
# curl itself) and the reader (bench.py smallfiles: Python, 8 threads, open/read/close + crc32),
# plus the whole machine's busy time (/proc/stat) per file. When every CPU is busy, files/s is
# bounded by CPUs / (all-CPU seconds per file), so these columns say which process a ratio like
# "reelfs ÷ s3fs" is spent in, and what the reader and the gateway alone leave for the client.
#
#   BUILD_DIR=build FILES=5000 ROUNDS=3 TOOLS="curl reelfs s3fs" bench/fuse/cpu_per_file.sh
#
# Needs: reelfs-gateway and reelfs in BUILD_DIR, curl, python3, fusermount3; s3fs for its rows
# (missing: its rows are skipped with the reason). Tools alternate within each round.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/fuse/lib.sh
. "$here/lib.sh"
BUILD_DIR=${BUILD_DIR:-build}
FILES=${FILES:-5000}
KIB=${KIB:-64}
ROUNDS=${ROUNDS:-3}
TOOLS=${TOOLS:-"curl reelfs s3fs"}
THREADS=${THREADS:-8}
bench_require_single "$BUILD_DIR" curl fusermount3 python3
# The same parent as run.sh: s3fs stages what it reads in its tmpdir (here under the work
# directory), so a tmpfs work directory makes s3fs cheaper than its default /tmp does.
work=$(mktemp -d "${BENCH_TMP:-${TMPDIR:-/tmp}}/cpu-per-file.XXXXXX")
gw_pid=""
trap bench_cleanup_single EXIT
bench_credentials
mkdir -p "$work/mnt" "$work/s3fs-tmp"
python3 "$here/bench.py" gen "$work/root/bench" --large-mib 1 --small-files "$FILES" \
  --small-kib "$KIB" --dir-entries 1 >/dev/null
manifest=$work/root/small.manifest
bench_start_gateway "$gw" "$work/root" "$work" "$work/gateway.log" || exit 1
python3 "$here/bench.py" curlcfg-small "$endpoint" bench "$manifest" --seed 1 >"$work/curl.cfg"
echo "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" >"$work/s3fs.passwd"; chmod 600 "$work/s3fs.passwd"
s3fs_opts="url=$endpoint,use_path_request_style,passwd_file=$work/s3fs.passwd,sigv4,endpoint=us-east-1,listobjectsv2,ro,complement_stat,tmpdir=$work/s3fs-tmp,dbglevel=warn"
hz=$(getconf CLK_TCK)
busy() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8}' /proc/stat; }  # user nice system irq softirq

# measure TOOL CLIENT_PID CMD...: runs CMD (the reader; for curl, the client itself) and prints
# one row: tool files/s, then µs per file of the gateway, the client daemon, the reader, all CPUs
measure() {
  local tool=$1 client=$2; shift 2
  local g0 c0=0 b0 g1 c1=0 b1 t0 t1 out fps
  g0=$(bench_ticks "$gw_pid"); [ -n "$client" ] && c0=$(bench_ticks "$client"); b0=$(busy)
  t0=$(date +%s.%N)
  out=$( { TIMEFORMAT='%U %S'; time "$@" >"$work/out.json" 2>"$work/err"; } 2>&1 | tail -1)
  t1=$(date +%s.%N)
  g1=$(bench_ticks "$gw_pid"); [ -n "$client" ] && c1=$(bench_ticks "$client"); b1=$(busy)
  if [ "$tool" = curl ]; then
    local ok; ok=$(grep -c "^200 $((KIB * 1024))$" "$work/out.json" || true)
    [ "$ok" = "$FILES" ] || { echo "$tool failed: $ok of $FILES files"; return; }
    fps=$(awk -v n="$FILES" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", n / (b - a) }')
  else
    fps=$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["files_per_s"] if j["errors"]==0 and j["ok"]==j["files"] else "failed: "+str(j["first_error"]))' "$work/out.json")
  fi
  awk -v l="$tool" -v f="$fps" -v g=$((g1 - g0)) -v c=$((c1 - c0)) -v b=$((b1 - b0)) -v hz="$hz" \
    -v r="$out" -v n="$FILES" 'BEGIN { split(r, a, " "); u = 1e6 / n;
      printf "| %s | %s | %.0f | %.0f | %.0f | %.0f |\n", l, f, g / hz * u, c / hz * u,
      (a[1] + a[2]) * u, b / hz * u }'
}
reader() { python3 "$here/bench.py" smallfiles "$work/mnt" "$manifest" --threads "$THREADS" --seed 1 --timeout 600; }
daemon_of() { local p; for p in $(pgrep -f -- "$work/mnt"); do case $(cat "/proc/$p/comm") in reelfs*|s3fs) echo "$p"; return;; esac; done; }
unmount() { fusermount3 -u "$work/mnt" 2>/dev/null || fusermount3 -uz "$work/mnt"; sleep 0.5; }

echo "$FILES × $KIB KiB, $THREADS reader threads, $(nproc) CPUs; µs of CPU per file"
echo
echo "| tool | files/s | gateway | client daemon | reader | all CPUs |"
echo "|---|---|---|---|---|---|"
for _ in $(seq "$ROUNDS"); do
  for t in $TOOLS; do
    case $t in
      curl) measure curl "" curl -sS --parallel --parallel-max "$THREADS" -K "$work/curl.cfg" \
              -w '%{http_code} %{size_download}\n' ;;
      reelfs)
        "$reelfs" mount bench "$work/mnt" --endpoint "$endpoint" --log-file "$work/reelfs.log" >"$work/mount.log" 2>&1
        measure reelfs "$(daemon_of)" reader; unmount ;;
      s3fs)
        command -v s3fs >/dev/null || { echo "| s3fs | skipped: not installed | | | | |"; continue; }
        s3fs bench "$work/mnt" -o "$s3fs_opts" >"$work/mount.log" 2>&1
        for _ in $(seq 100); do grep -qs " $work/mnt fuse" /proc/mounts && break; sleep 0.1; done
        measure s3fs "$(daemon_of)" reader; unmount ;;
      *) echo "unknown tool $t" >&2; exit 2 ;;
    esac
  done
done
