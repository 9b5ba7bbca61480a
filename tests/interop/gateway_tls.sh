#!/usr/bin/env bash
# Interop (issue 16): reelfs-gateway over TLS (--tls-cert/--tls-key) with verification on.
# Proves: with a CA made here (openssl), the AWS CLI (--ca-bundle) and reelfs (--ca-bundle, and
# AWS_CA_BUNDLE) upload and download byte-exact over https, large bodies included (sent through
# TLS, not sendfile); a reelfs mount over https reads a file byte-exact; without the CA, and with
# another CA, reelfs refuses with a message that names the certificate and how to trust it;
# --no-verify-tls connects; a plain-http client on the TLS port is dropped and the gateway goes
# on serving; --tls-cert without --tls-key is refused at start.
source "$(dirname "$0")/gateway_lib.sh"
command -v openssl >/dev/null || skip "openssl not installed"
command -v curl >/dev/null || skip "curl not installed"
command -v aws >/dev/null || skip "aws (AWS CLI) not installed"
[[ -n "${REELFS_BIN:-}" && -x "$REELFS_BIN" ]] || skip "REELFS_BIN not set (build target reelfs)"

echo "== a CA, a server certificate for 127.0.0.1 signed by it, and another CA"
P=$WORK/pki; mkdir -p "$P"
make_ca() {  # make_ca NAME
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=reelfs test $1" \
    -keyout "$P/$1.key" -out "$P/$1.pem" 2>/dev/null || fail "openssl: CA $1"
}
make_ca ca
make_ca other-ca
openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout "$P/srv.key" \
  -out "$P/srv.csr" 2>/dev/null || fail "openssl: server key"
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >"$P/ext"
openssl x509 -req -in "$P/srv.csr" -CA "$P/ca.pem" -CAkey "$P/ca.key" -CAcreateserial -days 2 \
  -extfile "$P/ext" -out "$P/srv.pem" 2>/dev/null || fail "openssl: sign the server certificate"

rc=0
"$REELFS_GATEWAY_BIN" --root "$ROOT" --create --listen 127.0.0.1:0 --tls-cert "$P/srv.pem" \
  >"$WORK/half.out" 2>&1 || rc=$?
[[ $rc != 0 ]] && grep -q -- "--tls-cert and --tls-key go together" "$WORK/half.out" ||
  fail "--tls-cert alone: exit $rc: $(cat "$WORK/half.out")"

mkdir -p "$ROOT/tls"
GW_SCHEME=https start_gateway 0 --tls-cert "$P/srv.pem" --tls-key "$P/srv.key"
[[ $ENDPOINT == https://* ]] || fail "endpoint $ENDPOINT"
echo "  gateway on $ENDPOINT"

echo "== curl: verified with the CA, refused without it"
code=$(curl -s --cacert "$P/ca.pem" -o /dev/null -w '%{http_code}' "$ENDPOINT/metrics") ||
  fail "curl with the CA failed"
[[ $code == 200 ]] || fail "GET /metrics over https: $code"
rc=0; curl -s -o /dev/null "$ENDPOINT/metrics" || rc=$?
[[ $rc == 60 ]] || fail "curl without the CA: exit $rc (60: certificate not trusted)"
rc=0; curl -s -o /dev/null -m 10 "http://127.0.0.1:$PORT/metrics" || rc=$?
[[ $rc != 0 ]] || fail "plain http on the TLS port got an answer"
curl -s --cacert "$P/ca.pem" -o /dev/null "$ENDPOINT/metrics" || fail "gateway gone after a plain-http client"
echo "  ok"

export AWS_ACCESS_KEY_ID=$GW_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$GW_SECRET_KEY
export AWS_DEFAULT_REGION=us-east-1 AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null

echo "== AWS CLI over https (--ca-bundle): 12 MiB up and down, byte-exact"
head -c $((12 * 1024 * 1024 + 5)) /dev/urandom >"$WORK/obj"
aws --endpoint-url "$ENDPOINT" --ca-bundle "$P/ca.pem" s3 cp --only-show-errors "$WORK/obj" \
  s3://tls/obj || fail "aws s3 cp up"
aws --endpoint-url "$ENDPOINT" --ca-bundle "$P/ca.pem" s3 cp --only-show-errors s3://tls/obj \
  "$WORK/aws.back" || fail "aws s3 cp down"
cmp -s "$WORK/obj" "$WORK/aws.back" || fail "the AWS CLI's download differs"
echo "  ok"

echo "== reelfs over https: --ca-bundle and AWS_CA_BUNDLE"
"$REELFS_BIN" --endpoint "$ENDPOINT" --ca-bundle "$P/ca.pem" cp s3://tls/obj "$WORK/r1" ||
  fail "reelfs cp --ca-bundle"
cmp -s "$WORK/obj" "$WORK/r1" || fail "reelfs cp (--ca-bundle) differs"
AWS_CA_BUNDLE=$P/ca.pem "$REELFS_BIN" --endpoint "$ENDPOINT" cat s3://tls/obj >"$WORK/r2" ||
  fail "reelfs cat with AWS_CA_BUNDLE"
cmp -s "$WORK/obj" "$WORK/r2" || fail "reelfs cat (AWS_CA_BUNDLE) differs"
head -c 3000000 /dev/urandom >"$WORK/up"
"$REELFS_BIN" --endpoint "$ENDPOINT" --ca-bundle "$P/ca.pem" cp "$WORK/up" s3://tls/up ||
  fail "reelfs upload over https"
cmp -s "$WORK/up" "$ROOT/tls/up" || fail "the upload over https differs"
echo "  ok"

echo "== reelfs without the CA, and with another CA: refused, saying why"
for ca in none other; do
  rc=0
  if [[ $ca == none ]]; then
    out=$("$REELFS_BIN" --endpoint "$ENDPOINT" ls s3://tls/ 2>&1) || rc=$?
  else
    out=$("$REELFS_BIN" --endpoint "$ENDPOINT" --ca-bundle "$P/other-ca.pem" ls s3://tls/ 2>&1) || rc=$?
  fi
  [[ $rc != 0 ]] || fail "listing over https with CA '$ca' succeeded"
  [[ $out == *certificate* && $out == *--ca-bundle* ]] || fail "CA '$ca': message: $out"
  echo "  $ca: exit $rc: $out"
done
"$REELFS_BIN" --endpoint "$ENDPOINT" --no-verify-tls ls s3://tls/ | grep -q obj ||
  fail "--no-verify-tls did not connect"

if [[ -c /dev/fuse ]] && command -v fusermount3 >/dev/null; then
  echo "== a mount over https reads the object byte-exact"
  mkdir -p "$WORK/mnt"
  "$REELFS_BIN" mount tls "$WORK/mnt" --endpoint "$ENDPOINT" --ca-bundle "$P/ca.pem" \
    --log-file "$WORK/mount.log" </dev/null >"$WORK/mount.out" 2>&1 || fail "mount: $(cat "$WORK/mount.out")"
  trap 'fusermount3 -u "$WORK/mnt" 2>/dev/null || true; cleanup' EXIT
  cmp -s "$WORK/obj" "$WORK/mnt/obj" || fail "read through the https mount differs"
  fusermount3 -u "$WORK/mnt" || fail "unmount"
  echo "  ok"
  rc=0
  out=$("$REELFS_BIN" mount tls "$WORK/mnt" --endpoint "$ENDPOINT" 2>&1) || rc=$?
  [[ $rc == 1 && $out == *certificate* ]] || fail "a mount without the CA: exit $rc: $out"
  echo "  without the CA: exit 1: $out"
fi
stop_gateway || fail "gateway did not exit 0 on SIGTERM"
echo "PASS: gateway_tls"
