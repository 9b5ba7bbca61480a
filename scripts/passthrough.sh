#!/usr/bin/env bash
# The FUSE passthrough configuration of the test command (docs/cache.md "Served by the kernel",
# docs/testing.md): libfuse 3.17 built from Debian trixie's source into a private prefix
# (scripts/libfuse317.sh), reelfs built against it in build-passthrough/, and the cache tests run
# with passthrough required: a whole cached file must be read by the kernel (no READ reaches the
# daemon); and the --direct-io test, where MAP_SHARED mmap must work (FUSE_DIRECT_IO_ALLOW_MMAP,
# libfuse >= 3.16) and, with fs.fuse.max_pages_limit raised, an unaligned 1 MiB read be one READ.
# The default build (build/) stays on the system's libfuse 3.14.
#
#   scripts/passthrough.sh      # after scripts/setup.sh (packages installed)
set -euo pipefail
cd "$(dirname "$0")/.."

rc=0
prefix=$(scripts/libfuse317.sh) || rc=$?
if [ "$rc" -eq 77 ]; then
  echo "passthrough: SKIPPED: libfuse 3.17's source could not be fetched (no Debian archive)" >&2
  exit 77
fi
[ "$rc" -eq 0 ] || exit "$rc"
pc_dir=$(dirname "$(find "$prefix" -name fuse3.pc | head -n1)")

# shellcheck source=scripts/ccache_env.sh
source scripts/ccache_env.sh
PKG_CONFIG_PATH="$pc_dir" cmake -S . -B build-passthrough -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREELFS_WERROR=ON -DREELFS_BUILD_BENCH=OFF \
  -DREELFS_CHECK_HEADERS=OFF "${REELFS_LAUNCHER[@]}" >/dev/null
grep -q 'REELFS_FUSE_PASSTHROUGH' build-passthrough/build.ninja ||
  { echo "passthrough: build-passthrough did not get libfuse >= 3.16 from $pc_dir" >&2; exit 1; }
cmake --build build-passthrough -j "$(nproc)" --target reelfs reelfs-gateway \
  cache_object_cache_test cache_caching_store_test fuse_filesystem_test fuse_tape_test \
  fuse_cached_file_reads_test
(cd build-passthrough && AWS_EC2_METADATA_DISABLED=true REELFS_REQUIRE_PASSTHROUGH=1 \
   ctest --output-on-failure -R '^(e2e_cache|e2e_direct_io|cache_|fuse_(filesystem|tape|cached_file_reads)_test)' \
   --timeout 900)
