#!/usr/bin/env bash
# e2e: errors a user meets. Proves: (1) a mount with a wrong secret key, an unknown access key
# or a missing bucket is refused (exit 1, nothing mounted) with a message saying which; (2) a
# mount whose credentials the server refuses later (the gateway restarted with another secret)
# answers every access with EACCES ("Permission denied"); (3) a --read-only mount shows modes
# 0444/0555, df 0 % used, and every kind of write (create, truncate, append, mkdir, rmdir,
# unlink, rename, symlink, link, chmod, chown, utimes, mkfifo) fails with EROFS ("Read-only file
# system") and the source is unchanged.
source "$(dirname "$0")/lib.sh"
e2e_init errors 150
export LC_ALL=C

mkdir -p "$ROOT/err/dir/sub"
echo "original content" >"$ROOT/err/file.txt"
echo "nested" >"$ROOT/err/dir/sub/n.txt"
before=$(sums "$ROOT/err")
start_gateway

# refused_mount DESCRIPTION WANT [mount args...]: `reelfs mount` exits 1 before mounting and its
# message says WANT; nothing is mounted on the directory.
refused_mount() {
  local what=$1 want=$2 dir="$WORK/mnt-refused" out rc=0; shift 2
  mkdir -p "$dir"
  out=$("$REELFS_BIN" mount "$@" "$dir" --endpoint "$ENDPOINT" 2>&1) || rc=$?
  [[ $rc == 1 ]] || fail "$what: mount exited $rc, want 1: $out"
  [[ $out == *"cannot mount s3://"*"$want"* ]] || fail "$what: '$out', want '$want'"
  mountpoint -q "$dir" && fail "$what: $dir is mounted"
  echo "  $what: $out"
}

step "--version, and --help reads as written: no CLI11 braces"
version=$("$REELFS_BIN" --version)
[[ $version =~ ^reelfs\ [0-9]+\.[0-9]+\.[0-9]+ ]] || fail "reelfs --version: '$version'"
echo "  $version"
help=$("$REELFS_BIN" mount --help)
[[ $help == *"--rdma [=DEVICE]"* && $help != *"{}"* ]] || fail "mount --help: $(grep -- --rdma <<<"$help")"
help=$("$REELFS_BIN" cp --help)
[[ $help == *"--rdma [=DEVICE]"* && $help != *"{}"* ]] || fail "cp --help: $(grep -- --rdma <<<"$help")"

step "wrong credentials, missing bucket: the mount is refused and says why"
AWS_SECRET_ACCESS_KEY="not-the-secret" refused_mount "wrong secret" \
  "the server refused the secret key" err
AWS_ACCESS_KEY_ID="AKIDNOSUCHKEY" refused_mount "unknown access key id" \
  "does not know this access key id" err
refused_mount "missing bucket" "bucket 'no-such-bucket' does not exist" no-such-bucket
grep -q "not-the-secret" "$WORK"/*.log "$WORK"/*.out 2>/dev/null && fail "a secret reached a log"

step "credentials refused after the mount: access fails with Permission denied"
# The gateway comes back on the same port with another secret: the mount's keys are now wrong.
MNTW="$WORK/mnt-wrong"
MOUNT_DIR=$MNTW MOUNT_LOG="$WORK/mount-wrong.log" mount_bucket err --metadata-ttl 0
WRONG_PID=$MOUNT_PID
# The log file is written as lines are logged, not at unmount: the INFO start-up lines are there.
grep -q "info \[fuse\] mounted reelfs:err at $MNTW" "$WORK/mount-wrong.log" ||
  fail "the mount's log file lacks its start-up line while mounted: $(head -c 500 "$WORK/mount-wrong.log")"
# SIGUSR2 turns debug logging on in the running daemon: an ENOENT (logged at DEBUG) shows.
# The handler only counts the signal; the daemon's next log call writes the toggle line. The
# signal may land after a lookup's log call, so look up new missing names (each one reaches the
# daemon: no negative entry for it yet) until the line shows, for at most 5 s.
kill -USR2 "$WRONG_PID"
for i in $(seq 50); do
  stat "$MNTW/no-such-name-$i" >/dev/null 2>&1 && fail "stat of a missing name succeeded"
  grep -q "debug logging on (SIGUSR2" "$WORK/mount-wrong.log" && break
  sleep 0.1
done
grep -q "debug logging on (SIGUSR2" "$WORK/mount-wrong.log" || fail "no line for SIGUSR2's debug toggle"
grep -q " debug \[" "$WORK/mount-wrong.log" || fail "no DEBUG line after SIGUSR2"
kill -TERM "$GW_PID"; wait "$GW_PID" || true
GW_SECRET_KEY="rotated-$GW_SECRET_KEY" start_gateway "$PORT"
out=$(ls "$MNTW" 2>&1) && fail "ls with a wrong secret succeeded: $out"
[[ $out == *"Permission denied"* ]] || fail "ls with a wrong secret: '$out'"
out=$(cat "$MNTW/file.txt" 2>&1) && fail "cat with a wrong secret succeeded: $out"
[[ $out == *"Permission denied"* ]] || fail "cat with a wrong secret: '$out'"
out=$(stat "$MNTW/dir/sub/n.txt" 2>&1) && fail "stat with a wrong secret succeeded"
[[ $out == *"Permission denied"* ]] || fail "stat with a wrong secret: '$out'"
echo "  ls, cat, stat: Permission denied"
unmount_and_wait "$MNTW" "$WRONG_PID"
kill -TERM "$GW_PID"; wait "$GW_PID" || true
start_gateway "$PORT"

step "--read-only: modes 0444/0555, every write fails with Read-only file system"
mount_bucket err --read-only
MAIN_PID=$MOUNT_PID
[[ "$(cat "$MNT/file.txt")" == "original content" ]] || fail "good mount cannot read"
modes=$(stat -c %a "$MNT" "$MNT/dir" "$MNT/file.txt" | paste -sd' ')
[[ $modes == "555 555 444" ]] || fail "read-only modes: $modes"
# statfs: 0 % used on every mount (a read-only one showed 100 % before); the read-only state is
# the writes' EROFS below, since FUSE cannot set statvfs's f_flag.
read -r total free avail < <(stat -f -c '%b %f %a' "$MNT")
[[ $total != 0 && $free == "$total" && $avail == "$total" ]] ||
  fail "statfs of a read-only mount: blocks $total free $free avail $avail"
[[ $(df --output=pcent "$MNT" | tail -1 | tr -d ' ') == 0% ]] || fail "df: $(df "$MNT" | tail -1)"
iused=$(df --output=iused "$MNT" | tail -1 | tr -d ' ')
[[ $iused =~ ^[0-9]+$ && $iused -ge 3 && $iused -lt 1000 ]] || fail "df -i used inodes: '$iused'"
echo "  df: 0% used, $iused inodes used"
expect_erofs() {  # expect_erofs DESCRIPTION COMMAND...
  local what=$1 out; shift
  out=$("$@" 2>&1) && fail "$what succeeded on a read-only mount"
  [[ $out == *"Read-only file system"* ]] || fail "$what: '$out', want Read-only file system"
  echo "  $what: EROFS"
}
expect_erofs "touch new"        touch "$MNT/new.txt"
expect_erofs "touch existing"   touch "$MNT/file.txt"
expect_erofs "echo > existing"  sh -c "echo x > '$MNT/file.txt'"
expect_erofs "echo >> existing" sh -c "echo x >> '$MNT/file.txt'"
expect_erofs "echo > new"       sh -c "echo x > '$MNT/dir/new.txt'"
expect_erofs "truncate"         truncate -s 0 "$MNT/file.txt"
expect_erofs "mkdir"            mkdir "$MNT/newdir"
expect_erofs "mkdir nested"     mkdir "$MNT/dir/sub/newdir"
expect_erofs "rmdir"            rmdir "$MNT/dir/sub"
expect_erofs "rm"               rm -f "$MNT/file.txt"
expect_erofs "rm -r"            rm -rf "$MNT/dir"
expect_erofs "mv"               mv "$MNT/file.txt" "$MNT/renamed.txt"
expect_erofs "ln -s"            ln -s file.txt "$MNT/link"
expect_erofs "ln"               ln "$MNT/file.txt" "$MNT/hardlink"
expect_erofs "chmod"            chmod 600 "$MNT/file.txt"
expect_erofs "chown"            chown 1:1 "$MNT/file.txt"
expect_erofs "mkfifo"           mkfifo "$MNT/fifo"
expect_erofs "cp into"          cp "$ROOT/err/file.txt" "$MNT/copy.txt"
expect_erofs "python open(w)"   "$PY" -c "open('$MNT/file.txt', 'r+b')"
[[ "$(sums "$ROOT/err")" == "$before" ]] || fail "the source changed"
[[ "$(cat "$MNT/file.txt")" == "original content" ]] || fail "the file changed"
[[ "$(ls -A "$MNT")" == "$(printf 'dir\nfile.txt')" ]] || fail "the listing changed: $(ls -A "$MNT")"

unmount_and_wait "$MNT" "$MAIN_PID"
echo "PASS"
