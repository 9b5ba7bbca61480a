#!/usr/bin/env bash
# e2e (issue 14): rename through a real mount against the real gateway, every object checked
# through the AWS CLI (a client no one here wrote) by sha256, and every source key checked gone.
# Proves:
#  - mv of a file (CopyObject, then DeleteObject of the source), into another directory;
#  - a forced multipart copy (--copy-threshold 8MiB --copy-part-size 5MiB: a 23 MiB file is five
#    UploadPartCopy parts, ETag "-5"), and no upload left in the gateway;
#  - rename(2) of a directory: EXDEV; `mv` of a directory then copies and deletes (with
#    --allow-delete), and the result is the same tree;
#  - rsync -a of a tree into the mount (temp file + rename, no --inplace): every file identical,
#    no temp object left;
#  - a Python checkpoint writer (torch.save, or pickle without torch, to a temp file, then
#    os.replace): the first save lands; the second, over it, EPERM without --allow-overwrite
#    (WARN line naming the flag, the old checkpoint intact) and replaces it with the flag;
#  - rename onto an existing object: EPERM without --allow-overwrite, both unchanged; replaced
#    with it;
#  - a file being written: EBUSY; an offline (archived, released) object: EACCES, a WARN line
#    saying to `reelfs stage` it, and the object unchanged.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/tape_lib.sh"
e2e_init rename 330
export LC_ALL=C
command -v aws >/dev/null || skip "the AWS CLI (aws) is not installed"
TORCH_PY=$(find_python torch) || TORCH_PY=""

B=ren
mkdir -p "$ROOT/$B/cold" "$ROOT/$B/dir1/sub" "$ROOT/$B/docs"
head -c 4096 /dev/urandom >"$ROOT/$B/cold/archived.bin"
echo "keep me" >"$ROOT/$B/docs/keep.txt"
echo "first target" >"$ROOT/$B/docs/target.txt"
for i in 1 2 3; do head -c $((i * 100003)) /dev/urandom >"$ROOT/$B/dir1/sub/f$i"; done
echo "top" >"$ROOT/$B/dir1/top.txt"
cp -r "$ROOT/$B/dir1" "$WORK/dir1.orig"
# cold/ goes to tape and its disk copy is released: GET and CopyObject answer InvalidObjectState.
tape_config plain
archive_offline "$B" 1 key cold/
start_tape_gateway
mount_bucket "$B" --copy-threshold 8MiB --copy-part-size 5MiB

s3() { aws --endpoint-url "$ENDPOINT" "$@"; }
remote_sum() {  # remote_sum KEY: the sha256 of the object as the AWS CLI downloads it
  s3 s3 cp --only-show-errors "s3://$B/$1" "$WORK/dl" || fail "aws cp s3://$B/$1"
  sha256sum <"$WORK/dl" | cut -d' ' -f1
}
file_sum() { sha256sum <"$1" | cut -d' ' -f1; }
no_object() {  # no_object KEY: head-object says 404
  local out
  out=$(s3 s3api head-object --bucket "$B" --key "$1" 2>&1) && fail "object $1 exists: $out"
  [[ $out == *"404"* || $out == *"Not Found"* ]] || fail "head-object $1: $out"
}
no_uploads() {
  local left
  left=$(find "$ROOT/.reelfs-gateway/uploads" -mindepth 1 -maxdepth 1 | wc -l)
  [[ $left == 0 ]] || fail "$left multipart upload(s) left in the gateway: $*"
}
errno_of() {  # errno_of PYTHON-STATEMENTS: "ok" or the errno name of the OSError raised
  "$PY" -c "import os, errno
try:
$(sed 's/^/    /' <<<"$1")
    print('ok')
except OSError as e:
    print(errno.errorcode[e.errno])"
}

step "mv of a file: copied to the new key, the old key gone"
head -c 3000000 /dev/urandom >"$WORK/a"
cp "$WORK/a" "$MNT/a.bin" || fail "cp"
mkdir -p "$MNT/moved" || fail "mkdir"
mv "$MNT/a.bin" "$MNT/moved/a-renamed.bin" || fail "mv a.bin"
[[ $(remote_sum moved/a-renamed.bin) == $(file_sum "$WORK/a") ]] || fail "moved/a-renamed.bin differs"
no_object a.bin
[[ ! -e "$MNT/a.bin" ]] || fail "a.bin still listed"
cmp "$WORK/a" "$MNT/moved/a-renamed.bin" || fail "read back through the mount differs"
mv "$MNT/docs/keep.txt" "$MNT/docs/kept.txt" || fail "mv of an object the mount did not write"
[[ $(s3 s3 cp --only-show-errors "s3://$B/docs/kept.txt" -) == "keep me" ]] || fail "docs/kept.txt"
no_object docs/keep.txt

step "forced multipart copy: 23 MiB in 5 MiB UploadPartCopy parts"
head -c $((23 * 1048576 + 7)) /dev/urandom >"$WORK/big"
cp "$WORK/big" "$MNT/big.bin" || fail "cp big"
mv "$MNT/big.bin" "$MNT/moved/big.bin" || fail "mv big.bin"
etag=$(s3 s3api head-object --bucket "$B" --key moved/big.bin --query ETag --output text)
[[ $etag == *-5\" ]] || fail "moved/big.bin ETag $etag, want a copy in five parts"
[[ $(remote_sum moved/big.bin) == $(file_sum "$WORK/big") ]] || fail "moved/big.bin differs"
no_object big.bin
no_uploads "after the multipart copy"
echo "  moved/big.bin ETag $etag"

step "rename(2) of a directory: EXDEV; nothing moved"
[[ $(errno_of "os.rename('$MNT/dir1', '$MNT/dir2')") == EXDEV ]] || fail "rename of a directory"
[[ $(s3 s3 ls --recursive "s3://$B/dir1/" | wc -l) == 4 ]] || fail "dir1/ changed"

step "rsync -a of a tree into the mount (temp file + rename)"
if command -v rsync >/dev/null; then
  SRC="$WORK/tree"
  mkdir -p "$SRC/x/y" "$SRC/z"
  for i in 0 1 2 3 4; do head -c $((i * 900001 + 17)) /dev/urandom >"$SRC/x/y/r$i"; done
  echo "hello" >"$SRC/z/hello.txt"
  # Empty files too: each is uploaded at its RELEASE, after close, and rsync's rename waits for
  # that (docs/semantics.md "Writes").
  : >"$SRC/z/empty" && : >"$SRC/x/y/empty2"
  rsync -a "$SRC/" "$MNT/synced/" || fail "rsync -a"
  rm -rf "$WORK/back" && mkdir "$WORK/back"
  s3 s3 cp --only-show-errors --recursive "s3://$B/synced" "$WORK/back" || fail "aws cp -r synced"
  [[ "$(sums "$WORK/back")" == "$(sums "$SRC")" ]] || fail "synced/ differs through the AWS CLI"
  [[ "$(sums "$MNT/synced")" == "$(sums "$SRC")" ]] || fail "synced/ differs through the mount"
  left=$(s3 s3 ls --recursive "s3://$B/synced/" | awk '{print $4}' | grep -c '/\.' || true)
  [[ $left == 0 ]] || fail "rsync's temp objects left: $left"
  echo "  $(find "$SRC" -type f | wc -l) files"
else
  echo "  SKIPPED: rsync is not installed"
fi

step "an empty file renamed right after its close (the upload waits for RELEASE)"
for i in $(seq 20); do
  : >"$MNT/e$i" || fail "create e$i"
  mv "$MNT/e$i" "$MNT/renamed-e$i" || fail "mv of the empty file e$i"
done
n=$(s3 s3api list-objects-v2 --bucket "$B" --prefix renamed-e --output text \
  --query 'Contents[].[Key,Size]' | awk '$2 == 0 { n++ } END { print n + 0 }')
[[ $n == 20 ]] || fail "$n of 20 renamed empty objects"
[[ -z $(s3 s3api list-objects-v2 --bucket "$B" --prefix e --output text --query 'Contents[].Key' |
  grep -v None) ]] || fail "e* objects left behind"
echo "  20 empty files renamed"

step "checkpoint writer: save to a temp file, os.replace onto the final name"
# Prints the sha256 of the bytes it wrote (torch.save into memory first, then one write), so the
# object can be checked through the AWS CLI; exits 1 with the errno name when a call fails.
CKPT_PY='
import errno, hashlib, io, os, sys
path, tag = sys.argv[1], int(sys.argv[2])
buf = io.BytesIO()
try:
    import torch
    g = torch.Generator().manual_seed(tag)
    torch.save({"w": torch.randn(512, 256, generator=g), "step": tag}, buf)
except ImportError:
    import pickle, random
    r = random.Random(tag)
    pickle.dump({"w": [r.random() for _ in range(100000)], "step": tag}, buf)
data = buf.getvalue()
print(hashlib.sha256(data).hexdigest())
tmp = path + ".tmp"
try:
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
except OSError as e:
    print(errno.errorcode[e.errno])
    sys.exit(1)
'
ckpt_py=${TORCH_PY:-$PY}
out=$("$ckpt_py" -c "$CKPT_PY" "$MNT/model.ckpt" 1) || fail "first checkpoint: $out"
ckpt1=$out
[[ $(remote_sum model.ckpt) == "$ckpt1" ]] || fail "model.ckpt differs"
no_object model.ckpt.tmp
out=$("$ckpt_py" -c "$CKPT_PY" "$MNT/model.ckpt" 2) && fail "second checkpoint replaced without --allow-overwrite"
ckpt2=$(head -1 <<<"$out")
[[ $(tail -1 <<<"$out") == EPERM ]] || fail "second checkpoint: $out"
grep -q "allow-overwrite" "$WORK/mount.log" || fail "no log line naming --allow-overwrite"
[[ $(remote_sum model.ckpt) == "$ckpt1" ]] || fail "model.ckpt changed"
[[ $(remote_sum model.ckpt.tmp) == "$ckpt2" ]] || fail "the temp checkpoint was lost"
echo "  $([[ -n $TORCH_PY ]] && echo torch.save || echo pickle): first save ok, second EPERM"

step "rename onto an existing object without --allow-overwrite: EPERM, both unchanged"
[[ $(errno_of "os.rename('$MNT/docs/kept.txt', '$MNT/docs/target.txt')") == EPERM ]] ||
  fail "rename onto an existing object"
[[ $(s3 s3 cp --only-show-errors "s3://$B/docs/kept.txt" -) == "keep me" ]] || fail "kept.txt"
[[ $(s3 s3 cp --only-show-errors "s3://$B/docs/target.txt" -) == "first target" ]] ||
  fail "target.txt"

step "a file being written: EBUSY"
got=$("$PY" - "$MNT/busy.bin" <<'PY'
import errno, os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT)
os.write(fd, b"x" * 1000)
try:
    os.rename(sys.argv[1], sys.argv[1] + ".moved")
    print("ok")
except OSError as e:
    print(errno.errorcode[e.errno])
os.close(fd)
PY
)
[[ $got == EBUSY ]] || fail "rename of a file being written: $got"
[[ $(s3 s3 cp --only-show-errors "s3://$B/busy.bin" - | wc -c) == 1000 ]] || fail "busy.bin"
no_object busy.bin.moved

step "an offline object: EACCES, a WARN line saying to stage it, the object unchanged"
[[ $(errno_of "os.rename('$MNT/cold/archived.bin', '$MNT/cold/moved.bin')") == EACCES ]] ||
  fail "rename of an offline object"
grep -q "reelfs stage" "$WORK/mount.log" || fail "no log line saying to reelfs stage it"
sc=$(s3 s3api head-object --bucket "$B" --key cold/archived.bin --query StorageClass --output text)
[[ $sc != STANDARD && $sc != None ]] || fail "cold/archived.bin is not archived: $sc"
[[ $(s3 s3api head-object --bucket "$B" --key cold/archived.bin --query ContentLength) == 4096 ]] ||
  fail "cold/archived.bin changed size"
no_object cold/moved.bin
grep -E "rename .*archived" "$WORK/mount.log" | tail -1 | sed 's/^/  /'

step "remount with --allow-overwrite --allow-delete"
unmount_and_wait "$MNT" "$MOUNT_PID"
mount_bucket "$B" --allow-overwrite --allow-delete

step "mv of a directory: copied and deleted by mv, the same tree under the new name"
mv "$MNT/dir1" "$MNT/dir2" || fail "mv dir1 dir2"
rm -rf "$WORK/back" && mkdir "$WORK/back"
s3 s3 cp --only-show-errors --recursive "s3://$B/dir2" "$WORK/back" || fail "aws cp -r dir2"
[[ "$(sums "$WORK/back")" == "$(sums "$WORK/dir1.orig")" ]] || fail "dir2/ differs"
[[ $(s3 s3 ls --recursive "s3://$B/dir1/" | wc -l) == 0 ]] || fail "dir1/ still has objects"
[[ ! -e "$MNT/dir1" ]] || fail "dir1 still listed"

step "rename onto an existing object with --allow-overwrite: replaced"
mv "$MNT/docs/kept.txt" "$MNT/docs/target.txt" || fail "mv onto target.txt"
[[ $(s3 s3 cp --only-show-errors "s3://$B/docs/target.txt" -) == "keep me" ]] ||
  fail "target.txt not replaced"
no_object docs/kept.txt
[[ $(cat "$MNT/docs/target.txt") == "keep me" ]] || fail "target.txt through the mount"

step "checkpoint writer over the last checkpoint, with --allow-overwrite"
out=$("$ckpt_py" -c "$CKPT_PY" "$MNT/model.ckpt" 2) || fail "second checkpoint: $out"
[[ $out == "$ckpt2" ]] || fail "the second checkpoint's bytes changed: $out"
[[ $(remote_sum model.ckpt) == "$ckpt2" ]] || fail "model.ckpt not replaced"
no_object model.ckpt.tmp
[[ $(file_sum "$MNT/model.ckpt") == "$ckpt2" ]] || fail "model.ckpt through the mount"
if [[ -n "$TORCH_PY" ]]; then
  "$TORCH_PY" -c "import torch, sys; s = torch.load(sys.argv[1]); assert s['step'] == 2" \
    "$MNT/model.ckpt" || fail "torch.load of the replaced checkpoint"
fi

step "the offline object is still refused with the flags, and unchanged"
[[ $(errno_of "os.rename('$MNT/cold/archived.bin', '$MNT/cold/moved.bin')") == EACCES ]] ||
  fail "rename of an offline object with the flags"
no_object cold/moved.bin
no_uploads "at the end"
unmount_and_wait "$MNT" "$MOUNT_PID"
echo "PASS"
