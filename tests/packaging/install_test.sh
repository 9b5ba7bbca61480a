#!/usr/bin/env bash
# Packaging (issue 16): `cmake --install` of the build into a scratch DESTDIR with the prefix /usr
# puts every file where a Debian package carries it, the installed binaries and Python package
# work from there, and the systemd units pass `systemd-analyze verify` with no complaint (it
# exits 0 even for unknown keys, so any output fails the test). The units name /usr/bin; the
# copies verified here point at the DESTDIR binaries instead, nothing else changed.
set -euo pipefail
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
[[ -n "${REELFS_BUILD_DIR:-}" && -f "$REELFS_BUILD_DIR/CMakeCache.txt" ]] ||
  skip "REELFS_BUILD_DIR does not name a configured build"
command -v systemd-analyze >/dev/null || skip "systemd-analyze not installed (Debian package systemd)"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/reelfs-install.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
D=$WORK/root

DESTDIR=$D cmake --install "$REELFS_BUILD_DIR" --prefix /usr >"$WORK/install.log" ||
  fail "cmake --install: $(tail -5 "$WORK/install.log")"
sysconf=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$REELFS_BUILD_DIR/CMakeCache.txt")
[[ $sysconf == /usr ]] && etc=$D/etc/reelfs || etc=$D$sysconf/etc/reelfs
for f in usr/bin/reelfs usr/bin/reelfs-gateway usr/lib/systemd/system/reelfs-gateway.service \
    usr/lib/python3/dist-packages/reelfs/__init__.py usr/lib/python3/dist-packages/reelfs/torch.py \
    usr/share/doc/reelfs/examples/mnt-archive.mount usr/share/doc/reelfs/examples/config.yaml \
    usr/share/doc/reelfs/README.md \
    usr/share/doc/reelfs-gateway/examples/gateway.example.yaml usr/share/doc/reelfs-gateway/gateway.md; do
  [[ -f $D/$f ]] || fail "not installed: /$f"
done
[[ -f $etc/gateway.yaml ]] || fail "no gateway.yaml under the configured sysconfdir ($etc)"
echo "  $(find "$D" -type f | wc -l) files installed"

"$D/usr/bin/reelfs" --version | grep -q '^reelfs [0-9]' || fail "installed reelfs --version"
"$D/usr/bin/reelfs-gateway" --version | grep -q '^reelfs-gateway [0-9]' ||
  fail "installed reelfs-gateway --version"
PYTHONPATH=$D/usr/lib/python3/dist-packages python3 -c 'import reelfs.order, reelfs.hsm' ||
  fail "the installed Python package does not import"
# The installed example configuration is one the gateway accepts (its parser refuses unknown keys).
"$D/usr/bin/reelfs-gateway" --config "$etc/gateway.yaml" --root "$WORK/no-root" \
  --listen 127.0.0.1:0 >"$WORK/gw.out" 2>&1 && fail "gateway started on a missing root"
grep -q "does not exist; give --create" "$WORK/gw.out" ||
  fail "installed gateway.yaml not accepted: $(cat "$WORK/gw.out")"

# Man pages (help2man from --help): installed, and groff renders them with no warning.
if command -v help2man >/dev/null; then
  for page in reelfs reelfs-mount reelfs-gateway; do
    f=$D/usr/share/man/man1/$page.1
    [[ -f $f ]] || fail "no man page $page(1)"
    out=$(groff -man -Tutf8 -ww -z "$f" 2>&1) || fail "groff $page.1: $out"
    [[ -z $out ]] || fail "groff warns on $page.1: $out"
  done
  grep -qF -- '\-\-offline\-state\-ttl' "$D/usr/share/man/man1/reelfs-mount.1" ||
    fail "reelfs-mount(1) lacks the mount options"
  echo "  man pages: reelfs(1), reelfs-mount(1), reelfs-gateway(1)"
else
  fail "help2man is not installed (scripts/setup.sh installs it): no man pages were built"
fi

# Bash completion, from the installed file against the installed binary.
comp=$D/usr/share/bash-completion/completions/reelfs
[[ -f $comp ]] || fail "no bash completion installed"
got=$(bash -c 'source "$1"; COMP_WORDS=("$2" ""); COMP_CWORD=1; _reelfs; echo "${COMPREPLY[*]}"
               COMP_WORDS=("$2" mount --offline-t); COMP_CWORD=2; _reelfs; echo "${COMPREPLY[*]}"' \
      _ "$comp" "$D/usr/bin/reelfs")
[[ $got == *"mount"*"stage"*$'\n'"--offline-timeout" ]] || fail "bash completion: '$got'"
echo "  bash completion: subcommands and mount options"

verify() {  # verify UNIT-FILE: no output, exit 0
  local out rc=0
  out=$(systemd-analyze verify "$1" 2>&1) || rc=$?
  [[ $rc == 0 && -z $out ]] || fail "systemd-analyze verify $(basename "$1") (exit $rc): $out"
  echo "  systemd-analyze verify $(basename "$1"): clean"
}
sed "s#/usr/bin/reelfs-gateway#$D/usr/bin/reelfs-gateway#" \
  "$D/usr/lib/systemd/system/reelfs-gateway.service" >"$WORK/reelfs-gateway.service"
verify "$WORK/reelfs-gateway.service"
grep -q '^ExecStart=/usr/bin/reelfs-gateway ' "$SRC/packaging/systemd/reelfs-gateway.service" ||
  fail "the unit's ExecStart does not name /usr/bin/reelfs-gateway"
sed "s#/usr/bin/reelfs\##$D/usr/bin/reelfs\##" "$D/usr/share/doc/reelfs/examples/mnt-archive.mount" \
  >"$WORK/mnt-archive.mount"
verify "$WORK/mnt-archive.mount"
echo "PASS: install"
