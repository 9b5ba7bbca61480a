#!/usr/bin/env python3
"""Interop (issue 17, security 1-4): a real reelfs-gateway attacked with requests botocore signs.

1. x-amz-* headers added after signing (header auth and a presigned PUT URL) -> 403 AccessDenied,
   nothing acted on.
2. x-amz-content-sha256 values: an upper-case hash of other data -> XAmzContentSHA256Mismatch,
   'zz-not-hex' -> InvalidArgument, nothing stored; the right hash in upper case is stored.
3. aws-chunked STREAMING-AWS4-HMAC-SHA256-PAYLOAD with a seed signed by botocore and chunk
   signatures chained from it: stored; a chunk signed 000...0 -> 403 SignatureDoesNotMatch,
   nothing stored; a wrong x-amz-checksum-crc32 -> 400 BadDigest. Then whatever boto3 itself sends for put_object / upload_file (checksums,
   aws-chunked where it uses it) must still be accepted, byte for byte.
4. A directory symlink planted in the root: GET/HEAD through it -> 404 NoSuchKey.

Exits 77 (skip) when boto3 or the gateway binary is missing.
"""
import hashlib
import hmac
import os
import sys
import urllib.error
import urllib.request

from gateway_proc import Gateway, skip

try:
    import boto3
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.config import Config
    from botocore.credentials import Credentials
    from botocore.exceptions import ClientError
except ImportError:
    skip("python3-boto3 not installed")

ACCESS, SECRET = "AKIDREELFSSEC", "security/secret+key/0123456789"
STREAMING = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


try:
    gw = Gateway("reelfs-gw-sec.", ACCESS, SECRET)
except RuntimeError as e:
    sys.exit(f"FAIL: {e}")
work, root, endpoint = gw.work, gw.root, gw.endpoint
host = endpoint.split("//", 1)[1]

sent = []  # (operation, headers) of what boto3 itself sent


def record(request, **_):
    sent.append((request.url, dict(request.headers)))


s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                  aws_access_key_id=ACCESS, aws_secret_access_key=SECRET,
                  config=Config(s3={"addressing_style": "path"}, signature_version="s3v4"))
s3.meta.events.register("before-send.s3", record)
creds = Credentials(ACCESS, SECRET)


def raw(method, path, headers, body=b""):
    """Sends a prepared request as is; returns (status, body)."""
    req = urllib.request.Request(endpoint + path, data=body if body else None, method=method,
                                 headers=headers)
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


class ForgedPayload(S3SigV4Auth):
    """Signs with the given x-amz-content-sha256 value instead of the body's hash."""

    def __init__(self, claim):
        super().__init__(creds, "s3", "us-east-1")
        self.claim = claim

    def payload(self, request):
        return self.claim


def signed(method, path, body=b"", claim=None, headers=None):
    """Headers of a request botocore signs (every header given is signed)."""
    req = AWSRequest(method=method, url=endpoint + path, data=body, headers=dict(headers or {}))
    auth = ForgedPayload(claim) if claim is not None else S3SigV4Auth(creds, "s3", "us-east-1")
    auth.add_auth(req)
    return dict(req.headers.items())


def read(path):
    with open(os.path.join(root, path), "rb") as f:
        return f.read()


try:
    s3.create_bucket(Bucket="bkt")
    s3.put_object(Bucket="bkt", Key="obj", Body=b"the source")
    s3.put_object(Bucket="bkt", Key="victim", Body=b"the victim")

    print("== 1. unsigned x-amz-* headers")
    for name, value in [("x-amz-copy-source", "/bkt/obj"), ("x-amz-meta-owner", "mallory"),
                        ("x-amz-storage-class", "GLACIER")]:
        h = signed("PUT", "/bkt/victim", claim=EMPTY_SHA256)
        h[name] = value
        code, body = raw("PUT", "/bkt/victim", h)
        check(code == 403 and b"<Code>AccessDenied</Code>" in body and
              b"headers present in the request which were not signed" in body,
              f"header auth + unsigned {name} -> 403 AccessDenied ({code})")
    url = s3.generate_presigned_url("put_object", Params={"Bucket": "bkt", "Key": "victim"},
                                    ExpiresIn=300)
    code, body = raw("PUT", url[len(endpoint):], {"x-amz-copy-source": "/bkt/obj"})
    check(code == 403 and b"AccessDenied" in body,
          f"presigned PUT URL + unsigned x-amz-copy-source -> 403 ({code})")
    check(read("bkt/victim") == b"the victim", "victim unchanged")
    code, _ = raw("PUT", url[len(endpoint):], {}, b"via the URL")
    check(code == 200 and read("bkt/victim") == b"via the URL", "the presigned URL itself works")

    print("== 2. x-amz-content-sha256 values")
    upper_other = hashlib.sha256(b"other data").hexdigest().upper()
    code, body = raw("PUT", "/bkt/a", signed("PUT", "/bkt/a", b"data", upper_other), b"data")
    check(code == 400 and b"XAmzContentSHA256Mismatch" in body,
          f"upper-case hash of other data -> 400 XAmzContentSHA256Mismatch ({code})")
    code, body = raw("PUT", "/bkt/a", signed("PUT", "/bkt/a", b"data", "zz-not-hex"), b"data")
    check(code == 400 and b"<Code>InvalidArgument</Code>" in body,
          f"'zz-not-hex' -> 400 InvalidArgument ({code})")
    check(not os.path.exists(os.path.join(root, "bkt/a")), "nothing stored")
    upper = hashlib.sha256(b"data").hexdigest().upper()
    code, _ = raw("PUT", "/bkt/a", signed("PUT", "/bkt/a", b"data", upper), b"data")
    check(code == 200 and read("bkt/a") == b"data", f"the right hash in upper case -> 200 ({code})")

    h = signed("PUT", "/bkt/crc", b"data", headers={"x-amz-checksum-crc32": "AAAAAA=="})
    code, body = raw("PUT", "/bkt/crc", h, b"data")
    check(code == 400 and b"BadDigest" in body, f"a wrong x-amz-checksum-crc32 -> 400 BadDigest ({code})")
    check(not os.path.exists(os.path.join(root, "bkt/crc")), "nothing stored")

    print("== 3. aws-chunked chunk signatures")
    data = os.urandom(150000)

    def chunked(zero_from=None):
        h = signed("PUT", "/bkt/chunked", claim=STREAMING,
                   headers={"Content-Encoding": "aws-chunked",
                            "x-amz-decoded-content-length": str(len(data))})
        seed = h["Authorization"].rsplit("Signature=", 1)[1]
        date = h["X-Amz-Date"]
        scope = f"{date[:8]}/us-east-1/s3/aws4_request"
        key = ("AWS4" + SECRET).encode()
        for part in (date[:8], "us-east-1", "s3", "aws4_request"):
            key = hmac.new(key, part.encode(), hashlib.sha256).digest()
        body, prev, n = b"", seed, 0
        for off in list(range(0, len(data), 65536)) + [len(data)]:
            piece = data[off:off + 65536]
            sts = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", date, scope, prev, EMPTY_SHA256,
                             hashlib.sha256(piece).hexdigest()])
            prev = sig = hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()
            if zero_from is not None and n >= zero_from:
                sig = "0" * 64
            body += f"{len(piece):x};chunk-signature={sig}\r\n".encode() + piece + b"\r\n"
            n += 1
        return raw("PUT", "/bkt/chunked", h, body)

    code, body = chunked(zero_from=1)
    check(code == 403 and b"SignatureDoesNotMatch" in body,
          f"a chunk signed 000...0 -> 403 SignatureDoesNotMatch ({code})")
    check(not os.path.exists(os.path.join(root, "bkt/chunked")), "nothing stored")
    code, _ = chunked()
    check(code == 200 and read("bkt/chunked") == data, f"correctly chained chunks -> 200 ({code})")

    sent.clear()
    payload = os.urandom(3 * 1024 * 1024 + 17)
    s3.put_object(Bucket="bkt", Key="sdk/put.bin", Body=payload)
    src = os.path.join(work, "up.bin")
    big = os.urandom(20 * 1024 * 1024 + 5)
    with open(src, "wb") as f:
        f.write(big)
    s3.upload_file(src, "bkt", "sdk/multipart.bin")
    got = s3.get_object(Bucket="bkt", Key="sdk/multipart.bin")["Body"].read()
    check(read("bkt/sdk/put.bin") == payload, "boto3 put_object stored byte for byte")
    check(got == big, "boto3 upload_file (multipart) round trip byte for byte")
    def text(v):
        return v.decode() if isinstance(v, bytes) else v
    claims = {text(h.get("X-Amz-Content-SHA256") or h.get("x-amz-content-sha256") or "")
              for _, h in sent}
    print("   boto3 sent x-amz-content-sha256:", sorted(c[:40] for c in claims if c))
    trailers = {text(h.get("X-Amz-Trailer") or h.get("x-amz-trailer") or "") for _, h in sent}
    trailers.discard("")
    print("   boto3 sent x-amz-trailer:", trailers or "none")

    print("== 4. a directory symlink planted in the root")
    outside = os.path.join(work, "outside")
    os.makedirs(outside)
    with open(os.path.join(outside, "secret"), "w") as f:
        f.write("top secret")
    os.symlink(outside, os.path.join(root, "bkt", "link"))
    for op in ("get_object", "head_object"):
        try:
            getattr(s3, op)(Bucket="bkt", Key="link/secret")
            check(False, f"{op} through the link failed")
        except ClientError as e:
            status = e.response["ResponseMetadata"]["HTTPStatusCode"]
            code = e.response["Error"]["Code"]
            check(status == 404 and code in ("NoSuchKey", "404"),
                  f"{op} through a directory symlink -> 404 ({status} {code})")
    listed = s3.list_objects_v2(Bucket="bkt", Prefix="link/")
    check(listed.get("KeyCount") == 0, "listing through the link is empty")
finally:
    rc = gw.terminate()
    if rc != 0:
        failures.append(f"gateway exited {rc} after SIGTERM")
    if failures:
        print(gw.stderr_tail())
    gw.cleanup()

if failures:
    print("FAIL:", "; ".join(failures))
    sys.exit(1)
print("PASS: gateway_security_boto3")
