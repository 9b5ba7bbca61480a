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
# Environment: REELFS_BIN, REELFS_GATEWAY_BIN, REELFS_RGW_RDMA_PROBE, REELFS_CLIENT_TEST (CTest);
# KEEP_WORK=1 keeps the cluster's directory; REELFS_CEPH_REUSE=DIR runs against a cluster already
# up there; REELFS_CEPH_DEADLINE: seconds for everything (default 1300, below CTest's 1500).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
e2e=$(cd "$here/../e2e" && pwd)

# name:script:seconds (each suite's own watchdog fires earlier; this bound is the last resort)
SUITES=(
  "tree:$e2e/tree.sh:240"
  "largefile:$e2e/largefile.sh:420"
  "concurrent:$e2e/concurrent.sh:240"
  "randread:$e2e/randread.sh:240"
  "dataloader:$e2e/dataloader.sh:240"
  "client:$here/client.sh:150"
  "cli:$here/cli.sh:300"
  "tape:$here/tape.sh:180"
  "writes:$here/writes.sh:300"
  "rdma:$here/rdma.sh:120"
  # last: it SIGKILLs a radosgw, whose dead watches slow the cluster's metadata writes for 30 s
  "frontends:$here/frontends.sh:240"
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
passed=() failed=() skipped=()
for s in "${selected[@]}"; do
  IFS=: read -r name script secs <<<"$s"
  echo "=== ceph/$name ($(basename "$script"))"
  t=$SECONDS
  # Below CTest's TIMEOUT, which would kill this script without its teardown (and leave daemons).
  left=$((deadline - SECONDS))
  if ((left < 30)); then failed+=("$name (not run: the ${deadline} s deadline)"); continue; fi
  ((secs < left)) || secs=$left
  src=0
  timeout -k 15 "$secs" bash "$script" || src=$?
  case $src in
    0) passed+=("$name ($((SECONDS - t)) s)") ;;
    77) skipped+=("$name") ;;
    *) failed+=("$name (exit $src)") ;;
  esac
done

echo "=== Ceph RGW: bring-up ${bringup} s, everything $((SECONDS - t0)) s"
echo "passed:  ${passed[*]:-none}"
echo "skipped: ${skipped[*]:-none}"
echo "failed:  ${failed[*]:-none}"
[[ ${#failed[@]} -eq 0 ]] || exit 1
# A suite that skips here skips for a reason of its own (no torch): say so, do not fail.
exit 0
