#!/usr/bin/env bash
# e2e (issue 16): reelfs mounted the way /etc/fstab mounts it. Proves: `mount -T FSTAB MOUNTPOINT`
# with a line of type `fuse` and source `REELFS#BUCKET/PREFIX` (mount.fuse3 runs "REELFS SOURCE
# MOUNTPOINT -o OPTS") mounts and returns once mounted; the fstab options reach the mount
# (endpoint=, offline=, ro, log_file=; _netdev, noauto, nofail, x-systemd.* are left to mount(8));
# a file reads back by SHA-256, a write is EROFS (ro), `umount` unmounts and the daemon exits;
# and `reelfs mount BUCKET DIR -o ...` takes the same list.
source "$(dirname "$0")/lib.sh"
e2e_init fstab 150
export LC_ALL=C
[[ -x /sbin/mount.fuse3 || -x /usr/sbin/mount.fuse3 ]] || skip "mount.fuse3 not installed (fuse3)"
command -v mount >/dev/null && command -v umount >/dev/null || skip "mount(8) not installed"

mkdir -p "$ROOT/fst/data"
head -c 3000000 /dev/urandom >"$ROOT/fst/data/blob.bin"
want=$(sha256sum <"$ROOT/fst/data/blob.bin" | cut -d' ' -f1)
start_gateway

# daemon_of DIR: the pid of the reelfs daemon serving DIR ("" if none).
daemon_of() { daemon_pids_for "$1" | head -1; }

step "mount -T FSTAB: a fuse line with REELFS#BUCKET/PREFIX as its source"
opts="_netdev,noauto,nofail,x-systemd.automount,ro,endpoint=$ENDPOINT,offline=wait"
opts+=",offline_timeout=10m,log_file=$WORK/fstab-mount.log"
echo "$REELFS_BIN#fst/data $MNT fuse $opts 0 0" >"$WORK/fstab"
MOUNTED_DIRS+=("$MNT")  # the teardown unmounts it if a step fails
mount -T "$WORK/fstab" "$MNT" || fail "mount -T exited $?"
mountpoint -q "$MNT" || fail "$MNT is not mounted after mount -T returned"
grep -q " $MNT fuse" /proc/mounts || fail "not in /proc/mounts: $(grep reelfs /proc/mounts)"
got=$(sha256sum <"$MNT/blob.bin" | cut -d' ' -f1)
[[ $got == "$want" ]] || fail "blob.bin through the fstab mount: $got, want $want"
out=$(touch "$MNT/new" 2>&1) && fail "touch on an ro fstab mount succeeded"
[[ $out == *"Read-only file system"* ]] || fail "touch: '$out', want EROFS"
grep -q "offline objects: --offline=wait timeout=600s" "$WORK/fstab-mount.log" ||
  fail "offline_timeout=10m did not reach the mount: $(grep offline "$WORK/fstab-mount.log")"
pid=$(daemon_of "$MNT")
[[ -n $pid ]] || fail "no reelfs daemon for $MNT"
echo "  mounted by pid $pid: blob.bin by SHA-256, touch EROFS, options in its log"

step "umount: unmounted, the daemon exits"
umount "$MNT" || fail "umount exited $?"
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pid" 2>/dev/null && fail "daemon $pid still running 10 s after umount"
mountpoint -q "$MNT" && fail "$MNT still mounted after umount"

step "reelfs mount BUCKET DIR -o LIST: the same options"
"$REELFS_BIN" mount fst/data "$MNT" -o "ro,endpoint=$ENDPOINT,log_file=$WORK/o-mount.log" ||
  fail "reelfs mount -o exited $?"
got=$(sha256sum <"$MNT/blob.bin" | cut -d' ' -f1)
[[ $got == "$want" ]] || fail "blob.bin through the -o mount"
out=$(touch "$MNT/new" 2>&1) && fail "touch on an -o ro mount succeeded"
pid=$(daemon_of "$MNT")
fusermount3 -u "$MNT" || fail "fusermount3 -u"
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pid" 2>/dev/null && fail "daemon $pid still running after fusermount3 -u"
echo "PASS: fstab"
