#!/usr/bin/env python3
"""A small S3 server that breaks the protocol on purpose (issue 17 items 5-7), for
tests/e2e/misbehaving_server.sh. Standard library only. It ignores authentication.

Bucket "hb", listed honestly at its root (delimiter "/"):
  good           4 KiB, served honestly (sanity: the mount reads it byte for byte)
  ignore-200     3 MiB; a GET answers 200 text/html with a body of the object's size and
                 another ETag (a server or proxy that ignores If-Match and Range)
  ignore-206     3 MiB; a GET answers 206, the range asked for, another ETag and other bytes
  no-etag-200    3 MiB; a GET answers 200 with the other bytes and no ETag at all
  shifted        3 MiB; a GET answers 206 with the right ETag but a range shifted by one byte
  garbage-cr     3 MiB; a GET answers 206 with an unparsable Content-Range
  overlong       3 MiB; a GET answers 206 with a range (and body) longer than asked for
  loop/          every page IsTruncated with the same NextContinuationToken
  badxml/        the listing is not XML
  stuck/, stuck2/  the listing never answers (the connection stays open)
The honest bytes of a key are Honest(key); every wrong answer sends bytes of "X" (0x58), which
Honest() never contains, so a test can tell any wrong byte that reached read().

Usage: hostile_server.py PORT_FILE LOG_FILE: listens on 127.0.0.1:0, writes the port to PORT_FILE
and one line per request ("METHOD path?query") to LOG_FILE.
"""
import hashlib
import http.server
import socketserver
import sys
import threading
import urllib.parse

BUCKET = "hb"
MIB = 1 << 20
SIZES = {"good": 4096}
for _k in ("ignore-200", "ignore-206", "no-etag-200", "shifted", "garbage-cr", "overlong"):
    SIZES[_k] = 3 * MIB
DIRS = ("loop/", "badxml/", "stuck/", "stuck2/")
STOP = threading.Event()


def Honest(key, size):
    """Deterministic bytes in 0x00-0x3f: never 'X' (0x58)."""
    seed = hashlib.sha256(key.encode()).digest()
    block = bytes(b & 0x3F for b in hashlib.sha256(seed).digest() * 128)  # 4 KiB
    return (block * (size // len(block) + 1))[:size]


DATA = {k: Honest(k, n) for k, n in SIZES.items()}
ETAGS = {k: hashlib.md5(v).hexdigest() for k, v in DATA.items()}


def ListXml(prefix, token=None, truncated=False):
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">',
           "<Name>%s</Name><Prefix>%s</Prefix><KeyCount>1</KeyCount><MaxKeys>1000</MaxKeys>"
           % (BUCKET, prefix), "<Delimiter>/</Delimiter>",
           "<IsTruncated>%s</IsTruncated>" % ("true" if truncated else "false")]
    if token:
        out.append("<NextContinuationToken>%s</NextContinuationToken>" % token)
    if prefix == "":
        for k in sorted(SIZES):
            out.append("<Contents><Key>%s</Key><LastModified>2026-01-01T00:00:00.000Z"
                       "</LastModified><ETag>&quot;%s&quot;</ETag><Size>%d</Size>"
                       "<StorageClass>STANDARD</StorageClass></Contents>"
                       % (k, ETAGS[k], SIZES[k]))
        for d in DIRS:
            out.append("<CommonPrefixes><Prefix>%s</Prefix></CommonPrefixes>" % d)
    else:
        out.append("<Contents><Key>%sf</Key><LastModified>2026-01-01T00:00:00.000Z"
                   "</LastModified><ETag>&quot;0&quot;</ETag><Size>1</Size>"
                   "<StorageClass>STANDARD</StorageClass></Contents>" % prefix)
    out.append("</ListBucketResult>")
    return "".join(out).encode()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, status, body=b"", headers=(), length=None):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        with open(LOG, "a") as log:
            log.write("%s %s\n" % (self.command, self.path))
        parts = urllib.parse.unquote(url.path).lstrip("/").split("/", 1)
        if parts[0] != BUCKET:
            return self.send(404, b"<Error><Code>NoSuchBucket</Code></Error>")
        key = parts[1] if len(parts) > 1 else ""
        if key == "":
            return self.List(query)
        return self.Object(key)

    def List(self, query):
        prefix = query.get("prefix", "")
        xml = [("Content-Type", "application/xml")]
        if prefix == "loop/":
            return self.send(200, ListXml(prefix, token="same", truncated=True), xml)
        if prefix == "badxml/":
            return self.send(200, b"<ListBucketResult><Contents><Key>unterminated", xml)
        if prefix.startswith("stuck"):
            STOP.wait(600)  # holds the connection: the listing never answers
            return
        return self.send(200, ListXml(prefix), xml)

    def Object(self, key):
        if key not in SIZES:
            return self.send(404, b"<Error><Code>NoSuchKey</Code></Error>",
                             [("Content-Type", "application/xml")])
        data, etag, size = DATA[key], ETAGS[key], SIZES[key]
        first, last = 0, size - 1
        rng = self.headers.get("Range", "")
        if rng.startswith("bytes="):
            a, _, b = rng[6:].partition("-")
            first = int(a)
            last = min(int(b), size - 1) if b else size - 1
        common = [("Last-Modified", "Thu, 01 Jan 2026 00:00:00 GMT")]
        if self.command == "HEAD" or key == "good":
            if self.command == "HEAD" or not rng:
                return self.send(200, data, common + [("ETag", '"%s"' % etag)], length=size)
            return self.send(206, data[first:last + 1], common + [
                ("ETag", '"%s"' % etag), ("Content-Range", "bytes %d-%d/%d" % (first, last, size))])
        wrong = b"X" * size
        if key == "ignore-200":
            return self.send(200, wrong, [("Content-Type", "text/html"), ("ETag", '"other"')])
        if key == "no-etag-200":
            return self.send(200, wrong, [("Content-Type", "text/html")])
        if key == "ignore-206":
            return self.send(206, wrong[first:last + 1], common + [
                ("ETag", '"other"'), ("Content-Range", "bytes %d-%d/%d" % (first, last, size))])
        if key == "shifted":
            s, e = first + 1, min(last + 1, size - 1)
            return self.send(206, data[s:e + 1], common + [
                ("ETag", '"%s"' % etag), ("Content-Range", "bytes %d-%d/%d" % (s, e, size))])
        if key == "garbage-cr":
            return self.send(206, data[first:last + 1], common + [
                ("ETag", '"%s"' % etag), ("Content-Range", "bytes banana")])
        if key == "overlong":
            e = last + 4096
            return self.send(206, wrong[:e - first + 1], common + [
                ("ETag", '"%s"' % etag), ("Content-Range", "bytes %d-%d/%d" % (first, e, size + 4096))])
        return self.send(500, b"")


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


if __name__ == "__main__":
    port_file, LOG = sys.argv[1], sys.argv[2]
    server = Server(("127.0.0.1", 0), Handler)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    import os
    os.rename(port_file + ".tmp", port_file)
    try:
        server.serve_forever()
    finally:
        STOP.set()
