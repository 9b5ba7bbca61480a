#!/usr/bin/env bash
# ceph (issue 20): `reelfs ls/cp/cat/stat` against Ceph RGW, objects written by the AWS CLI and by
# reelfs, every byte checked by the other side. Proves:
#  - ls of a bucket root (prefixes and objects) and ls -r of 5 000 keys (five ListObjectsV2 pages)
#    list exactly what the AWS CLI lists;
#  - stat shows RGW's size, ETag (the AWS CLI's, multipart "-N" form included) and storage class;
#  - cp downloads by many ranged GETs (--part-size 1MiB --concurrency 8) and cat are byte-exact;
#  - cp uploads: one PUT, a multipart upload of 50 MiB (ETag "-7" as RGW computes it), and a tree
#    of 5 000 files with -r; the AWS CLI downloads the same bytes; no upload is left open;
#  - a wrong secret: ls fails naming SignatureDoesNotMatch, and a mount is refused saying so;
#    a missing bucket and a missing key are named as such.
# Run by tests/ceph/run.sh (E2E_SERVER=rgw); sources the e2e library for its helpers.
source "$(dirname "$0")/../e2e/lib.sh"
e2e_init ceph-cli 280
export LC_ALL=C

step "objects written by the AWS CLI: a small file, 20 MiB (multipart), a nested prefix"
mkdir -p "$ROOT/cli/dir/sub"
echo "hello from the AWS CLI" >"$ROOT/cli/small.txt"
want_big=$(gen_file "$ROOT/cli/big.bin" $((20 * 1048576 + 123)) 21)
echo nested >"$ROOT/cli/dir/sub/n.txt"
echo top >"$ROOT/cli/dir/t.txt"
start_gateway  # rgw_server.sh: uploads $ROOT/cli with the AWS CLI
s3() { aws --endpoint-url "$ENDPOINT" "$@"; }
R() { "$REELFS_BIN" "$@" --endpoint "$ENDPOINT"; }

step "ls s3://cli/ lists the prefix and the objects the AWS CLI lists"
R ls s3://cli/ >"$WORK/ls" || fail "reelfs ls s3://cli/"
cat "$WORK/ls"
grep -q 'dir/$' "$WORK/ls" || fail "no dir/ prefix in: $(cat "$WORK/ls")"
for k in small.txt big.bin; do grep -q "$k\$" "$WORK/ls" || fail "no $k in the listing"; done
[[ $(wc -l <"$WORK/ls") == 3 ]] || fail "reelfs ls printed $(wc -l <"$WORK/ls") lines, want 3"

step "stat: size, ETag and storage class as RGW reports them"
R stat s3://cli/big.bin >"$WORK/stat" || fail "reelfs stat"
cat "$WORK/stat"
etag=$(s3 s3api head-object --bucket cli --key big.bin --query ETag --output text | tr -d '"')
grep -qx "size: $((20 * 1048576 + 123))" "$WORK/stat" || fail "stat size"
grep -qx "etag: \"$etag\"" "$WORK/stat" || grep -qx "etag: $etag" "$WORK/stat" ||
  fail "stat etag, the AWS CLI says $etag"
[[ $etag == *-3 ]] || fail "the AWS CLI's 20 MiB upload should be multipart (ETag $etag)"
grep -qx 'storage-class: STANDARD' "$WORK/stat" || fail "storage class: $(grep storage "$WORK/stat")"

step "cp by ranged GETs (1 MiB parts, 8 at once) and cat: byte-exact"
R cp --part-size 1MiB --concurrency 8 s3://cli/big.bin "$WORK/big.dl" || fail "reelfs cp download"
[[ $(sha256sum <"$WORK/big.dl" | cut -d' ' -f1) == "$want_big" ]] || fail "cp download differs"
R cat s3://cli/small.txt | cmp - "$ROOT/cli/small.txt" || fail "reelfs cat differs"
R cat s3://cli/dir/sub/n.txt | cmp - "$ROOT/cli/dir/sub/n.txt" || fail "reelfs cat nested"

step "cp uploads: one PUT, 50 MiB multipart, checked by the AWS CLI"
want_up=$(gen_file "$WORK/up.bin" $((50 * 1048576 + 7)) 22)
R cp -q "$ROOT/cli/small.txt" s3://cli/up/small.txt || fail "reelfs cp upload (one PUT)"
R cp -q --part-size 8MiB "$WORK/up.bin" s3://cli/up/up.bin || fail "reelfs cp upload (multipart)"
s3 s3 cp --only-show-errors s3://cli/up/up.bin "$WORK/up.aws" || fail "aws cp of reelfs' upload"
[[ $(sha256sum <"$WORK/up.aws" | cut -d' ' -f1) == "$want_up" ]] || fail "multipart upload differs"
s3 s3 cp --only-show-errors s3://cli/up/small.txt - | cmp - "$ROOT/cli/small.txt" ||
  fail "single PUT upload differs"
etag=$(s3 s3api head-object --bucket cli --key up/up.bin --query ETag --output text | tr -d '"')
[[ $etag == *-7 ]] || fail "RGW's ETag of a 7-part upload: $etag"
open=$(s3 s3api list-multipart-uploads --bucket cli --query 'length(Uploads || `[]`)' --output text)
[[ $open == 0 ]] || fail "$open multipart uploads left open on RGW"

step "5 000 keys: cp -r uploads them, ls -r lists them across five pages, as the AWS CLI does"
"$PY" - "$WORK/many" <<'PY'
import os, sys
d = sys.argv[1]
for i in range(5000):
    sub = os.path.join(d, f"g{i % 7}")
    os.makedirs(sub, exist_ok=True)
    with open(os.path.join(sub, f"k{i:05d}"), "w") as f:
        f.write(f"key {i}\n")
PY
R cp -q -r "$WORK/many" s3://cli/many/ || fail "reelfs cp -r of 5 000 files"
R ls -r s3://cli/many/ | awk '{ print $NF }' | sort >"$WORK/ls-r" || fail "reelfs ls -r"
s3 s3api list-objects-v2 --bucket cli --prefix many/ --query 'Contents[].Key' --output text |
  tr '\t' '\n' | sed 's#^#s3://cli/#' | sort >"$WORK/aws-keys"
[[ $(wc -l <"$WORK/aws-keys") == 5000 ]] || fail "the AWS CLI lists $(wc -l <"$WORK/aws-keys") keys"
# reelfs ls -r prints keys (or URLs): compare the key part
sed 's#^s3://cli/##' "$WORK/ls-r" | sort >"$WORK/ls-r.keys"
sed 's#^s3://cli/##' "$WORK/aws-keys" | sort >"$WORK/aws.keys"
diff -q "$WORK/aws.keys" "$WORK/ls-r.keys" >/dev/null ||
  fail "reelfs ls -r differs from the AWS CLI: $(diff "$WORK/aws.keys" "$WORK/ls-r.keys" | head -5)"
s3 s3 cp --only-show-errors s3://cli/many/g1/k04999 - | grep -qx 'key 4999' ||
  fail "a key uploaded by cp -r reads back wrong"

step "missing bucket, missing key: named as such"
out=$(R ls s3://no-such-bucket-here/ 2>&1) && fail "ls of a missing bucket succeeded: $out"
echo "  $out"
[[ $out == *"bucket 'no-such-bucket-here' does not exist"*NoSuchBucket* ]] || fail "missing bucket: $out"
out=$(R stat s3://cli/no/such/key 2>&1) && fail "stat of a missing key succeeded"
echo "  $out"
[[ $out == *"no such key s3://cli/no/such/key"* ]] || fail "missing key: $out"

step "a wrong secret: ls fails with SignatureDoesNotMatch; the mount is refused, saying so"
out=$(AWS_SECRET_ACCESS_KEY=wrong-secret R ls s3://cli/ 2>&1) && fail "ls with a wrong secret succeeded"
echo "  $out"
[[ $out == *SignatureDoesNotMatch* ]] || fail "wrong secret: $out"
mkdir -p "$MNT"
rc=0
out=$(AWS_SECRET_ACCESS_KEY=wrong-secret "$REELFS_BIN" mount cli "$MNT" --endpoint "$ENDPOINT" 2>&1) ||
  rc=$?
echo "  $out"
[[ $rc == 1 && $out == *"cannot mount s3://cli/"*SignatureDoesNotMatch* ]] ||
  fail "a mount with a wrong secret: exit $rc: $out"
mountpoint -q "$MNT" && fail "a mount with a wrong secret is mounted"
echo "PASS"
