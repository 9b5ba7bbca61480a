#!/usr/bin/env bash
# The test command (README): sets up a fresh Debian 12 machine, builds, and runs every test
# through CTest; the .debs; the FUSE passthrough configuration (scripts/passthrough.sh); then the
# sanitizer passes: the unit and integration tests again under ASan/UBSan
# (gcc, build-asan/) and under ThreadSanitizer with clang's -Wthread-safety -Werror (build-tsan/,
# scripts/tsan.sh), and every libFuzzer target for a bounded time (build-fuzz/, scripts/fuzz.sh).
#
# Tests whose precondition is missing print why and exit 77 (reported as skipped, never passed).
# REELFS_SKIP_SANITIZERS=1 skips all three passes (a quick local run).
set -euo pipefail
cd "$(dirname "$0")/.."

jobs=$(nproc)
# Four build trees, 2 GiB test objects and a Ceph cluster's scratch: a run needs about 20 GiB free
# here and in TMPDIR. Said first, so a full disk later is not a mystery (the tests then fail with
# ENOSPC / 507 InsufficientStorage, which is what they should do).
for d in . "${TMPDIR:-/tmp}"; do
  free_gib=$(( $(df -Pk "$d" | awk 'NR == 2 { print $4 }') / 1048576 ))
  if (( free_gib < 20 )); then
    echo "test.sh: WARNING: only $free_gib GiB free under $d; a full run needs about 20 GiB" >&2
  fi
done
scripts/setup.sh
# setup.sh installed Ceph: the Ceph RGW test bed (tests/ceph/run.sh) must come up, not skip.
export REELFS_REQUIRE_CEPH=1
# Nothing in the tests may ask EC2 instance metadata (169.254.169.254 is not loopback).
export AWS_EC2_METADATA_DISABLED=true
(cd build && ctest --output-on-failure -j "$jobs" --timeout 900)
# The .debs: built (dpkg-buildpackage), lintian, dpkg -i, an fstab mount, purged. Outside CTest
# because it installs packages; as root only (CI is root), where it must not skip.
if [ "$(id -u)" -eq 0 ]; then REELFS_REQUIRE_DEBS=1 tests/packaging/debs_test.sh; fi
# FUSE passthrough: libfuse 3.17 from trixie's source in a private prefix, reelfs built against it
# in build-passthrough/, the cache tests with passthrough required (docs/cache.md). A skip (the
# source could not be fetched) fails the run: this configuration is part of what CI proves.
scripts/passthrough.sh

if [ "${REELFS_SKIP_SANITIZERS:-0}" != "1" ]; then
  # The sanitizer pass re-runs tests, not checks: headers and benchmarks were built above.
  REELFS_BUILD_DIR=build-asan REELFS_SANITIZE=ON REELFS_BUILD_TYPE=Debug \
    REELFS_CMAKE_ARGS="-DREELFS_CHECK_HEADERS=OFF -DREELFS_BUILD_BENCH=OFF" scripts/setup.sh
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
     UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     ctest --output-on-failure -j "$jobs" -L 'unit|integration' --timeout 900)
  scripts/tsan.sh
  FUZZ_SECONDS=${FUZZ_SECONDS:-25} scripts/fuzz.sh
fi
