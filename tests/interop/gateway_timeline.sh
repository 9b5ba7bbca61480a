#!/usr/bin/env bash
# Interop: the tape timeline written to a file at shutdown (--timeline-file) after a real recall:
# `reelfs-gateway archive --release` puts an object on a tape image, curl (SigV4) restores it
# through the aws personality, the bytes come back, and the SVG shows the drive that read it.
source "$(dirname "$0")/gateway_lib.sh"
command -v curl >/dev/null || skip "curl not installed"
curl --help all 2>/dev/null | grep -q -- --aws-sigv4 || skip "curl has no --aws-sigv4"

mkdir -p "$ROOT/tapes"
head -c 3000000 /dev/urandom >"$ROOT/tapes/obj.bin"
want=$(sha256sum <"$ROOT/tapes/obj.bin" | cut -d' ' -f1)
archive_tapes 100000 1
start_gateway --config "$WORK/gw.yaml" --timeline-file "$WORK/timeline.svg"
# curl 7.88 does not send x-amz-content-sha256, which S3 requires on header-signed requests; it
# signs the one given here (the empty body's hash: these requests have none).
EMPTY_SHA256=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
s3_signed() { curl -sS --aws-sigv4 "aws:amz:us-east-1:s3" --user "$GW_ACCESS_KEY:$GW_SECRET_KEY" "$@"; }
s3() { s3_signed -H "x-amz-content-sha256: $EMPTY_SHA256" "$@"; }

echo "== offline: GET is 403 InvalidObjectState"
code=$(s3 -o "$WORK/b" -w '%{http_code}' "$ENDPOINT/tapes/obj.bin")
[[ $code == 403 ]] && grep -q InvalidObjectState "$WORK/b" || fail "GET offline gave $code: $(cat "$WORK/b")"

echo "== restore (202), then wait for the recall"
body='<RestoreRequest><Days>1</Days><GlacierJobParameters><Tier>Standard</Tier></GlacierJobParameters></RestoreRequest>'
# curl 7.88 signs neither the body (no x-amz-content-sha256, which S3 requires) nor a bare
# `?restore` the way SigV4 canonicalizes it (`restore=`): give it both explicitly.
sha=$(printf '%s' "$body" | sha256sum | cut -d' ' -f1)
code=$(s3_signed -o "$WORK/b" -w '%{http_code}' -X POST -H 'Content-Type: application/xml' \
  -H "x-amz-content-sha256: $sha" --data-binary "$body" "$ENDPOINT/tapes/obj.bin?restore=")
[[ $code == 202 ]] || fail "RestoreObject gave $code: $(cat "$WORK/b")"
for _ in $(seq 1 200); do
  s3 -I "$ENDPOINT/tapes/obj.bin" | grep -qi 'x-amz-restore: ongoing-request="false"' && break
  sleep 0.1
done
got=$(s3 "$ENDPOINT/tapes/obj.bin" | sha256sum | cut -d' ' -f1)
[[ $got == "$want" ]] || fail "restored bytes differ"

echo "== SIGTERM writes the timeline"
stop_gateway
[[ -s "$WORK/timeline.svg" ]] || fail "no timeline file: $(cat "$WORK/gateway.err")"
head -c 400 "$WORK/timeline.svg" | grep -q '<svg' || fail "not an SVG"
grep -q '</svg>' "$WORK/timeline.svg" || fail "SVG not complete"
python3 - "$WORK/timeline.svg" <<'PY' || fail "timeline does not parse or shows no drive activity"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
rects = [e for e in root.iter() if e.tag.endswith("rect")]
text = " ".join((e.text or "") for e in root.iter() if e.tag.endswith("text"))
assert len(rects) > 3, len(rects)
assert "drive" in text.lower(), text[:200]
PY
echo "PASS"
