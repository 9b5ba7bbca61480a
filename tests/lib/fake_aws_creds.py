#!/usr/bin/env python3
"""Test double for the AWS credential services that reelfs's credential chain calls.

For tests only. One HTTP server on 127.0.0.1 plays STS (AssumeRoleWithWebIdentity, and AssumeRole
with a fully verified SigV4 signature), the ECS/EKS container credentials endpoint and EC2
instance metadata (IMDSv2 only). Every credential it hands out is the local S3 gateway's real key
pair with a fresh "<kind>-<n>" session token, so the client can go on to use it against the
gateway. GET /stats counts what was served; POST /control/fail makes the next N issues of one kind
answer 500, to test that a failed refresh keeps the old credentials. It contacts no other address
and never logs secrets, tokens or Authorization values. `--self-test` exercises all of it.
"""
import argparse, datetime, hashlib, hmac, json, os, secrets, shutil, signal, subprocess, sys
import tempfile, threading, time, urllib.error, urllib.parse, urllib.request, uuid
import xml.etree.ElementTree as ET
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from xml.sax.saxutils import escape

STS_NS = "https://sts.amazonaws.com/doc/2011-06-15/"
ROLE = "reelfs-test-role"
IMDS_CREDS = "/latest/meta-data/iam/security-credentials"
TTL = "X-aws-ec2-metadata-token-ttl-seconds"
PREFIX = {"web_identity": "web", "assume_role": "role", "container": "container",
          "imds_creds": "imds"}
COUNTERS = ["web_identity", "assume_role", "container", "imds_token", "imds_role_list",
            "imds_creds", "rejected", "failed_on_purpose"]


def utcnow():
    return datetime.datetime.now(datetime.timezone.utc)


def iso(t):
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def canonical_request(method, path, query, hdrs, signed, body):
    """SigV4 canonical request, generic (non-S3) rules: each path segment is encoded again as
    sent; query pairs are decoded, re-encoded (only A-Za-z0-9-_.~ kept) and sorted."""
    enc = lambda s: urllib.parse.quote(s, safe="-_.~")
    uri = "/".join(enc(seg) for seg in path.split("/")) or "/"
    pairs = sorted((enc(urllib.parse.unquote(k)), enc(urllib.parse.unquote(v)))
                   for k, _, v in (p.partition("=") for p in query.split("&") if p))
    headers = "".join(f"{h}:{' '.join(hdrs[h].split())}\n" for h in signed)
    return "\n".join([method, uri, "&".join(f"{k}={v}" for k, v in pairs), headers,
                      ";".join(signed), hashlib.sha256(body).hexdigest()])


def sigv4_signature(secret, amz_date, region, service, creq):
    scope = f"{amz_date[:8]}/{region}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                         hashlib.sha256(creq.encode()).hexdigest()])
    key = ("AWS4" + secret).encode()
    for part in (amz_date[:8], region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()


def same(a, b):
    """Constant-time comparison; on bytes, as compare_digest refuses non-ASCII str."""
    return hmac.compare_digest(a.encode(), b.encode())


def clean(s, n=120):
    """One log field: printable ASCII, no spaces, bounded, so a request cannot forge log lines."""
    return "".join(c if "!" <= c <= "~" else "?" for c in s[:n]) or "-"


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.counters = dict.fromkeys(COUNTERS, 0)
        self.fail = dict.fromkeys(PREFIX, 0)
        self.imds_tokens = {}  # token -> time.monotonic() expiry

    def bump(self, key):
        with self.lock:
            self.counters[key] += 1
            return self.counters[key]

    def take_failure(self, kind):
        with self.lock:
            if self.fail[kind] <= 0:
                return False
            self.fail[kind] -= 1
            self.counters["failed_on_purpose"] += 1
            return True

    def token_ok(self, token):
        with self.lock:
            now = time.monotonic()
            self.imds_tokens = {t: e for t, e in self.imds_tokens.items() if e > now}
            return bool(token) and token in self.imds_tokens


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like the real services
    server_version = "fake-aws-creds"

    def log_message(self, *_):  # the default line would carry the query string (tokens)
        pass

    def do_GET(self):
        self.cfg, self.state, self.what = self.server.cfg, self.server.state, "-"
        self.path_only, _, self.query = self.path.partition("?")
        length = self.headers.get("Content-Length", "0")
        if "Transfer-Encoding" in self.headers or not length.isdigit() or int(length) > 1 << 20:
            self.close_connection = True  # an unread body would poison the kept-alive stream
            return self._reply(400, "text/plain", "bad body framing", "BadFraming")
        self.body = self.rfile.read(int(length))
        m, p = self.command, self.path_only
        if p == "/" and m in ("GET", "POST"):
            return self._sts()
        if p == "/container/creds" and m == "GET":
            return self._container()
        if p == "/latest/api/token" and m == "PUT":
            return self._imds_token()
        if (p == IMDS_CREDS or p.startswith(IMDS_CREDS + "/")) and m == "GET":
            return self._imds_creds(p[len(IMDS_CREDS):])
        if p == "/stats" and m == "GET":
            with self.state.lock:
                stats = dict(self.state.counters)
            return self._json(200, stats, "ok")
        if p == "/control/fail" and m == "POST":
            return self._control()
        self._reply(404, "text/plain", "not found", "NotFound")

    do_POST = do_PUT = do_DELETE = do_PATCH = do_GET

    def _reply(self, status, ctype, body, verdict, headers=()):
        # Count and log before answering, so a client that reads /stats next sees this request.
        if 400 <= status < 500:
            self.state.bump("rejected")
        with self.server.log_lock:
            self.server.log.write(f"{iso(utcnow())} {self.command} {clean(self.path_only)} "
                                  f"{self.what} {status} {verdict}\n")
            self.server.log.flush()
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _json(self, status, obj, verdict):
        self._reply(status, "application/json", json.dumps(obj), verdict)

    def _issue(self, kind):
        n, now = self.state.bump(kind), utcnow()
        return {"AccessKeyId": self.cfg.access_key, "SecretAccessKey": self.cfg.secret,
                "Token": f"{PREFIX[kind]}-{n}", "LastUpdated": iso(now),
                "Expiration": iso(now + datetime.timedelta(seconds=self.cfg.expires_in))}

    # --- STS -----------------------------------------------------------------------------------
    def _sts_error(self, status, code, message, etype="Sender"):
        self._reply(status, "text/xml",
                    f'<ErrorResponse xmlns="{STS_NS}"><Error><Type>{etype}</Type>'
                    f"<Code>{code}</Code><Message>{escape(message)}</Message></Error>"
                    f"<RequestId>{uuid.uuid4()}</RequestId></ErrorResponse>", code)

    def _sts(self):
        params = dict(urllib.parse.parse_qsl(self.query, keep_blank_values=True))
        ctype = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if self.command == "POST" and ctype == "application/x-www-form-urlencoded":
            params.update(urllib.parse.parse_qsl(self.body.decode("utf-8", "replace"),
                                                 keep_blank_values=True))
        action, version = params.get("Action", ""), params.get("Version", "")
        self.what = "sts:" + clean(action, 40)
        if version != "2011-06-15" or action not in ("AssumeRoleWithWebIdentity", "AssumeRole"):
            return self._sts_error(400, "InvalidAction",
                                   f"Could not find operation {action} for version {version}")
        web = action == "AssumeRoleWithWebIdentity"
        if not web:
            err = self._verify_sigv4()  # AWS authenticates before it looks at the parameters
            if err:
                return self._sts_error(*err)
        for name in ("RoleArn", "RoleSessionName") + (("WebIdentityToken",) if web else ()):
            if not params.get(name):
                return self._sts_error(400, "ValidationError", f"{name} must not be empty")
        duration = params.get("DurationSeconds", "900")
        if not duration.isdigit() or not 900 <= int(duration) <= 43200:
            return self._sts_error(400, "ValidationError", "DurationSeconds out of range")
        if web and not same(params["WebIdentityToken"], self.cfg.web_token):
            return self._sts_error(400, "InvalidIdentityToken", "Couldn't verify the token")
        if params["RoleArn"] != self.cfg.role_arn:
            return self._sts_error(403, "AccessDenied", "Not authorized to perform sts:" + action)
        kind = "web_identity" if web else "assume_role"
        if self.state.take_failure(kind):
            return self._sts_error(500, "InternalFailure", "failing on purpose", "Receiver")
        c, session = self._issue(kind), escape(params["RoleSessionName"])
        parts = self.cfg.role_arn.split(":", 5)
        account, role = (parts[4], parts[5].split("/")[-1]) if len(parts) == 6 else ("0", "x")
        subject = "<SubjectFromWebIdentityToken>reelfs-test</SubjectFromWebIdentityToken>"
        self._reply(200, "text/xml",
                    f'<{action}Response xmlns="{STS_NS}"><{action}Result>{subject if web else ""}'
                    f"<AssumedRoleUser><Arn>{escape(f'arn:aws:sts::{account}:assumed-role/')}"
                    f"{escape(role)}/{session}</Arn><AssumedRoleId>AROAREELFSTESTROLE01:{session}"
                    f"</AssumedRoleId></AssumedRoleUser><Credentials><AccessKeyId>"
                    f"{escape(c['AccessKeyId'])}</AccessKeyId><SecretAccessKey>"
                    f"{escape(c['SecretAccessKey'])}</SecretAccessKey><SessionToken>{c['Token']}"
                    f"</SessionToken><Expiration>{c['Expiration']}</Expiration></Credentials>"
                    f"</{action}Result><ResponseMetadata><RequestId>{uuid.uuid4()}</RequestId>"
                    f"</ResponseMetadata></{action}Response>", "ok")

    def _verify_sigv4(self):
        """None when the request is SigV4-signed by the source key, else (status, code, msg)."""
        auth = self.headers.get("Authorization")
        if not auth:
            return 403, "MissingAuthenticationToken", "Request is missing Authentication Token"
        algo, _, rest = auth.strip().partition(" ")
        fields = dict(f.strip().partition("=")[::2] for f in rest.split(","))
        cred, signed, sig = (fields.get(k, "")
                             for k in ("Credential", "SignedHeaders", "Signature"))
        scope = cred.split("/")
        if algo != "AWS4-HMAC-SHA256" or len(scope) != 5 or not signed or not sig:
            return 400, "IncompleteSignature", "Authorization is not a SigV4 signature"
        if not self.cfg.source_access_key or scope[0] != self.cfg.source_access_key:
            return 403, "InvalidClientTokenId", "The security token included is invalid."
        amz_date, names = self.headers.get("X-Amz-Date", ""), signed.split(";")
        if (len(amz_date) != 16 or scope[1] != amz_date[:8]
                or scope[3:] != ["sts", "aws4_request"]
                or names != sorted(set(n.lower() for n in names))
                or not {"host", "x-amz-date"} <= set(names)
                or any(self.headers.get(n) is None for n in names)):
            return 403, "SignatureDoesNotMatch", "Credential scope or signed headers are wrong"
        hdrs = {n: ",".join(self.headers.get_all(n)) for n in names}
        creq = canonical_request(self.command, self.path_only, self.query, hdrs, names, self.body)
        if not same(sigv4_signature(self.cfg.source_secret, amz_date, scope[2], "sts", creq), sig):
            return 403, "SignatureDoesNotMatch", "The request signature we calculated differs"
        return None

    # --- container and IMDS --------------------------------------------------------------------
    def _container(self):
        self.what = "container"
        if not same(self.headers.get("Authorization", ""), self.cfg.container_token):
            return self._json(401, {"code": "Unauthorized", "message": "bad authorization token"},
                              "Unauthorized")
        if self.state.take_failure("container"):
            return self._json(500, {"code": "InternalError", "message": "failing on purpose"},
                              "failed")
        c = self._issue("container")
        del c["LastUpdated"]
        self._json(200, dict(c, RoleArn=self.cfg.role_arn), "ok")

    def _imds_token(self):
        self.what = "imds:token"
        if "X-Forwarded-For" in self.headers:  # the real IMDS refuses proxied token requests
            return self._reply(403, "text/plain", "Forbidden", "Forwarded")
        ttl = (self.headers.get(TTL) or "").strip()
        if not ttl.isdigit() or not 1 <= int(ttl) <= 21600:
            return self._reply(400, "text/plain", "Bad Request", "BadTTL")
        token = secrets.token_urlsafe(32)
        with self.state.lock:
            self.state.imds_tokens[token] = time.monotonic() + int(ttl)
        self.state.bump("imds_token")
        self._reply(200, "text/plain", token, "ok", [(TTL, ttl)])

    def _imds_creds(self, rest):
        self.what = "imds:creds"
        if not self.state.token_ok(self.headers.get("X-aws-ec2-metadata-token")):
            return self._reply(401, "text/plain", "Unauthorized", "Unauthorized")
        if rest in ("", "/"):
            self.what = "imds:role-list"
            self.state.bump("imds_role_list")
            return self._reply(200, "text/plain", ROLE, "ok")
        if rest != "/" + ROLE:
            return self._reply(404, "text/plain", "Not Found", "NoSuchRole")
        if self.state.take_failure("imds_creds"):
            return self._reply(500, "text/plain", "Internal Server Error", "failed")
        c = self._issue("imds_creds")
        self._json(200, {"Code": "Success", "LastUpdated": c.pop("LastUpdated"),
                         "Type": "AWS-HMAC", **c}, "ok")

    def _control(self):
        self.what = "control:fail"
        try:
            req = json.loads(self.body)
            kind, count = req["kind"], req["count"]
            if kind not in PREFIX or type(count) is not int or count < 0:
                raise ValueError
        except (ValueError, KeyError, TypeError):
            return self._json(400, {"error": f'want {{"kind": one of {list(PREFIX)}, "count": N}}'},
                              "BadControl")
        with self.state.lock:
            self.state.fail[kind] = count
        self._json(200, {"kind": kind, "count": count}, "ok")


def make_server(cfg, log):
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.cfg, srv.state, srv.log, srv.log_lock = cfg, State(), log, threading.Lock()
    return srv


def write_port_file(path, port):
    with open(path + ".tmp", "w") as f:  # then rename: a reader never sees a partial file
        f.write(f"{port}\n")
    os.replace(path + ".tmp", path)


def self_test(parser):
    def check(cond, what):
        if not cond:
            sys.exit(f"fake_aws_creds self-test FAILED: {what}")

    # The signer is first checked against AWS's published example (IAM ListUsers), so that the
    # server and this test cannot merely agree with each other.
    hdrs = {"content-type": "application/x-www-form-urlencoded; charset=utf-8",
            "host": "iam.amazonaws.com", "x-amz-date": "20150830T123600Z"}
    creq = canonical_request("GET", "/", "Action=ListUsers&Version=2010-05-08", hdrs,
                             sorted(hdrs), b"")
    check(sigv4_signature("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "20150830T123600Z",
                          "us-east-1", "iam", creq) ==
          "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7", "SigV4 AWS example")

    tmp = tempfile.mkdtemp(prefix="fake_aws_creds.")
    cfg = parser.parse_args(["--port-file", tmp + "/port", "--access-key", "GWKEY", "--secret",
                             "gw/secret+1", "--expires-in", "900", "--source-access-key",
                             "SRCKEY", "--source-secret", "src/secret+2"])
    log = open(tmp + "/log", "w")
    srv = make_server(cfg, log)
    port = srv.server_address[1]
    write_port_file(cfg.port_file, port)
    with open(cfg.port_file) as f:
        check(f.read() == f"{port}\n", "port file")
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never via a proxy
    calls = rejected = 0

    def call(method, path, body=None, headers=None):
        nonlocal calls, rejected
        calls += 1
        req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method=method,
                                     headers=headers or {})
        try:
            with opener.open(req, timeout=10) as r:
                return r.status, r.headers.get("Content-Type"), r.read().decode()
        except urllib.error.HTTPError as e:
            rejected += 400 <= e.code < 500
            return e.code, e.headers.get("Content-Type"), e.read().decode()

    def sts(path="/", body=b"", headers=None, want=200, code=None):
        s, ctype, text = call("POST" if body else "GET", path, body or None, headers)
        check(s == want and ctype == "text/xml", f"STS {path} {body}: {s} {text}")
        ET.fromstring(text)  # well-formed, as the client's parser needs
        check(not code or (text.startswith("<ErrorResponse") and f"<Code>{code}</Code>" in text),
              f"{code}: {text}")
        return text

    def field(text, name):
        return text.split(f"<{name}>")[1].split(f"</{name}>")[0]

    def creds_ok(c, token, what):
        exp = datetime.datetime.strptime(c["Expiration"] + "+0000", "%Y-%m-%dT%H:%M:%SZ%z")
        left = (exp - utcnow()).total_seconds()
        check(c["AccessKeyId"] == "GWKEY" and c["SecretAccessKey"] == "gw/secret+1"
              and c["Token"] == token and 890 < left < 910, f"{what} credentials: {c}")

    form = lambda **kw: urllib.parse.urlencode(dict({"Version": "2011-06-15"}, **kw)).encode()
    web = dict(Action="AssumeRoleWithWebIdentity", RoleArn=cfg.role_arn, RoleSessionName="s1",
               WebIdentityToken="web-token-1")
    text = sts(body=form(**web))
    creds_ok({k: field(text, k) for k in ("AccessKeyId", "SecretAccessKey", "Expiration")}
             | {"Token": field(text, "SessionToken")}, "web-1", "web")
    check(text.startswith(f'<AssumeRoleWithWebIdentityResponse xmlns="{STS_NS}">')
          and field(text, "AssumedRoleId") == "AROAREELFSTESTROLE01:s1"
          and field(text, "Arn") == "arn:aws:sts::123456789012:assumed-role/reelfs-test/s1"
          and field(text, "SubjectFromWebIdentityToken") == "reelfs-test", f"web shape: {text}")
    check(field(sts("/?" + form(**web).decode()), "SessionToken") == "web-2", "STS via GET")
    for bad in ("forged", "f\u00f6rged"):
        sts(body=form(**dict(web, WebIdentityToken=bad)), want=400, code="InvalidIdentityToken")
    sts(body=form(**dict(web, RoleArn="arn:aws:iam::1:role/other")), want=403, code="AccessDenied")
    sts(body=form(**dict(web, RoleSessionName="")), want=400, code="ValidationError")
    sts(body=form(**dict(web, Version="2010-05-08")), want=400, code="InvalidAction")
    sts(body=form(Action="GetCallerIdentity"), want=400, code="InvalidAction")

    def signed(method, query, body, key="SRCKEY", secret="src/secret+2", tamper=b""):
        amz = utcnow().strftime("%Y%m%dT%H%M%SZ")
        hdrs = {"content-type": "application/x-www-form-urlencoded;  charset=utf-8",
                "host": f"127.0.0.1:{port}", "x-amz-date": amz}
        sig = sigv4_signature(secret, amz, "eu-west-3", "sts",
                              canonical_request(method, "/", query, hdrs, sorted(hdrs), body))
        hdrs["Authorization"] = (f"AWS4-HMAC-SHA256 Credential={key}/{amz[:8]}/eu-west-3/sts/"
                                 "aws4_request, SignedHeaders=content-type;host;x-amz-date, "
                                 f"Signature={sig}")
        return call(method, "/?" + query if query else "/",
                    body + tamper if method == "POST" else None, hdrs)

    role = form(Action="AssumeRole", RoleArn=cfg.role_arn, RoleSessionName="s2",
                DurationSeconds="900", ExternalId="x")
    s, _, text = signed("POST", "", role)
    check(s == 200 and text.startswith(f'<AssumeRoleResponse xmlns="{STS_NS}"><AssumeRoleResult>'
                                       "<AssumedRoleUser>")
          and field(text, "SessionToken") == "role-1"
          and "SubjectFromWebIdentityToken" not in text, f"AssumeRole POST: {s} {text}")
    s, _, text = signed("GET", role.decode(), b"")
    check(s == 200 and field(text, "SessionToken") == "role-2", f"AssumeRole GET: {s} {text}")
    for kw, want, code in [({"secret": "wrong"}, 403, "SignatureDoesNotMatch"),
                           ({"tamper": b"&x=1"}, 403, "SignatureDoesNotMatch"),
                           ({"key": "OTHERKEY"}, 403, "InvalidClientTokenId")]:
        s, _, text = signed("POST", "", role, **kw)
        check(s == want and f"<Code>{code}</Code>" in text, f"AssumeRole {kw}: {s} {text}")
    sts(body=role, want=403, code="MissingAuthenticationToken")

    tok = {"Authorization": "container-token-1"}
    s, ctype, text = call("GET", "/container/creds", headers=tok)
    check(s == 200 and ctype == "application/json", f"container: {s} {text}")
    c = json.loads(text)
    creds_ok(c, "container-1", "container")
    check(c["RoleArn"] == cfg.role_arn, "container RoleArn")
    for h in ({}, {"Authorization": "container-token-2"}, {"Authorization": "t\u00f6ken"}):
        s, _, text = call("GET", "/container/creds", headers=h)
        check(s == 401 and json.loads(text)["code"] == "Unauthorized", f"container {h}: {s}")

    for h, want in [({}, 400), ({TTL: "0"}, 400), ({TTL: "21601"}, 400), ({TTL: "x"}, 400),
                    ({TTL: "60", "X-Forwarded-For": "10.0.0.1"}, 403)]:
        check(call("PUT", "/latest/api/token", b"", h)[0] == want, f"IMDS token {h}")
    s, _, short = call("PUT", "/latest/api/token", b"", {TTL: "1"})
    s2, _, token = call("PUT", "/latest/api/token", b"", {TTL: "21600"})
    check(s == s2 == 200 and short and token and short != token, "IMDS token issue")
    imds = {"X-aws-ec2-metadata-token": token}
    check(call("GET", IMDS_CREDS + "/", headers=imds)[::2] == (200, ROLE), "IMDS role list")
    s, _, text = call("GET", f"{IMDS_CREDS}/{ROLE}", headers=imds)
    c = json.loads(text)
    creds_ok(c, "imds-1", "IMDS")
    check(s == 200 and c["Code"] == "Success" and c["Type"] == "AWS-HMAC" and c["LastUpdated"],
          f"IMDS: {text}")
    check(call("GET", f"{IMDS_CREDS}/other-role", headers=imds)[0] == 404, "IMDS other role")
    for h in ({}, {"X-aws-ec2-metadata-token": "bogus"}):
        check(call("GET", f"{IMDS_CREDS}/{ROLE}", headers=h)[0] == 401, f"IMDS creds {h}")
        check(call("GET", IMDS_CREDS + "/", headers=h)[0] == 401, f"IMDS list {h}")
    time.sleep(1.2)
    check(call("GET", IMDS_CREDS + "/", headers={"X-aws-ec2-metadata-token": short})[0] == 401,
          "expired IMDS token")

    for bad in (b'{"kind": "nope", "count": 1}', b'{"kind": "container", "count": -1}', b"[",
                b"\xff"):
        check(call("POST", "/control/fail", bad)[0] == 400, f"bad control {bad}")
    for kind, n in [("container", 2), ("web_identity", 1), ("imds_creds", 1), ("assume_role", 1)]:
        body = json.dumps({"kind": kind, "count": n}).encode()
        check(call("POST", "/control/fail", body)[0] == 200, "control")
    check([call("GET", "/container/creds", headers=tok)[0] for _ in range(3)] == [500, 500, 200],
          "container failure injection")
    sts(body=form(**web), want=500, code="InternalFailure")
    check(field(sts(body=form(**web)), "SessionToken") == "web-3", "web after injected failure")
    check(call("GET", f"{IMDS_CREDS}/{ROLE}", headers=imds)[0] == 500, "IMDS failure injection")
    check(signed("POST", "", role)[0] == 500 and signed("POST", "", role)[0] == 200, "role fail")
    check(call("GET", "/nowhere")[0] == 404 and call("DELETE", "/stats")[0] == 404, "404s")

    stats = json.loads(call("GET", "/stats")[2])
    want = {"web_identity": 3, "assume_role": 3, "container": 2, "imds_token": 2,
            "imds_role_list": 1, "imds_creds": 1, "rejected": rejected, "failed_on_purpose": 5}
    check(stats == want, f"stats {stats} != {want}")
    srv.shutdown()
    srv.server_close()
    log.close()
    with open(tmp + "/log") as f:
        logged = f.read()
    check(len(logged.splitlines()) == calls, f"{calls} requests, one log line each: {logged}")
    check(" POST / sts:AssumeRoleWithWebIdentity 400 InvalidIdentityToken\n" in logged, logged)
    for secret in ["gw/secret+1", "src/secret+2", "web-token-1", "container-token-1", token,
                   short, "web-1", "role-1", "imds-1", "Signature=", "forged"]:
        check(secret not in logged, f"log leaks {secret!r}")

    # The real command line: the port file, then a clean exit 0 on SIGTERM.
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--port-file",
                             tmp + "/p2", "--access-key", "A", "--secret", "S",
                             "--log", tmp + "/log2"])
    try:
        for _ in range(100):
            if os.path.exists(tmp + "/p2") or proc.poll() is not None:
                break
            time.sleep(0.1)
        check(os.path.exists(tmp + "/p2"), "the CLI wrote no port file")
        with open(tmp + "/p2") as f:
            port = int(f.read())
        check(json.loads(call("GET", "/stats")[2])["rejected"] == 0, "the CLI server answers")
        proc.send_signal(signal.SIGTERM)
        check(proc.wait(10) == 0, "clean exit on SIGTERM")
    finally:
        if proc.poll() is None:
            proc.kill()
    shutil.rmtree(tmp)
    print("fake_aws_creds self-test: ok")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for flag in ("--port-file", "--access-key", "--secret", "--source-access-key",
                 "--source-secret", "--log"):
        p.add_argument(flag)
    p.add_argument("--expires-in", type=int, default=3600)
    p.add_argument("--role-arn", default="arn:aws:iam::123456789012:role/reelfs-test")
    p.add_argument("--web-token", default="web-token-1")
    p.add_argument("--container-token", default="container-token-1")
    p.add_argument("--self-test", action="store_true")
    args = p.parse_args()
    if args.self_test:
        return self_test(p)
    if not (args.port_file and args.access_key and args.secret):
        p.error("--port-file, --access-key and --secret are required")
    if bool(args.source_access_key) != bool(args.source_secret):
        p.error("--source-access-key and --source-secret go together")
    srv = make_server(args, open(args.log, "a") if args.log else sys.stderr)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    write_port_file(args.port_file, srv.server_address[1])
    while not stop.wait(0.5):  # a timed wait, so the signal handler gets to run promptly
        pass
    srv.shutdown()
    srv.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
