#!/usr/bin/env bash
# Interop: `reelfs cp` uploads (LOCAL -> s3://) against a real reelfs-gateway, every object
# checked through the AWS CLI (a client no one here wrote), by sha256:
#  - a 0-byte file, 1 byte, one byte under and over a part (one PUT, then ETag "-2"), 100 MiB in
#    8 MiB parts (ETag "-13"), stdin of 20 MiB + 3 (streamed, multipart);
#  - `cp -r` of a tree of 200 files in nested directories with odd names (spaces, unicode, '+',
#    '%', '&', '=') and a symbolic link: the AWS CLI's recursive download equals the tree;
#  - an existing object: refused (exit 1, the object unchanged), replaced with --overwrite;
#  - no progress bar when stderr is not a terminal; one rewritten line on a pseudo-terminal;
#  - wrong credentials: exit 1, a message naming the signature error, no object;
#  - a part refused by the server (fault rule): exit 1, no object, the upload aborted (the
#    gateway's multipart staging directory is empty);
#  - the gateway SIGKILLed mid-upload: exit 1, and after its restart no object; the upload cp
#    could not abort (its server was gone) is named in the message and is the only one left.
source "$(dirname "$0")/gateway_lib.sh"
command -v aws >/dev/null || skip "aws (AWS CLI) not installed"
[[ -n "${REELFS_BIN:-}" && -x "${REELFS_BIN}" ]] || skip "REELFS_BIN not set or not executable"
start_gateway

export AWS_ACCESS_KEY_ID="$GW_ACCESS_KEY" AWS_SECRET_ACCESS_KEY="$GW_SECRET_KEY"
export AWS_DEFAULT_REGION=us-east-1 AWS_REGION=us-east-1 AWS_CONFIG_FILE="$WORK/aws-config"
export AWS_SHARED_CREDENTIALS_FILE="$WORK/aws-credentials" AWS_PAGER=""
unset AWS_PROFILE AWS_SESSION_TOKEN
aws configure set default.s3.addressing_style path
aws configure set default.s3.signature_version s3v4
export LC_ALL=C.UTF-8
step() { echo "== $*"; }
s3() { aws --endpoint-url "$ENDPOINT" "$@"; }
reelfs() { "$REELFS_BIN" --endpoint "$ENDPOINT" "$@"; }
BUCKET=cpup
s3 s3 mb "s3://$BUCKET" >/dev/null

file_sum() { sha256sum <"$1" | cut -d' ' -f1; }
# remote_sum KEY: the sha256 of the object as the AWS CLI downloads it.
remote_sum() { s3 s3 cp --only-show-errors "s3://$BUCKET/$1" - | sha256sum | cut -d' ' -f1; }
etag() { s3 s3api head-object --bucket "$BUCKET" --key "$1" --query ETag --output text; }
no_object() {  # no_object KEY: head-object says 404
  local out
  out=$(s3 s3api head-object --bucket "$BUCKET" --key "$1" 2>&1) && fail "object $1 exists: $out"
  [[ $out == *"404"* || $out == *"Not Found"* ]] || fail "head-object $1: $out"
}
uploads_left() { find "$ROOT/.reelfs-gateway/uploads" -mindepth 1 -maxdepth 1 | wc -l; }
# up NAME SIZE [reelfs cp options...]: a file of SIZE random bytes uploaded as NAME, checked.
up() {
  local name=$1 size=$2; shift 2
  head -c "$size" /dev/urandom >"$WORK/$name"
  reelfs cp "$@" "$WORK/$name" "s3://$BUCKET/files/$name" 2>"$WORK/err" ||
    fail "cp $name: $(cat "$WORK/err")"
  [[ ! -s "$WORK/err" ]] || fail "cp $name wrote to a stderr that is not a terminal: $(cat "$WORK/err")"
  [[ $(remote_sum "files/$name") == $(file_sum "$WORK/$name") ]] || fail "$name differs"
  echo "  $name: $size bytes, ETag $(etag "files/$name")"
}

step "0 B, 1 B, a part - 1 (one PUT), a part + 1 (two parts), 100 MiB in 8 MiB parts"
PART=$((8 << 20))
up zero 0
up one 1
up under $((PART - 1))
[[ $(etag files/under) != *-* ]] || fail "a file under one part was not one PUT: $(etag files/under)"
up over $((PART + 1))
[[ $(etag files/over) == *-2\" ]] || fail "part + 1: ETag $(etag files/over), want two parts"
up hundred $((100 << 20)) --part-size 8MiB --concurrency 4
[[ $(etag files/hundred) == *-13\" ]] || fail "100 MiB: ETag $(etag files/hundred), want 13 parts"
[[ $(uploads_left) == 0 ]] || fail "multipart uploads left after the uploads"

step "stdin: 20 MiB + 3 streamed"
head -c $((20 * 1048576 + 3)) /dev/urandom >"$WORK/stdin.src"
cat "$WORK/stdin.src" | reelfs cp - "s3://$BUCKET/stdin.bin" || fail "cp - (stdin)"
[[ $(remote_sum stdin.bin) == $(file_sum "$WORK/stdin.src") ]] || fail "stdin.bin differs"
[[ $(etag stdin.bin) == *-3\" ]] || fail "stdin ETag $(etag stdin.bin), want 3 parts"

step "cp -r of 200 files with nested directories and odd names, checked by aws s3 cp --recursive"
TREE="$WORK/tree"
names=("plain" "with space" "plus+sign" "per%25cent" "amp&and=eq" "unicodé-ünï" "日本語" "a,b;c")
for i in $(seq 0 198); do
  d="$TREE/${names[i % 8]}/level $((i % 5))"
  (( i % 3 == 0 )) && d="$d/deeper+$((i % 7))"
  mkdir -p "$d"
  head -c $(( (i * 7919) % 300000 )) /dev/urandom >"$d/file $i ${names[(i + 3) % 8]}.bin"
done
head -c $((9 << 20)) /dev/urandom >"$TREE/plain/big over a part.bin"  # 200: a multipart one
mkdir -p "$TREE/empty dir"
ln -s "../plain/big over a part.bin" "$TREE/with space/link to big"  # followed: 201 objects
reelfs cp -r --files-in-flight 8 "$TREE" "s3://$BUCKET/tree" 2>"$WORK/err" ||
  fail "cp -r: $(cat "$WORK/err")"
count=$(s3 s3api list-objects-v2 --bucket "$BUCKET" --prefix tree/ --query 'length(Contents)')
[[ $count == 201 ]] || fail "cp -r stored $count objects, want 201"
mkdir "$WORK/back"
s3 s3 cp --only-show-errors --recursive "s3://$BUCKET/tree" "$WORK/back" || fail "aws cp -r"
sums() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum); }
cp -rL "$TREE" "$WORK/tree-deref" && rm -rf "$WORK/tree-deref/empty dir"
[[ "$(sums "$WORK/back")" == "$(sums "$WORK/tree-deref")" ]] || fail "the tree differs through the AWS CLI"
[[ $(uploads_left) == 0 ]] || fail "multipart uploads left after cp -r"
echo "  $count objects, $(du -sb "$TREE" | cut -f1) bytes"

step "an existing object: refused without --overwrite, replaced with it"
echo new >"$WORK/new"
rc=0; reelfs cp "$WORK/new" "s3://$BUCKET/files/one" 2>"$WORK/err" || rc=$?
[[ $rc == 1 ]] || fail "cp over an existing object: exit $rc, want 1"
grep -q "exists" "$WORK/err" || fail "no 'exists' message: $(cat "$WORK/err")"
[[ $(remote_sum files/one) == $(file_sum "$WORK/one") ]] || fail "the refused copy changed files/one"
reelfs cp --overwrite "$WORK/new" "s3://$BUCKET/files/one" || fail "cp --overwrite"
[[ $(remote_sum files/one) == $(file_sum "$WORK/new") ]] || fail "--overwrite did not replace"
echo "  $(cat "$WORK/err")"

step "the progress bar: one rewritten line on a terminal, none elsewhere"
if command -v script >/dev/null; then
  head -c $((24 << 20)) /dev/urandom >"$WORK/tty.bin"
  script -qec "$REELFS_BIN --endpoint $ENDPOINT cp $WORK/tty.bin s3://$BUCKET/tty.bin" \
    "$WORK/tty.out" >/dev/null || fail "cp on a terminal"
  grep -q $'\e\\[K' "$WORK/tty.out" || fail "no line rewritten on the terminal: $(cat -v "$WORK/tty.out")"
  grep -q "100%" "$WORK/tty.out" || fail "no 100% on the terminal: $(cat -v "$WORK/tty.out")"
  grep -q "MiB/s" "$WORK/tty.out" || fail "no rate on the terminal: $(cat -v "$WORK/tty.out")"
  [[ $(remote_sum tty.bin) == $(file_sum "$WORK/tty.bin") ]] || fail "tty.bin differs"
  script -qec "$REELFS_BIN --endpoint $ENDPOINT cp -q --overwrite $WORK/tty.bin s3://$BUCKET/tty.bin" \
    "$WORK/tty.q" >/dev/null || fail "cp -q on a terminal"
  ! grep -q "MiB/s" "$WORK/tty.q" || fail "--quiet drew a bar: $(cat -v "$WORK/tty.q")"
  echo "  last frame: $(tr '\r' '\n' <"$WORK/tty.out" | grep '%' | tail -1 | cat -v)"
  # A download draws the same bar, and into a directory writes DIR/NAME (as cp does).
  mkdir -p "$WORK/dl"
  script -qec "$REELFS_BIN --endpoint $ENDPOINT cp s3://$BUCKET/tty.bin $WORK/dl/" \
    "$WORK/tty.dl" >/dev/null || fail "download on a terminal"
  grep -q "100%" "$WORK/tty.dl" || fail "no 100% for a download: $(cat -v "$WORK/tty.dl")"
  [[ $(file_sum "$WORK/dl/tty.bin") == $(file_sum "$WORK/tty.bin") ]] || fail "dl/tty.bin differs"
else
  echo "  (script(1) not installed: the terminal case is not run)"
fi

step "wrong credentials: exit 1, a clear message, no object"
rc=0
AWS_SECRET_ACCESS_KEY=wrong-secret reelfs cp "$WORK/new" "s3://$BUCKET/badcreds" 2>"$WORK/err" || rc=$?
[[ $rc == 1 ]] || fail "wrong credentials: exit $rc, want 1"
grep -q "SignatureDoesNotMatch" "$WORK/err" || fail "no SignatureDoesNotMatch: $(cat "$WORK/err")"
no_object badcreds
echo "  $(head -1 "$WORK/err")"

step "a part refused by the server: exit 1, no object, the upload aborted"
stop_gateway
cat >"$WORK/gw.yaml" <<YAML
faults:
  http:
    - op: UploadPart
      nth: 2
      error: AccessDenied
YAML
start_gateway "$PORT" --config "$WORK/gw.yaml"
rc=0; reelfs cp "$WORK/hundred" "s3://$BUCKET/refused.bin" 2>"$WORK/err" || rc=$?
[[ $rc == 1 ]] || fail "a refused part: exit $rc, want 1"
grep -q "UploadPart" "$WORK/err" || fail "no UploadPart in the message: $(cat "$WORK/err")"
no_object refused.bin
[[ $(uploads_left) == 0 ]] || fail "the failed upload was not aborted: $(uploads_left) left"
echo "  $(head -1 "$WORK/err")"

step "SIGTERM (as Ctrl-C) mid-upload: exit 143, the upload aborted, no object"
stop_gateway
start_gateway "$PORT"
mkfifo "$WORK/fifo"
# The binary itself in the background (not the shell function), so $! is its pid.
"$REELFS_BIN" --endpoint "$ENDPOINT" cp - "s3://$BUCKET/interrupted.bin" <"$WORK/fifo" 2>"$WORK/int.err" &
CP_PID=$!
exec 3>"$WORK/fifo"
head -c $((40 << 20)) /dev/urandom >&3
for _ in $(seq 300); do [[ $(uploads_left) == 1 ]] && break; sleep 0.1; done
[[ $(uploads_left) == 1 ]] || fail "no multipart upload on the gateway"
kill -TERM "$CP_PID"
for _ in $(seq 300); do [[ $(uploads_left) == 0 ]] && break; sleep 0.1; done
exec 3>&-  # cp waits in read(2) on the pipe until it ends
rc=0; wait "$CP_PID" || rc=$?
[[ $rc == 143 ]] || fail "SIGTERM: exit $rc, want 143: $(cat "$WORK/int.err")"
grep -q "interrupted" "$WORK/int.err" || fail "no 'interrupted': $(cat "$WORK/int.err")"
no_object interrupted.bin
[[ $(uploads_left) == 0 ]] || fail "the interrupted upload was not aborted"
echo "  $(tail -1 "$WORK/int.err")"

step "the gateway SIGKILLed mid-upload: exit 1, no object after its restart"
"$REELFS_BIN" --endpoint "$ENDPOINT" cp - "s3://$BUCKET/killed.bin" <"$WORK/fifo" 2>"$WORK/kill.err" &
CP_PID=$!
exec 3>"$WORK/fifo"
head -c $((40 << 20)) /dev/urandom >&3  # five parts: the multipart upload has begun
for _ in $(seq 300); do [[ $(uploads_left) == 1 ]] && break; sleep 0.1; done
[[ $(uploads_left) == 1 ]] || fail "no multipart upload on the gateway"
kill -KILL "$GW_PID"; wait "$GW_PID" 2>/dev/null || true; GW_PID=""
head -c $((8 << 20)) /dev/urandom >&3 || true
exec 3>&-
rc=0; wait "$CP_PID" || rc=$?
[[ $rc == 1 ]] || fail "the gateway killed: exit $rc, want 1: $(cat "$WORK/kill.err")"
start_gateway "$PORT"
no_object killed.bin
left=$(find "$ROOT/.reelfs-gateway/uploads" -mindepth 1 -maxdepth 1 -printf '%f\n')
[[ $(wc -l <<<"$left") == 1 ]] || fail "uploads left: $left"
grep -qF "$left" "$WORK/kill.err" || fail "the message does not name the upload left ($left): $(cat "$WORK/kill.err")"
echo "  $(grep -c . "$WORK/kill.err") line(s) on stderr; the upload left is named: $left"
echo "PASS"
