#!/usr/bin/env python3
"""Interop: boto3 against reelfs-gateway's archive, both personalities, real tape library on a
x1000 clock: admin archive/release/metrics/timeline (SigV4-signed with botocore), restore_object,
head_object()['Restore'] and StorageClass, list StorageClass and RestoreStatus, GET, CopyObject and
UploadPartCopy of an offline object -> InvalidObjectState, restore then GET verified by SHA-256, a restored object released
again.

Exits 77 (skip) when boto3 or the gateway binary is missing.
"""
import hashlib
import json
import os
import time
import urllib.error
import urllib.request

import gateway_proc
from gateway_proc import s3_client, skip

try:
    import boto3  # noqa: F401 (gateway_proc.s3_client builds the clients)
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    from botocore.exceptions import ClientError
except ImportError:
    skip("python3-boto3 not installed")

ACCESS, SECRET = "AKIDREELFSARCHIVE", "archive/secret+key/abcdef0123456789"


class Gateway(gateway_proc.Gateway):
    """The gateway with a simulated tape library behind the archive personality."""

    def __init__(self, personality):
        super().__init__(f"reelfs-gw-archive-{personality}.", ACCESS, SECRET,
                         config=f"archive:\n  personality: {personality}\n  hints: true\n"
                         "tape:\n  drives: 2\n  speedup: 1000\n")

    def admin(self, method, name, query=""):
        """A SigV4-signed admin request (as curl --aws-sigv4 -H 'x-amz-content-sha256: ...' would
        send it: S3 header auth needs the signed payload hash)."""
        url = f"{self.endpoint}/_reelfs/admin/{name}" + (f"?{query}" if query else "")
        req = AWSRequest(method=method, url=url, data=b"")
        S3SigV4Auth(Credentials(ACCESS, SECRET), "s3", "us-east-1").add_auth(req)
        prepared = req.prepare()
        r = urllib.request.Request(url, method=method, headers=dict(prepared.headers), data=None)
        with urllib.request.urlopen(r, timeout=60) as resp:
            return resp.status, resp.headers.get("Content-Type"), resp.read()


def client(endpoint):
    return s3_client(endpoint, ACCESS, SECRET)


def error_code(fn):
    try:
        fn()
    except ClientError as e:
        return e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"]
    raise AssertionError("expected a ClientError")


def wait_restored(s3, bucket, key, timeout=20):
    end = time.time() + timeout
    while True:
        head = s3.head_object(Bucket=bucket, Key=key)
        restore = head.get("Restore", "")
        if 'ongoing-request="false"' in restore or time.time() > end:
            return head
        time.sleep(0.02)


def run(personality):
    gw = Gateway(personality)
    try:
        s3 = client(gw.endpoint)
        b = "tape"
        s3.create_bucket(Bucket=b)
        bodies = {f"k{i}": os.urandom(200_000 + i) for i in range(3)}
        for k, v in bodies.items():
            s3.put_object(Bucket=b, Key=k, Body=v)

        status, ctype, body = gw.admin("POST", "archive", f"bucket={b}&cartridges=2&release=true")
        report = json.loads(body)
        assert status == 200 and ctype == "application/json", (status, ctype)
        assert report["archived"] == 3 and report["released"] == 3, report
        assert sorted(report["cartridges"]) == ["RL0000L9", "RL0001L9"], report

        head = s3.head_object(Bucket=b, Key="k0")
        assert head["StorageClass"] == "GLACIER", head
        assert "Restore" not in head, head
        assert head["ContentLength"] == 200_000
        hdrs = head["ResponseMetadata"]["HTTPHeaders"]
        assert hdrs["x-reelfs-tape-cartridge"] == "RL0000L9", hdrs
        assert error_code(lambda: s3.get_object(Bucket=b, Key="k0")) == ("InvalidObjectState", 403)
        listing = s3.list_objects_v2(Bucket=b, OptionalObjectAttributes=["RestoreStatus"])
        assert [o["StorageClass"] for o in listing["Contents"]] == ["GLACIER"] * 3, listing
        # An offline source cannot be copied, whole or as a part (as AWS answers a GLACIER one).
        assert error_code(lambda: s3.copy_object(
            Bucket=b, Key="k0-copy", CopySource={"Bucket": b, "Key": "k1"})) == (
                "InvalidObjectState", 403)
        upload = s3.create_multipart_upload(Bucket=b, Key="k0-copy")["UploadId"]
        assert error_code(lambda: s3.upload_part_copy(
            Bucket=b, Key="k0-copy", UploadId=upload, PartNumber=1,
            CopySource={"Bucket": b, "Key": "k1"})) == ("InvalidObjectState", 403)
        s3.abort_multipart_upload(Bucket=b, Key="k0-copy", UploadId=upload)

        r = s3.restore_object(Bucket=b, Key="k0", RestoreRequest={"Days": 2})
        status = r["ResponseMetadata"]["HTTPStatusCode"]
        if personality == "aws":
            assert status == 202, status
            code = None
            try:
                s3.restore_object(Bucket=b, Key="k0", RestoreRequest={"Days": 2})
            except ClientError as e:
                code = e.response["Error"]["Code"]
            assert code in ("RestoreAlreadyInProgress", None), code
            listing = s3.list_objects_v2(Bucket=b, OptionalObjectAttributes=["RestoreStatus"])
        else:
            assert status == 200, status
        head = wait_restored(s3, b, "k0")
        assert 'ongoing-request="false"' in head["Restore"], head
        if personality == "aws":
            assert head["StorageClass"] == "GLACIER" and "2050" not in head["Restore"], head
            listing = s3.list_objects_v2(Bucket=b, OptionalObjectAttributes=["RestoreStatus"])
            k0 = listing["Contents"][0]
            assert k0["RestoreStatus"]["IsRestoreInProgress"] is False, k0
            again = s3.restore_object(Bucket=b, Key="k0", RestoreRequest={"Days": 3})
            assert again["ResponseMetadata"]["HTTPStatusCode"] == 200  # expiry moved
            # A never-archived object cannot be restored on AWS.
            s3.put_object(Bucket=b, Key="plain", Body=b"x")
            assert error_code(lambda: s3.restore_object(
                Bucket=b, Key="plain", RestoreRequest={"Days": 1}))[0] == "InvalidObjectState"
        else:
            assert head["StorageClass"] == "STANDARD", head
            assert head["Restore"] == ('ongoing-request="false", '
                                       'expiry-date="Fri, 2 Dec 2050 00:00:00 GMT"'), head
            listing = s3.list_objects_v2(Bucket=b, OptionalObjectAttributes=["RestoreStatus"])
            assert all("RestoreStatus" not in o for o in listing["Contents"]), listing
        got = s3.get_object(Bucket=b, Key="k0")["Body"].read()
        assert hashlib.sha256(got).hexdigest() == hashlib.sha256(bodies["k0"]).hexdigest()

        # Released again (as the releaser would): GET fails, HEAD still describes it.
        status, _, body = gw.admin("POST", "release", f"bucket={b}")
        assert json.loads(body)["released"] >= 1, body
        assert error_code(lambda: s3.get_object(Bucket=b, Key="k0")) == ("InvalidObjectState", 403)
        assert s3.head_object(Bucket=b, Key="k0")["ContentLength"] == 200_000

        status, ctype, body = gw.admin("GET", "metrics")
        metrics = json.loads(body)
        assert metrics["archive"]["recalls_ok"] == 1, metrics["archive"]
        assert metrics["archive"]["personality"] == personality
        assert "tape" in metrics
        status, ctype, body = gw.admin("GET", "timeline.svg")
        assert status == 200 and ctype == "image/svg+xml" and b"<svg" in body[:512], ctype
        # Unsigned admin requests are refused like any S3 request.
        try:
            urllib.request.urlopen(f"{gw.endpoint}/_reelfs/admin/metrics", timeout=10)
            raise AssertionError("unsigned admin request accepted")
        except urllib.error.HTTPError as e:
            assert e.code == 403, e.code
    finally:
        gw.stop()


def main():
    for personality in ("versitygw", "aws"):
        run(personality)
        print(f"ok: {personality}")
    print("PASS: gateway_archive_boto3")


if __name__ == "__main__":
    main()
