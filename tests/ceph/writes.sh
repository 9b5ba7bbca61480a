#!/usr/bin/env bash
# ceph (issue 20): the write path against Ceph RGW, every object checked by the AWS CLI by sha256.
# Proves, on a third-party engine, what tests/e2e/writes.sh and rename.sh prove on the gateway:
#  - cp (one PUT), dd bs=1M of 41 MiB (multipart: RGW's ETag "-6"), cp -r of a tree, mkdir -p;
#  - nothing visible to other clients until close (head-object 404 while the file is open and
#    its multipart upload under way);
#  - rsync -a (temp file + rename: CopyObject then DeleteObject on RGW), no temp object left;
#  - mv of a file, and a forced multipart copy (UploadPartCopy on RGW, ETag "-5");
#  - torch.save of a 64 MiB state dict (8 parts) to a temp name, then os.replace (the checkpoint writer's
#    pattern); torch.load of the AWS CLI's copy equals the original tensors;
#  - rm with --allow-delete (DeleteObject), and no multipart upload left open on RGW.
# Run by tests/ceph/run.sh (E2E_SERVER=rgw).
source "$(dirname "$0")/../e2e/lib.sh"
e2e_init ceph-writes 280
export LC_ALL=C
TORCH_PY=$(find_python torch) || TORCH_PY=""

mkdir -p "$ROOT/wrt/old"
echo "in old" >"$ROOT/wrt/old/a.txt"
start_gateway
mount_bucket wrt --allow-delete --copy-threshold 8MiB --copy-part-size 5MiB
MAIN_PID=$MOUNT_PID
s3() { aws --endpoint-url "$ENDPOINT" "$@"; }
remote_sum() {
  s3 s3 cp --only-show-errors "s3://wrt/$1" "$WORK/dl" || fail "aws cp s3://wrt/$1"
  sha256sum <"$WORK/dl" | cut -d' ' -f1
}
file_sum() { sha256sum <"$1" | cut -d' ' -f1; }
etag_of() { s3 s3api head-object --bucket wrt --key "$1" --query ETag --output text | tr -d '"'; }
no_object() {
  local out
  out=$(s3 s3api head-object --bucket wrt --key "$1" 2>&1) && fail "object $1 exists: $out"
  [[ $out == *"404"* || $out == *"Not Found"* ]] || fail "head-object $1: $out"
}

step "cp (one PUT) and dd bs=1M of 41 MiB (multipart), byte-identical through the AWS CLI"
gen_file "$WORK/small.bin" 100003 1 >/dev/null
cp "$WORK/small.bin" "$MNT/small.bin" || fail "cp into the mount"
[[ $(remote_sum small.bin) == $(file_sum "$WORK/small.bin") ]] || fail "small.bin differs"
gen_file "$WORK/big.bin" $((41 * 1048576)) 2 >/dev/null
dd if="$WORK/big.bin" of="$MNT/big.bin" bs=1M status=none || fail "dd into the mount"
[[ $(remote_sum big.bin) == $(file_sum "$WORK/big.bin") ]] || fail "big.bin differs"
etag=$(etag_of big.bin)
echo "  RGW's ETag of the 41 MiB upload: $etag"
[[ $etag == *-6 ]] || fail "41 MiB in 8 MiB parts should be a 6-part upload, ETag $etag"

step "invisible until close, with a multipart upload under way"
got=$("$PY" - "$MNT/pending.bin" "$ENDPOINT" <<'EOF'
import os, subprocess, sys
path, endpoint = sys.argv[1], sys.argv[2]
def head():
    rc = subprocess.run(["aws", "--endpoint-url", endpoint, "s3api", "head-object", "--bucket",
                         "wrt", "--key", "pending.bin"], capture_output=True).returncode
    return "present" if rc == 0 else "absent"
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
os.write(fd, b"x" * (9 << 20))  # more than one part: RGW holds an upload in progress
out = [f"open:{head()}"]
os.close(fd)
out.append(f"closed:{head()}")
print(" ".join(out))
EOF
) || fail "the pending writer failed"
echo "  $got"
[[ $got == "open:absent closed:present" ]] || fail "visibility: $got"

step "mkdir -p and cp -r of a tree"
mkdir -p "$WORK/tree/a/b" "$WORK/tree/c"
for i in 1 2 3 4; do gen_file "$WORK/tree/a/b/f$i" $((i * 70001)) $((10 + i)) >/dev/null; done
echo c >"$WORK/tree/c/c.txt"
mkdir -p "$MNT/trees/x/y" || fail "mkdir -p"
cp -r "$WORK/tree" "$MNT/trees/x/y/" || fail "cp -r into the mount"
rm -rf "$WORK/back" && mkdir "$WORK/back"
s3 s3 cp --only-show-errors --recursive s3://wrt/trees/x/y/tree "$WORK/back" || fail "aws cp -r"
[[ "$(sums "$WORK/back")" == "$(sums "$WORK/tree")" ]] || fail "cp -r tree differs through the AWS CLI"

step "rsync -a (temp file + rename): every file identical, no temp object left"
if command -v rsync >/dev/null; then
  rsync -a "$WORK/tree/" "$MNT/synced/" || fail "rsync -a"
  rm -rf "$WORK/back" && mkdir "$WORK/back"
  s3 s3 cp --only-show-errors --recursive s3://wrt/synced "$WORK/back" || fail "aws cp -r synced"
  [[ "$(sums "$WORK/back")" == "$(sums "$WORK/tree")" ]] || fail "synced/ differs"
  left=$(s3 s3 ls --recursive s3://wrt/synced/ | awk '{print $4}' | grep -c '/\.' || true)
  [[ $left == 0 ]] || fail "rsync's temp objects left: $left"
else
  echo "  SKIPPED: rsync is not installed"
fi

step "mv of a file (CopyObject) and of a 23 MiB file (UploadPartCopy, 5 parts)"
mv "$MNT/small.bin" "$MNT/trees/moved.bin" || fail "mv small.bin"
no_object small.bin
[[ $(remote_sum trees/moved.bin) == $(file_sum "$WORK/small.bin") ]] || fail "moved.bin differs"
gen_file "$WORK/copy23.bin" $((23 * 1048576)) 3 >/dev/null
cp "$WORK/copy23.bin" "$MNT/copy23.bin" || fail "cp copy23.bin"
mv "$MNT/copy23.bin" "$MNT/trees/copy23.bin" || fail "mv copy23.bin (multipart copy)"
no_object copy23.bin
[[ $(remote_sum trees/copy23.bin) == $(file_sum "$WORK/copy23.bin") ]] || fail "copy23 differs"
etag=$(etag_of trees/copy23.bin)
echo "  RGW's ETag of the UploadPartCopy result: $etag"
[[ $etag == *-5 ]] || fail "a 23 MiB copy in 5 MiB parts should be 5 parts, ETag $etag"

step "torch.save to a temp name + os.replace; the AWS CLI's copy loads equal"
if [[ -n "$TORCH_PY" ]]; then
  "$TORCH_PY" - "$MNT/ckpt" "$WORK/model.pt" "$ENDPOINT" <<'EOF' || fail "torch checkpoint"
import os, subprocess, sys, torch
d, local, endpoint = sys.argv[1:]
os.makedirs(d, exist_ok=True)
g = torch.Generator().manual_seed(7)
sd = {f"layer{i}.weight": torch.randn(2048, 2048, generator=g) for i in range(4)}  # 4 x 16 MiB
sd["step"] = torch.tensor(99)
tmp = os.path.join(d, ".model.pt.tmp")
torch.save(sd, tmp)
os.replace(tmp, os.path.join(d, "model.pt"))
subprocess.run(["aws", "--endpoint-url", endpoint, "s3", "cp", "--only-show-errors",
                "s3://wrt/ckpt/model.pt", local], check=True)
for what, path in (("the mount", os.path.join(d, "model.pt")), ("the AWS CLI", local)):
    back = torch.load(path, weights_only=True)
    assert back.keys() == sd.keys() and all(torch.equal(back[k], sd[k]) for k in sd), what
    print(f"  torch.load via {what}: {os.path.getsize(path)} bytes, equal")
EOF
  no_object ckpt/.model.pt.tmp
else
  echo "  SKIPPED: torch not importable"
fi

step "rm with --allow-delete: DeleteObject; nothing left open on RGW"
rm "$MNT/old/a.txt" || fail "rm"
no_object old/a.txt
rm -r "$MNT/synced" 2>/dev/null || true
[[ -z "$(s3 s3 ls --recursive s3://wrt/synced/)" ]] || fail "rm -r left objects under synced/"
open=$(s3 s3api list-multipart-uploads --bucket wrt --query 'length(Uploads || `[]`)' --output text)
[[ $open == 0 ]] || fail "$open multipart uploads left open on RGW"

unmount_and_wait "$MNT" "$MAIN_PID"
echo "PASS"
