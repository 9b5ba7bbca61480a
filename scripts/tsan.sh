#!/usr/bin/env bash
# The ThreadSanitizer pass: builds the unit and integration suites with clang, -fsanitize=thread
# and -Wthread-safety -Werror (one build checks the lock annotations and runs the race detector)
# into build-tsan, then runs `ctest -L 'unit|integration'` under TSan. Any report fails the pass,
# also one from a child process (a gateway a test started) whose stderr the test kept to itself:
# every process writes its reports to build-tsan/tsan-reports/, printed here at the end.
#
#   scripts/tsan.sh                      # after scripts/setup.sh has installed the dependencies
#   REELFS_TSAN_TESTS='restorer|core' scripts/tsan.sh    # a subset (ctest -R)
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${REELFS_TSAN_BUILD_DIR:-build-tsan}
CC_BIN=${REELFS_TSAN_CC:-clang-14}
CXX_BIN=${REELFS_TSAN_CXX:-clang++-14}
# shellcheck source=scripts/ccache_env.sh
source scripts/ccache_env.sh

start=$(date +%s)
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER="$CC_BIN" -DCMAKE_CXX_COMPILER="$CXX_BIN" "${REELFS_LAUNCHER[@]}" \
  -DREELFS_SANITIZE=thread -DREELFS_THREAD_SAFETY=ON -DREELFS_WERROR=ON \
  -DREELFS_CHECK_HEADERS=OFF -DREELFS_BUILD_BENCH=OFF ${REELFS_CMAKE_ARGS:-} >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)"
built=$(date +%s)

reports="$PWD/$BUILD_DIR/tsan-reports"
rm -rf "$reports" && mkdir -p "$reports"
# halt_on_error: the first race fails the process (and its test); second_deadlock_stack: both
# stacks of a lock-order inversion; tsan.supp: third-party code only, each entry with its reason.
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 history_size=4 \
suppressions=$PWD/tsan.supp log_path=$reports/report ${REELFS_TSAN_OPTIONS:-}"
status=0
(cd "$BUILD_DIR" && ctest --output-on-failure -j "$(nproc)" -L 'unit|integration' \
   ${REELFS_TSAN_TESTS:+-R "$REELFS_TSAN_TESTS"} --timeout 900) || status=$?
if compgen -G "$reports/report*" >/dev/null; then
  echo "tsan: reports from $(ls "$reports" | wc -l) process(es):"
  cat "$reports"/report*
  status=1
fi
echo "tsan: build $((built - start)) s, tests $(($(date +%s) - built)) s, status $status"
exit "$status"
