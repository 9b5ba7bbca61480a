#!/usr/bin/env bash
# Interop (issue 14): the archive policy of a running reelfs-gateway, checked with the AWS CLI.
# Objects PUT under ckpt/ of an archive set (`after: 1s`, batches of <= 2 objects, aws personality,
# tape hints on) are written to the set's cartridge image by the policy engine: the catalog says
# premigrated, HEAD says GLACIER with the cartridge hint, GET still serves the bytes (sha256), an
# object outside the set stays online. The admin release makes them offline: GET is 403
# InvalidObjectState. restore-object, then GET is byte-identical. The metrics count the tape
# writes next to the recalls, and the SIGTERM timeline shows "writing" intervals.
source "$(dirname "$0")/gateway_lib.sh"
command -v aws >/dev/null || skip "aws (AWS CLI) not installed"
command -v curl >/dev/null || skip "curl not installed"
curl --help all 2>/dev/null | grep -q -- --aws-sigv4 || skip "curl has no --aws-sigv4"
step() { echo "== $*"; }

cat >"$WORK/gw.yaml" <<'YAML'
archive:
  personality: aws
  hints: true
  scan_interval: 200ms
  policy:
    - name: ckpt
      bucket: pol
      prefix: ckpt/
      after: 1s
      batch_objects: 2
      cartridges: [RLT000L9]
tape:
  preset: lto9
  drives: 2
  block_bytes: 4096
  mode: scaled
  speedup: 2000
YAML
start_gateway --config "$WORK/gw.yaml" --timeline-file "$WORK/timeline.svg"

export AWS_ACCESS_KEY_ID="$GW_ACCESS_KEY" AWS_SECRET_ACCESS_KEY="$GW_SECRET_KEY"
export AWS_DEFAULT_REGION=us-east-1 AWS_CONFIG_FILE="$WORK/aws-config"
export AWS_SHARED_CREDENTIALS_FILE="$WORK/aws-credentials" AWS_PAGER=""
unset AWS_PROFILE AWS_SESSION_TOKEN AWS_ENDPOINT_URL
aws configure set default.s3.addressing_style path
AWS=(aws --endpoint-url "$ENDPOINT")
EMPTY_SHA256=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
admin() {  # admin METHOD PATH: a SigV4-signed admin request; the body on stdout
  curl -sS -f --aws-sigv4 "aws:amz:us-east-1:s3" --user "$GW_ACCESS_KEY:$GW_SECRET_KEY" \
    -H "x-amz-content-sha256: $EMPTY_SHA256" -X "$1" "$ENDPOINT/_reelfs/admin/$2"
}
states() {  # "key state" per object of bucket pol, from the catalog (read-only)
  python3 - "$ROOT/.reelfs-gateway/catalog.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True, timeout=10)
for key, state in db.execute(
        "SELECT o.key, a.state FROM objects o LEFT JOIN archive_objects a ON a.bucket = o.bucket "
        "AND a.key = o.key WHERE o.bucket = 'pol' ORDER BY o.key"):
    print(key, {None: "online", 1: "premigrated", 2: "offline"}.get(state, state))
PY
}

step "PUT 3 objects in the set (one 9 MiB multipart upload) and 1 outside it"
"${AWS[@]}" s3 mb s3://pol >/dev/null
for f in a:3000000 b:9437184 c:1; do
  head -c "${f#*:}" /dev/urandom >"$WORK/${f%%:*}.bin"
  "${AWS[@]}" s3 cp --only-show-errors "$WORK/${f%%:*}.bin" "s3://pol/ckpt/${f%%:*}.bin"
done
head -c 5000 /dev/urandom >"$WORK/out.bin"
"${AWS[@]}" s3 cp --only-show-errors "$WORK/out.bin" s3://pol/other/out.bin

step "the policy archives the set's objects (premigrated), not the other one"
for _ in $(seq 300); do
  [[ $(states | grep -c ' premigrated$') == 3 ]] && break
  sleep 0.1
done
states
[[ $(states | grep -c ' premigrated$') == 3 ]] || fail "not archived by the policy: $(states)"
# Read whole first: grep -q exits at its match and the lister's EPIPE would fail the pipe.
listing=$(states)
grep -qx 'other/out.bin online' <<<"$listing" || fail "other/out.bin archived: $(states)"
[[ -s "$ROOT/.reelfs-gateway/tapes/RLT000L9.img" ]] || fail "no cartridge image RLT000L9.img"

step "HEAD: GLACIER (aws personality), tape hint names RLT000L9; GET still serves the bytes"
"${AWS[@]}" s3api head-object --bucket pol --key ckpt/a.bin >"$WORK/head.json"
grep -q '"StorageClass": "GLACIER"' "$WORK/head.json" || fail "storage class: $(cat "$WORK/head.json")"
curl -sS -I --aws-sigv4 "aws:amz:us-east-1:s3" --user "$GW_ACCESS_KEY:$GW_SECRET_KEY" \
  -H "x-amz-content-sha256: $EMPTY_SHA256" "$ENDPOINT/pol/ckpt/a.bin" >"$WORK/head.txt"
grep -qi '^x-reelfs-tape-cartridge: RLT000L9' "$WORK/head.txt" || fail "no tape hint: $(cat "$WORK/head.txt")"
# The AWS CLI refuses a GLACIER object that is not restored unless told to try (as on AWS, where
# the GET would then fail); here the disk copy is still there and the GET succeeds.
for k in a b c; do
  "${AWS[@]}" s3 cp --only-show-errors --force-glacier-transfer "s3://pol/ckpt/$k.bin" "$WORK/$k.get"
  cmp "$WORK/$k.bin" "$WORK/$k.get" || fail "ckpt/$k.bin differs while premigrated"
done

step "metrics: tape writes (library and archive) next to the recalls; policy counters"
admin GET metrics >"$WORK/metrics.json" || fail "metrics"
python3 - "$WORK/metrics.json" <<'PY' || fail "metrics: $(cat "$WORK/metrics.json")"
import json, sys
m = json.load(open(sys.argv[1]))
t, a = m["tape"], m["archive"]
want = 3000000 + 9437184 + 1
# 3 objects in batches of at most 2: 2 writes when one scan found all 3 due, up to 3 when the
# PUTs straddled scans (each object is due 1 s after its own PUT).
batches = a["policy"]["batches"]
assert 2 <= batches <= 3 and t["writes"]["ok"] == batches, (batches, t["writes"])
assert t["bytes_written"] >= want, t["bytes_written"]
assert t["drive_time_s"]["writing"] > 0, t["drive_time_s"]
assert t["requests"]["submitted"] == 0, t["requests"]  # writes are not counted as recalls
assert a["tape_writes"] == batches and a["tape_written_bytes"] >= want, a
assert a["policy"]["archived_objects"] == 3 and a["policy"]["errors"] == 0, a["policy"]
assert a["policy"]["sets"] == ["ckpt"], a["policy"]
print("tape writes %d, %d bytes, %.1f s writing (simulated)" %
      (t["writes"]["ok"], t["bytes_written"], t["drive_time_s"]["writing"]))
PY

step "admin release: GET is 403 InvalidObjectState"
admin POST "release?bucket=pol&prefix=ckpt%2F" >/dev/null || fail "release"
[[ $(states | grep -c ' offline$') == 3 ]] || fail "not offline: $(states)"
rc=0; "${AWS[@]}" s3 cp --only-show-errors --force-glacier-transfer s3://pol/ckpt/b.bin "$WORK/b.off" 2>"$WORK/get.err" || rc=$?
[[ $rc != 0 ]] && grep -q InvalidObjectState "$WORK/get.err" || fail "GET offline: rc $rc, $(cat "$WORK/get.err")"

step "restore-object, then GET byte-identical"
for k in a b c; do
  "${AWS[@]}" s3api restore-object --bucket pol --key "ckpt/$k.bin" \
    --restore-request '{"Days":1,"GlacierJobParameters":{"Tier":"Standard"}}'
done
for k in a b c; do
  for _ in $(seq 300); do
    "${AWS[@]}" s3api head-object --bucket pol --key "ckpt/$k.bin" --query Restore --output text |
      grep -q 'ongoing-request="false"' && break
    sleep 0.1
  done
  "${AWS[@]}" s3 cp --only-show-errors "s3://pol/ckpt/$k.bin" "$WORK/$k.back"
  cmp "$WORK/$k.bin" "$WORK/$k.back" || fail "ckpt/$k.bin differs after restore"
done
admin GET metrics >"$WORK/metrics2.json"
python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); assert m["tape"]["requests"]["ok"] == 3 and m["tape"]["writes"]["ok"] >= 2, m["tape"]' \
  "$WORK/metrics2.json" || fail "recalls and writes not both counted"
# Restored copies are the releaser's, not the policy's: they stay.
sleep 1
[[ $(states | grep -c ' premigrated$') == 3 ]] || fail "restored copies released: $(states)"

step "SIGTERM: the engine stops, exit 0; the timeline shows the writes next to the reads"
stop_gateway || fail "gateway did not exit 0 on SIGTERM: $(tail -n 5 "$WORK/gateway.err")"
python3 - "$WORK/timeline.svg" <<'PY' || fail "timeline"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
titles = [e.text or "" for e in root.iter() if e.tag.endswith("title")]
writes = [t for t in titles if t.startswith("writing RLT000L9")]
reads = [t for t in titles if t.startswith("reading RLT000L9")]
assert writes, titles[:20]
assert reads, titles[:20]
print("timeline: %d writing and %d reading intervals" % (len(writes), len(reads)))
PY
echo "PASS"
