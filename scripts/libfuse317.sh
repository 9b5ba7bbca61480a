#!/usr/bin/env bash
# Builds libfuse 3.17 from Debian 13 (trixie)'s fuse3 source package into a private prefix, for the
# build configuration with FUSE passthrough (docs/cache.md "Served by the kernel") and for the
# benchmark's passthrough_hp ceiling (bench/fuse). Nothing is installed system-wide: only a
# `deb-src` entry for trixie (source indexes, never binaries) and Debian 12's meson.
#
#   scripts/libfuse317.sh            # prints the prefix (default .cache/libfuse317/prefix)
#   REELFS_LIBFUSE_PREFIX=/opt/x scripts/libfuse317.sh
#
# The prefix gets lib/x86_64-linux-gnu/pkgconfig/fuse3.pc (give it to CMake with PKG_CONFIG_PATH)
# and bin/passthrough_hp (the example, for bench/fuse/run.sh). Idempotent: a prefix with
# passthrough_hp and fuse3.pc is reused. Exit 77 when the source cannot be had (no network to the
# Debian archive): callers skip with the reason.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
work=${REELFS_LIBFUSE_WORK:-$top/.cache/libfuse317}
prefix=${REELFS_LIBFUSE_PREFIX:-$work/prefix}
pc=$(find "$prefix" -name fuse3.pc 2>/dev/null | head -n1 || true)
if [[ -n $pc && -x $prefix/bin/passthrough_hp ]]; then
  echo "$prefix"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
log=$work/build.log
mkdir -p "$work"
: >"$log"

# Debian 12's meson and ninja build it.
if ! command -v meson >/dev/null; then
  echo "libfuse317: installing meson" >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends meson \
    >>"$log" 2>&1 || { $SUDO apt-get update -qq >>"$log" 2>&1 &&
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends meson \
        >>"$log" 2>&1; }
fi

# The source package: a deb-src entry for trixie in a file of its own (sources only).
src_list=/etc/apt/sources.list.d/reelfs-trixie-src.sources
if [[ ! -f $src_list ]]; then
  echo "libfuse317: adding deb-src for trixie ($src_list)" >&2
  $SUDO tee "$src_list" >/dev/null <<'SRC'
# Source packages only (no binaries): reelfs builds libfuse 3.17 from trixie's fuse3 into a
# private prefix (scripts/libfuse317.sh).
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  $SUDO apt-get update -qq >>"$log" 2>&1 || true
fi
src=$(find "$work" -maxdepth 1 -type d -name 'fuse3-3.1[7-9]*' | head -n1 || true)
if [[ -z $src ]]; then
  echo "libfuse317: fetching the fuse3 source package from trixie" >&2
  if ! (cd "$work" && apt-get source --download-only fuse3/trixie >>"$log" 2>&1); then
    $SUDO apt-get update -qq >>"$log" 2>&1 || true
    (cd "$work" && apt-get source --download-only fuse3/trixie >>"$log" 2>&1) || {
      echo "libfuse317: cannot download fuse3/trixie's source: $(tail -n 2 "$log")" >&2
      exit 77
    }
  fi
  # Unpacked without dpkg-source's patches: upstream's tree is what is built.
  orig=$(ls "$work"/fuse3_3.1[7-9]*.orig.tar.* | head -n1)
  tar -C "$work" -xf "$orig"
  src=$(find "$work" -maxdepth 1 -type d -name 'fuse-3.1[7-9]*' | head -n1)
  [[ -n $src ]] || { echo "libfuse317: unexpected source layout in $work" >&2; exit 1; }
fi

echo "libfuse317: building $(basename "$src") into $prefix" >&2
rm -rf "$work/build"
meson setup "$work/build" "$src" --prefix="$prefix" --buildtype=release -Dexamples=true \
  -Dutils=false -Dtests=false -Ddisable-mtab=true -Dudevrulesdir="$prefix/udev" \
  -Dinitscriptdir= >>"$log" 2>&1 || { tail -n 20 "$log" >&2; exit 1; }
ninja -C "$work/build" >>"$log" 2>&1 || { tail -n 20 "$log" >&2; exit 1; }
ninja -C "$work/build" install >>"$log" 2>&1 || { tail -n 20 "$log" >&2; exit 1; }
mkdir -p "$prefix/bin"
cp "$work/build/example/passthrough_hp" "$prefix/bin/passthrough_hp"
echo "$prefix"
