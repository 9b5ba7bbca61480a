"""SigV4 query-string presigning (the same URLs `reelfs-s3-bench presign` prints), so the raw-HTTP
baseline can sign 10 000 object URLs and paged LIST requests without spawning a process per URL.

    presign(endpoint, key_id, secret, region, method, path, query={}, expires=3600, now=None)
"""
import datetime
import hashlib
import hmac
import urllib.parse


def _q(s, safe="-_.~"):
    return urllib.parse.quote(s, safe=safe)


def presign(endpoint, key_id, secret, region, method, path, query=None, expires=3600, now=None):
    u = urllib.parse.urlsplit(endpoint)
    host = u.netloc
    now = now or datetime.datetime.now(datetime.timezone.utc)
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    day = amz_date[:8]
    scope = f"{day}/{region}/s3/aws4_request"
    params = dict(query or {})
    params.update({
        "X-Amz-Algorithm": "AWS4-HMAC-SHA256",
        "X-Amz-Credential": f"{key_id}/{scope}",
        "X-Amz-Date": amz_date,
        "X-Amz-Expires": str(expires),
        "X-Amz-SignedHeaders": "host",
    })
    canon_path = _q(path, safe="/-_.~")
    canon_query = "&".join(f"{_q(k)}={_q(v)}" for k, v in sorted(params.items()))
    canon = "\n".join([method, canon_path, canon_query, f"host:{host}\n", "host", "UNSIGNED-PAYLOAD"])
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                         hashlib.sha256(canon.encode()).hexdigest()])
    k = ("AWS4" + secret).encode()
    for part in (day, region, "s3", "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    sig = hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest()
    return f"{u.scheme}://{host}{canon_path}?{canon_query}&X-Amz-Signature={sig}"
