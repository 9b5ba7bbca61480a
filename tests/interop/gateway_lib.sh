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

start_gateway() {  # [extra reelfs-gateway arguments...]
  "$REELFS_GATEWAY_BIN" --root "$ROOT" --listen 127.0.0.1:0 --port-file "$WORK/port" \
    --access-key "$GW_ACCESS_KEY" --secret-key "$GW_SECRET_KEY" --threads 4 \
    --log-level "${GW_LOG_LEVEL:-warn}" "$@" >"$WORK/gateway.out" 2>"$WORK/gateway.err" &
  GW_PID=$!
  for _ in $(seq 1 100); do
    [[ -s "$WORK/port" ]] && break
    kill -0 "$GW_PID" 2>/dev/null || { cat "$WORK/gateway.err" >&2; fail "gateway died"; }
    sleep 0.1
  done
  [[ -s "$WORK/port" ]] || fail "gateway did not write its port file"
  PORT=$(cat "$WORK/port")
  ENDPOINT="http://127.0.0.1:$PORT"
  grep -q "^reelfs-gateway listening on $ENDPOINT\$" "$WORK/gateway.out" ||
    fail "unexpected start-up line: $(cat "$WORK/gateway.out")"
}
