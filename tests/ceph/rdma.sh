#!/usr/bin/env bash
# ceph (issue 20): reelfs' RDMA data channel against RGW, which has no S3 over RDMA in this
# release. rgw_rdma_probe runs the real RcChannel, S3 control plane and S3 client (queue pairs
# that cannot connect: no device is needed, and none is reached, since RGW refuses the PREPARE).
# Proves: the refusal declines the endpoint, a fetch's bytes come over HTTP byte-exact, the next
# fetch goes straight to HTTP, and an RDMA PUT is declined before RGW stores anything and is
# re-sent over HTTP: the AWS CLI then reads the full object, not an empty one. RGW's answers are
# also recorded as they are (PREPARE: 501 NotImplemented; a GET with a token: 200 and the body).
# Run by tests/ceph/run.sh (E2E_SERVER=rgw).
source "$(dirname "$0")/../e2e/lib.sh"
e2e_init ceph-rdma 110
[[ -n "${REELFS_RGW_RDMA_PROBE:-}" && -x "$REELFS_RGW_RDMA_PROBE" ]] ||
  skip "REELFS_RGW_RDMA_PROBE not set (build target rgw_rdma_probe)"

mkdir -p "$ROOT/rdm"
want=$(gen_file "$ROOT/rdm/obj.bin" $((3 * 1048576 + 77)) 61)
start_gateway

step "RGW's own answers to what the channel sends (signed with botocore)"
"$PY" - "$ENDPOINT" "$ROOT/rdm/obj.bin" <<'PY' || fail "RGW's raw answers are not what the channel's decline rules expect"
import hashlib, http.client, sys, urllib.parse
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
import os
endpoint, path = sys.argv[1], sys.argv[2]
creds = Credentials(os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"])
def send(method, target, headers, body=b""):
    req = AWSRequest(method=method, url=endpoint + target, data=body, headers=headers)
    req.headers["x-amz-content-sha256"] = hashlib.sha256(body).hexdigest()
    SigV4Auth(creds, "s3", "us-east-1").add_auth(req)
    u = urllib.parse.urlsplit(endpoint)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    c.request(method, target, body=body, headers=dict(req.headers.items()))
    r = c.getresponse()
    return r.status, dict(r.getheaders()), r.read()
status, _, body = send("POST", "/.hipobj-rc/prepare", {"Content-Type": "application/json"}, b"{}")
code = body.split(b"<Code>")[1].split(b"</Code>")[0].decode() if b"<Code>" in body else ""
print(f"  POST /.hipobj-rc/prepare: {status} {code}")
assert status in (400, 404, 405, 501), "a PREPARE answer the channel would not read as a decline"
status, headers, body = send("GET", "/rdm/obj.bin",
                             {"x-amz-rdma-token": "AAAAAAAAAAAAAAAAAAAAAA", "x-amz-rdma-cookie": "1"})
rdma = {k: v for k, v in headers.items() if k.lower().startswith("x-amz-rdma")}
print(f"  GET with x-amz-rdma-token: {status}, {len(body)} bytes of body, x-amz-rdma-* {rdma or 'none'}")
assert status == 200 and not rdma and body == open(path, "rb").read(), "not the plain object"
PY

step "rgw_rdma_probe: fetch, fetch, put"
"$REELFS_RGW_RDMA_PROBE" rdm obj.bin "$ROOT/rdm/obj.bin" put/via-probe.bin | tee "$WORK/probe.out" ||
  fail "rgw_rdma_probe failed"
s3() { aws --endpoint-url "$ENDPOINT" "$@"; }
s3 s3 cp --only-show-errors s3://rdm/put/via-probe.bin "$WORK/put.back" || fail "aws cp of the put"
[[ $(sha256sum <"$WORK/put.back" | cut -d' ' -f1) == "$want" ]] ||
  fail "RGW holds other bytes than the probe put ($(stat -c %s "$WORK/put.back") bytes)"
echo "PASS"
