#!/usr/bin/env bash
# Interop: HTTP fault scenarios seen by a third-party client (curl with SigV4): a GET cut by
# `reset_after` ends with a TCP reset (curl exit 56, "Connection reset"), never a clean end; the
# nth-request 503 SlowDown rule answers S3 XML; the next requests get the right bytes.
source "$(dirname "$0")/gateway_lib.sh"
command -v curl >/dev/null || skip "curl not installed"
curl --help all 2>/dev/null | grep -q -- --aws-sigv4 || skip "curl has no --aws-sigv4"

mkdir -p "$ROOT/faults"
head -c 4000000 /dev/urandom >"$ROOT/faults/obj.bin"   # written behind the gateway's back
want=$(sha256sum <"$ROOT/faults/obj.bin" | cut -d' ' -f1)
cat >"$WORK/gw.yaml" <<YAML
faults:
  http:
    - op: GetObject
      nth: 1
      reset_after: 1MiB
    - op: HeadObject
      nth: 1
      error: SlowDown
YAML
start_gateway --config "$WORK/gw.yaml"
# curl 7.88 does not send x-amz-content-sha256, which S3 requires on header-signed requests; it
# signs the one given here (the empty body's hash: these requests have none).
EMPTY_SHA256=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
s3_signed() { curl -sS --aws-sigv4 "aws:amz:us-east-1:s3" --user "$GW_ACCESS_KEY:$GW_SECRET_KEY" "$@"; }
s3() { s3_signed -H "x-amz-content-sha256: $EMPTY_SHA256" "$@"; }

echo "== first GET: reset after 1 MiB of the body"
rc=0
s3 -o "$WORK/part" "$ENDPOINT/faults/obj.bin" 2>"$WORK/err" || rc=$?
[[ $rc == 56 ]] || fail "curl exit $rc, wanted 56 (reset): $(cat "$WORK/err")"
grep -qi "reset" "$WORK/err" || fail "no reset in curl's error: $(cat "$WORK/err")"
got=$(stat -c %s "$WORK/part" 2>/dev/null || echo 0)
# Not "at least 1 MiB": a reset makes the receiving kernel drop what the client had not read yet.
(( got < 4000000 )) || fail "got the whole object ($got bytes) despite the reset"

echo "== second GET: whole object, bytes verified"
[[ $(s3 "$ENDPOINT/faults/obj.bin" | sha256sum | cut -d' ' -f1) == "$want" ]] || fail "bytes differ"

echo "== first HEAD: 503 SlowDown; second: 200"
code=$(s3 -I -o /dev/null -w '%{http_code}' "$ENDPOINT/faults/obj.bin")
[[ $code == 503 ]] || fail "first HEAD gave $code"
code=$(s3 -I -o /dev/null -w '%{http_code}' "$ENDPOINT/faults/obj.bin")
[[ $code == 200 ]] || fail "second HEAD gave $code"
echo "PASS"
