#!/usr/bin/env bash
# Gateway CPU per small GET (and HEAD): N objects of KIB KiB fetched once each by curl with
# PARALLEL transfers in flight (presigned URLs, keep-alive connections), on loopback. Prints
# requests/s and the gateway's CPU microseconds per request (utime + stime from /proc/PID/stat,
# sampled before and after the transfers). CPU per request is the number to compare: on a
# machine whose CPUs the gateway shares with its clients it bounds requests/s, and it is far less
# sensitive than wall time to what else the machine runs.
#
#   BUILD_DIR=build N=5000 ROUNDS=3 bench/gateway/small_get.sh
#   GATEWAYS="/tmp/gw-before /tmp/gw-after" bench/gateway/small_get.sh   # A/B, alternating
#   PERF=1 bench/gateway/small_get.sh   # also perf record -g the first GET run -> $work/perf.data
#
# With several GATEWAYS, every round runs each binary in turn on the same root (one gateway at a
# time: the root is locked), so slow drift of the machine's load hits all of them alike; the
# summary is the median over the rounds. Needs curl and python3 (URLs: bench/fuse/bench.py and
# s3sign.py); perf only for PERF=1. Exits 77 when something is missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
fuse_bench=$here/../fuse
BUILD_DIR=${BUILD_DIR:-build}
GATEWAYS=${GATEWAYS:-$BUILD_DIR/gateway/reelfs-gateway}
N=${N:-5000}
KIB=${KIB:-64}
ROUNDS=${ROUNDS:-3}
PARALLEL=${PARALLEL:-8}
PERF=${PERF:-0}
KEEP_WORK=${KEEP_WORK:-0}
# a plain interpreter: a pyenv shim costs seconds per call on a loaded machine
PYTHON=${PYTHON:-$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || command -v python3 )}

for g in $GATEWAYS; do [ -x "$g" ] || { echo "missing $g (ninja reelfs-gateway)" >&2; exit 77; }; done
for c in curl "$PYTHON"; do command -v "$c" >/dev/null || { echo "missing $c" >&2; exit 77; }; done
if [ "$PERF" = 1 ] && ! command -v perf >/dev/null; then echo "PERF=1: no perf" >&2; exit 77; fi

work=$(mktemp -d "${TMPDIR:-/tmp}/small-get.XXXXXX")
gw_pid=""
stop_gateway() {
  if [ -n "$gw_pid" ]; then kill "$gw_pid" 2>/dev/null || true; wait "$gw_pid" 2>/dev/null || true; fi
  gw_pid=""
}
cleanup() {
  stop_gateway
  if [ "$KEEP_WORK" = 1 ]; then echo "work directory kept: $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# shellcheck source=bench/fuse/lib.sh
. "$fuse_bench/lib.sh"  # bench_credentials, bench_ticks, bench_median
bench_credentials
bucket=bench
"$PYTHON" "$fuse_bench/bench.py" gen "$work/root/$bucket" --large-mib 0 --small-files "$N" \
  --small-kib "$KIB" --dir-entries 0
manifest=$work/root/small.manifest   # "small/f000000 SIZE CRC" lines

start_gateway() {  # $1: binary; sets gw_pid, endpoint
  rm -f "$work/port"
  # SIGPIPE ignored: a client closing a connection mid-sendfile would otherwise kill it.
  ( trap '' PIPE; exec "$1" --root "$work/root" --listen 127.0.0.1:0 --port-file "$work/port" \
    --access-key "$AWS_ACCESS_KEY_ID" --secret-key "$AWS_SECRET_ACCESS_KEY" --log-level warn \
    >>"$work/gateway.log" 2>&1 ) &
  gw_pid=$!
  for _ in $(seq 3000); do [ -s "$work/port" ] && break; kill -0 "$gw_pid" 2>/dev/null || break; sleep 0.1; done
  [ -s "$work/port" ] || { echo "gateway $1 did not start:" >&2; cat "$work/gateway.log" >&2; exit 1; }
  endpoint="http://127.0.0.1:$(cat "$work/port")"
}

# curl -K configs for the current endpoint: every object once, in a seeded random order.
write_configs() {
  "$PYTHON" "$fuse_bench/bench.py" curlcfg-small "$endpoint" "$bucket" "$manifest" --seed 1 \
    >"$work/get.cfg"
  "$PYTHON" - "$fuse_bench" "$endpoint" "$bucket" "$manifest" >"$work/head.cfg" <<'EOF'
import os, random, sys
sys.path.insert(0, sys.argv[1])
import s3sign
endpoint, bucket, manifest = sys.argv[2:5]
keys = [line.split()[0] for line in open(manifest)]
random.Random(1).shuffle(keys)
for k in keys:
    u = s3sign.presign(endpoint, os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"],
                       os.environ["AWS_REGION"], "HEAD", f"/{bucket}/{k}")
    print(f'url = "{u}"\noutput = "/dev/null"')
EOF
}

hz=$(getconf CLK_TCK)

# measure LABEL OP: one pass over every object; appends "LABEL OP req_per_s cpu_us_per_req".
measure() {
  local label=$1 op=$2 cfg extra=() t0 t1 c0 c1 ok want perf_pid=""
  if [ "$op" = GET ]; then cfg=$work/get.cfg; want="200 $((KIB * 1024))"
  else cfg=$work/head.cfg; extra=(--head); want="200 0"; fi
  if [ "$PERF" = 1 ] && [ "$op" = GET ] && [ ! -e "$work/perf.data" ]; then
    perf record -g -o "$work/perf.data" -p "$gw_pid" >"$work/perf.log" 2>&1 &
    perf_pid=$!
    sleep 1
  fi
  c0=$(bench_ticks "$gw_pid"); t0=$(date +%s.%N)
  curl -sS --parallel --parallel-max "$PARALLEL" "${extra[@]}" -K "$cfg" \
    -w '%{http_code} %{size_download}\n' >"$work/curl.out" 2>"$work/curl.err" || true
  t1=$(date +%s.%N); c1=$(bench_ticks "$gw_pid")
  if [ -n "$perf_pid" ]; then kill -INT "$perf_pid"; wait "$perf_pid" || true; fi
  ok=$(grep -c "^$want\$" "$work/curl.out" || true)
  if [ "$ok" != "$N" ]; then
    echo "$label $op: $ok of $N answered '$want'; first others:" >&2
    grep -v "^$want\$" "$work/curl.out" | head -3 >&2; head -3 "$work/curl.err" >&2
    exit 1
  fi
  awk -v l="$label" -v o="$op" -v n="$N" -v a="$t0" -v b="$t1" -v c=$((c1 - c0)) -v hz="$hz" \
    'BEGIN { printf "%s %s %.0f %.0f\n", l, o, n / (b - a), c / hz * 1e6 / n }' | tee -a "$work/rows"
}

echo "# $N x $KIB KiB, $PARALLEL in flight, $ROUNDS rounds; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# gateway op req_per_s gateway_cpu_us_per_req"
for r in $(seq "$ROUNDS"); do
  i=0
  for g in $GATEWAYS; do
    start_gateway "$g"
    write_configs
    # One untimed pass first: the page cache and the catalog's pages are warm for every binary.
    curl -sS --parallel --parallel-max "$PARALLEL" -K "$work/get.cfg" -o /dev/null >/dev/null 2>&1 || true
    measure "gw$i" GET
    measure "gw$i" HEAD
    stop_gateway
    i=$((i + 1))
  done
done
echo "# medians over $ROUNDS rounds"
i=0
for g in $GATEWAYS; do
  for op in GET HEAD; do
    col() { awk -v l="gw$i" -v o="$op" -v c="$1" '$1 == l && $2 == o { print $c }' "$work/rows"; }
    printf 'gw%s=%s %s %.0f req/s, %.0f us CPU/req\n' "$i" "$g" "$op" \
      "$(bench_median $(col 3))" "$(bench_median $(col 4))"
  done
  i=$((i + 1))
done
if [ "$PERF" = 1 ] && [ -e "$work/perf.data" ]; then
  KEEP_WORK=1
  echo "# perf record -g of the gateway during the first GET pass: $work/perf.data; top symbols:"
  perf report -i "$work/perf.data" --no-children --sort dso,symbol --stdio -g none 2>/dev/null \
    | grep -E '^ +[0-9]' | sed 's/ *$//' | head -40 || true
fi
