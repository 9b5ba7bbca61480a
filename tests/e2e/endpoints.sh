#!/usr/bin/env bash
# e2e (issue 15): one mount over three gateway front ends (`--endpoint A,B,C`), one killed
# mid-read, then a second; the read finishes with the right checksum; both come back and take
# traffic again, which the per-endpoint counters in user.reelfs.metrics show.
#
# The three gateways serve one root: gateway 0 owns it, 1 and 2 are `--front-end` processes over
# it (docs/gateway.md "Several front ends over one root"). A 2 GiB file is read by a reader that
# pauses at 640 MiB and 1 280 MiB; at each pause one gateway is SIGKILLed (the owner first), so
# the kill lands while the mount's prefetch is in flight and the rest of the file must come
# through the others (a part cut off mid-body resumes on another endpoint with If-Match).
source "$(dirname "$0")/lib.sh"
e2e_init endpoints 300
export LC_ALL=C

step "a 2 GiB object, served by an owner and two front ends over one root"
mkdir -p "$ROOT/data"
want=$(gen_big_file "$ROOT/data/big.bin" $((2048 * 1048576)))
gen_big_file "$ROOT/data/small.bin" $((96 * 1048576)) >/dev/null
PORTS=()
GWS=()
start_nth() {  # start_nth I [PORT]: gateway I (0 the owner, else a front end; its old port when given)
  GW_FRONT_END=$(( $1 > 0 )) start_gateway "${2:-0}"
  GWS[$1]=$GW_PID
  PORTS[$1]=$PORT
  EXTRA_PIDS+=("$GW_PID")
  GW_PID=""
}
for i in 0 1 2; do start_nth "$i"; done
ENDPOINTS="http://127.0.0.1:${PORTS[0]},http://127.0.0.1:${PORTS[1]},http://127.0.0.1:${PORTS[2]}"
ENDPOINT=$ENDPOINTS
echo "   endpoints: $ENDPOINTS"

mount_bucket data
MAIN_PID=$MOUNT_PID
# Several front ends: the part GETs spread a reader over them; spliced reads (one stream per
# handle) stay off unless asked for.
! grep -q "spliced reads on" "$WORK/mount.log" || fail "spliced reads on over several endpoints"
metrics() { getfattr --only-values -n user.reelfs.metrics "$MNT" 2>/dev/null; }
endpoint_field() {  # endpoint_field I FIELD: from user.reelfs.metrics
  metrics | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["endpoints"][int(sys.argv[1])][sys.argv[2]])' "$1" "$2"
}

step "reading big.bin; gateway 0 SIGKILLed at 640 MiB, gateway 1 at 1 280 MiB"
"$PY" - "$MNT/big.bin" "$WORK" <<'PY' >"$WORK/read.out" 2>&1 &
import hashlib, os, sys, time
path, work = sys.argv[1:3]
h = hashlib.sha256()
done = 0
marks = {640 << 20: "pause1", 1280 << 20: "pause2"}
with open(path, "rb", buffering=0) as f:
    while True:
        b = f.read(8 << 20)
        if not b:
            break
        h.update(b)
        done += len(b)
        if done in marks:
            open(os.path.join(work, marks[done]), "w").close()
            go = os.path.join(work, marks[done] + ".go")
            while not os.path.exists(go):
                time.sleep(0.01)
print(done, h.hexdigest())
PY
READER=$!
for k in 1 2; do
  for _ in $(seq 3000); do [[ -e "$WORK/pause$k" ]] && break; kill -0 "$READER" 2>/dev/null || break; sleep 0.01; done
  [[ -e "$WORK/pause$k" ]] || fail "the reader did not reach pause $k: $(cat "$WORK/read.out")"
  victim=$((k - 1))
  kill -KILL "${GWS[$victim]}"; wait "${GWS[$victim]}" 2>/dev/null || true
  echo "   gateway $victim (port ${PORTS[$victim]}) killed"
  touch "$WORK/pause$k.go"
done
wait "$READER" || fail "reader failed: $(cat "$WORK/read.out")"
read -r got_bytes got_sum <"$WORK/read.out"
expect "bytes read" "$got_bytes" $((2048 * 1048576))
expect "sha256 of big.bin read across the kills" "$got_sum" "$want"
for i in 0 1; do
  [[ $(endpoint_field "$i" downs) -ge 1 ]] || fail "endpoint $i was never marked down: $(metrics)"
done
expect "endpoint 2 state" "$(endpoint_field 2 state)" up
echo "   endpoints: $(metrics | "$PY" -c 'import json,sys; print([(e["state"], e["requests"], e["bytes"] >> 20, e["errors"]) for e in json.load(sys.stdin)["endpoints"]])') (state, attempts, MiB, errors)"

step "gateways 0 and 1 restarted on their ports: probed back, they take traffic again"
for i in 0 1; do start_nth "$i" "${PORTS[$i]}"; done
for _ in $(seq 300); do
  [[ $(endpoint_field 0 state) == up && $(endpoint_field 1 state) == up ]] && break
  sleep 0.1
done
expect "endpoint 0 state after restart" "$(endpoint_field 0 state)" up
expect "endpoint 1 state after restart" "$(endpoint_field 1 state)" up
before0=$(endpoint_field 0 requests); before1=$(endpoint_field 1 requests)
got=$("$PY" - "$MNT/small.bin" <<'PY'
import hashlib, sys
print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())
PY
)
expect "sha256 of small.bin after the restarts" "$got" "$(sha256sum "$ROOT/data/small.bin" | cut -d' ' -f1)"
[[ $(endpoint_field 0 requests) -gt $before0 ]] || fail "endpoint 0 took no request after it came back: $(metrics)"
[[ $(endpoint_field 1 requests) -gt $before1 ]] || fail "endpoint 1 took no request after it came back: $(metrics)"
echo "   ok: both restarted gateways served parts of small.bin"

step "all three down: a read fails with EIO (not a hang); one back: reads work again"
for i in 0 1 2; do kill -KILL "${GWS[$i]}"; wait "${GWS[$i]}" 2>/dev/null || true; done
rc=0; out=$(timeout 120 dd if="$MNT/big.bin" of=/dev/null bs=1M count=8 skip=100 iflag=direct 2>&1) || rc=$?
[[ $rc -ne 0 && $rc -ne 124 ]] || fail "read with every endpoint down: rc=$rc ($out)"
grep -q "Input/output error" <<<"$out" || fail "expected EIO, got: $out"
echo "   ok: EIO with every endpoint down"
start_nth 2 "${PORTS[2]}"
for _ in $(seq 300); do [[ $(endpoint_field 2 state) == up ]] && break; sleep 0.1; done
dd if="$MNT/big.bin" of=/dev/null bs=1M count=8 skip=100 iflag=direct 2>/dev/null ||
  fail "a read after endpoint 2 came back failed"
echo "   ok: reads work again once one endpoint is back"

unmount_and_wait "$MNT" "$MAIN_PID"
grep -q "endpoint http://127.0.0.1:${PORTS[0]}: state=" "$WORK/mount.log" ||
  fail "no per-endpoint line in the unmount log: $(tail -n 5 "$WORK/mount.log")"
echo "PASS"
