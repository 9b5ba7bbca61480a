#!/usr/bin/env bash
# Builds the reelfs and reelfs-gateway .debs with dpkg-buildpackage (debhelper) from a copy of
# this checkout's files with packaging/debian/ placed at debian/, as Debian's tools expect.
#
#   packaging/build-debs.sh [OUTDIR]        # default build-debs/; prints the .deb paths
#
# The copy lives at a fixed path ($REELFS_DEB_STAGE, default $TMPDIR/reelfs-deb/reelfs) and goes
# through ccache keyed on paths relative to it, so a rebuild after a small change (or from another
# clone) recompiles only what changed. No -dbgsym packages (DEB_BUILD_OPTIONS=noddebs).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-build-debs}")
stage=${REELFS_DEB_STAGE:-${TMPDIR:-/tmp}/reelfs-deb/reelfs}
command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null ||
  { echo "build-debs: needs dpkg-dev and debhelper (apt-get install debhelper)" >&2; exit 1; }

rm -rf "$stage" && mkdir -p "$stage" "$out"
# Tracked and new (not ignored) files: no build directories, no downloaded tools.
git ls-files -z --cached --others --exclude-standard |
  (while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done) |
  xargs -0 cp --parents -t "$stage"
cp -r packaging/debian "$stage/debian"

launcher=""
if command -v ccache >/dev/null; then
  # debhelper (compat 13) gives the build a fresh $HOME: name the cache, or every build is cold.
  CCACHE_DIR=$(ccache -k cache_dir)
  export CCACHE_DIR CCACHE_BASEDIR=$stage CCACHE_NOHASHDIR=1
  launcher="-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
fi
start=$(date +%s)
(cd "$stage" &&
  REELFS_DEB_CMAKE_ARGS="$launcher" DEB_BUILD_OPTIONS="nocheck noddebs parallel=$(nproc)" \
    dpkg-buildpackage -b -uc -us >"$out/dpkg-buildpackage.log" 2>&1) || {
  echo "build-debs: dpkg-buildpackage failed; last lines of $out/dpkg-buildpackage.log:" >&2
  tail -30 "$out/dpkg-buildpackage.log" >&2
  exit 1
}
parent=$(dirname "$stage")
rm -f "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo
mv "$parent"/reelfs*_*.deb "$parent"/reelfs_*.changes "$parent"/reelfs_*.buildinfo "$out/"
echo "build-debs: built in $(( $(date +%s) - start )) s:" >&2
ls "$out"/*.deb
