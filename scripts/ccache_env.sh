# Sourced by the build scripts (setup.sh, tsan.sh, fuzz.sh): puts ccache in front of the compilers
# when it is installed, keyed on paths relative to this checkout (CCACHE_BASEDIR, no directory in
# the hash) so that a clean clone in another directory reuses an earlier clone's objects.
# REELFS_CCACHE=0 turns it off. Sets REELFS_LAUNCHER (cmake -D options, empty without ccache).
REELFS_LAUNCHER=()
if [ "${REELFS_CCACHE:-1}" != "0" ] && command -v ccache >/dev/null 2>&1; then
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
  REELFS_LAUNCHER=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
