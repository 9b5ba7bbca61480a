# Sourced (bash) by tests/e2e/lib.sh and tests/interop/gateway_lib.sh: start_gateway, the one way
# the shell tests start reelfs-gateway. Expects $REELFS_GATEWAY_BIN, $WORK, $ROOT, $GW_ACCESS_KEY
# and $GW_SECRET_KEY, and a `fail MSG` function, from the library that sources it.

# _gateway_said FROM LINE [prefix]: whether $WORK/gateway.out has LINE (or, with `prefix`, a line
# starting with it) at line FROM or later. awk, not a pipe into grep -q: under pipefail the
# writer's SIGPIPE would count as a failure.
_gateway_said() {
  [[ -f "$WORK/gateway.out" ]] || return 1
  awk -v from="$1" -v want="$2" -v prefix="${3:-}" '
    NR >= from && (prefix ? index($0, want) == 1 : $0 == want) { found = 1 }
    END { exit !found }' "$WORK/gateway.out"
}

# start_gateway [PORT] [ARGS...]: reelfs-gateway over $ROOT (the owner; with GW_FRONT_END=1 a
# front end of it) on 127.0.0.1:PORT (0, the default: ephemeral) with ARGS, then $GATEWAY_EXTRA_ARGS split on spaces (tape_lib.sh: --config FILE).
# Waits up to 60 s for the port file and the start-up line, then sets GW_PID (the gateway's own
# pid), PORT, ENDPOINT and AWS_ENDPOINT_URL. Output is appended to $WORK/gateway.out and
# $WORK/gateway.err, so a restart keeps what the earlier runs wrote. Core dumps are on where the
# system allows them, for e2e's gateway_crash_report.
start_gateway() {
  local want=0 role=--create
  # GW_FRONT_END=1: a front end over a $ROOT another gateway owns (docs/gateway.md).
  [[ "${GW_FRONT_END:-0}" == 1 ]] && role=--front-end
  if [[ $# -gt 0 && $1 =~ ^[0-9]+$ ]]; then want=$1; shift; fi
  rm -f "$WORK/port"
  # This run's start-up line comes after the lines earlier runs left.
  local from=1 i
  [[ -f "$WORK/gateway.out" ]] && from=$(($(wc -l <"$WORK/gateway.out") + 1))
  # The subshell execs, so $! is the gateway.
  # shellcheck disable=SC2086
  ( ulimit -c unlimited 2>/dev/null || true
    exec "$REELFS_GATEWAY_BIN" --root "$ROOT" "$role" --listen "127.0.0.1:$want" --port-file "$WORK/port" \
      --access-key "$GW_ACCESS_KEY" --secret-key "$GW_SECRET_KEY" \
      --log-level "${GW_LOG_LEVEL:-warn}" "$@" ${GATEWAY_EXTRA_ARGS:-} \
      >>"$WORK/gateway.out" 2>>"$WORK/gateway.err" ) &
  GW_PID=$!
  # The port file is written just before the start-up line is printed: wait for both.
  for i in $(seq 600); do
    [[ -s "$WORK/port" ]] && _gateway_said "$from" "reelfs-gateway listening on " prefix && break
    kill -0 "$GW_PID" 2>/dev/null || { cat "$WORK/gateway.err" >&2; fail "gateway died at start"; }
    sleep 0.1
  done
  [[ -s "$WORK/port" ]] || fail "gateway did not write its port file within 60 s"
  PORT=$(cat "$WORK/port")
  ENDPOINT="${GW_SCHEME:-http}://127.0.0.1:$PORT"  # GW_SCHEME=https with --tls-cert
  export AWS_ENDPOINT_URL=$ENDPOINT
  _gateway_said "$from" "reelfs-gateway listening on $ENDPOINT" ||
    fail "no start-up line for $ENDPOINT: $(tail -n 5 "$WORK/gateway.out")"
}
