#!/usr/bin/env python3
"""Interop: boto3 against a real reelfs-gateway started on 127.0.0.1:0 with a temp root.

Exits 77 (skip) when boto3 or the gateway binary is missing.
"""
import hashlib
import os
import time
import urllib.error
import urllib.request

from gateway_proc import Gateway, s3_client, skip

try:
    import boto3
    import botocore
    from boto3.s3.transfer import TransferConfig
    from botocore.config import Config
    from botocore.exceptions import ClientError
except ImportError:
    skip("python3-boto3 not installed")

ACCESS, SECRET = "AKIDREELFSBOTO3", "boto3/secret+key/abcdef0123456789"
MiB = 1024 * 1024


def client(endpoint, secret=SECRET):
    return s3_client(endpoint, ACCESS, secret)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(MiB), b""):
            h.update(chunk)
    return h.hexdigest()


def expect_client_error(fn, codes, statuses=range(400, 500)):
    try:
        fn()
    except ClientError as e:
        code = e.response["Error"].get("Code")
        status = e.response["ResponseMetadata"]["HTTPStatusCode"]
        assert status in statuses, f"status {status} ({code})"
        assert not codes or code in codes, f"code {code}, expected {codes}"
        return code
    raise AssertionError(f"expected a client error {codes}")


def snapshot_outside(gw):
    """Entries next to the root, at the root's top level, and in the bucket's top level."""
    return (set(os.listdir(gw.work)), set(os.listdir(gw.root)),
            set(os.listdir(os.path.join(gw.root, "boto"))))


def main():
    gw = Gateway("reelfs-gw-boto3.", ACCESS, SECRET, port_file=True)
    try:
        run(gw)
    finally:
        gw.stop()
    print("PASS: gateway_boto3")


def run(gw):
    s3 = client(gw.endpoint)
    b = "boto"
    s3.create_bucket(Bucket=b)
    expect_client_error(lambda: s3.create_bucket(Bucket=b), {"BucketAlreadyOwnedByYou"})
    expect_client_error(lambda: s3.create_bucket(Bucket="Bad_Name"), {"InvalidBucketName"})
    assert [x["Name"] for x in s3.list_buckets()["Buckets"]] == [b]

    # put/head with metadata
    s3.put_object(Bucket=b, Key="meta/obj.txt", Body=b"hello", ContentType="text/plain",
                  Metadata={"Owner": "reelfs"}, StorageClass="GLACIER")
    head = s3.head_object(Bucket=b, Key="meta/obj.txt")
    assert head["ContentLength"] == 5 and head["ContentType"] == "text/plain", head
    assert head["Metadata"] == {"owner": "reelfs"}, head["Metadata"]
    assert head["ETag"] == '"%s"' % hashlib.md5(b"hello").hexdigest()
    assert head.get("StorageClass") == "GLACIER", head
    expect_client_error(lambda: s3.head_object(Bucket=b, Key="missing"), None, {404})
    expect_client_error(lambda: s3.get_object(Bucket=b, Key="missing"), {"NoSuchKey"})
    expect_client_error(lambda: s3.get_object(Bucket="nobucket", Key="x"), {"NoSuchBucket"})

    # ranged get, conditionals
    body = s3.get_object(Bucket=b, Key="meta/obj.txt", Range="bytes=1-3")
    assert body["Body"].read() == b"ell" and body["ContentRange"] == "bytes 1-3/5"
    expect_client_error(lambda: s3.get_object(Bucket=b, Key="meta/obj.txt", Range="bytes=10-"),
                        {"InvalidRange"}, {416})
    expect_client_error(lambda: s3.get_object(Bucket=b, Key="meta/obj.txt", IfMatch='"nope"'),
                        {"PreconditionFailed"}, {412})

    # upload_file multipart, download_file
    src = os.path.join(gw.work, "multi.bin")
    with open(src, "wb") as f:
        f.write(os.urandom(23 * MiB + 12345))
    cfg = TransferConfig(multipart_threshold=5 * MiB, multipart_chunksize=5 * MiB)
    s3.upload_file(src, b, "multi/part.bin", Config=cfg)
    etag = s3.head_object(Bucket=b, Key="multi/part.bin")["ETag"]
    assert etag.endswith('-5"'), etag
    dst = os.path.join(gw.work, "multi.back")
    s3.download_file(b, "multi/part.bin", dst, Config=cfg)
    assert sha256_file(src) == sha256_file(dst)

    # 48 concurrent ranged GETs over many keep-alive connections, byte for byte
    import concurrent.futures
    import random
    data = open(src, "rb").read()
    par = boto3.client("s3", endpoint_url=gw.endpoint, aws_access_key_id=ACCESS,
                       aws_secret_access_key=SECRET, region_name="us-east-1",
                       config=Config(s3={"addressing_style": "path"}, max_pool_connections=48))
    rng = random.Random(7)
    ranges = [(o, min(len(data), o + rng.randint(1, 3 * MiB)) - 1)
              for o in (rng.randrange(len(data)) for _ in range(96))]

    def fetch(r):
        got = par.get_object(Bucket=b, Key="multi/part.bin", Range=f"bytes={r[0]}-{r[1]}")
        return got["Body"].read() == data[r[0]:r[1] + 1]

    with concurrent.futures.ThreadPoolExecutor(48) as pool:
        assert all(pool.map(fetch, ranges)), "a concurrent ranged GET returned wrong bytes"

    # explicit multipart API: bad order, abort
    up = s3.create_multipart_upload(Bucket=b, Key="aborted")["UploadId"]
    p1 = s3.upload_part(Bucket=b, Key="aborted", UploadId=up, PartNumber=1, Body=b"x" * 10)
    expect_client_error(lambda: s3.complete_multipart_upload(
        Bucket=b, Key="aborted", UploadId=up,
        MultipartUpload={"Parts": [{"PartNumber": 2, "ETag": p1["ETag"]}]}), {"InvalidPart"})
    s3.abort_multipart_upload(Bucket=b, Key="aborted", UploadId=up)
    expect_client_error(lambda: s3.upload_part(Bucket=b, Key="aborted", UploadId=up,
                                               PartNumber=1, Body=b"x"), {"NoSuchUpload"})

    # list_multipart_uploads / list_parts through boto3's paginators (markers followed page by
    # page), with a space and a '+' in a key
    key = "lst/sp ace+plus.bin"
    ups = [s3.create_multipart_upload(Bucket=b, Key=k)["UploadId"]
           for k in (key, "lst/d/x", "lst/d/x", "lst/e")]
    body1, body2 = os.urandom(5 * MiB), os.urandom(777)
    tags = [s3.upload_part(Bucket=b, Key=key, UploadId=ups[0], PartNumber=n, Body=d)["ETag"]
            for n, d in ((1, body1), (2, body2))]
    pages = s3.get_paginator("list_multipart_uploads").paginate(
        Bucket=b, Prefix="lst/", PaginationConfig={"PageSize": 1})
    listed = [(u["Key"], u["UploadId"]) for p in pages for u in p.get("Uploads", [])]
    assert [k for k, _ in listed] == ["lst/d/x", "lst/d/x", "lst/e", key], listed
    assert sorted(i for _, i in listed) == sorted(ups), listed
    r = s3.list_multipart_uploads(Bucket=b, Prefix="lst/", Delimiter="/")
    assert [u["Key"] for u in r["Uploads"]] == ["lst/e", key], r
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["lst/d/"], r
    parts = [p for page in s3.get_paginator("list_parts").paginate(
        Bucket=b, Key=key, UploadId=ups[0], PaginationConfig={"PageSize": 1})
        for p in page.get("Parts", [])]
    assert [(p["PartNumber"], p["ETag"], p["Size"]) for p in parts] == \
        [(1, tags[0], len(body1)), (2, tags[1], len(body2))], parts
    expect_client_error(lambda: s3.list_parts(Bucket=b, Key="lst/e", UploadId=ups[0]),
                        {"NoSuchUpload"})
    for k, i in listed:
        s3.abort_multipart_upload(Bucket=b, Key=k, UploadId=i)
    assert "Uploads" not in s3.list_multipart_uploads(Bucket=b, Prefix="lst/")

    # copy_object (COPY and REPLACE)
    s3.copy_object(Bucket=b, Key="copy/obj.txt", CopySource={"Bucket": b, "Key": "meta/obj.txt"})
    h = s3.head_object(Bucket=b, Key="copy/obj.txt")
    assert h["Metadata"] == {"owner": "reelfs"} and h["ContentLength"] == 5
    s3.copy_object(Bucket=b, Key="copy/obj2.txt", CopySource=f"{b}/meta/obj.txt",
                   MetadataDirective="REPLACE", Metadata={"k": "v"}, ContentType="x/y")
    h = s3.head_object(Bucket=b, Key="copy/obj2.txt")
    assert h["Metadata"] == {"k": "v"} and h["ContentType"] == "x/y", h
    s3.copy_object(Bucket=b, Key="copy/big.bin", CopySource={"Bucket": b, "Key": "multi/part.bin"})
    assert s3.head_object(Bucket=b, Key="copy/big.bin")["ContentLength"] == 23 * MiB + 12345

    # UploadPartCopy: boto3's managed copy above its threshold (parts copied by the server), then
    # explicit ranges, If-Match and the error answers
    s3.copy({"Bucket": b, "Key": "multi/part.bin"}, b, "copy/managed.bin", Config=cfg)
    h = s3.head_object(Bucket=b, Key="copy/managed.bin")
    assert h["ETag"].endswith('-5"'), h["ETag"]
    got = s3.get_object(Bucket=b, Key="copy/managed.bin")["Body"].read()
    assert hashlib.sha256(got).hexdigest() == hashlib.sha256(data).hexdigest()
    up = s3.create_multipart_upload(Bucket=b, Key="copy/ranges.bin")["UploadId"]
    src_etag = s3.head_object(Bucket=b, Key="multi/part.bin")["ETag"]
    r1 = s3.upload_part_copy(Bucket=b, Key="copy/ranges.bin", UploadId=up, PartNumber=1,
                             CopySource={"Bucket": b, "Key": "multi/part.bin"},
                             CopySourceRange=f"bytes={7 * MiB}-{13 * MiB - 1}",
                             CopySourceIfMatch=src_etag)["CopyPartResult"]
    assert r1["ETag"] == '"%s"' % hashlib.md5(data[7 * MiB:13 * MiB]).hexdigest(), r1
    assert r1["LastModified"].year >= 2024, r1
    r2 = s3.upload_part_copy(Bucket=b, Key="copy/ranges.bin", UploadId=up, PartNumber=2,
                             CopySource=f"{b}/meta/obj.txt")["CopyPartResult"]
    for bad_range in ("bytes=0-99999999999", "bytes=5-2", "0-10", "bytes=-10"):
        expect_client_error(lambda: s3.upload_part_copy(
            Bucket=b, Key="copy/ranges.bin", UploadId=up, PartNumber=3,
            CopySource={"Bucket": b, "Key": "multi/part.bin"}, CopySourceRange=bad_range),
            {"InvalidArgument"}, {400})
    expect_client_error(lambda: s3.upload_part_copy(
        Bucket=b, Key="copy/ranges.bin", UploadId=up, PartNumber=3,
        CopySource={"Bucket": b, "Key": "missing"}), {"NoSuchKey"}, {404})
    expect_client_error(lambda: s3.upload_part_copy(
        Bucket=b, Key="copy/ranges.bin", UploadId=up, PartNumber=3,
        CopySource={"Bucket": b, "Key": "multi/part.bin"}, CopySourceIfMatch='"0"'),
        {"PreconditionFailed"}, {412})
    expect_client_error(lambda: s3.upload_part_copy(
        Bucket=b, Key="copy/ranges.bin", UploadId="0" * 32, PartNumber=1,
        CopySource={"Bucket": b, "Key": "multi/part.bin"}), {"NoSuchUpload"}, {404})
    s3.complete_multipart_upload(Bucket=b, Key="copy/ranges.bin", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": r1["ETag"]}, {"PartNumber": 2, "ETag": r2["ETag"]}]})
    got = s3.get_object(Bucket=b, Key="copy/ranges.bin")["Body"].read()
    assert got == data[7 * MiB:13 * MiB] + b"hello", len(got)

    # list_objects_v2 pagination with delimiter
    for i in range(25):
        s3.put_object(Bucket=b, Key=f"list/f{i:02d}", Body=b"")
    for d in ("a", "b", "c"):
        s3.put_object(Bucket=b, Key=f"list/{d}/x", Body=b"1")
        s3.put_object(Bucket=b, Key=f"list/{d}/y", Body=b"2")
    s3.put_object(Bucket=b, Key="list/emptydir/", Body=b"")  # directory marker
    keys, prefixes, pages = [], [], 0
    for page in s3.get_paginator("list_objects_v2").paginate(
            Bucket=b, Prefix="list/", Delimiter="/", PaginationConfig={"PageSize": 7}):
        pages += 1
        keys += [o["Key"] for o in page.get("Contents", [])]
        prefixes += [p["Prefix"] for p in page.get("CommonPrefixes", [])]
    assert keys == [f"list/f{i:02d}" for i in range(25)], keys
    assert prefixes == ["list/a/", "list/b/", "list/c/", "list/emptydir/"], prefixes
    assert pages == 5, pages
    all_keys = [o["Key"] for p in s3.get_paginator("list_objects_v2").paginate(
        Bucket=b, Prefix="list/", PaginationConfig={"PageSize": 4}) for o in p.get("Contents", [])]
    assert all_keys == sorted(all_keys) and "list/emptydir/" in all_keys and len(all_keys) == 32
    r = s3.list_objects_v2(Bucket=b, Prefix="list/", StartAfter="list/f20", MaxKeys=3)
    assert [o["Key"] for o in r["Contents"]] == ["list/f21", "list/f22", "list/f23"]

    # file/prefix conflicts
    expect_client_error(lambda: s3.put_object(Bucket=b, Key="meta/obj.txt/child", Body=b"1"),
                        {"ObjectParentIsFile"}, {409})
    expect_client_error(lambda: s3.put_object(Bucket=b, Key="list/a", Body=b"1"),
                        {"ExistingObjectIsDirectory"}, {409})

    # delete_objects
    res = s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": f"list/f{i:02d}"}
                                                         for i in range(25)] + [{"Key": "nope"}]})
    assert len(res.get("Deleted", [])) == 26 and not res.get("Errors"), res
    assert not os.path.exists(os.path.join(gw.root, b, "list", "f00"))

    # restore (objects are always online for now)
    s3.restore_object(Bucket=b, Key="meta/obj.txt", RestoreRequest={"Days": 1})

    # presigned URL fetched with urllib
    url = s3.generate_presigned_url("get_object", Params={"Bucket": b, "Key": "meta/obj.txt"},
                                    ExpiresIn=300)
    assert urllib.request.urlopen(url).read() == b"hello"
    try:
        urllib.request.urlopen(url.replace("meta/obj.txt", "meta/other.txt"))
        raise AssertionError("presigned URL for another key accepted")
    except urllib.error.HTTPError as e:
        assert e.code == 403, e.code

    # wrong secret
    expect_client_error(lambda: client(gw.endpoint, "wrong").list_objects_v2(Bucket=b),
                        {"SignatureDoesNotMatch"}, {403})

    # hostile keys: 4xx and nothing outside the root
    os.symlink("/etc", os.path.join(gw.root, b, "evil-link"))
    before = snapshot_outside(gw)
    hostile = ["../x", "a/../../etc/passwd", "a/./b", "a//b", "nul\x00key", "k" * 2048,
               ".reelfs-gateway/credentials", "ctl\x01key",
               "x/" + "c" * 300]
    for key in hostile:
        for op in (lambda k=key: s3.put_object(Bucket=b, Key=k, Body=b"pwned"),
                   lambda k=key: s3.get_object(Bucket=b, Key=k)):
            try:
                op()
                raise AssertionError(f"hostile key {key[:40]!r} accepted")
            except ClientError as e:
                status = e.response["ResponseMetadata"]["HTTPStatusCode"]
                assert 400 <= status < 500, (key[:40], status)
            except botocore.exceptions.ParamValidationError:
                pass  # rejected client-side, fine too
    # A symlink planted in the root is not part of the namespace: reading through it is a
    # missing key (404, never 403: nothing tells the link exists), writing below it stores the
    # object in the bucket in the link's place, never in its target.
    expect_client_error(lambda: s3.get_object(Bucket=b, Key="evil-link/passwd"),
                        {"NoSuchKey"}, {404})
    expect_client_error(lambda: s3.head_object(Bucket=b, Key="evil-link/passwd"), {"404"}, {404})
    s3.put_object(Bucket=b, Key="evil-link/passwd", Body=b"pwned")
    assert not os.path.islink(os.path.join(gw.root, b, "evil-link"))
    assert s3.get_object(Bucket=b, Key="evil-link/passwd")["Body"].read() == b"pwned"
    assert snapshot_outside(gw) == before, "files appeared outside the root"
    assert not os.path.exists("/etc/passwd.pwned")
    assert b"pwned" not in open("/etc/passwd", "rb").read()

    # delete, then bucket
    for o in [o for p in s3.get_paginator("list_objects_v2").paginate(Bucket=b)
              for o in p.get("Contents", [])]:
        s3.delete_object(Bucket=b, Key=o["Key"])
    s3.delete_object(Bucket=b, Key="already/gone")  # idempotent
    s3.delete_bucket(Bucket=b)
    assert not os.path.exists(os.path.join(gw.root, b))


if __name__ == "__main__":
    main()
