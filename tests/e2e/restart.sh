#!/usr/bin/env bash
# e2e: the gateway dies under the mount. Proves: (1) a gateway SIGKILLed mid-read and restarted on
# the same port at once costs nothing but time: the read in progress completes with every byte
# right (the client retries and resumes, ETag-pinned; the catalog keeps the ETag); (2) a gateway
# that stays down turns reads into EIO after the retries (not a hang, not a crash), and the mount
# works again, unchanged, once the gateway is back.
source "$(dirname "$0")/lib.sh"
e2e_init restart 220
SIZE=$((512 * 1048576 + 5))

step "generating a 512 MiB file and a small one"
mkdir -p "$ROOT/restart"
want=$(gen_file "$ROOT/restart/big.bin" "$SIZE" 21)
want_small=$(gen_file "$ROOT/restart/later.bin" 3000000 22)
start_gateway
mount_bucket restart
MAIN_PID=$MOUNT_PID
ls -l "$MNT" >/dev/null

step "SIGKILL the gateway mid-read, restart it on port $PORT"
# A throttled reader (1 MiB every 10 ms, about 100 MiB/s at most, 5 s or more in all) that
# announces when it is 64 MiB in, so the kill lands with GETs in flight and most of the file unread.
"$PY" - "$MNT/big.bin" "$WORK/progress" >"$WORK/reader.out" 2>&1 <<'PY' &
import hashlib, os, sys, time
path, progress = sys.argv[1:]
h = hashlib.sha256(); n = 0; told = False
with open(path, "rb", buffering=0) as f:
    while True:
        b = f.read(1 << 20)
        if not b: break
        h.update(b); n += len(b)
        if n >= (64 << 20) and not told:
            open(progress, "w").write(str(n)); told = True
        time.sleep(0.01)
print(n, h.hexdigest())
PY
reader=$!
for _ in $(seq 600); do [[ -s "$WORK/progress" ]] && break; kill -0 $reader 2>/dev/null || break; sleep 0.05; done
[[ -s "$WORK/progress" ]] || { cat "$WORK/reader.out"; fail "reader did not get 64 MiB in"; }
kill_gateway_hard
echo "  killed at $(cat "$WORK/progress") bytes read"
sleep 0.3
start_gateway "$PORT"
echo "  restarted on $PORT"
rc=0; wait $reader || rc=$?
[[ $rc == 0 ]] || fail "reader failed across the restart ($rc): $(cat "$WORK/reader.out")"
[[ "$(cat "$WORK/reader.out")" == "$SIZE $want" ]] ||
  fail "read across the restart: got '$(cat "$WORK/reader.out")', want '$SIZE $want'"
echo "  read completed, $SIZE bytes, sha256 identical"

step "gateway down for good: a read fails with EIO, the daemon survives"
kill_gateway_hard
t0=$SECONDS
out=$(cat "$MNT/later.bin" 2>&1 >/dev/null) && fail "read with the gateway down succeeded"
echo "  after $((SECONDS - t0)) s: $out"
[[ $out == *"Input/output error"* ]] || fail "read with the gateway down: '$out', want Input/output error"
kill -0 "$MAIN_PID" 2>/dev/null || fail "the daemon died while the gateway was down"
_mounted "$MNT" || fail "the mount went away while the gateway was down"

step "gateway back: the same file reads correctly"
start_gateway "$PORT"
[[ "$(sha256sum <"$MNT/later.bin" | cut -d' ' -f1)" == "$want_small" ]] || fail "read after the gateway came back"

unmount_and_wait "$MNT" "$MAIN_PID"
echo "PASS"
