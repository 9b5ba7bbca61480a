#!/usr/bin/env bash
# Interop: the AWS CLI against a real reelfs-gateway (s3 and s3api commands).
source "$(dirname "$0")/gateway_lib.sh"
command -v aws >/dev/null || skip "aws (AWS CLI) not installed"
command -v curl >/dev/null || skip "curl not installed"
start_gateway

export AWS_ACCESS_KEY_ID="$GW_ACCESS_KEY" AWS_SECRET_ACCESS_KEY="$GW_SECRET_KEY"
export AWS_DEFAULT_REGION=us-east-1 AWS_CONFIG_FILE="$WORK/aws-config"
export AWS_SHARED_CREDENTIALS_FILE="$WORK/aws-credentials" AWS_PAGER=""
unset AWS_PROFILE AWS_SESSION_TOKEN AWS_ENDPOINT_URL
aws configure set default.s3.addressing_style path
# awscli v1 presigns with SigV2 unless told otherwise; the gateway speaks SigV4 only.
aws configure set default.s3.signature_version s3v4
aws configure set default.s3.multipart_threshold 8MB
aws configure set default.s3.multipart_chunksize 8MB
AWS=(aws --endpoint-url "$ENDPOINT")
AWSQ=(aws --endpoint-url "$ENDPOINT")
step() { echo "== $*"; }

step mb / ls
"${AWS[@]}" s3 mb s3://interop
"${AWS[@]}" s3 ls | grep -q " interop$" || fail "bucket not listed"

step cp up and down, checksums
head -c 3000001 /dev/urandom >"$WORK/small.bin"
"${AWS[@]}" s3 cp --only-show-errors "$WORK/small.bin" s3://interop/dir/sub/small.bin
"${AWS[@]}" s3 cp --only-show-errors s3://interop/dir/sub/small.bin "$WORK/small.back"
[[ "$(sha256sum <"$WORK/small.bin")" == "$(sha256sum <"$WORK/small.back")" ]] || fail "small mismatch"
[[ -f "$ROOT/interop/dir/sub/small.bin" ]] || fail "object not at ROOT/bucket/key"

step 100 MiB multipart upload
head -c $((100 * 1024 * 1024)) /dev/urandom >"$WORK/big.bin"
"${AWS[@]}" s3 cp --only-show-errors "$WORK/big.bin" s3://interop/big.bin
etag=$("${AWSQ[@]}" s3api head-object --bucket interop --key big.bin --query ETag --output text)
[[ "$etag" == *-13\" || "$etag" == *-13 ]] || fail "multipart ETag expected 13 parts, got $etag"
"${AWS[@]}" s3 cp --only-show-errors s3://interop/big.bin "$WORK/big.back"
[[ "$(sha256sum <"$WORK/big.bin")" == "$(sha256sum <"$WORK/big.back")" ]] || fail "big mismatch"
[[ -z "$(ls "$ROOT/.reelfs-gateway/uploads")" ]] || fail "multipart staging not cleaned up"

step list-multipart-uploads and list-parts, paged by the CLI, then abort
# Three uploads left incomplete, two of one key; one key carries a space and a '+' (raw in the
# XML: botocore does not ask ListMultipartUploads for encoding-type=url; our client does).
mk_upload() {
  "${AWSQ[@]}" s3api create-multipart-upload --bucket interop --key "$1" --query UploadId \
    --output text
}
up_a=$(mk_upload "mpu/a key+1.bin")
up_b=$(mk_upload "mpu/sub/b.bin")
up_c=$(mk_upload "mpu/sub/b.bin")
head -c $((5 * 1024 * 1024)) /dev/urandom >"$WORK/part1.bin"
head -c 4321 /dev/urandom >"$WORK/part2.bin"
e1=$("${AWSQ[@]}" s3api upload-part --bucket interop --key "mpu/a key+1.bin" --upload-id "$up_a" \
  --part-number 1 --body "$WORK/part1.bin" --query ETag --output text)
e2=$("${AWSQ[@]}" s3api upload-part --bucket interop --key "mpu/a key+1.bin" --upload-id "$up_a" \
  --part-number 2 --body "$WORK/part2.bin" --query ETag --output text)
# --page-size 1: the CLI follows NextKeyMarker / NextUploadIdMarker page by page (and prints a
# line per page).
out=$("${AWSQ[@]}" s3api list-multipart-uploads --bucket interop --page-size 1 \
  --query 'join(`,`, Uploads[].[Key, UploadId][])' --output text | paste -sd, -)
[[ "$out" == "mpu/a key+1.bin,$up_a,mpu/sub/b.bin,$up_b,mpu/sub/b.bin,$up_c" ||
   "$out" == "mpu/a key+1.bin,$up_a,mpu/sub/b.bin,$up_c,mpu/sub/b.bin,$up_b" ]] ||
  fail "list-multipart-uploads: $out"
out=$("${AWSQ[@]}" s3api list-multipart-uploads --bucket interop --prefix mpu/ --delimiter / \
  --query '[join(`,`, Uploads[].Key), join(`,`, CommonPrefixes[].Prefix)]' --output text)
[[ "$out" == $'mpu/a key+1.bin\tmpu/sub/' ]] || fail "list-multipart-uploads delimiter: $out"
out=$("${AWSQ[@]}" s3api list-parts --bucket interop --key "mpu/a key+1.bin" --upload-id "$up_a" \
  --page-size 1 --query 'join(`,`, Parts[].[to_string(PartNumber), ETag, to_string(Size)][])' \
  --output text | paste -sd, -)
[[ "$out" == "1,$e1,5242880,2,$e2,4321" ]] || fail "list-parts: $out"
if "${AWSQ[@]}" s3api list-parts --bucket interop --key mpu/sub/b.bin --upload-id "$up_a" \
  2>"$WORK/nsu.err"; then fail "list-parts with another key's upload id succeeded"; fi
grep -q NoSuchUpload "$WORK/nsu.err" || fail "expected NoSuchUpload: $(cat "$WORK/nsu.err")"
"${AWSQ[@]}" s3api abort-multipart-upload --bucket interop --key "mpu/a key+1.bin" --upload-id "$up_a"
"${AWSQ[@]}" s3api abort-multipart-upload --bucket interop --key mpu/sub/b.bin --upload-id "$up_b"
"${AWSQ[@]}" s3api abort-multipart-upload --bucket interop --key mpu/sub/b.bin --upload-id "$up_c"
out=$("${AWSQ[@]}" s3api list-multipart-uploads --bucket interop --query 'length(Uploads || `[]`)')
[[ "$out" == 0 ]] || fail "uploads left after abort: $out"
[[ -z "$(ls "$ROOT/.reelfs-gateway/uploads")" ]] || fail "aborted parts left on disk"

step ranged get
"${AWSQ[@]}" s3api get-object --bucket interop --key big.bin --range bytes=1048570-2097170 \
  "$WORK/range.out" >"$WORK/range.json"
dd if="$WORK/big.bin" of="$WORK/range.ref" bs=1 skip=1048570 count=1048601 status=none 2>/dev/null ||
  dd if="$WORK/big.bin" of="$WORK/range.ref" iflag=skip_bytes,count_bytes skip=1048570 \
    count=1048601 status=none
cmp "$WORK/range.out" "$WORK/range.ref" || fail "range mismatch"
grep -q '"ContentRange": "bytes 1048570-2097170/104857600"' "$WORK/range.json" ||
  fail "Content-Range missing: $(cat "$WORK/range.json")"

step s3api put-object with metadata, head-object
"${AWSQ[@]}" s3api put-object --bucket interop --key meta.txt --body "$WORK/small.bin" \
  --content-type text/plain --metadata color=blue >/dev/null
"${AWSQ[@]}" s3api head-object --bucket interop --key meta.txt >"$WORK/head.json"
grep -q '"color": "blue"' "$WORK/head.json" || fail "metadata lost: $(cat "$WORK/head.json")"
grep -q '"ContentType": "text/plain"' "$WORK/head.json" || fail "content type lost"

step list-objects-v2 with delimiter
out=$("${AWSQ[@]}" s3api list-objects-v2 --bucket interop --delimiter / --query \
  'join(`,`, [join(`,`, Contents[].Key), join(`,`, CommonPrefixes[].Prefix)])' --output text)
[[ "$out" == "big.bin,meta.txt,dir/" ]] || fail "listing: $out"

step presigned URL fetched with curl
url=$("${AWSQ[@]}" s3 presign s3://interop/dir/sub/small.bin --expires-in 300)
curl -sf -o "$WORK/presigned.out" "$url" || fail "curl of presigned URL failed"
cmp "$WORK/presigned.out" "$WORK/small.bin" || fail "presigned content mismatch"
[[ "$url" =~ X-Amz-Signature=[0-9a-f]{64}$ ]] || fail "unexpected presigned URL shape"
bad="${url%?}"; [[ "${url: -1}" == 0 ]] && bad+=1 || bad+=0
code=$(curl -s -o "$WORK/tampered.xml" -w '%{http_code}' "$bad")
[[ "$code" == 403 ]] && grep -q SignatureDoesNotMatch "$WORK/tampered.xml" ||
  fail "tampered presigned URL gave $code: $(cat "$WORK/tampered.xml")"

step wrong secret
if AWS_SECRET_ACCESS_KEY=wrong-secret "${AWS[@]}" s3 ls s3://interop 2>"$WORK/wrong.err"; then
  fail "wrong secret accepted"
fi
grep -q SignatureDoesNotMatch "$WORK/wrong.err" || fail "expected SignatureDoesNotMatch: $(cat "$WORK/wrong.err")"

step "s3 cp between keys above the multipart threshold: UploadPartCopy parts"
"${AWS[@]}" s3 cp --only-show-errors s3://interop/big.bin s3://interop/copies/big.bin
etag=$("${AWSQ[@]}" s3api head-object --bucket interop --key copies/big.bin --query ETag --output text)
[[ "$etag" == *-13\" || "$etag" == *-13 ]] || fail "copied ETag expected 13 parts, got $etag"
"${AWS[@]}" s3 cp --only-show-errors s3://interop/copies/big.bin "$WORK/copy.back"
[[ "$(sha256sum <"$WORK/big.bin")" == "$(sha256sum <"$WORK/copy.back")" ]] || fail "copy mismatch"
[[ -z "$(ls "$ROOT/.reelfs-gateway/uploads")" ]] || fail "multipart staging not cleaned up"

step "s3api upload-part-copy: a source range and a whole source, then complete"
uid=$("${AWSQ[@]}" s3api create-multipart-upload --bucket interop --key joined.bin \
  --query UploadId --output text)
"${AWSQ[@]}" s3api upload-part-copy --bucket interop --key joined.bin --upload-id "$uid" \
  --part-number 1 --copy-source interop/big.bin --copy-source-range bytes=1000-5243879 \
  >"$WORK/upc1.json" || fail "upload-part-copy 1"
"${AWSQ[@]}" s3api upload-part-copy --bucket interop --key joined.bin --upload-id "$uid" \
  --part-number 2 --copy-source interop/dir/sub/small.bin \
  --copy-source-if-match "$("${AWSQ[@]}" s3api head-object --bucket interop \
    --key dir/sub/small.bin --query ETag --output text)" >"$WORK/upc2.json" ||
  fail "upload-part-copy 2"
e1=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["CopyPartResult"]["ETag"])' "$WORK/upc1.json")
e2=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["CopyPartResult"]["ETag"])' "$WORK/upc2.json")
grep -q LastModified "$WORK/upc1.json" || fail "no LastModified: $(cat "$WORK/upc1.json")"
dd if="$WORK/big.bin" of="$WORK/part1.ref" iflag=skip_bytes,count_bytes skip=1000 count=5242880 \
  status=none
[[ "$e1" == "\"$(md5sum <"$WORK/part1.ref" | cut -d' ' -f1)\"" ]] || fail "part 1 ETag $e1"
"${AWSQ[@]}" s3api complete-multipart-upload --bucket interop --key joined.bin --upload-id "$uid" \
  --multipart-upload "{\"Parts\":[{\"PartNumber\":1,\"ETag\":$e1},{\"PartNumber\":2,\"ETag\":$e2}]}" \
  >/dev/null || fail "complete"
"${AWS[@]}" s3 cp --only-show-errors s3://interop/joined.bin "$WORK/joined.back"
cat "$WORK/part1.ref" "$WORK/small.bin" >"$WORK/joined.ref"
cmp "$WORK/joined.back" "$WORK/joined.ref" || fail "joined.bin is not the two ranges"

step "s3api upload-part-copy errors: NoSuchKey, InvalidArgument (range), PreconditionFailed"
uid=$("${AWSQ[@]}" s3api create-multipart-upload --bucket interop --key bad.bin \
  --query UploadId --output text)
upc() {  # upc ARGS...: upload-part-copy part 1 of bad.bin, stderr to $WORK/upc.err
  "${AWSQ[@]}" s3api upload-part-copy --bucket interop --key bad.bin --upload-id "$uid" \
    --part-number 1 "$@" >/dev/null 2>"$WORK/upc.err"
}
upc --copy-source interop/no-such-key && fail "a missing source was copied"
grep -q NoSuchKey "$WORK/upc.err" || fail "missing source: $(cat "$WORK/upc.err")"
upc --copy-source interop/big.bin --copy-source-range bytes=0-104857600 && fail "range past the end"
grep -q InvalidArgument "$WORK/upc.err" || fail "range past the end: $(cat "$WORK/upc.err")"
upc --copy-source interop/big.bin --copy-source-range bytes=10- && fail "open range accepted"
grep -q InvalidArgument "$WORK/upc.err" || fail "open range: $(cat "$WORK/upc.err")"
upc --copy-source interop/big.bin --copy-source-if-match '"0123"' && fail "if-match ignored"
grep -q PreconditionFailed "$WORK/upc.err" || fail "if-match: $(cat "$WORK/upc.err")"
"${AWSQ[@]}" s3api abort-multipart-upload --bucket interop --key bad.bin --upload-id "$uid"
[[ -z "$(ls "$ROOT/.reelfs-gateway/uploads")" ]] || fail "multipart staging not cleaned up"
"${AWS[@]}" s3 rm --only-show-errors --recursive s3://interop/copies
"${AWS[@]}" s3 rm --only-show-errors s3://interop/joined.bin

step rm / rb
"${AWS[@]}" s3 rm s3://interop/dir/sub/small.bin
[[ ! -e "$ROOT/interop/dir" ]] || fail "empty parent directories left behind"
if "${AWS[@]}" s3 rb s3://interop 2>/dev/null; then fail "rb of a non-empty bucket succeeded"; fi
"${AWS[@]}" s3 rm --recursive s3://interop
"${AWS[@]}" s3 rb s3://interop
[[ ! -e "$ROOT/interop" ]] || fail "bucket directory left behind"

step clean shutdown
stop_gateway || fail "gateway did not exit 0 on SIGTERM"
echo "PASS: gateway_awscli"
