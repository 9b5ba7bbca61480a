#!/usr/bin/env python3
"""Interop: one root served by four reelfs-gateway processes at once (an owner and three
`--front-end`s; docs/gateway.md "Several front ends over one root"), driven by boto3.

1. Writes through all four at once: PUTs, multipart uploads (created on one process, parts
   uploaded through the others, completed through a third) and DELETEs of 6 overlapping keys by
   8 threads. Afterwards every process answers the same ETag (or 404) for every key, and each
   object's bytes are exactly those of the write that produced its ETag (SHA-256).
2. `reelfs-gateway check --root` (catalog against files, content MD5s) finds nothing wrong, and
   no temporary file is left in any process's tmp directory.
3. Restores (aws personality, simulated library x1000): 12 archived and released objects, each
   restore requested by 4 clients through the 4 processes at the same moment: exactly one 202 per
   object (the others 409 RestoreAlreadyInProgress, or 200 once it is done), one recall per object in the owner's tape
   metrics, every process reports the same restore state, and every restored GET is byte-exact.
4. Roles: a front end refuses admin archive/release (409 NotOwner); a front end SIGKILLed leaves
   its tmp directory, which the next process to start removes.

Exits 77 (skip) when boto3 or the gateway binary is missing.
"""
import hashlib
import json
import os
import random
import signal
import subprocess
import threading
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

ACCESS, SECRET = "AKIDREELFSFRONTENDS", "frontends/secret+key/0123456789ab"
CONFIG = ("min_part_size: 64KiB\n"
          "archive:\n  personality: aws\n"
          "tape:\n  drives: 2\n  speedup: 1000\n")
KEYS = [f"shared/k{i}" for i in range(6)]
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def admin(gw, method, name, query=""):
    """A SigV4-signed admin request; `query` already URI-encoded (botocore signs a URL's query as
    written)."""
    url = f"{gw.endpoint}/_reelfs/admin/{name}" + (f"?{query}" if query else "")
    req = AWSRequest(method=method, url=url, data=b"")
    S3SigV4Auth(Credentials(ACCESS, SECRET), "s3", "us-east-1").add_auth(req)
    r = urllib.request.Request(url, method=method, headers=dict(req.prepare().headers))
    try:
        with urllib.request.urlopen(r, timeout=120) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def error_code(e):
    return e.response["Error"]["Code"]


def tmp_files(root):
    tmp = os.path.join(root, ".reelfs-gateway", "tmp")
    return [os.path.join(d, f) for d, _, fs in os.walk(tmp) for f in fs if f != ".alive"]


def main():
    owner = gateway_proc.Gateway("reelfs-gw-fe-owner.", ACCESS, SECRET, config=CONFIG)
    gws = [owner]
    try:
        for i in range(3):
            gws.append(gateway_proc.Gateway(f"reelfs-gw-fe{i}.", ACCESS, SECRET, config=CONFIG,
                                            front_end_of=owner))
        run(owner, gws)
    finally:
        for gw in reversed(gws):
            try:
                gw.terminate()
            except Exception:  # noqa: BLE001 (already gone: the SIGKILL case)
                pass
        if failures:
            for gw in gws:
                print(f"--- stderr of the gateway in {gw.work}:\n{gw.stderr_tail(2000)}")
        for gw in reversed(gws):
            gw.cleanup()


def run(owner, gws):
    clients = [s3_client(gw.endpoint, ACCESS, SECRET) for gw in gws]
    clients[1].create_bucket(Bucket="bkt")  # through a front end: the directory and its row
    check(all(any(b["Name"] == "bkt" for b in c.list_buckets()["Buckets"]) for c in clients),
          "a bucket created through a front end is listed by all four processes")

    print("== 1. PUT, multipart and DELETE of overlapping keys through four processes")
    written = {}  # ETag -> SHA-256 of the bytes of the write that produced it
    lock = threading.Lock()
    errors = []

    def worker(seed):
        rng = random.Random(seed)
        for n in range(30):
            key = rng.choice(KEYS)
            op = rng.random()
            try:
                if op < 0.45:
                    body = rng.randbytes(rng.randrange(0, 300 << 10))
                    etag = rng.choice(clients).put_object(Bucket="bkt", Key=key,
                                                          Body=body)["ETag"].strip('"')
                    with lock:
                        written[etag] = hashlib.sha256(body).hexdigest()
                elif op < 0.75:
                    # Created, uploaded and completed through different processes.
                    c_create, c_done = rng.sample(clients, 2)
                    up = c_create.create_multipart_upload(Bucket="bkt", Key=key)["UploadId"]
                    parts, whole = [], b""
                    for pn in range(1, rng.randrange(2, 5)):
                        body = rng.randbytes((64 << 10) + rng.randrange(0, 4096) * (pn == 3))
                        et = rng.choice(clients).upload_part(
                            Bucket="bkt", Key=key, UploadId=up, PartNumber=pn, Body=body)["ETag"]
                        parts.append({"PartNumber": pn, "ETag": et})
                        whole += body
                    etag = c_done.complete_multipart_upload(
                        Bucket="bkt", Key=key, UploadId=up,
                        MultipartUpload={"Parts": parts})["ETag"].strip('"')
                    with lock:
                        written[etag] = hashlib.sha256(whole).hexdigest()
                else:
                    rng.choice(clients).delete_object(Bucket="bkt", Key=key)
            except ClientError as e:
                with lock:
                    errors.append(f"worker {seed} op {n} on {key}: {error_code(e)} {e}")

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(not errors, f"240 operations answered without an error ({errors[:3]})")
    agree, exact = True, True
    for key in KEYS:
        seen = set()
        for c in clients:
            try:
                seen.add(c.head_object(Bucket="bkt", Key=key)["ETag"].strip('"'))
            except ClientError as e:
                seen.add(None if error_code(e) in ("404", "NoSuchKey") else error_code(e))
        if len(seen) != 1:
            agree = False
            print(f"     {key}: the processes answer {seen}")
            continue
        etag = seen.pop()
        if etag is None:
            continue
        body = random.choice(clients).get_object(Bucket="bkt", Key=key)["Body"].read()
        if written.get(etag) != hashlib.sha256(body).hexdigest():
            exact = False
            print(f"     {key}: ETag {etag} with bytes of another write")
    check(agree, "all four processes answer the same ETag (or 404) for every key")
    check(exact, "each object's bytes are those of the write that produced its ETag")
    listings = {json.dumps([(o["Key"], o["ETag"]) for o in
                            c.list_objects_v2(Bucket="bkt").get("Contents", [])]) for c in clients}
    check(len(listings) == 1, "all four list the same keys and ETags")

    print("== 2. reelfs-gateway check")
    res = subprocess.run([gateway_proc.BIN, "check", "--root", owner.root], capture_output=True,
                         text=True, timeout=120)
    report = json.loads(res.stdout) if res.stdout.strip() else {}
    check(res.returncode == 0 and report.get("problems") == [],
          f"check: exit {res.returncode}, {report.get('objects')} rows, "
          f"{report.get('contents_hashed')} contents hashed, problems {report.get('problems')} "
          f"{res.stderr.strip()}")
    check(not tmp_files(owner.root), f"no temporary file left ({tmp_files(owner.root)})")
    # A damaged catalog is reported, not repaired: a file the catalog does not know.
    stray = os.path.join(owner.root, "bkt", "stray-file")
    with open(stray, "wb") as f:
        f.write(b"dropped in by hand")
    res = subprocess.run([gateway_proc.BIN, "check", "--root", owner.root], capture_output=True,
                         text=True, timeout=120)
    check(res.returncode == 1 and "bkt/stray-file: file without a catalog row" in res.stdout,
          "check reports a file without a row and exits 1")
    os.unlink(stray)

    print("== 3. one restore per object, requested through four processes at once")
    objs = {f"tape/o{i:02d}": random.randbytes(40_000 + i * 1000) for i in range(12)}
    for k, v in objs.items():
        clients[0].put_object(Bucket="bkt", Key=k, Body=v)
    st, body = admin(owner, "POST", "archive", "bucket=bkt&prefix=tape%2F&release=1")
    check(st == 200 and json.loads(body)["released"] == 12, f"owner archived and released: {body}")
    st, body = admin(gws[2], "POST", "release", "bucket=bkt")
    check(st == 409 and b"NotOwner" in body, f"a front end refuses admin release ({st})")
    answers = {k: [] for k in objs}
    barrier = threading.Barrier(4)

    def restorer(c):
        barrier.wait()
        for k in objs:
            try:
                r = c.restore_object(Bucket="bkt", Key=k, RestoreRequest={"Days": 1})
                answers[k].append(r["ResponseMetadata"]["HTTPStatusCode"])
            except ClientError as e:
                answers[k].append(error_code(e))

    threads = [threading.Thread(target=restorer, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # One request per object starts the recall (202); the others find it running (409), or, on
    # the x1000 clock, already finished (200: restored, expiry moved).
    once = all(a.count(202) == 1 and all(x in (202, 200, "RestoreAlreadyInProgress") for x in a)
               for a in answers.values())
    check(once, "each object: exactly one 202, the other three 409 or 200 "
          f"({[a for a in answers.values() if a.count(202) != 1][:3]})")
    deadline = time.time() + 120
    states = set()
    while time.time() < deadline:
        states = {(k, c.head_object(Bucket="bkt", Key=k).get("Restore", "")) for k in objs
                  for c in clients}
        if all('ongoing-request="false"' in s for _, s in states):
            break
        time.sleep(0.2)
    per_key = {}
    for k, s in states:
        per_key.setdefault(k, set()).add(s)
    check(all(len(v) == 1 and 'ongoing-request="false"' in next(iter(v))
              for v in per_key.values()),
          "all four report every object restored, with the same header")
    exact = all(hashlib.sha256(clients[i % 4].get_object(Bucket="bkt", Key=k)["Body"].read())
                .digest() == hashlib.sha256(v).digest() for i, (k, v) in enumerate(objs.items()))
    check(exact, "every restored object reads back byte-exact through the four")
    st, body = admin(owner, "GET", "metrics")
    m = json.loads(body)
    recalls = m["archive"]["recalls_submitted"]
    check(recalls == 12 and m["archive"]["recalls_ok"] == 12,
          f"the owner ran one recall per object ({recalls} submitted, "
          f"{m['archive']['recalls_ok']} ok)")
    st, body = admin(gws[1], "GET", "metrics")
    fm = json.loads(body)
    check(fm["archive"]["role"] == "front-end" and fm["tape"] is None,
          f"a front end's metrics name its role and carry no tape ({fm['archive']['role']})")

    print("== 4. a SIGKILLed front end's temporary directory is removed by the next start")
    dead = gws[3]
    tmp_root = os.path.join(owner.root, ".reelfs-gateway", "tmp")
    dirs_before = set(os.listdir(tmp_root))
    dead_dir = [d for d in dirs_before if d.startswith(f"{dead.proc.pid}-")]
    dead.proc.send_signal(signal.SIGKILL)
    dead.proc.wait()
    check(len(dead_dir) == 1 and os.path.isdir(os.path.join(tmp_root, dead_dir[0])),
          "the killed front end's directory is still there")
    gws[3] = gateway_proc.Gateway("reelfs-gw-fe3b.", ACCESS, SECRET, config=CONFIG,
                                  front_end_of=owner)
    check(dead_dir and not os.path.exists(os.path.join(tmp_root, dead_dir[0])),
          "a new front end removed it at start")
    c = s3_client(gws[3].endpoint, ACCESS, SECRET)
    c.put_object(Bucket="bkt", Key="after", Body=b"after the kill")
    check(clients[0].get_object(Bucket="bkt", Key="after")["Body"].read() == b"after the kill",
          "the new front end serves, its write seen by the owner")


if __name__ == "__main__":
    main()
    if failures:
        print(f"{len(failures)} check(s) failed")
        raise SystemExit(1)
    print("all checks passed")
