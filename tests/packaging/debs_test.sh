#!/usr/bin/env bash
# The .debs (issue 16): built by packaging/build-debs.sh (dpkg-buildpackage, debhelper), lintian
# with no error, installed with dpkg -i on this machine, then used as a user would: both
# binaries' --version from /usr/bin, the Python package importable from dist-packages, the
# installed unit passing systemd-analyze verify, the installed gateway serving a temporary root,
# and an fstab line of type fuse.reelfs mounted with `mount -T` (through mount.fuse3 and the
# installed /usr/bin/reelfs) reading a file byte-exact, unmounted with umount; finally both
# packages purged, leaving neither binary nor /etc/reelfs/gateway.yaml behind.
#
# Installs packages system-wide, so it is not a CTest case: scripts/test.sh runs it after the
# suites, as root. Exits 77 (skipped) without root, debhelper, lintian or /dev/fuse, or when a
# reelfs package is already installed (it would not overwrite someone's install);
# REELFS_REQUIRE_DEBS=1 (set by scripts/test.sh) turns each of those into a failure.
set -euo pipefail
cd "$(dirname "$0")/../.."

skip() {
  if [[ ${REELFS_REQUIRE_DEBS:-0} == 1 ]]; then echo "FAIL: debs: $* (REELFS_REQUIRE_DEBS=1)" >&2; exit 1; fi
  echo "SKIP: $*"; exit 77
}
fail() { echo "FAIL: debs: $*" >&2; exit 1; }
[[ $(id -u) == 0 ]] || skip "needs root (dpkg -i)"
command -v dh >/dev/null && command -v lintian >/dev/null || skip "debhelper or lintian missing"
[[ -c /dev/fuse ]] || skip "no /dev/fuse"
for p in reelfs reelfs-gateway; do
  ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok" ||
    skip "package $p is already installed here; not touching it"
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/reelfs-debs.XXXXXX")
GW_PID=""
cleanup() {
  umount "$WORK/mnt" 2>/dev/null || true
  [[ -z $GW_PID ]] || { kill "$GW_PID" 2>/dev/null; wait "$GW_PID" 2>/dev/null || true; }
  dpkg --purge reelfs reelfs-gateway >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

echo "== dpkg-buildpackage (packaging/build-debs.sh)"
packaging/build-debs.sh "$WORK/debs" || fail "build-debs.sh"
DEBS=("$WORK"/debs/reelfs_*.deb "$WORK"/debs/reelfs-gateway_*.deb)
[[ -f ${DEBS[0]} && -f ${DEBS[1]} ]] || fail "expected two .debs in $WORK/debs"

echo "== lintian: no error"
lintian --fail-on error --tag-display-limit 0 "${DEBS[@]}" 2>&1 | grep -v "root privileges" ||
  true
lintian --fail-on error "${DEBS[@]}" >/dev/null 2>&1 || fail "lintian reports errors (above)"
for d in "${DEBS[@]}"; do
  deps=$(dpkg-deb -f "$d" Depends)
  [[ $deps == *libc6* ]] || fail "$(basename "$d"): Depends without shlibs: $deps"
done
dpkg-deb -f "${DEBS[0]}" Depends | grep -q fuse3 || fail "reelfs does not depend on fuse3"

echo "== dpkg -i"
dpkg -i "${DEBS[@]}" >"$WORK/dpkg-i.log" 2>&1 || fail "dpkg -i: $(tail -5 "$WORK/dpkg-i.log")"
/usr/bin/reelfs --version | grep -q "^reelfs " || fail "installed reelfs --version"
/usr/bin/reelfs-gateway --version | grep -q "reelfs-gateway" || fail "installed gateway --version"
(cd / && env -u PYTHONPATH /usr/bin/python3 -c 'import reelfs, reelfs.order; print("  python:", reelfs.__file__)') ||
  fail "the installed Python package does not import"
[[ -f /etc/reelfs/gateway.yaml ]] || fail "no /etc/reelfs/gateway.yaml"
dpkg-query -W -f='${Conffiles}\n' reelfs-gateway | grep -q /etc/reelfs/gateway.yaml ||
  fail "gateway.yaml is not a conffile"
out=$(systemd-analyze verify /lib/systemd/system/reelfs-gateway.service 2>&1) ||
  fail "systemd-analyze verify: $out"
[[ -z $out ]] || fail "systemd-analyze verify said: $out"
[[ -f /usr/share/man/man1/reelfs-mount.1.gz && -f /usr/share/bash-completion/completions/reelfs ]] ||
  fail "man page or completion missing"
echo "  ok: binaries, Python package, conffile, unit, man pages, completion"

echo "== the installed gateway, and an fstab line of type fuse.reelfs"
mkdir -p "$WORK/root/archive" "$WORK/mnt"  # a directory in the root is a bucket
export AWS_ACCESS_KEY_ID=AKIDREELFSDEBS AWS_SECRET_ACCESS_KEY=debs/secret/key/0123456789
export AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_EC2_METADATA_DISABLED=true
/usr/bin/reelfs-gateway --root "$WORK/root" --create --listen 127.0.0.1:0 \
  --port-file "$WORK/port" --access-key "$AWS_ACCESS_KEY_ID" \
  --secret-key "$AWS_SECRET_ACCESS_KEY" >"$WORK/gw.log" 2>&1 &
GW_PID=$!
for _ in $(seq 100); do [[ -s $WORK/port ]] && break; sleep 0.1; done
[[ -s $WORK/port ]] || fail "installed gateway did not start: $(cat "$WORK/gw.log")"
endpoint="http://127.0.0.1:$(cat "$WORK/port")"
head -c 2500001 /dev/urandom >"$WORK/blob"
/usr/bin/reelfs --endpoint "$endpoint" cp "$WORK/blob" s3://archive/data/blob >/dev/null ||
  fail "upload with the installed client"
echo "archive $WORK/mnt fuse.reelfs _netdev,allow_other,endpoint=$endpoint,offline=wait 0 0" \
  >"$WORK/fstab"
mount -T "$WORK/fstab" "$WORK/mnt" || fail "mount -T (fuse.reelfs) exited $?"
mountpoint -q "$WORK/mnt" || fail "not mounted after mount -T"
grep -q " $WORK/mnt fuse.reelfs " /proc/mounts || fail "not fuse.reelfs in /proc/mounts"
cmp -s "$WORK/blob" "$WORK/mnt/data/blob" || fail "read through the fstab mount differs"
umount "$WORK/mnt" || fail "umount exited $?"
! mountpoint -q "$WORK/mnt" || fail "still mounted after umount"
echo "  ok: mount -T, a verified read, umount"

echo "== dpkg --purge"
kill "$GW_PID"; wait "$GW_PID" 2>/dev/null || true; GW_PID=""
dpkg --purge reelfs reelfs-gateway >"$WORK/purge.log" 2>&1 || fail "purge: $(cat "$WORK/purge.log")"
[[ ! -e /usr/bin/reelfs && ! -e /usr/bin/reelfs-gateway && ! -e /etc/reelfs/gateway.yaml ]] ||
  fail "files left after purge"
echo "PASS: debs"
