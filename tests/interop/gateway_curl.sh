#!/usr/bin/env bash
# Interop: plain curl against reelfs-gateway: unsigned requests are refused with S3 XML errors,
# presigned GETs (made by boto3 or the AWS CLI) work, HEAD errors have no body, unknown
# subresources get 501, and the identifying headers are on every response.
source "$(dirname "$0")/gateway_lib.sh"
command -v curl >/dev/null || skip "curl not installed"
PRESIGN=""
if python3 -c "import boto3" 2>/dev/null; then PRESIGN=boto3
elif command -v aws >/dev/null; then PRESIGN=aws
else skip "neither boto3 nor aws available to presign"; fi
start_gateway

mkdir -p "$ROOT/plain/docs"
printf 'hello from disk\n' >"$ROOT/plain/docs/readme.txt"  # written behind the gateway's back

presign() {  # presign METHOD KEY
  if [[ $PRESIGN == boto3 ]]; then
    python3 - "$ENDPOINT" "$1" "$2" <<'PY'
import sys, boto3
from botocore.config import Config
import os
ep, method, key = sys.argv[1:]
s3 = boto3.client("s3", endpoint_url=ep, region_name="us-east-1",
                  aws_access_key_id=os.environ["GW_ACCESS_KEY"],
                  aws_secret_access_key=os.environ["GW_SECRET_KEY"],
                  config=Config(s3={"addressing_style": "path"}, signature_version="s3v4"))
op = {"GET": "get_object", "PUT": "put_object", "HEAD": "head_object"}[method]
print(s3.generate_presigned_url(op, Params={"Bucket": "plain", "Key": key}, ExpiresIn=120))
PY
  else
    AWS_ACCESS_KEY_ID=$GW_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$GW_SECRET_KEY AWS_CONFIG_FILE=/dev/null \
      AWS_DEFAULT_REGION=us-east-1 aws --endpoint-url "$ENDPOINT" s3 presign "s3://plain/$2"
  fi
}

echo "== unsigned GET -> 403 AccessDenied XML, identifying headers"
code=$(curl -s -D "$WORK/h" -o "$WORK/b" -w '%{http_code}' "$ENDPOINT/plain/docs/readme.txt")
[[ $code == 403 ]] || fail "unsigned GET gave $code"
grep -q '<Code>AccessDenied</Code>' "$WORK/b" || fail "no AccessDenied XML: $(cat "$WORK/b")"
grep -qi '^server: reelfs-gateway (reference gateway, not for production)' "$WORK/h" || fail "Server header"
grep -qi '^x-amz-request-id: [0-9A-F]' "$WORK/h" || fail "x-amz-request-id header"
id1=$(grep -i '^x-amz-request-id' "$WORK/h")
curl -s -D "$WORK/h2" -o /dev/null "$ENDPOINT/"
[[ "$id1" != "$(grep -i '^x-amz-request-id' "$WORK/h2")" ]] || fail "request ids repeat"

echo "== unsigned HEAD -> 403 without body"
code=$(curl -s -I -o "$WORK/hh" -w '%{http_code}' "$ENDPOINT/plain/docs/readme.txt")
[[ $code == 403 ]] || fail "unsigned HEAD gave $code"

echo "== presigned GET of a file written behind the gateway's back"
url=$(presign GET docs/readme.txt)
[[ "$(curl -sf "$url")" == "hello from disk" ]] || fail "presigned GET"
etag=$(curl -sf -D - -o /dev/null "$url" | tr -d '\r' | awk -F': ' 'tolower($1)=="etag"{print $2}')
[[ "$etag" == "\"$(printf 'hello from disk\n' | md5sum | cut -d' ' -f1)\"" ]] || fail "etag $etag"

echo "== presigned GET with Range, If-None-Match"
[[ "$(curl -sf -H 'Range: bytes=6-9' "$url")" == "from" ]] || fail "range"
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Range: bytes=100-' "$url")
[[ $code == 416 ]] || fail "unsatisfiable range gave $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: $etag" "$url")
[[ $code == 304 ]] || fail "If-None-Match gave $code"

echo "== presigned PUT, then GET back"
put_url=$(presign PUT up/loaded.bin)
head -c 2000000 /dev/urandom >"$WORK/up.bin"
curl -sf -X PUT --data-binary @"$WORK/up.bin" "$put_url" -o /dev/null || fail "presigned PUT"
cmp "$ROOT/plain/up/loaded.bin" "$WORK/up.bin" || fail "PUT content differs"

echo "== presigned URL for another key is refused"
code=$(curl -s -o "$WORK/b" -w '%{http_code}' "${url/readme.txt/other.txt}")
[[ $code == 403 ]] && grep -q SignatureDoesNotMatch "$WORK/b" || fail "re-targeted URL gave $code"

echo "== an early answer to a request whose body is unread arrives (lingering close, no RST)"
head -c 33554432 /dev/zero >"$WORK/big.bin"
for i in 1 2 3; do
  code=$(curl -s -o "$WORK/b" -w '%{http_code}' -H 'Expect:' -T "$WORK/big.bin" \
    "$ENDPOINT/plain/unsigned-big.bin") || true
  [[ $code == 403 ]] && grep -q '<Code>AccessDenied</Code>' "$WORK/b" ||
    fail "unsigned 32 MiB PUT without Expect gave '$code' (round $i): $(head -c 200 "$WORK/b")"
done
[[ ! -e "$ROOT/plain/unsigned-big.bin" ]] || fail "unsigned PUT stored an object"

echo "== a client that disconnects mid-upload leaves no object and no temporary file"
big_url=$(presign PUT up/abandoned.bin)
curl -s -X PUT --limit-rate 4M --data-binary @"$WORK/big.bin" "$big_url" -o /dev/null &
curl_pid=$!
sleep 1.5
kill "$curl_pid" 2>/dev/null || true
wait "$curl_pid" 2>/dev/null || true
# Bodies go first to the gateway's own tmp/<pid>-<random>/ (`.alive` is that directory's lock).
tmp_files() { find "$ROOT/.reelfs-gateway/tmp" -type f ! -name .alive; }
for _ in $(seq 50); do
  [[ -z "$(tmp_files)" ]] && break
  sleep 0.1
done
[[ -z "$(tmp_files)" ]] || fail "temp file left: $(tmp_files)"
[[ ! -e "$ROOT/plain/up/abandoned.bin" ]] || fail "partial object visible"
rm -f "$WORK/big.bin"

echo "== a header section over 64 KiB gets 400, the gateway survives"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "X-Big: $(head -c 70000 /dev/zero | tr '\0' a)" \
  "$ENDPOINT/plain/x") || true
[[ $code == 400 ]] || fail "oversized header gave $code"

echo "== garbage HTTP gets 400, the gateway survives"
printf 'NOT HTTP AT ALL\r\n\r\n' | curl -s --max-time 2 telnet://127.0.0.1:$PORT >/dev/null || true
code=$(curl -s -o /dev/null -w '%{http_code}' "$ENDPOINT/")
[[ $code == 403 ]] || fail "gateway not answering after garbage ($code)"

stop_gateway || fail "gateway did not exit 0 on SIGTERM"

echo "== non-loopback listen refused without --allow-non-loopback"
if "$REELFS_GATEWAY_BIN" --root "$WORK/nl" --listen 0.0.0.0:0 --access-key a --secret-key b \
    >"$WORK/nl.out" 2>"$WORK/nl.err"; then
  fail "non-loopback listen accepted"
fi
grep -q "allow-non-loopback" "$WORK/nl.err" || fail "no clear message: $(cat "$WORK/nl.err")"

echo "== unknown config key refused with file:line"
printf 'listen: 127.0.0.1:0\nroot: %s\nbogus: 1\n' "$WORK/cfgroot" >"$WORK/gw.yaml"
if "$REELFS_GATEWAY_BIN" --config "$WORK/gw.yaml" >/dev/null 2>"$WORK/cfg.err"; then
  fail "unknown config key accepted"
fi
grep -q "gw.yaml:3" "$WORK/cfg.err" || fail "no file:line in error: $(cat "$WORK/cfg.err")"

echo "== --version, and --help shows the defaults"
version=$("$REELFS_GATEWAY_BIN" --version)
[[ $version =~ ^reelfs-gateway\ [0-9]+\.[0-9]+\.[0-9]+ ]] || fail "gateway --version: '$version'"
help=$("$REELFS_GATEWAY_BIN" --help)
for want in "--listen TEXT=127.0.0.1:7070" "--region TEXT=us-east-1" "--idle-timeout TEXT=60s" \
    "--multipart-expiry TEXT=7d" "--log-level TEXT=info"; do
  [[ $help == *"$want"* ]] || fail "gateway --help lacks '$want'"
done

echo "== a --root that does not exist: refused without --create, nothing created"
if "$REELFS_GATEWAY_BIN" --root "$WORK/typo" --listen 127.0.0.1:0 --access-key a --secret-key b \
    >"$WORK/typo.out" 2>"$WORK/typo.err"; then
  fail "a missing --root was served"
fi
grep -q -- "--root $WORK/typo does not exist; give --create" "$WORK/typo.err" ||
  fail "no clear message for a missing root: $(cat "$WORK/typo.err")"
[[ ! -e "$WORK/typo" ]] || fail "the missing root was created"

echo "== generated credentials: 0600 file, secret never printed"
env -u REELFS_GATEWAY_ACCESS_KEY -u REELFS_GATEWAY_SECRET_KEY "$REELFS_GATEWAY_BIN" \
  --root "$WORK/gen" --create --listen 127.0.0.1:0 --port-file "$WORK/gen.port" --log-level debug \
  >"$WORK/gen.out" 2>"$WORK/gen.err" &
GW_PID=$!
for _ in $(seq 1 100); do [[ -s "$WORK/gen.port" ]] && break; sleep 0.1; done
cred="$WORK/gen/.reelfs-gateway/credentials"
[[ -f "$cred" && "$(stat -c %a "$cred")" == 600 ]] || fail "credentials file missing or not 0600"
secret=$(sed -n 's/^aws_secret_access_key=//p' "$cred")
access=$(sed -n 's/^aws_access_key_id=//p' "$cred")
[[ -n "$secret" && -n "$access" ]] || fail "credentials file incomplete"
grep -q "$access" "$WORK/gen.err" || fail "access key not announced"
echo "== a busy port: the gateway exits 1 and leaves no credentials file"
mkdir -p "$WORK/busy"
if env -u REELFS_GATEWAY_ACCESS_KEY -u REELFS_GATEWAY_SECRET_KEY "$REELFS_GATEWAY_BIN" \
    --root "$WORK/busy" --listen "127.0.0.1:$(cat "$WORK/gen.port")" >"$WORK/busy.out" \
    2>"$WORK/busy.err"; then
  fail "a second gateway on a busy port started"
fi
[[ ! -e "$WORK/busy/.reelfs-gateway/credentials" ]] || fail "a busy port left a credentials file"
grep -q "generated credentials" "$WORK/busy.err" && fail "a gateway that did not start announced keys"
url=$(AWS_ACCESS_KEY_ID=$access AWS_SECRET_ACCESS_KEY=$secret GW_ACCESS_KEY=$access \
  GW_SECRET_KEY=$secret presign GET nothing/here 2>/dev/null || true)
curl -s "$url" >/dev/null || true
stop_gateway || fail "gateway (generated credentials) did not exit 0 on SIGTERM"
if grep -qF -- "$secret" "$WORK/gen.out" "$WORK/gen.err"; then fail "secret printed"; fi
if grep -q "X-Amz-Signature" "$WORK/gen.err"; then fail "presigned query logged"; fi
echo "PASS: gateway_curl"
