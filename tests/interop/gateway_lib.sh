# Sourced by the gateway_*.sh interop tests: starts reelfs-gateway on 127.0.0.1:0 with a temp
# root and stops it on exit. Exits 77 (skip) with a reason when a precondition is missing.
set -euo pipefail

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }

[[ -n "${REELFS_GATEWAY_BIN:-}" && -x "${REELFS_GATEWAY_BIN}" ]] ||
  skip "REELFS_GATEWAY_BIN not set or not executable (build target reelfs-gateway)"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/reelfs-gw-interop.XXXXXX")
ROOT="$WORK/root"
GW_PID=""
export GW_ACCESS_KEY="AKIDREELFSINTEROP"
export GW_SECRET_KEY="interop/secret+key/0123456789abcdef"

stop_gateway() {
  if [[ -n "$GW_PID" ]] && kill -0 "$GW_PID" 2>/dev/null; then
    kill -TERM "$GW_PID"
    local rc=0
    wait "$GW_PID" || rc=$?
    GW_PID=""
    [[ $rc -eq 0 ]] || echo "gateway exited with $rc after SIGTERM" >&2
    return $rc
  fi
}
cleanup() {
  stop_gateway || true
  if [[ "${KEEP_WORK:-0}" != 1 ]]; then rm -rf "$WORK"; else echo "kept $WORK"; fi
}
trap cleanup EXIT

# start_gateway [PORT] [ARGS...]: tests/lib/gateway.sh, shared with the e2e tests.
source "$(dirname "${BASH_SOURCE[0]}")/../lib/gateway.sh"

# archive_tapes SPEEDUP CARTRIDGES: writes $WORK/gw.yaml (aws personality, one scaled LTO-9
# drive SPEEDUP times real time) and puts everything under $ROOT on CARTRIDGES tape images,
# released (offline: a GET needs a recall). Start the gateway with --config "$WORK/gw.yaml".
archive_tapes() {
  cat >"$WORK/gw.yaml" <<YAML
archive:
  personality: aws
tape:
  preset: lto9
  drives: 1
  mode: scaled
  speedup: $1
YAML
  "$REELFS_GATEWAY_BIN" archive --root "$ROOT" --config "$WORK/gw.yaml" --cartridges "$2" \
    --release >"$WORK/archive.out" 2>&1 || fail "archive: $(cat "$WORK/archive.out")"
}
