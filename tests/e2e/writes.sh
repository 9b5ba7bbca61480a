#!/usr/bin/env bash
# e2e (issue 14): writes through a real mount against the real gateway, every object checked
# through the AWS CLI (a client no one here wrote), by sha256. Proves:
#  - cp (one PUT), dd bs=1M of 41 MiB (a multipart upload: ETag "-6"), cp -r of a tree, tar -x,
#    mkdir -p, 8 concurrent writers, torch.save of a 1 GiB state dict (torch.load through the
#    mount and of the AWS CLI's copy equal the original tensors);
#  - nothing is visible to other clients until close (head-object 404 while open), and the
#    gateway holds no upload afterwards; a second open of a file being written: EBUSY;
#  - through the writing handle a pread: EBADF, a shared mmap: ENODEV (direct I/O, no page cache);
#    a write after fsync: EBADF; a non-sequential write: EINVAL (logged with its offset) and the
#    file is not stored; truncate(0) of a new file works, other sizes EPERM; append to, truncate
#    of or O_TRUNC of an existing object: EPERM, the object unchanged; with --allow-overwrite,
#    `>`, cp (multipart) and torch.save over objects replace them, O_WRONLY alone stays EPERM;
#  - rm/rmdir of remote names without --allow-delete: EPERM, nothing deleted; rmdir of a local
#    empty directory works; with --allow-delete rm and rm -r delete (the AWS CLI agrees);
#  - the gateway SIGKILLed mid-upload: EIO, and after its restart no object; the mount daemon
#    SIGKILLed mid-write: no object; the gateway's disk full (root on a 24 MiB tmpfs): ENOSPC and
#    no object. (--read-only is in errors.sh.)
source "$(dirname "$0")/lib.sh"
e2e_init writes 600
export LC_ALL=C
TORCH_PY=$(find_python torch) || TORCH_PY=""

mkdir -p "$ROOT/wrt/old" "$ROOT/wrt/keep"
echo "old content" >"$ROOT/wrt/existing.txt"
echo "in old" >"$ROOT/wrt/old/a.txt"
echo "in old" >"$ROOT/wrt/old/b.txt"
echo "keep" >"$ROOT/wrt/keep/k.txt"
start_gateway
mount_bucket wrt
MAIN_PID=$MOUNT_PID

s3() { aws --endpoint-url "$ENDPOINT" "$@"; }
# remote_sum KEY: the sha256 of the object as the AWS CLI downloads it.
remote_sum() {
  s3 s3 cp --only-show-errors "s3://wrt/$1" "$WORK/dl" || fail "aws cp s3://wrt/$1"
  sha256sum <"$WORK/dl" | cut -d' ' -f1
}
file_sum() { sha256sum <"$1" | cut -d' ' -f1; }
no_object() {  # no_object KEY: head-object says 404
  local out
  out=$(s3 s3api head-object --bucket wrt --key "$1" 2>&1) && fail "object $1 exists: $out"
  [[ $out == *"404"* || $out == *"Not Found"* ]] || fail "head-object $1: $out"
}
no_uploads() {  # the gateway's multipart staging area is empty
  local left
  left=$(find "$ROOT/.reelfs-gateway/uploads" -mindepth 1 -maxdepth 1 | wc -l)
  [[ $left == 0 ]] || fail "$left multipart upload(s) left in the gateway: $*"
}
# errno_of PYTHON-STATEMENTS: runs them with os, errno imported; prints the errno name of the
# OSError they raise, or "ok".
errno_of() {
  "$PY" -c "import os, errno
try:
$(sed 's/^/    /' <<<"$1")
    print('ok')
except OSError as e:
    print(errno.errorcode[e.errno])"
}

step "cp (one PUT) and dd bs=1M of 41 MiB (multipart), byte-identical through the AWS CLI"
head -c 3000000 /dev/urandom >"$WORK/small"
head -c $((41 * 1048576 + 5)) /dev/urandom >"$WORK/big"
cp "$WORK/small" "$MNT/small.bin" || fail "cp"
dd if="$WORK/big" of="$MNT/big.bin" bs=1M status=none || fail "dd"
[[ $(remote_sum small.bin) == $(file_sum "$WORK/small") ]] || fail "small.bin differs"
[[ $(remote_sum big.bin) == $(file_sum "$WORK/big") ]] || fail "big.bin differs"
etag=$(s3 s3api head-object --bucket wrt --key big.bin --query ETag --output text)
[[ $etag == *-6\" ]] || fail "big.bin ETag $etag, want six parts"
cmp "$WORK/big" "$MNT/big.bin" || fail "big.bin read back through the mount differs"
[[ $(stat -c %s "$MNT/big.bin") == $((41 * 1048576 + 5)) ]] || fail "size of big.bin"
no_uploads "after cp and dd"
# Without --rdma every payload (the PUT and six parts) is counted as an HTTP body.
puts=$("$PY" -c 'import json, os, sys
fs = json.loads(os.getxattr(sys.argv[1], "user.reelfs.metrics"))["fs"]
print(fs["http_put_parts"], fs["http_put_bytes"], fs["rdma_put_parts"], fs["rdma_put_bytes"])' \
  "$MNT") || fail "user.reelfs.metrics"
[[ $puts == "7 $((3000000 + 41 * 1048576 + 5)) 0 0" ]] || fail "put counters: $puts"
echo "  small.bin PUT, big.bin ETag $etag; http_put_parts, _bytes, rdma_put_parts, _bytes: $puts"

step "mkdir -p, cp -r of a tree, tar -x: every file byte-identical through the AWS CLI"
mkdir -p "$MNT/d/e/f" || fail "mkdir -p"
[[ -d "$MNT/d/e/f" ]] || fail "mkdir -p: no directory"
SRC="$WORK/tree"
mkdir -p "$SRC/a/b" "$SRC/c"
for i in 0 1 2 3 4 5; do head -c $((i * 700001 + 13)) /dev/urandom >"$SRC/a/b/f$i"; done
: >"$SRC/c/empty"
echo "hello" >"$SRC/a/hello.txt"
cp -r "$SRC" "$MNT/d/e/f/tree" || fail "cp -r"
tar -C "$WORK" -cf "$WORK/tree.tar" tree
mkdir "$MNT/untar" && tar -C "$MNT/untar" -xf "$WORK/tree.tar" || fail "tar -x"
for dst in d/e/f/tree untar/tree; do
  rm -rf "$WORK/back" && mkdir "$WORK/back"
  s3 s3 cp --only-show-errors --recursive "s3://wrt/$dst" "$WORK/back" || fail "aws cp -r $dst"
  [[ "$(sums "$WORK/back")" == "$(sums "$SRC")" ]] || fail "$dst differs through the AWS CLI"
  [[ "$(sums "$MNT/$dst")" == "$(sums "$SRC")" ]] || fail "$dst differs through the mount"
done
[[ "$(s3 s3api head-object --bucket wrt --key untar/tree/c/empty --query ContentLength)" == 0 ]] ||
  fail "an empty file was not stored"
echo "  cp -r and tar -x: $(find "$SRC" -type f | wc -l) files each"

step "8 concurrent writers of different files"
for i in 1 2 3 4 5 6 7 8; do head -c $((i * 3 * 1048576 + i)) /dev/urandom >"$WORK/c$i"; done
mkdir "$MNT/conc" || fail "mkdir conc"
pids=()
for i in 1 2 3 4 5 6 7 8; do dd if="$WORK/c$i" of="$MNT/conc/c$i" bs=256k status=none & pids+=($!); done
for p in "${pids[@]}"; do wait "$p" || fail "a concurrent writer failed"; done
for i in 1 2 3 4 5 6 7 8; do
  [[ $(remote_sum "conc/c$i") == $(file_sum "$WORK/c$i") ]] || fail "conc/c$i differs"
done
no_uploads "after the concurrent writers"
echo "  8 files, $(du -cb "$WORK"/c? | tail -1 | cut -f1) bytes"

step "visible at close; a second open: EBUSY; the writer's pread EBADF, mmap ENODEV; fsync ends it"
got=$("$PY" - "$MNT/open.bin" "$ENDPOINT" <<'EOF'
import errno, mmap, os, subprocess, sys
path, endpoint = sys.argv[1], sys.argv[2]
def head():
    rc = subprocess.run(["aws", "--endpoint-url", endpoint, "s3api", "head-object", "--bucket",
                         "wrt", "--key", "open.bin"], capture_output=True).returncode
    return "present" if rc == 0 else "absent"
fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
os.write(fd, b"x" * (9 << 20))  # more than one part: the multipart upload has begun
out = [f"open:{head()}"]
try:
    os.open(path, os.O_WRONLY)
    out.append("second:ok")
except OSError as e:
    out.append("second:" + errno.errorcode[e.errno])
out.append(f"size:{os.stat(path).st_size}")
# The handle writes through to the daemon (direct I/O): it cannot read back what it wrote, and
# a shared mapping of it is refused at mmap rather than faulting at first touch.
try:
    os.pread(fd, 1, 0)
    out.append("pread:ok")
except OSError as e:
    out.append("pread:" + errno.errorcode[e.errno])
try:
    mmap.mmap(fd, 4096, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE).close()
    out.append("mmap:ok")
except OSError as e:
    out.append("mmap:" + errno.errorcode[e.errno])
os.fsync(fd)
out.append(f"fsynced:{head()}")
try:
    os.write(fd, b"y")
    out.append("after:ok")
except OSError as e:
    out.append("after:" + errno.errorcode[e.errno])
os.close(fd)
print(" ".join(out))
EOF
) || fail "the open-file check failed to run"
[[ $got == "open:absent second:EBUSY size:9437184 pread:EBADF mmap:ENODEV fsynced:present after:EBADF" ]] ||
  fail "got: $got"
grep -q "is being written: what it wrote can be read once it is closed" "$WORK/mount.log" ||
  fail "no log line for the read through the writing handle"
[[ $(stat -c %s "$MNT/open.bin") == 9437184 ]] || fail "size after fsync"
no_uploads "after fsync"
echo "  $got"

step "non-sequential write: EINVAL, logged with its offset, nothing stored"
got=$(errno_of "fd = os.open('$MNT/hole.bin', os.O_WRONLY | os.O_CREAT)
os.write(fd, b'a' * 10)
os.pwrite(fd, b'b', 100000)")
[[ $got == EINVAL ]] || fail "pwrite at a hole: $got"
grep -q "hole.bin' at offset 100000, but 10 bytes were written" "$WORK/mount.log" ||
  fail "no log line naming the offset"
no_object hole.bin
[[ ! -e "$MNT/hole.bin" ]] || fail "hole.bin is still listed"
no_uploads "after the non-sequential write"

step "truncate(0) of a new file works, other sizes EPERM; existing objects: EPERM, unchanged"
got=$(errno_of "fd = os.open('$MNT/trunc.bin', os.O_WRONLY | os.O_CREAT)
os.write(fd, b'discarded')
os.ftruncate(fd, 0)
os.lseek(fd, 0, os.SEEK_SET)  # ftruncate leaves the offset where it was
os.write(fd, b'kept')
os.close(fd)")
[[ $got == ok ]] || fail "truncate(0) of a new file: $got"
[[ $(s3 s3 cp --only-show-errors s3://wrt/trunc.bin -) == kept ]] || fail "trunc.bin content"
got=$(errno_of "fd = os.open('$MNT/trunc2.bin', os.O_WRONLY | os.O_CREAT)
os.ftruncate(fd, 5)")
[[ $got == EPERM ]] || fail "truncate(5) of a new file: $got"
out=$(sh -c "echo x >>'$MNT/existing.txt'" 2>&1) && fail "append succeeded"
[[ $out == *"Operation not permitted"* ]] || fail "append: $out"
out=$(truncate -s 0 "$MNT/existing.txt" 2>&1) && fail "truncate of an existing object succeeded"
[[ $out == *"Operation not permitted"* ]] || fail "truncate existing: $out"
[[ $(errno_of "os.open('$MNT/existing.txt', os.O_WRONLY | os.O_TRUNC)") == EPERM ]] ||
  fail "O_TRUNC of an existing object was not EPERM"
[[ $(s3 s3 cp --only-show-errors s3://wrt/existing.txt -) == "old content" ]] ||
  fail "existing.txt changed"

step "without --allow-delete: rm and rmdir of remote names EPERM; rmdir of a local dir works"
out=$(rm "$MNT/existing.txt" 2>&1) && fail "rm succeeded"
[[ $out == *"Operation not permitted"* ]] || fail "rm: $out"
out=$(rm -r "$MNT/old" 2>&1) && fail "rm -r succeeded"
[[ $out == *"Operation not permitted"* ]] || fail "rm -r: $out"
grep -q "allow-delete" "$WORK/mount.log" || fail "no log line naming --allow-delete"
mkdir "$MNT/scratch" && rmdir "$MNT/scratch" || fail "rmdir of a local empty directory"
[[ ! -e "$MNT/scratch" ]] || fail "scratch still there"
[[ $(s3 s3 ls s3://wrt/old/ | wc -l) == 2 ]] || fail "old/ lost objects"
ls "$MNT/existing.txt" >/dev/null || fail "existing.txt gone from the mount"

step "the gateway SIGKILLed mid-upload: EIO, no object after its restart"
"$PY" - "$MNT/gwkill.bin" >"$WORK/gwkill.out" 2>&1 <<'EOF' &
import errno, os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT)
try:
    os.write(fd, os.urandom(17 << 20))  # two parts under way
    print("written", flush=True)
    time.sleep(3)  # the gateway dies here
    for _ in range(8):
        os.write(fd, os.urandom(8 << 20))
    os.close(fd)
    print("result:ok")
except OSError as e:
    print("result:" + errno.errorcode[e.errno])
EOF
WPID=$!
for _ in $(seq 100); do grep -q written "$WORK/gwkill.out" && break; sleep 0.1; done
grep -q written "$WORK/gwkill.out" || fail "the writer did not start: $(cat "$WORK/gwkill.out")"
kill_gateway_hard
wait "$WPID"
grep -q "result:EIO" "$WORK/gwkill.out" || fail "writer with the gateway dead: $(cat "$WORK/gwkill.out")"
start_gateway "$PORT"
no_object gwkill.bin
[[ ! -e "$MNT/gwkill.bin" ]] || fail "gwkill.bin still listed"
[[ $(remote_sum small.bin) == $(file_sum "$WORK/small") ]] || fail "small.bin after the restart"
echo "  $(grep result "$WORK/gwkill.out")"

step "torch.save of a 1 GiB state dict, torch.load through the mount and the AWS CLI's copy"
if [[ -n $TORCH_PY ]]; then
  "$TORCH_PY" - "$MNT/ckpt/model.pt" "$WORK/model.pt" "$ENDPOINT" <<'EOF' || fail "torch"
import os, subprocess, sys, torch
mnt, local, endpoint = sys.argv[1:4]
os.makedirs(os.path.dirname(mnt), exist_ok=True)
g = torch.Generator().manual_seed(7)
sd = {f"layer{i}.weight": torch.randn(4096, 8192, generator=g) for i in range(8)}  # 8 x 128 MiB
sd["step"] = torch.tensor(1234)
torch.save(sd, mnt)
subprocess.run(["aws", "--endpoint-url", endpoint, "s3", "cp", "--only-show-errors",
                "s3://wrt/ckpt/model.pt", local], check=True)
for what, path in (("mount", mnt), ("aws", local)):
    back = torch.load(path, weights_only=True)
    assert back.keys() == sd.keys(), what
    assert all(torch.equal(back[k], sd[k]) for k in sd), what
    print(f"  torch.load via {what}: {os.path.getsize(path)} bytes, equal")
EOF
  rm -f "$WORK/model.pt"
else
  echo "  (torch not importable: skipped this step)"
fi

step "the mount daemon SIGKILLed mid-write: no object"
"$PY" -c "
import os, time
fd = os.open('$MNT/daemonkill.bin', os.O_WRONLY | os.O_CREAT)
os.write(fd, os.urandom(20 << 20))
print('written', flush=True)
time.sleep(30)" >"$WORK/dkill.out" 2>&1 &
WPID=$!
for _ in $(seq 100); do grep -q written "$WORK/dkill.out" && break; sleep 0.1; done
grep -q written "$WORK/dkill.out" || fail "the writer did not start"
kill -KILL "$MAIN_PID"
wait "$MAIN_PID" 2>/dev/null || true
kill "$WPID" 2>/dev/null || true
wait "$WPID" 2>/dev/null || true
unmount_dir "$MNT"
no_object daemonkill.bin

step "--allow-overwrite: > and cp over objects replace them at close; no O_TRUNC: still EPERM"
mount_bucket wrt --allow-delete --allow-overwrite
MAIN_PID=$MOUNT_PID
# The SIGKILL steps above left their uploads on the gateway; the overwrites must add none.
uploads_before=$(find "$ROOT/.reelfs-gateway/uploads" -mindepth 1 -maxdepth 1 | wc -l)
printf 'v2\n' >"$MNT/existing.txt" || fail "> over an existing object"
[[ $(s3 s3 cp --only-show-errors s3://wrt/existing.txt -) == v2 ]] || fail "existing.txt not v2"
[[ $(cat "$MNT/existing.txt") == v2 ]] || fail "the mount does not show v2"
head -c 21000000 /dev/urandom >"$WORK/over"
cp "$WORK/over" "$MNT/small.bin" || fail "cp over small.bin (multipart)"
[[ $(remote_sum small.bin) == $(file_sum "$WORK/over") ]] || fail "small.bin after the overwrite"
[[ $(file_sum "$MNT/small.bin") == $(file_sum "$WORK/over") ]] || fail "small.bin via the mount"
[[ $(errno_of "os.open('$MNT/small.bin', os.O_WRONLY)") == EPERM ]] ||
  fail "O_WRONLY without O_TRUNC was not EPERM"
[[ $(errno_of "os.open('$MNT/small.bin', os.O_WRONLY | os.O_APPEND)") == EPERM ]] ||
  fail "O_APPEND was not EPERM"
if [[ -n $TORCH_PY ]]; then
  # The checkpoint writer's pattern: torch.save over the last checkpoint.
  "$TORCH_PY" - "$MNT/ckpt/model.pt" <<'EOF' || fail "torch.save over model.pt"
import sys, torch
sd = {"w": torch.arange(1 << 20, dtype=torch.float32), "step": torch.tensor(1235)}
torch.save(sd, sys.argv[1])
back = torch.load(sys.argv[1], weights_only=True)
assert torch.equal(back["w"], sd["w"]) and int(back["step"]) == 1235
print("  torch.save over the 1 GiB checkpoint: reloaded equal")
EOF
  s3 s3 cp --only-show-errors s3://wrt/ckpt/model.pt "$WORK/model2.pt" || fail "aws cp model.pt"
  (($(stat -c %s "$WORK/model2.pt") < 16 << 20)) || fail "model.pt was not replaced"
  rm -f "$WORK/model2.pt"
fi
uploads_after=$(find "$ROOT/.reelfs-gateway/uploads" -mindepth 1 -maxdepth 1 | wc -l)
((uploads_after == uploads_before)) || fail "the overwrites left $((uploads_after - uploads_before)) uploads"

step "--allow-overwrite: a reader of the object sees the old bytes until the writer's close"
# A reader opened before the overwrite reads the old object (other clients too) while the new one
# is written; once the writer closes, a fresh open reads the new bytes, and the old reader's next
# uncached read answers the old bytes or ESTALE, never a mix of the two objects.
head -c 12000000 /dev/urandom >"$WORK/v1"
head -c 12000000 /dev/urandom >"$WORK/v2"
# Written through the mount: the root's listing is cached for metadata_ttl (an hour), so an
# object another client adds now would stay unseen here (docs/semantics.md).
cp "$WORK/v1" "$MNT/readme-while.bin" || fail "cp v1"
"$PY" - "$MNT/readme-while.bin" "$WORK/v1" "$WORK/v2" "$ENDPOINT" <<'EOF' ||
import errno, os, subprocess, sys
path, v1, v2, endpoint = sys.argv[1:]
old, new = open(v1, "rb").read(), open(v2, "rb").read()
MiB = 1 << 20
r = os.open(path, os.O_RDONLY)
assert os.pread(r, MiB, 0) == old[:MiB], "first read of the old object"
w = os.open(path, os.O_WRONLY | os.O_TRUNC)
os.write(w, new[: 9 * MiB])  # one part sent, the rest buffered: nothing replaced yet
assert os.pread(r, MiB, 5 * MiB) == old[5 * MiB : 6 * MiB], "reader during the write"
got = subprocess.run(["aws", "--endpoint-url", endpoint, "s3", "cp", "--only-show-errors",
                      "s3://wrt/readme-while.bin", "-"], capture_output=True, check=True).stdout
assert got == old, "another S3 client saw something else than the old object during the write"
try:
    os.open(path, os.O_RDONLY)
    raise AssertionError("a second open of the file being written was not refused")
except OSError as e:
    assert e.errno == errno.EBUSY, e
os.write(w, new[9 * MiB :])
os.close(w)
try:
    late = os.pread(r, MiB, 10 * MiB)
    assert late == old[10 * MiB : 11 * MiB], "the old reader got bytes of neither object"
    print("  old reader after the close: old bytes (cached)")
except OSError as e:
    assert e.errno == errno.ESTALE, e
    print("  old reader after the close: ESTALE")
os.close(r)
with open(path, "rb") as f:
    assert f.read() == new, "a fresh open after the close does not read the new object"
print("  reader saw the old object until the close, then the new one")
EOF
  fail "reader during an overwrite"
[[ $(remote_sum readme-while.bin) == $(file_sum "$WORK/v2") ]] || fail "readme-while.bin not v2"

step "--allow-delete: rm and rm -r delete, the AWS CLI agrees"
rm "$MNT/existing.txt" || fail "rm with --allow-delete"
no_object existing.txt
rm -r "$MNT/old" || fail "rm -r with --allow-delete"
[[ -z $(s3 s3 ls s3://wrt/old/) ]] || fail "old/ still has objects"
[[ ! -e "$MNT/old" ]] || fail "old still listed"
[[ $(s3 s3 cp --only-show-errors s3://wrt/keep/k.txt -) == keep ]] || fail "keep/k.txt lost"
unmount_and_wait "$MNT" "$MAIN_PID"

step "the gateway's disk full (root on a 24 MiB tmpfs): ENOSPC, no object"
kill_gateway_hard
SMALL="$WORK/small-root"
mkdir -p "$SMALL"
mount -t tmpfs -o size=24m tmpfs "$SMALL" 2>/dev/null || skip_rest=1
if [[ -z ${skip_rest:-} ]]; then
  MOUNTED_DIRS+=("$SMALL")
  mkdir "$SMALL/wrt"
  ROOT=$SMALL start_gateway
  mount_bucket wrt
  MAIN_PID=$MOUNT_PID
  got=$(errno_of "fd = os.open('$MNT/full.bin', os.O_WRONLY | os.O_CREAT)
for _ in range(8):
    os.write(fd, os.urandom(8 << 20))
os.close(fd)")
  [[ $got == ENOSPC ]] || fail "64 MiB into 24 MiB: $got"
  no_object full.bin
  # The abort goes out at RELEASE, which the kernel sends after the writer's close returned
  # (and after its process exited): wait for it, within a bound.
  for _ in $(seq 100); do
    [[ $(find "$SMALL/.reelfs-gateway/uploads" -mindepth 1 -maxdepth 1 | wc -l) == 0 ]] && break
    sleep 0.1
  done
  [[ $(find "$SMALL/.reelfs-gateway/uploads" -mindepth 1 -maxdepth 1 | wc -l) == 0 ]] ||
    fail "the failed upload was not aborted within 10 s: $(find "$SMALL/.reelfs-gateway/uploads" -ls)"
  cp "$WORK/small" "$MNT/fits.bin" || fail "a small file after the full one"
  [[ $(remote_sum fits.bin) == $(file_sum "$WORK/small") ]] || fail "fits.bin differs"
  unmount_and_wait "$MNT" "$MAIN_PID"
else
  echo "  (cannot mount a tmpfs here: skipped this step)"
fi
echo "PASS"
