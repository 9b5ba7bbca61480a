#!/usr/bin/env bash
# The gateway's shutdown under load, many times: each cycle starts reelfs-gateway on a root with
# archived (offline) objects and a slow simulated library, puts GETs, HEADs and a RestoreObject
# in flight (so the library has a recall queued or running), sends SIGTERM after a random short
# delay, and requires a clean exit (status 0) within a bound. A crash (SIGSEGV 139, or a
# sanitizer's abort in the ASan/TSan builds) or a hang fails the test with the gateway's log.
#
#   CYCLES=200 (default)  how many start/traffic/SIGTERM cycles
#   STOP_BOUND_S=30       how long one SIGTERM may take before the cycle counts as a hang
#
# What it guards: an accept completion re-arming async_accept on an acceptor that Stop() was
# closing on another io thread (gateway/http/server.cc) crashed about 1 SIGTERM in 150 under
# this kind of traffic.
source "$(dirname "$0")/../interop/gateway_lib.sh"
command -v curl >/dev/null || skip "curl not installed"
curl --help all 2>/dev/null | grep -q -- --aws-sigv4 || skip "curl has no --aws-sigv4"

cycles=${CYCLES:-200}
bound=${STOP_BOUND_S:-30}

# 12 objects archived and released (offline: a GET needs a recall), 4 left online for GETs.
mkdir -p "$ROOT/tapes" "$ROOT/hot"
for i in $(seq 1 12); do head -c 200000 /dev/urandom >"$ROOT/tapes/cold-$i"; done
archive_tapes 200 2
for i in 1 2 3 4; do head -c 1500000 /dev/urandom >"$ROOT/hot/obj-$i"; done

body='<RestoreRequest><Days>1</Days><GlacierJobParameters><Tier>Standard</Tier></GlacierJobParameters></RestoreRequest>'
sha=$(printf '%s' "$body" | sha256sum | cut -d' ' -f1)
# curl 7.88 sends no x-amz-content-sha256, which S3 header auth requires: name the empty body's.
sig=(--aws-sigv4 "aws:amz:us-east-1:s3" --user "$GW_ACCESS_KEY:$GW_SECRET_KEY" --connect-timeout 5)
nobody=(-H "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")

# traffic: GETs and HEADs over parallel keep-alive connections and one RestoreObject, in the
# background; their outcome does not matter (the server stops under them), only the server's.
traffic() {
  TRAFFIC_PIDS=()
  local urls=()
  for _ in $(seq 1 6); do
    for i in 1 2 3 4; do urls+=(-o /dev/null "$ENDPOINT/hot/obj-$i"); done
  done
  curl -sS "${sig[@]}" "${nobody[@]}" --parallel --parallel-max 8 --max-time 20 "${urls[@]}" \
    >/dev/null 2>&1 &
  TRAFFIC_PIDS+=($!)
  # Connection churn: a new connection per request, so accepts complete while Stop runs.
  local churn=()
  for _ in $(seq 1 150); do churn+=(-o /dev/null "$ENDPOINT/hot/obj-1"); done
  curl -sS "${sig[@]}" "${nobody[@]}" -H 'Connection: close' -r 0-99 --parallel --parallel-max 6 \
    --max-time 20 "${churn[@]}" >/dev/null 2>&1 &
  TRAFFIC_PIDS+=($!)
  curl -sS "${sig[@]}" "${nobody[@]}" --max-time 20 -I "$ENDPOINT/tapes/cold-$((RANDOM % 12 + 1))" \
    >/dev/null 2>&1 &
  TRAFFIC_PIDS+=($!)
  curl -sS "${sig[@]}" --max-time 20 -o /dev/null -X POST -H 'Content-Type: application/xml' \
    -H "x-amz-content-sha256: $sha" --data-binary "$body" \
    "$ENDPOINT/tapes/cold-$((RANDOM % 12 + 1))?restore=" >/dev/null 2>&1 &
  TRAFFIC_PIDS+=($!)
}

# The traffic is over once its gateway is gone: end it, so that a later server on the same
# ephemeral port (another test's, in a parallel ctest run) cannot keep its queued transfers
# waiting out their --max-time one after another.
end_traffic() {
  kill "${TRAFFIC_PIDS[@]}" 2>/dev/null || true
  wait "${TRAFFIC_PIDS[@]}" 2>/dev/null || true
}

crashes=0
hangs=0
in_flight=0
for cycle in $(seq 1 "$cycles"); do
  rm -f "$WORK/port"
  start_gateway --config "$WORK/gw.yaml"
  # Restored objects go offline again, so that every cycle's RestoreObject starts a recall.
  code=$(curl -sS --max-time 20 "${sig[@]}" "${nobody[@]}" -o "$WORK/release.out" -w '%{http_code}' -X POST \
    "$ENDPOINT/_reelfs/admin/release?bucket=tapes") || fail "admin release: curl failed"
  [[ $code == 200 ]] || fail "admin release answered $code: $(cat "$WORK/release.out")"
  traffic
  # 0-150 ms: sometimes before the first request is read, sometimes mid-body or mid-recall.
  sleep "0.$(printf '%03d' $((RANDOM % 150)))"
  curl -sS "${sig[@]}" "${nobody[@]}" --max-time 5 "$ENDPOINT/_reelfs/admin/metrics" 2>/dev/null |
    grep -q '"recalls_in_flight":[1-9]' && in_flight=$((in_flight + 1))
  kill -TERM "$GW_PID" 2>/dev/null || true
  waited=0
  while kill -0 "$GW_PID" 2>/dev/null && [[ $waited -lt $((bound * 10)) ]]; do
    sleep 0.1
    waited=$((waited + 1))
  done
  if kill -0 "$GW_PID" 2>/dev/null; then
    hangs=$((hangs + 1))
    echo "cycle $cycle: gateway still running ${bound} s after SIGTERM" >&2
    kill -KILL "$GW_PID"
  fi
  rc=0
  wait "$GW_PID" || rc=$?
  GW_PID=""
  end_traffic
  (( cycle % 50 )) || echo "gateway_shutdown_loop: $cycle cycles, $crashes crashes, $hangs hangs"
  if [[ $rc -ne 0 && $waited -lt $((bound * 10)) ]]; then
    crashes=$((crashes + 1))
    echo "cycle $cycle: gateway exited with status $rc after SIGTERM; its log:" >&2
    tail -40 "$WORK/gateway.err" >&2
  fi
done

echo "gateway_shutdown_loop: $cycles SIGTERMs, $crashes crashes, $hangs hangs," \
  "a recall in flight at $in_flight of them"
[[ $crashes -eq 0 && $hangs -eq 0 ]] || fail "$crashes crashes and $hangs hangs in $cycles SIGTERMs"
# The precondition of the test: the library had work at shutdown, not only the HTTP server.
[[ $in_flight -gt 0 ]] || fail "no SIGTERM came with a recall in flight: the traffic did not reach the library"
echo "PASS"
