#!/usr/bin/env bash
# Interop (issue 16): the gateway's Prometheus exposition checked by promtool (Prometheus's own
# linter, from Debian's prometheus package; scripts/setup.sh extracts it, tests/tools/promtool).
# Proves: an unsigned GET /metrics answers 200 text/plain version 0.0.4 that promtool accepts
# with no lint; the counters move with traffic (a PUT and a GET through the AWS CLI: requests by
# method and code, bytes both ways, the duration histogram's count); the tape, archive and
# multipart families are there; a signed request for a bucket named "metrics" is still S3
# (NoSuchBucket), not the exposition. The gateway runs with --log-format json: every line it
# logged parses as one JSON object.
source "$(dirname "$0")/gateway_lib.sh"
PROMTOOL=${REELFS_PROMTOOL:-$(cd "$(dirname "$0")/.." && pwd)/tools/promtool}
[[ -x $PROMTOOL ]] || skip "promtool not found at $PROMTOOL (scripts/setup.sh extracts it)"
command -v curl >/dev/null || skip "curl not installed"
command -v aws >/dev/null || skip "aws (AWS CLI) not installed"
mkdir -p "$ROOT/met"
GW_LOG_LEVEL=debug start_gateway 0 --log-format json
export AWS_ACCESS_KEY_ID=$GW_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$GW_SECRET_KEY
export AWS_DEFAULT_REGION=us-east-1 AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null
s3() { aws --endpoint-url "$ENDPOINT" "$@"; }

scrape() {  # scrape FILE: GET /metrics, checked by promtool
  local code
  code=$(curl -s -D "$1.h" -o "$1" -w '%{http_code}' "$ENDPOINT/metrics")
  [[ $code == 200 ]] || fail "GET /metrics: $code $(head -c 300 "$1")"
  grep -qi '^content-type: text/plain; version=0.0.4' "$1.h" || fail "content type: $(cat "$1.h")"
  "$PROMTOOL" check metrics <"$1" >"$1.lint" 2>&1 || fail "promtool: $(cat "$1.lint")"
}
value() {  # value FILE SAMPLE-PREFIX: the sum of the matching samples
  awk -v p="$2" 'index($0, p) == 1 { s += $NF } END { print s + 0 }' "$1"
}

echo "== unsigned GET /metrics: promtool accepts it"
scrape "$WORK/m0"
for family in reelfs_gateway_http_requests_total reelfs_gateway_http_request_duration_seconds \
    reelfs_gateway_tape_recalls_total reelfs_gateway_tape_drive_seconds_total \
    reelfs_gateway_archive_recalls_submitted_total reelfs_gateway_multipart_expired_uploads_total; do
  grep -q "^# TYPE $family " "$WORK/m0" || fail "no family $family"
done
echo "  $(grep -c '^# TYPE' "$WORK/m0") families, promtool: clean"

echo "== traffic moves the counters"
head -c 1000000 /dev/urandom >"$WORK/obj"
s3 s3 cp --only-show-errors "$WORK/obj" s3://met/obj || fail "aws s3 cp up"
s3 s3 cp --only-show-errors s3://met/obj "$WORK/back" || fail "aws s3 cp down"
cmp -s "$WORK/obj" "$WORK/back" || fail "object differs"
scrape "$WORK/m1"
puts=$(value "$WORK/m1" 'reelfs_gateway_http_requests_total{method="PUT",code="200"}')
gets=$(value "$WORK/m1" 'reelfs_gateway_http_requests_total{method="GET",code="200"}')
in=$(value "$WORK/m1" reelfs_gateway_http_received_bytes_total)
out=$(value "$WORK/m1" reelfs_gateway_http_sent_bytes_total)
n0=$(value "$WORK/m0" reelfs_gateway_http_request_duration_seconds_count)
n1=$(value "$WORK/m1" reelfs_gateway_http_request_duration_seconds_count)
(( puts >= 1 && gets >= 1 )) || fail "PUT 200 $puts, GET 200 $gets"
(( in >= 1000000 && out >= 1000000 )) || fail "bytes received $in, sent $out (1 MB each way)"
(( n1 >= n0 + 3 )) || fail "duration histogram count $n0 -> $n1"
echo "  PUT 200: $puts, GET 200: $gets, in $in B, out $out B, requests $n0 -> $n1"

echo "== a signed request for a bucket named metrics is S3, not the exposition"
out=$(s3 s3api list-objects-v2 --bucket metrics 2>&1) && fail "listing a missing bucket succeeded"
[[ $out == *NoSuchBucket* ]] || fail "signed GET /metrics: $out"
stop_gateway || fail "gateway did not exit 0 on SIGTERM"

echo "== --log-format json: the gateway's log is JSON lines"
python3 - "$WORK/gateway.err" <<'PY' || fail "the gateway's JSON log: see above"
import json, sys
docs = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8").read().splitlines()]
assert docs, "nothing logged at debug"
for d in docs:
    assert set(d) == {"time", "level", "subject", "msg"}, d
print(f"  ok ({len(docs)} lines, levels {sorted({d['level'] for d in docs})})")
PY
echo "PASS: gateway_metrics"
