#!/usr/bin/env bash
# reelfs against Ceph RGW (docs/testing.md "Ceph RGW"): brings up a one-host cluster with two
# radosgw front ends (cluster.sh), runs the suites against it, and tears it down whatever happens.
#
#   tests/ceph/run.sh               # every suite
#   tests/ceph/run.sh tree cli      # some of them (names below)
#
# The e2e read scripts (tests/e2e/*.sh) run unchanged with E2E_SERVER=rgw: their objects are
# uploaded by the AWS CLI (rgw_server.sh). The others are RGW's own: client.sh, cli.sh, tape.sh,
# writes.sh, rdma.sh, frontends.sh.
#
# Skips (77) when the Ceph packages are missing or the cluster cannot come up, unless
# REELFS_REQUIRE_CEPH=1 (scripts/test.sh sets it, having installed them): then either is a
# failure, so that CI never passes by skipping the only third-party distributed engine.
# The suites run in two lanes at once (each script's buckets are its own: rgw_server.sh), the
# data-heavy read suites in one and the rest in the other, then `frontends` alone: about a third
# less wall time on 2 CPUs than one after another (docs/testing.md "Ceph RGW", Cost). Each suite's
# output is printed whole when it ends.
# Environment: REELFS_BIN, REELFS_GATEWAY_BIN, REELFS_RGW_RDMA_PROBE, REELFS_CLIENT_TEST (CTest);
# KEEP_WORK=1 keeps the cluster's directory; REELFS_CEPH_REUSE=DIR runs against a cluster already
# up there; REELFS_CEPH_DEADLINE: seconds for everything (default 1300, below CTest's 1500);
# REELFS_CEPH_SERIAL=1 runs the suites one after another.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
e2e=$(cd "$here/../e2e" && pwd)

# name:script:seconds:lane (each suite's own watchdog fires earlier; this bound is the last
# resort). Lane data: the read suites that upload and read the most bytes; lane meta: the rest;
# lane last runs alone once both are done.
SUITES=(
  "tree:$e2e/tree.sh:240:meta"
  "largefile:$e2e/largefile.sh:420:data"
  "concurrent:$e2e/concurrent.sh:240:data"
  "randread:$e2e/randread.sh:240:data"
  "dataloader:$e2e/dataloader.sh:240:data"
  "client:$here/client.sh:150:meta"
  "cli:$here/cli.sh:300:meta"
  "tape:$here/tape.sh:180:meta"
  "writes:$here/writes.sh:300:meta"
  "rdma:$here/rdma.sh:120:meta"
  # alone at the end: it SIGKILLs a radosgw, whose dead watches slow the cluster's metadata
  # writes for 30 s
  "frontends:$here/frontends.sh:240:last"
)

unavailable() {
  if [[ "${REELFS_REQUIRE_CEPH:-0}" == 1 ]]; then
    echo "FAIL: $* (REELFS_REQUIRE_CEPH=1: the Ceph test bed must run here)" >&2
    exit 1
  fi
  echo "SKIP: $*"
  exit 77
}

[[ -n "${REELFS_BIN:-}" && -x "$REELFS_BIN" ]] || { echo "SKIP: REELFS_BIN not set"; exit 77; }
[[ -e /dev/fuse ]] || unavailable "/dev/fuse does not exist"
for bin in ceph-mon ceph-mgr ceph-osd radosgw radosgw-admin aws; do
  command -v "$bin" >/dev/null ||
    unavailable "$bin not installed (Debian: ceph-mon ceph-mgr ceph-osd radosgw ceph-common awscli)"
done

want=("$@")
selected=()
for s in "${SUITES[@]}"; do
  name=${s%%:*}
  if [[ ${#want[@]} -eq 0 || " ${want[*]} " == *" $name "* ]]; then selected+=("$s"); fi
done
[[ ${#selected[@]} -gt 0 ]] || { echo "no suite named ${want[*]}" >&2; exit 2; }

# REELFS_CEPH_REUSE=DIR: a cluster already up in DIR (cluster.sh up DIR), left running: for
# working on one suite without a bring-up each time.
REUSE=${REELFS_CEPH_REUSE:-}
DIR=${REUSE:-$(mktemp -d "${TMPDIR:-/tmp}/reelfs-ceph.XXXXXX")}
teardown() {
  local rc=$?
  trap - EXIT
  trap "" INT TERM
  if [[ -n "${data_lane:-}" ]] && kill -0 "$data_lane" 2>/dev/null; then  # interrupted mid-run
    pkill -TERM -P "$data_lane" 2>/dev/null || true
    kill "$data_lane" 2>/dev/null || true
  fi
  if [[ -n "$REUSE" ]]; then exit "$rc"; fi
  "$here/cluster.sh" down "$DIR" || true
  if [[ "${KEEP_WORK:-0}" == 1 || $rc -ne 0 && $rc -ne 77 ]]; then
    echo "kept $DIR (cluster logs under $DIR/log)"
  else
    rm -rf "$DIR"
  fi
  exit "$rc"
}
trap teardown EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

t0=$SECONDS
deadline=${REELFS_CEPH_DEADLINE:-1300}
rc=0
if [[ -z "$REUSE" ]]; then "$here/cluster.sh" up "$DIR" || rc=$?; fi
if [[ $rc -eq 77 ]]; then unavailable "Ceph packages missing"; fi
if [[ $rc -ne 0 ]]; then unavailable "the Ceph cluster did not come up (cluster.sh exit $rc; logs above)"; fi
bringup=$((SECONDS - t0))

export E2E_SERVER=rgw E2E_RGW_ENV="$DIR/cluster.env" CEPH_DIR="$DIR"
results=$(mktemp -d "${TMPDIR:-/tmp}/reelfs-ceph-results.XXXXXX")
# run_suite NAME SCRIPT SECONDS: runs one suite, its output into a file printed whole at the end
# (lanes would interleave it), its outcome into $results/NAME.
run_suite() {
  local name=$1 script=$2 secs=$3 t=$SECONDS left src=0 out="$results/$name.log"
  # Below CTest's TIMEOUT, which would kill this script without its teardown (and leave daemons).
  left=$((deadline - SECONDS))
  if ((left < 30)); then echo "failed $name (not run: the ${deadline} s deadline)" >"$results/$name"; return; fi
  ((secs < left)) || secs=$left
  timeout -k 15 "$secs" bash "$script" >"$out" 2>&1 </dev/null || src=$?
  case $src in
    0) echo "passed $name ($((SECONDS - t)) s)" ;;
    77) echo "skipped $name" ;;
    *) echo "failed $name (exit $src)" ;;
  esac >"$results/$name"
  { echo "=== ceph/$name ($(basename "$script"), $((SECONDS - t)) s)"; cat "$out"; } |
    flock "$results/print.lock" cat
}
run_lane() {  # LANE: its selected suites in order
  local s name script secs lane
  for s in "${selected[@]}"; do
    IFS=: read -r name script secs lane <<<"$s"
    [[ $lane == "$1" || ${REELFS_CEPH_SERIAL:-0} == 1 && $1 == all ]] || continue
    run_suite "$name" "$script" "$secs"
  done
}
if [[ ${REELFS_CEPH_SERIAL:-0} == 1 ]]; then
  run_lane all
else
  run_lane data & data_lane=$!
  run_lane meta
  wait "$data_lane"
  run_lane last
fi
passed=() failed=() skipped=()
for s in "${selected[@]}"; do
  name=${s%%:*}
  [[ -s "$results/$name" ]] || { failed+=("$name (no outcome)"); continue; }
  read -r outcome rest <"$results/$name"
  case $outcome in
    passed) passed+=("$rest") ;;
    skipped) skipped+=("$rest") ;;
    *) failed+=("$rest") ;;
  esac
done
rm -rf "$results"

echo "=== Ceph RGW: bring-up ${bringup} s, everything $((SECONDS - t0)) s"
echo "passed:  ${passed[*]:-none}"
echo "skipped: ${skipped[*]:-none}"
echo "failed:  ${failed[*]:-none}"
[[ ${#failed[@]} -eq 0 ]] || exit 1
# A suite that skips here skips for a reason of its own (no torch): say so, do not fail.
exit 0
