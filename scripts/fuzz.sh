#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang into build-fuzz and runs each one for a
# bounded time; fails on any crash, leak, timeout or broken property, printing the reproducer.
# The checked-in corpus is copied to a temporary directory first: a run never writes the repo.
#
#   scripts/fuzz.sh                          # every target, FUZZ_SECONDS (30) each
#   FUZZ_SECONDS=5 scripts/fuzz.sh range sigv4   # only these targets
#   FUZZ_JOBS=1 scripts/fuzz.sh              # one target at a time (default: one per core)
#   FUZZ_CORPUS_OUT=/tmp/grown scripts/fuzz.sh   # keep each target's grown corpus there
#   FUZZ_RUNS=10000000 FUZZ_LOG_DIR=/tmp/campaign scripts/fuzz.sh   # the long campaign: a run
#                                            # count per target instead of a time; logs kept
#
# tests/fuzz/README.md explains the targets and how to reproduce or minimise a finding.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${REELFS_FUZZ_BUILD_DIR:-build-fuzz}
FUZZ_SECONDS=${FUZZ_SECONDS:-30}
FUZZ_JOBS=${FUZZ_JOBS:-$(nproc)}
# A campaign counts executions, not seconds (docs/testing.md, Fuzzing): FUZZ_RUNS replaces the
# time bound.
FUZZ_RUNS=${FUZZ_RUNS:-}
CORPUS_DIR=tests/fuzz/corpus

command -v clang++ >/dev/null || { echo "fuzz: clang++ not found (apt-get install clang)"; exit 1; }

# shellcheck source=scripts/ccache_env.sh
source scripts/ccache_env.sh

start=$(date +%s)
CC=${CC:-clang} CXX=${CXX:-clang++} cmake -S . -B "$BUILD_DIR" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREELFS_FUZZ=ON -DREELFS_BUILD_TESTS=OFF \
  -DREELFS_BUILD_BENCH=OFF -DREELFS_CHECK_HEADERS=OFF -DREELFS_WERROR=ON \
  "${REELFS_LAUNCHER[@]}" ${REELFS_CMAKE_ARGS:-} >/dev/null
cmake --build "$BUILD_DIR" --target reelfs_fuzz -j "$(nproc)"
built=$(date +%s)
echo "fuzz: built in $((built - start)) s"

if [ $# -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < <(ls "$CORPUS_DIR")
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -n "$FUZZ_RUNS" ]; then bound=(-runs="$FUZZ_RUNS"); else bound=(-max_total_time="$FUZZ_SECONDS"); fi

# run_target NAME: fuzzes one target; its log goes to $work/NAME.log, its verdict to NAME.rc.
run_target() {
  local name=$1 bin="$BUILD_DIR/tests/fuzz/fuzz_$1"
  local corpus="$work/$name.corpus" artifacts="$work/$name.artifacts"
  mkdir -p "$corpus" "$artifacts"
  cp "$CORPUS_DIR/$name"/* "$corpus/"
  local rc=0
  # -timeout: one input taking 10 s is a hang; -rss_limit_mb: a parser must not balloon.
  "$bin" "${bound[@]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$corpus" >"$work/$name.log" 2>&1 || rc=$?
  if [ -n "${FUZZ_CORPUS_OUT:-}" ]; then
    mkdir -p "$FUZZ_CORPUS_OUT/$name" && cp "$corpus"/* "$FUZZ_CORPUS_OUT/$name/"
  fi
  [ -z "${FUZZ_LOG_DIR:-}" ] || { mkdir -p "$FUZZ_LOG_DIR" && cp "$work/$name.log" "$FUZZ_LOG_DIR/"; }
  echo "$rc" >"$work/$name.rc"
}

for name in "${targets[@]}"; do
  [ -x "$BUILD_DIR/tests/fuzz/fuzz_$name" ] || { echo "fuzz: no target '$name'"; exit 1; }
  while [ "$(jobs -rp | wc -l)" -ge "$FUZZ_JOBS" ]; do wait -n || true; done
  run_target "$name" &
done
wait

# Failures first (log tail and reproducer), then one summary line per target.
failed=0
summary=$(printf '%-18s %12s %8s %6s %6s %8s %s' target execs exec/s cov ft rss_mb verdict)
for name in "${targets[@]}"; do
  rc=$(cat "$work/$name.rc")
  done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$work/$name.log" | tail -1 || true)
  execs=$(grep -oE 'stat::number_of_executed_units: [0-9]+' "$work/$name.log" |
    grep -oE '[0-9]+$' || echo '?')
  rate=$(grep -oE 'stat::average_exec_per_sec:[[:space:]]+[0-9]+' "$work/$name.log" |
    grep -oE '[0-9]+$' || echo '?')
  rss=$(grep -oE 'stat::peak_rss_mb:[[:space:]]+[0-9]+' "$work/$name.log" | grep -oE '[0-9]+$' || echo '?')
  cov=$(grep -oE 'cov: [0-9]+' <<<"$done_line" | grep -oE '[0-9]+' || echo '?')
  ft=$(grep -oE 'ft: [0-9]+' <<<"$done_line" | grep -oE '[0-9]+' || echo '?')
  verdict=ok
  if [ "$rc" != 0 ]; then
    failed=1
    verdict="FAILED (rc=$rc)"
    echo "---- fuzz_$name FAILED: last lines of its log"
    tail -n 40 "$work/$name.log"
    for input in "$work/$name.artifacts"/*; do
      [ -e "$input" ] || continue
      echo "---- reproducer $(basename "$input") ($(stat -c %s "$input") bytes), base64:"
      base64 -w 100 "$input"
      echo "---- reproduce: save the base64 above as crash.b64, then"
      echo "     base64 -d crash.b64 >crash && $BUILD_DIR/tests/fuzz/fuzz_$name crash"
    done
  fi
  summary+=$'\n'$(printf '%-18s %12s %8s %6s %6s %8s %s' "$name" "$execs" "$rate" "$cov" "$ft" \
    "$rss" "$verdict")
done
echo "$summary"
each="$FUZZ_SECONDS s"
[ -z "$FUZZ_RUNS" ] || each="$FUZZ_RUNS runs"
echo "fuzz: ${#targets[@]} targets, $each each," \
     "$FUZZ_JOBS at a time," \
     "$(($(date +%s) - start)) s in all (build $((built - start)) s)"
exit "$failed"
