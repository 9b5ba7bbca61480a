#!/usr/bin/env python3
"""Interop: how reelfs-gateway frames request bodies, seen from a raw socket (presigned URLs that
boto3 signs). A body of known length is read straight from the socket (gateway/http/server.cc),
so its edges are tested here:

1. a PUT whose body and a pipelined GET arrive in one send(): both answered, bytes stored exact;
2. a 5 MiB PUT sent in odd pieces (1 B, 7 B, 65 537 B, the rest) with pauses: stored exact;
3. a PUT cut short (Content-Length 4 MiB, 1 MiB sent, then the client closes): no object, no
   temporary file left, and the gateway answers the next request;
4. a body of Content-Length 0 followed by a pipelined request.

Exits 77 (skip) when boto3 or the gateway binary is missing.
"""
import hashlib
import os
import socket
import sys
import time

from gateway_proc import Gateway, skip

try:
    import boto3
    from botocore.config import Config
except ImportError:
    skip("python3-boto3 not installed")

ACCESS, SECRET = "AKIDREELFSFRAME", "framing/secret+key/0123456789"
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


try:
    gw = Gateway("reelfs-gw-frame.", ACCESS, SECRET)
except RuntimeError as e:
    sys.exit(f"FAIL: {e}")
host, port = gw.endpoint.split("//", 1)[1].rsplit(":", 1)
s3 = boto3.client("s3", endpoint_url=gw.endpoint, region_name="us-east-1",
                  aws_access_key_id=ACCESS, aws_secret_access_key=SECRET,
                  config=Config(s3={"addressing_style": "path"}, signature_version="s3v4"))


def target(method, key):
    op = {"PUT": "put_object", "GET": "get_object"}[method]
    url = s3.generate_presigned_url(op, Params={"Bucket": "bkt", "Key": key}, ExpiresIn=600)
    return url[len(gw.endpoint):]


def request(method, key, body=b""):
    head = f"{method} {target(method, key)} HTTP/1.1\r\nHost: {host}:{port}\r\n"
    if method == "PUT":
        head += f"Content-Length: {len(body)}\r\n"
    return (head + "\r\n").encode() + body


def read_response(f):
    """(status, body) of one response from file object f (Content-Length framed)."""
    status = int(f.readline().split()[1])
    length = 0
    while True:
        line = f.readline().strip()
        if not line:
            break
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    return status, f.read(length)


def connect():
    c = socket.create_connection((host, int(port)))
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return c


def stored(key):
    path = os.path.join(gw.root, "bkt", key)
    return open(path, "rb").read() if os.path.exists(path) else None


try:
    s3.create_bucket(Bucket="bkt")
    s3.put_object(Bucket="bkt", Key="there", Body=b"already there")

    print("== 1. body and a pipelined GET in one send")
    body = os.urandom(3000)
    with connect() as c, c.makefile("rb") as f:
        c.sendall(request("PUT", "one", body) + request("GET", "there"))
        st1, _ = read_response(f)
        st2, got = read_response(f)
    check(st1 == 200 and stored("one") == body, f"PUT answered {st1}, stored exact")
    check(st2 == 200 and got == b"already there", f"pipelined GET answered {st2} with its bytes")

    print("== 2. a 5 MiB body in odd pieces")
    body = os.urandom(5 << 20)
    with connect() as c, c.makefile("rb") as f:
        data = request("PUT", "pieces", body)
        cut = len(data) - len(body)
        for piece in (data[:cut + 1], data[cut + 1:cut + 8], data[cut + 8:cut + 8 + 65537],
                      data[cut + 8 + 65537:]):
            c.sendall(piece)
            time.sleep(0.05)
        st, _ = read_response(f)
    got = stored("pieces")
    check(st == 200 and got is not None and
          hashlib.sha256(got).digest() == hashlib.sha256(body).digest(),
          f"answered {st}, stored exact")

    print("== 3. a body cut short by the client")
    body = os.urandom(4 << 20)
    with connect() as c:
        data = request("PUT", "cut", body)
        c.sendall(data[:len(data) - len(body) + (1 << 20)])
        time.sleep(0.2)
    time.sleep(0.5)
    check(stored("cut") is None, "no object")
    # Bodies are written first into the gateway's own tmp/<pid>-<random>/ (`.alive` is its lock).
    tmp = os.path.join(gw.root, ".reelfs-gateway", "tmp")
    leftovers = [os.path.join(d, f) for d, _, fs in os.walk(tmp) for f in fs if f != ".alive"]
    check(not leftovers, f"no temporary file left in .reelfs-gateway/tmp ({leftovers})")
    check(s3.get_object(Bucket="bkt", Key="there")["Body"].read() == b"already there",
          "the gateway answers the next request")

    print("== 4. an empty body, then a pipelined request")
    with connect() as c, c.makefile("rb") as f:
        c.sendall(request("PUT", "empty", b"") + request("GET", "there"))
        st1, _ = read_response(f)
        st2, got = read_response(f)
    check(st1 == 200 and stored("empty") == b"", f"empty PUT answered {st1}")
    check(st2 == 200 and got == b"already there", f"pipelined GET answered {st2}")
finally:
    gw.terminate()

if failures:
    sys.exit("FAIL: " + "; ".join(failures))
print("PASS")
