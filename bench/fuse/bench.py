#!/usr/bin/env python3
"""Helpers for bench/fuse/run.sh (one file, subcommands; run.sh is the entry point).

  gen ROOT --large-mib N --small-files N --small-kib N --dir-entries N
      writes the dataset into ROOT (a bucket directory served by reelfs-gateway):
        large.bin            N MiB of random bytes (sequential and random reads)
        small/f000000..      N files of small-kib random bytes, plus small.manifest (crc32 each)
        dir/e000000..        N empty files (ls -l)
  smallfiles MNT MANIFEST --threads 8 --seed 1 --timeout S
      reads every small file under MNT in a seeded random order with THREADS threads, checks size
      and crc32 against the manifest; prints one JSON line
  ttfb PATH... : opens each path and reads its first 4 KiB; prints JSON with each latency (ms)
  urls ENDPOINT BUCKET KEY... : presigned GET URLs, one a line (SigV4, s3sign.py)
  curlcfg-small ENDPOINT BUCKET MANIFEST --seed 1 : a curl -K config, every small file in
      random order, body to /dev/null
  curlcfg-rand URL SIZE --bs 262144 --count N --seed 1 : a curl -K config of N ranged GETs
  rawlist ENDPOINT BUCKET PREFIX : paged ListObjectsV2 (1000 a page, delimiter /) on one
      keep-alive connection; prints JSON {entries, seconds}
  fio FILE.json : prints "MiB/s" from a fio --output-format=json file (read bandwidth, all jobs),
      or "failed: ..." when fio reported an error
"""
import argparse
import concurrent.futures
import http.client
import json
import os
import random
import re
import statistics
import sys
import threading
import time
import urllib.parse
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import s3sign  # noqa: E402

KEY = os.environ.get("AWS_ACCESS_KEY_ID", "")
SECRET = os.environ.get("AWS_SECRET_ACCESS_KEY", "")
REGION = os.environ.get("AWS_REGION", "us-east-1")


def cmd_gen(a):
    os.makedirs(a.root, exist_ok=True)
    chunk = 16 << 20
    with open(os.path.join(a.root, "large.bin"), "wb") as f:
        left = a.large_mib << 20
        while left:
            n = min(chunk, left)
            f.write(os.urandom(n))
            left -= n
    small = os.path.join(a.root, "small")
    os.makedirs(small, exist_ok=True)
    size = a.small_kib << 10
    with open(os.path.join(os.path.dirname(a.root.rstrip("/")), "small.manifest"), "w") as m:
        for i in range(a.small_files):
            data = os.urandom(size)
            name = f"f{i:06d}"
            with open(os.path.join(small, name), "wb") as f:
                f.write(data)
            m.write(f"small/{name} {size} {zlib.crc32(data)}\n")
    d = os.path.join(a.root, "dir")
    os.makedirs(d, exist_ok=True)
    for i in range(a.dir_entries):
        os.close(os.open(os.path.join(d, f"e{i:06d}"), os.O_WRONLY | os.O_CREAT, 0o644))


def read_manifest(path):
    out = []
    with open(path) as m:
        for line in m:
            k, s, c = line.split()
            out.append((k, int(s), int(c)))
    return out


def cmd_smallfiles(a):
    items = read_manifest(a.manifest)
    random.Random(a.seed).shuffle(items)
    deadline = time.monotonic() + a.timeout
    lock = threading.Lock()
    stats = {"ok": 0, "bytes": 0, "errors": 0, "first_error": None, "skipped": 0}

    def one(item):
        key, size, crc = item
        if time.monotonic() > deadline:
            with lock:
                stats["skipped"] += 1
            return
        err = None
        got = b""
        try:
            fd = os.open(os.path.join(a.mnt, key), os.O_RDONLY)
            try:
                parts = []
                while True:
                    b = os.read(fd, 1 << 20)
                    if not b:
                        break
                    parts.append(b)
                got = b"".join(parts)
            finally:
                os.close(fd)
            if len(got) != size:
                err = f"{key}: {len(got)} bytes, expected {size}"
            elif zlib.crc32(got) != crc:
                err = f"{key}: content differs"
        except OSError as e:
            err = f"{key}: {e.strerror}"
        with lock:
            if err:
                stats["errors"] += 1
                stats["first_error"] = stats["first_error"] or err
            else:
                stats["ok"] += 1
                stats["bytes"] += len(got)

    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(a.threads) as ex:
        list(ex.map(one, items))
    dt = time.monotonic() - t0
    stats.update(files=len(items), seconds=round(dt, 3),
                 files_per_s=round(stats["ok"] / dt, 1), mib_per_s=round(stats["bytes"] / dt / 1048576, 1))
    print(json.dumps(stats))


def cmd_ttfb(a):
    lat = []
    for p in a.paths:
        t0 = time.perf_counter()
        try:
            fd = os.open(p, os.O_RDONLY)
            try:
                b = os.read(fd, 4096)
            finally:
                os.close(fd)
            if not b:
                raise OSError(0, "empty read")
        except OSError as e:
            print(json.dumps({"error": f"{p}: {e.strerror}"}))
            return
        lat.append((time.perf_counter() - t0) * 1000)
    print(json.dumps({"ms": [round(x, 2) for x in lat], "median_ms": round(statistics.median(lat), 2)}))


def cmd_urls(a):
    for k in a.keys:
        print(s3sign.presign(a.endpoint, KEY, SECRET, REGION, "GET", f"/{a.bucket}/{k}"))


def cmd_curlcfg_small(a):
    items = read_manifest(a.manifest)
    random.Random(a.seed).shuffle(items)
    for k, _, _ in items:
        u = s3sign.presign(a.endpoint, KEY, SECRET, REGION, "GET", f"/{a.bucket}/{k}")
        print(f'url = "{u}"\noutput = "/dev/null"')


def cmd_curlcfg_rand(a):
    r = random.Random(a.seed)
    blocks = a.size // a.bs
    for i in range(a.count):
        off = r.randrange(blocks) * a.bs
        if i:
            print("next")
        print(f'url = "{a.url}"\noutput = "/dev/null"\nrange = "{off}-{off + a.bs - 1}"\n'
              'write-out = "%{http_code} %{size_download}\\n"')


def cmd_rawlist(a):
    u = urllib.parse.urlsplit(a.endpoint)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
    token = None
    entries = 0
    t0 = time.monotonic()
    while True:
        q = {"list-type": "2", "prefix": a.prefix, "delimiter": "/", "max-keys": "1000"}
        if token:
            q["continuation-token"] = token
        url = s3sign.presign(a.endpoint, KEY, SECRET, REGION, "GET", f"/{a.bucket}", q)
        s = urllib.parse.urlsplit(url)
        conn.request("GET", f"{s.path}?{s.query}")
        r = conn.getresponse()
        body = r.read().decode()
        if r.status != 200:
            print(json.dumps({"error": f"HTTP {r.status}: {body[:200]}"}))
            return
        entries += body.count("<Contents>") + body.count("<CommonPrefixes>")
        m = re.search(r"<NextContinuationToken>([^<]*)</NextContinuationToken>", body)
        if "<IsTruncated>true</IsTruncated>" not in body or not m:
            break
        token = m.group(1)
    print(json.dumps({"entries": entries, "seconds": round(time.monotonic() - t0, 3)}))


def cmd_fio(a):
    try:
        with open(a.file) as f:
            text = f.read()
        j = json.loads(text[text.index("{"):])
    except (OSError, ValueError) as e:
        print(f"failed: no fio output ({e.__class__.__name__})")
        return
    jobs = j.get("jobs", [])
    errs = [x.get("error", 0) for x in jobs if x.get("error", 0)]
    if not jobs or errs:
        print(f"failed: fio error {os.strerror(errs[0]) if errs else 'no jobs'}")
        return
    bw = sum(x["read"]["bw_bytes"] for x in jobs)
    if bw <= 0:
        print("failed: fio read nothing")
        return
    print(f"{bw / 1048576:.1f}")


def main():
    p = argparse.ArgumentParser()
    sp = p.add_subparsers(dest="cmd", required=True)
    g = sp.add_parser("gen")
    g.add_argument("root")
    g.add_argument("--large-mib", type=int, required=True)
    g.add_argument("--small-files", type=int, required=True)
    g.add_argument("--small-kib", type=int, required=True)
    g.add_argument("--dir-entries", type=int, required=True)
    s = sp.add_parser("smallfiles")
    s.add_argument("mnt")
    s.add_argument("manifest")
    s.add_argument("--threads", type=int, default=8)
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--timeout", type=float, default=600)
    t = sp.add_parser("ttfb")
    t.add_argument("paths", nargs="+")
    u = sp.add_parser("urls")
    u.add_argument("endpoint")
    u.add_argument("bucket")
    u.add_argument("keys", nargs="+")
    c = sp.add_parser("curlcfg-small")
    c.add_argument("endpoint")
    c.add_argument("bucket")
    c.add_argument("manifest")
    c.add_argument("--seed", type=int, default=1)
    r = sp.add_parser("curlcfg-rand")
    r.add_argument("url")
    r.add_argument("size", type=int)
    r.add_argument("--bs", type=int, default=262144)
    r.add_argument("--count", type=int, default=1000)
    r.add_argument("--seed", type=int, default=1)
    l = sp.add_parser("rawlist")
    l.add_argument("endpoint")
    l.add_argument("bucket")
    l.add_argument("prefix")
    f = sp.add_parser("fio")
    f.add_argument("file")
    a = p.parse_args()
    globals()["cmd_" + a.cmd.replace("-", "_")](a)


if __name__ == "__main__":
    main()
