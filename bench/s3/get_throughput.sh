#!/usr/bin/env bash
# GET throughput on loopback: the reelfs S3 client vs curl, same object, same gateway, one run.
#
#   bench/s3/get_throughput.sh [SIZE_MIB=1024] [ROUNDS=3]
#
# Starts reelfs-gateway on a temporary root, uploads one SIZE_MIB object, then for ROUNDS rounds
# runs, in turn:
#   curl     one stream, whole object, presigned URL, body to /dev/null
#   curl x8  eight curl processes, each one eighth of the object as a ranged GET (--range)
#   reelfs   8 MiB ranged GETs, 1 in flight   (reelfs-s3-bench get --concurrency 1)
#   reelfs   8 MiB ranged GETs, 8 in flight   (reelfs-s3-bench get --concurrency 8)
#   and the same two through libcurl's receive path (--no-direct-get; docs/s3-client.md
#   "Direct GETs")
# and prints the median MiB/s of each with its ratio to single-stream curl (machines are noisy:
# compare ratios, not absolute numbers). Needs a build in build/ (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
size_mib=${1:-1024}
rounds=${2:-3}
gw=build/gateway/reelfs-gateway
bench=build/bench/reelfs-s3-bench
for b in "$gw" "$bench"; do [ -x "$b" ] || { echo "missing $b: run scripts/setup.sh" >&2; exit 1; }; done

work=$(mktemp -d /tmp/reelfs-bench.XXXXXX)
gw_pid=""
cleanup() { [ -n "$gw_pid" ] && kill "$gw_pid" 2>/dev/null && wait "$gw_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT INT TERM

# shellcheck source=bench/fuse/lib.sh
. bench/fuse/lib.sh  # bench_credentials, bench_median
bench_credentials
mkdir -p "$work/root"
"$gw" --root "$work/root" --listen 127.0.0.1:0 --port-file "$work/port" \
  --access-key "$AWS_ACCESS_KEY_ID" --secret-key "$AWS_SECRET_ACCESS_KEY" \
  --log-level warn ${GATEWAY_THREADS:+--threads "$GATEWAY_THREADS"} >"$work/gateway.log" 2>&1 &
gw_pid=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || { echo "gateway did not start" >&2; cat "$work/gateway.log" >&2; exit 1; }
endpoint="http://127.0.0.1:$(cat "$work/port")"

size=$((size_mib * 1024 * 1024))
head -c "$size" /dev/urandom >"$work/object"
"$bench" put --endpoint "$endpoint" --bucket bench --key object.bin --file "$work/object" --part 64MiB
rm -f "$work/object"  # keep the page cache for the gateway's copy
url=$("$bench" presign --endpoint "$endpoint" --bucket bench --key object.bin)

mibs() { awk -v b="$size" -v s="$1" 'BEGIN { printf "%.1f", b / 1048576 / s }'; }
run_curl1() {
  local t
  t=$(curl -sS -f -o /dev/null -w '%{time_total}' "$url")
  mibs "$t"
}
run_curl8() {
  local part=$((size / 8)) start end i t0 t1
  t0=$(date +%s.%N)
  for i in $(seq 0 7); do
    start=$((i * part)); end=$((i == 7 ? size - 1 : start + part - 1))
    curl -sS -f -o /dev/null --range "$start-$end" "$url" &
  done
  wait
  t1=$(date +%s.%N)
  mibs "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')"
}
run_reelfs() {  # CONCURRENCY [--no-direct-get]
  "$bench" get --endpoint "$endpoint" --bucket bench --key object.bin --concurrency "$1" \
    --part 8MiB ${2:-} | sed -E 's/.*"mib_per_s":([0-9.]+).*/\1/'
}

declare -A results
run_curl1 >/dev/null  # warm-up: page cache and connection set-up
for r in $(seq "$rounds"); do
  results[curl1]+="$(run_curl1) "
  results[curl8]+="$(run_curl8) "
  results[reelfs1]+="$(run_reelfs 1) "
  results[reelfs8]+="$(run_reelfs 8) "
  results[curlpath1]+="$(run_reelfs 1 --no-direct-get) "
  results[curlpath8]+="$(run_reelfs 8 --no-direct-get) "
done
base=$(bench_median ${results[curl1]})
printf '| client | streams | MiB/s (median of %d) | vs curl 1 stream | all rounds |\n' "$rounds"
printf '|---|---|---|---|---|\n'
for k in curl1 curl8 reelfs1 reelfs8 curlpath1 curlpath8; do
  m=$(bench_median ${results[$k]})
  case $k in
    curl1) name="curl (whole object)"; n=1 ;; curl8) name="curl (8 ranged processes)"; n=8 ;;
    reelfs1) name="reelfs client (8 MiB ranges)"; n=1 ;; reelfs8) name="reelfs client (8 MiB ranges)"; n=8 ;;
    curlpath1|curlpath8) name="reelfs client, libcurl's receive (--no-direct-get)"; n=${k#curlpath} ;;
  esac
  printf '| %s | %d | %s | %s | %s|\n' "$name" "$n" "$m" \
    "$(awk -v a="$m" -v b="$base" 'BEGIN { printf "%.2f", a / b }')" "${results[$k]}"
done
