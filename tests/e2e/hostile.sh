#!/usr/bin/env bash
# e2e: odd and hostile names in the bucket. The gateway refuses hostile keys on PUT, so they are
# planted as files in its root before it starts; what a filesystem cannot hold at all (empty
# components, `.`/`..`, components over 255 bytes, `a` beside `a/`) is covered by the fuse/core
# unit tests with the fake store. Proves: listing never breaks (ls -laR and find exit 0), every key
# the gateway lists shows up under its exact bytes (spaces, backslash, %, leading dashes,
# unicode, 255-byte names in ASCII and in multibyte UTF-8, 200 levels of nesting, case twins) and
# reads back exactly; names the gateway refuses (control characters such as newline and tab,
# invalid UTF-8, keys over 1024
# bytes) and a planted symlink cost nothing but their absence; the daemon survives.
source "$(dirname "$0")/lib.sh"
e2e_init hostile 150
export LC_ALL=C
PYB=$(find_python boto3) || skip "python3 with boto3 needed to list the bucket independently"
SRC="$ROOT/hostile"

step "planting odd names"
"$PY" - "$SRC" <<'PY'
import os, sys
root = os.fsencode(sys.argv[1])
names = [
    b"plain.txt", b"with space.txt", b"  leading spaces", b"trailing space ", b"new\nline",
    b"tab\there", b"ctrl-\x01-char", b"back\\slash", b"percent%20and%2Fslash%", b"-leading-dash",
    b"--help", b"-rf", b"star*question?", b"quotes'\"`", b"semi;colon|pipe&amp", b"#hash=eq+plus",
    b"...", b".hidden", b"uni-\xc3\xa9-\xe6\x97\xa5\xe6\x9c\xac-\xf0\x9f\x9a\x80.txt",
    b"combining-e\xcc\x81", b"bad-utf8-\xff\xfe.bin", b"overlong-\xc0\xaf.bin",
    b"x" * 251 + b".bin", "é".encode() * 127 + b"x", b"Case", b"case", b"CASE",
    b"%", b"~tilde", b"brace{}[]()", b"<angle>", b"a:colon", b"@at", b"!bang", b"$dollar",
]
def put(rel, data):
    p = os.path.join(root, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as f:
        f.write(data)
for i, n in enumerate(names):
    put(n, b"content of " + n + b"\n" + bytes([i]) * i)
for n in (b"dir with space", b"uni-\xe6\x97\xa5\xe6\x9c\xac", b"-dash-dir", b"new\nline-dir", b"%2F"):
    put(n + b"/inner " + n, b"inside " + n)
put(b"/".join([b"d"] * 200) + b"/deep.txt", b"200 levels down")             # 401-byte key
put(b"/".join([b"y" * 250] * 4) + b"/z", b"long components, 1006-byte key")  # <= 1024
put(b"/".join([b"w" * 250] * 5) + b"/z", b"key over 1024 bytes")              # gateway refuses
os.symlink(b"/etc/passwd", os.path.join(root, b"symlink-to-passwd"))
os.makedirs(os.path.join(root, b"empty-dir"))
PY
start_gateway
mount_bucket hostile
MAIN_PID=$MOUNT_PID

step "ls -laR and find over the bucket succeed"
ls -laR "$MNT" >"$WORK/ls-laR" 2>"$WORK/ls-laR.err" || fail "ls -laR failed: $(head "$WORK/ls-laR.err")"
find "$MNT" >"$WORK/find" 2>"$WORK/find.err" || fail "find failed: $(head "$WORK/find.err")"
[[ ! -s "$WORK/find.err" ]] || fail "find complained: $(head "$WORK/find.err")"

step "the mount shows exactly the keys the gateway lists, byte for byte, with their content"
"$PYB" - "$ENDPOINT" "$SRC" "$MNT" <<'PY' || fail "key set or contents differ"
import os, sys, boto3
from botocore.config import Config
endpoint, src, mnt = sys.argv[1:]
s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                  aws_access_key_id=os.environ["GW_ACCESS_KEY"],
                  aws_secret_access_key=os.environ["GW_SECRET_KEY"],
                  config=Config(s3={"addressing_style": "path"}))
keys = set()
for page in s3.get_paginator("list_objects_v2").paginate(Bucket="hostile"):
    keys.update(o["Key"].encode() for o in page.get("Contents", []))
files = set()
for dirpath, dirnames, filenames in os.walk(os.fsencode(mnt)):
    for f in filenames:
        files.add(os.path.relpath(os.path.join(dirpath, f), os.fsencode(mnt)))
markers = {k for k in keys if k.endswith(b"/")}  # a directory marker (the empty directory)
keys -= markers
for m in markers:
    if not os.path.isdir(os.path.join(os.fsencode(mnt), m)):
        sys.exit(f"directory marker {m!r} is not a directory in the mount")
print(f"  gateway lists {len(keys)} keys and {len(markers)} directory markers; the mount shows {len(files)} files")
refused = sorted(k for k in (b"new\nline", b"ctrl-\x01-char", b"tab\there", b"bad-utf8-\xff\xfe.bin", b"overlong-\xc0\xaf.bin") if k not in keys)
print(f"  refused by the gateway (absent, as expected): {refused}")
if keys != files:
    sys.exit(f"only listed by the gateway: {sorted(keys - files)[:10]}\n"
             f"only in the mount: {sorted(files - keys)[:10]}")
for k in sorted(keys):
    with open(os.path.join(os.fsencode(mnt), k), "rb") as f:
        got = f.read()
    with open(os.path.join(os.fsencode(src), k), "rb") as f:
        want = f.read()
    if got != want:
        sys.exit(f"content of {k!r} differs")
    st = os.stat(os.path.join(os.fsencode(mnt), k))
    if st.st_size != len(want):
        sys.exit(f"size of {k!r}: {st.st_size} != {len(want)}")
for must in (b"new\nline", b"back\\slash", b"x" * 251 + b".bin", "é".encode() * 127 + b"x",
             b"/".join([b"d"] * 200) + b"/deep.txt", b"Case", b"case", b"--help"):
    if must in keys and must not in files:
        sys.exit(f"{must!r} missing")
if os.path.exists(os.path.join(mnt, "symlink-to-passwd")):
    with open(os.path.join(mnt, "symlink-to-passwd"), "rb") as f:
        if b"root:" in f.read():
            sys.exit("the planted symlink leaks /etc/passwd")
print("  key set identical, every file's content identical")
PY

step "names with leading dashes, spaces and backslashes work with ordinary tools"
[[ "$(cat -- "$MNT/-rf")" == "$(cat -- "$SRC/-rf")" ]] || fail "cat -- -rf"
[[ "$(cat "$MNT/trailing space ")" == "$(cat "$SRC/trailing space ")" ]] || fail "cat of a name with a trailing space"
[[ "$(cat "$MNT/back\\slash")" == "$(cat "$SRC/back\\slash")" ]] || fail "cat of a name with a backslash"
[[ "$(ls "$MNT/dir with space")" == "inner dir with space" ]] || fail "ls of a directory with a space"
[[ "$(find "$MNT" -name deep.txt -printf '%d')" == 201 ]] || fail "find depth of the 200-level file"
cmp "$MNT/$(printf 'x%.0s' $(seq 251)).bin" "$SRC/$(printf 'x%.0s' $(seq 251)).bin" || fail "255-byte name"

step "the daemon is alive and unmounts cleanly"
kill -0 "$MAIN_PID" 2>/dev/null || fail "the daemon died"
unmount_and_wait "$MNT" "$MAIN_PID"
echo "PASS"
