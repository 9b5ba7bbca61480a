#!/usr/bin/env bash
# e2e (issue 5): the tape xattrs and st_blocks on a real mount over the gateway's archive (tape
# hints on), for the versitygw and aws personalities (docs/semantics.md "Extended attributes").
#
# Per personality: 2 online objects (on/) and 8 archived and released ones (d/, 3 cartridges).
#  - getfattr of every user.s3.* / user.hsm.* attribute of an online and an offline file;
#    user.hsm.tape / user.hsm.position only on the archived one; security.* is "not supported";
#    user.hsm.summary of d/ and of the root; user.reelfs.mount on the root (the CLI's keys);
#  - st_blocks: 1 for an offline file (st_size unchanged), ceil(size/512) online;
#  - setfattr -n user.hsm.request -v stage on one file -> staging, then restored (aws) or online
#    (versitygw shows restored files as STANDARD); st_blocks full,
#    bytes verified by sha256; bad value -> EINVAL, another name -> EOPNOTSUPP;
#  - setfattr on the directory d/ -> every other object staged (catalog), then each one restored
#    (restored or online) per user.hsm.state, st_blocks full and bytes verified.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/tape_lib.sh"
source "$(dirname "$0")/tape_more.sh"
e2e_init tape_xattr 280
export LC_ALL=C
command -v getfattr >/dev/null && command -v setfattr >/dev/null ||
  skip "getfattr/setfattr not installed (Debian package attr)"

SIZE=200000
FULL_BLOCKS=$(((SIZE + 511) / 512))

xattr() { getfattr --absolute-names --only-values -n "$1" "$2" 2>&1 || true; }
# until_xattr NAME PATH REGEX: polls (up to 60 s) until the attribute matches; prints it.
until_xattr() {
  local v i
  for i in $(seq 300); do
    v=$(xattr "$1" "$2")
    [[ $v =~ ^($3)$ ]] && { echo "$v"; return 0; }
    sleep 0.2
  done
  fail "$1 of $2 is still '$v' after 60 s (want $3)"
}
# until_blocks PATH N: st_blocks reaches N within 30 s (the kernel caches it for state_ttl).
until_blocks() {
  local i
  for i in $(seq 150); do
    [[ $(stat -c %b "$1") == "$2" ]] && return 0
    sleep 0.2
  done
  fail "st_blocks of $1 is $(stat -c %b "$1"), want $2"
}
check_sum() {  # check_sum MNT KEY
  local got
  got=$(sha256sum <"$1/$2" | cut -d' ' -f1)
  expect "sha256 $2" "$got" "$(sum_of data "$2")"
}

MPID=""
for P in versitygw aws; do
  step "$P: online and offline files"
  [[ -n $MPID ]] && unmount_and_wait "$M" "$MPID"
  stop_tape_gateway
  ROOT="$WORK/root-$P"
  mkdir -p "$ROOT"
  TAPE_HINTS=true tape_config "$P"
  gen_objects data 2 $SIZE on
  mv "$WORK/data.sums" "$WORK/on.sums"
  gen_objects data 8 $SIZE d
  cat "$WORK/on.sums" >>"$WORK/data.sums"
  archive_offline data 3 key d/
  start_tape_gateway
  [[ $(catalog_count data offline) == 8 ]] || fail "not 8 offline: $(catalog_states data)"
  M=$WORK/m-$P
  mount_tape data "$M" wait
  MPID=$MOUNT_PID

  ON=$M/on/00000.bin
  OFF=$M/d/00000.bin
  expect "online storage_class" "$(xattr user.s3.storage_class "$ON")" STANDARD
  expect "online state" "$(xattr user.hsm.state "$ON")" online
  expect "online restore_expiry" "$(xattr user.hsm.restore_expiry "$ON")" ""
  [[ -n $(xattr user.s3.etag "$ON") ]] || fail "online etag empty"
  [[ $(xattr user.hsm.tape "$ON") == *"No such attribute"* ]] || fail "online file has a tape"
  [[ $(xattr security.selinux "$ON") == *"not supported"* ]] || fail "security.* answered"
  expect "online st_blocks" "$(stat -c %b "$ON")" $FULL_BLOCKS

  sc=$(xattr user.s3.storage_class "$OFF")
  [[ $sc == GLACIER || $sc == DEEP_ARCHIVE ]] || fail "offline storage_class '$sc'"
  echo "   ok: offline storage_class -> $sc"
  expect "offline state" "$(xattr user.hsm.state "$OFF")" offline
  expect "offline user.s3.restore" "$(xattr user.s3.restore "$OFF")" ""
  tape=$(xattr user.hsm.tape "$OFF")
  [[ $tape =~ ^[A-Z0-9]+$ ]] || fail "user.hsm.tape '$tape'"
  pos=$(xattr user.hsm.position "$OFF")
  [[ $pos == block=* ]] || fail "user.hsm.position '$pos'"
  echo "   ok: tape $tape, position $pos"
  getfattr --absolute-names -d -m '^user\.' "$OFF" | grep -q '^user.hsm.position=' ||
    fail "listxattr lacks user.hsm.position"
  expect "offline st_size" "$(stat -c %s "$OFF")" $SIZE
  expect "offline st_blocks" "$(stat -c %b "$OFF")" 1
  summary=$(xattr user.hsm.summary "$M/d")
  "$PY" -c 'import json,sys; s=json.loads(sys.argv[1]); o=s["objects"]; b=s["bytes"]
assert o["offline"] == 8 and o["online"] == 0, s
assert b["offline"] == 8 * int(sys.argv[2]), s' "$summary" $SIZE || fail "summary of d/: $summary"
  echo "   ok: summary d/ -> $summary"
  root=$(xattr user.hsm.summary "$M")
  "$PY" -c 'import json,sys; o=json.loads(sys.argv[1])["objects"]
assert o["offline"] == 8 and o["online"] == 2, o' "$root" || fail "summary of the root: $root"
  mnt=$(xattr user.reelfs.mount "$M")
  "$PY" -c 'import json,sys; m=json.loads(sys.argv[1])
assert m["version"] == 1 and m["bucket"] == "data" and m["prefix"] == "", m
assert m["endpoint"] == sys.argv[2], m
assert m["ledger"] == ":memory:", m' "$mnt" "$ENDPOINT" || fail "user.reelfs.mount: $mnt"
  echo "   ok: user.reelfs.mount -> $mnt"

  step "$P: setfattr on one file"
  out=$(setfattr -n user.hsm.request -v recall "$OFF" 2>&1) && fail "bad value accepted"
  [[ $out == *"Invalid argument"* ]] || fail "bad value: '$out'"
  out=$(setfattr -n user.hsm.state -v online "$OFF" 2>&1) && fail "user.hsm.state written"
  [[ $out == *"Operation not supported"* ]] || fail "other name: '$out'"
  setfattr -n user.hsm.request -v stage "$OFF" || fail "setfattr stage on a file"
  st=$(xattr user.hsm.state "$OFF")
  [[ $st == staging || $st == restored ]] || fail "state after stage: '$st'"
  echo "   ok: state after stage -> $st"
  # aws: restored (archive class + x-amz-restore); versitygw shows a restored file as STANDARD
  # with x-amz-restore, which is plainly online.
  st=$(until_xattr user.hsm.state "$OFF" 'restored|online')
  echo "   ok: state once restored -> $st"
  until_blocks "$OFF" $FULL_BLOCKS
  echo "   ok: st_blocks -> $FULL_BLOCKS"
  [[ -n $(xattr user.s3.restore "$OFF") ]] || fail "restored object without user.s3.restore"
  check_sum "$M" d/00000.bin

  step "$P: setfattr on the directory"
  setfattr -n user.hsm.request -v stage "$M/d" || fail "setfattr stage on a directory"
  for i in $(seq 1 7); do
    key=$(printf 'd/%05d.bin' "$i")
    until_xattr user.hsm.state "$M/$key" 'restored|online' >/dev/null
    until_blocks "$M/$key" $FULL_BLOCKS
    check_sum "$M" "$key"
  done
  [[ $(catalog_count data offline) == 0 ]] || fail "still offline: $(catalog_states data)"
  check_sum "$M" on/00001.bin
done
unmount_and_wait "$M" "$MPID"
stop_tape_gateway
echo "PASS"
