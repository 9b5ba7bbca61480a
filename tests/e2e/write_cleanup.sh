#!/usr/bin/env bash
# e2e (issue 14): incomplete multipart uploads a killed writer leaves on the gateway are cleaned
# up, both ways, checked through the AWS CLI (list-multipart-uploads, head-object):
#  - the mount daemon SIGKILLed mid-write leaves an upload (its parts on the gateway's disk); a
#    remount with --abort-stale-uploads=10s aborts it in the background (its parts freed, no
#    object), and keeps an upload younger than that (another writer's, in progress);
#  - the same left-behind upload is expired by the gateway itself (--multipart-expiry=3s): gone
#    from the listing, its parts freed, an INFO line, counted in the admin metrics;
#  - a mount whose keys the server stops accepting (the gateway restarted with another secret):
#    a write (cp) fails with EACCES, nothing is stored and no upload is left.
source "$(dirname "$0")/lib.sh"
e2e_init write_cleanup 270
export LC_ALL=C
command -v aws >/dev/null || skip "aws (AWS CLI) not installed"

mkdir -p "$ROOT/wcl"
echo "keep" >"$ROOT/wcl/keep.txt"
start_gateway

s3() { aws --endpoint-url "$ENDPOINT" "$@"; }
# uploads KEY: the upload ids the gateway lists for KEY, through the AWS CLI.
uploads() {
  s3 s3api list-multipart-uploads --bucket wcl --output json >"$WORK/lmu.json" ||
    fail "list-multipart-uploads"
  "$PY" - "$1" "$WORK/lmu.json" <<'PY'
import json, sys
text = open(sys.argv[2]).read().strip()
for u in (json.loads(text) if text else {}).get("Uploads", []):
    if u["Key"] == sys.argv[1]:
        print(u["UploadId"])
PY
}
no_object() {  # no_object KEY: head-object says 404
  local out
  out=$(s3 s3api head-object --bucket wcl --key "$1" 2>&1) && fail "object $1 exists: $out"
  [[ $out == *"404"* || $out == *"Not Found"* ]] || fail "head-object $1: $out"
}
staged_bytes() { du -sb "$ROOT/.reelfs-gateway/uploads" | cut -f1; }
# log_has FILE TEXT: waits (up to 60 s) for TEXT in FILE; the background work has no other signal.
log_has() {
  local i
  for i in $(seq 600); do
    grep -qF -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  fail "no '$2' in $1 within 60 s: $(tail -n 5 "$1" 2>/dev/null)"
}

# kill_mid_write KEY: writes 40 MiB to KEY through the mount and holds it open; once the gateway
# lists an upload for KEY (parts are on its disk), SIGKILLs the mount daemon. Sets LEFT_ID to the
# upload id.
kill_mid_write() {
  local key=$1 wpid i id=""
  "$PY" -c "
import os, time
fd = os.open('$MNT/$key', os.O_WRONLY | os.O_CREAT)
for _ in range(5):
    os.write(fd, os.urandom(8 << 20))
print('written', flush=True)
time.sleep(60)" >"$WORK/writer.out" 2>&1 &
  wpid=$!
  for i in $(seq 300); do
    grep -q written "$WORK/writer.out" && id=$(uploads "$key") && [[ -n $id ]] && break
    kill -0 "$wpid" 2>/dev/null || fail "the writer died: $(cat "$WORK/writer.out")"
    sleep 0.1
  done
  [[ -n $id ]] || fail "no upload listed for $key after the writer wrote 40 MiB"
  kill -KILL "$MOUNT_PID"
  wait "$MOUNT_PID" 2>/dev/null || true
  kill "$wpid" 2>/dev/null || true
  wait "$wpid" 2>/dev/null || true
  unmount_dir "$MNT"
  LEFT_ID=$id
}

step "the mount daemon SIGKILLed mid-write leaves an incomplete upload (AWS CLI lists it)"
mount_bucket wcl
kill_mid_write big.bin
stale_id=$LEFT_ID
[[ $(uploads big.bin) == "$stale_id" ]] || fail "the left upload is not listed"
no_object big.bin
bytes=$(staged_bytes)
echo "  upload $stale_id left, $bytes bytes of parts on the gateway's disk"
(( bytes >= 8 << 20 )) || fail "expected at least one 8 MiB part staged, found $bytes bytes"

step "remount with --abort-stale-uploads=10s: the stale upload is aborted, a younger one kept"
# The left upload must be older than 10 s when the mount starts, the young one (made just before
# the mount) younger: 10 s leaves the mount's start-up that much slack on a loaded machine.
sleep 11
young_id=$(s3 s3api create-multipart-upload --bucket wcl --key young.bin --query UploadId \
  --output text) || fail "create-multipart-upload young.bin"
mount_bucket wcl --abort-stale-uploads=10s --log-level debug
# The sweep runs in the background: wait (up to 60 s) until the AWS CLI no longer lists it.
for _ in $(seq 600); do [[ -z $(uploads big.bin) ]] && break; sleep 0.1; done
[[ -z $(uploads big.bin) ]] || fail "the stale upload is still listed 60 s after the mount"
[[ $(uploads young.bin) == "$young_id" ]] || fail "the young upload was aborted too"
no_object big.bin
[[ ! -e $ROOT/.reelfs-gateway/uploads/$stale_id ]] || fail "the stale upload's parts are on disk"
echo "  staged bytes now $(staged_bytes) (was $bytes)"
[[ $(cat "$MNT/keep.txt") == keep ]] || fail "the mount does not serve keep.txt"
unmount_and_wait "$MNT" "$MOUNT_PID"  # flushes the log (INFO lines are written at exit)
grep -qF "stale multipart uploads under s3://wcl/: 1 aborted, 1 kept" "$WORK/mount.log" ||
  fail "no INFO line with the sweep's count"
grep -qF "aborted stale upload $stale_id of s3://wcl/big.bin" "$WORK/mount.log" ||
  fail "no DEBUG line naming the aborted upload"

step "the gateway's own expiry (--multipart-expiry=3s) aborts an upload left behind"
mount_bucket wcl
kill_mid_write big2.bin
stale_id=$LEFT_ID
bytes=$(staged_bytes)
(( bytes >= 8 << 20 )) || fail "expected at least one 8 MiB part staged, found $bytes bytes"
kill -TERM "$GW_PID"; wait "$GW_PID" || fail "gateway did not exit 0 on SIGTERM"
GW_LOG_LEVEL=info start_gateway "$PORT" --multipart-expiry=3s
# young.bin's upload (older than 3 s) goes at start, big2.bin's within a sweep or two.
for _ in $(seq 600); do [[ -z $(uploads big2.bin) ]] && break; sleep 0.1; done
[[ -z $(uploads big2.bin) ]] || fail "the expired upload is still listed after 60 s"
[[ -z $(uploads young.bin) ]] || fail "young.bin's upload did not expire"
no_object big2.bin
left=$(find "$ROOT/.reelfs-gateway/uploads" -type f | wc -l)
[[ $left == 0 ]] || fail "$left part file(s) left after expiry"
echo "  staged bytes now $(staged_bytes) (was $bytes)"
if curl --help all 2>/dev/null | grep -q -- --aws-sigv4; then
  curl -sS --aws-sigv4 "aws:amz:us-east-1:s3" --user "$GW_ACCESS_KEY:$GW_SECRET_KEY" \
    -H "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" \
    "$ENDPOINT/_reelfs/admin/metrics" >"$WORK/metrics.json" || fail "admin metrics"
  "$PY" - "$WORK/metrics.json" "$bytes" <<'PY' || fail "metrics: $(cat "$WORK/metrics.json")"
import json, sys
m = json.load(open(sys.argv[1]))["multipart"]
print("  admin metrics:", m)
# The parts' bytes: at least the one 8 MiB part seen, at most what du counted (directories too).
assert m["expired_uploads"] == 2 and 8 << 20 <= m["expired_bytes"] <= int(sys.argv[2]), m
PY
else
  echo "  (curl has no --aws-sigv4: admin metrics not checked)"
fi

step "credentials refused after the mount: cp fails with EACCES, nothing stored, no upload left"
head -c 3000000 /dev/urandom >"$WORK/small.bin"
# A mount with wrong keys is refused (errors.sh); keys the server stops accepting later are what
# a mount meets: the gateway comes back on the same port with another secret.
mount_bucket wcl --negative-ttl 0
kill -TERM "$GW_PID"; wait "$GW_PID" || fail "gateway did not exit 0 on SIGTERM"
GW_SECRET_KEY="rotated-$GW_SECRET_KEY" GW_LOG_LEVEL=info start_gateway "$PORT" --multipart-expiry=3s
out=$(cp "$WORK/small.bin" "$MNT/denied.bin" 2>&1) && fail "cp with a wrong secret succeeded"
[[ $out == *"Permission denied"* ]] || fail "cp with a wrong secret: '$out'"
# Where it fails: open(O_CREAT) needs to know the name is free, which the server refuses.
stage=$("$PY" -c "
import errno, os
try:
    fd = os.open('$MNT/denied2.bin', os.O_WRONLY | os.O_CREAT)
except OSError as e:
    print('open', errno.errorcode[e.errno]); raise SystemExit
try:
    os.write(fd, b'x' * 100000)
except OSError as e:
    print('write', errno.errorcode[e.errno]); raise SystemExit
try:
    os.close(fd)
except OSError as e:
    print('close', errno.errorcode[e.errno]); raise SystemExit
print('ok')")
echo "  a write with a wrong secret: $stage"
[[ $stage == *EACCES ]] || fail "write with a wrong secret: $stage (expected EACCES)"
unmount_and_wait "$MNT" "$MOUNT_PID"
kill -TERM "$GW_PID"; wait "$GW_PID" || fail "gateway did not exit 0 on SIGTERM"
GW_LOG_LEVEL=info start_gateway "$PORT" --multipart-expiry=3s
no_object denied.bin
no_object denied2.bin
[[ -z $(uploads denied.bin)$(uploads denied2.bin) ]] || fail "an upload was left by the denied write"

step "the gateway logged each expired upload (INFO)"
kill -TERM "$GW_PID"; wait "$GW_PID" || fail "gateway did not exit 0 on SIGTERM"
GW_PID=""
for id in "$stale_id of wcl/big2.bin" "$young_id of wcl/young.bin"; do
  grep -qF "expired multipart upload $id" "$WORK/gateway.out" "$WORK/gateway.err" ||
    fail "no INFO line for expired upload $id"
done
echo "PASS: write_cleanup"
