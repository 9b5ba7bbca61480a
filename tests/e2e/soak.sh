#!/usr/bin/env bash
# e2e soak: the mount reads a mixed dataset for a while, checking every byte, while the gateway
# injects 503s, connection resets mid-body and delays, and is SIGKILLed and restarted on the same
# port several times. Asserts: 0 corrupt bytes (a read that succeeds returns exactly the file), 0
# daemon crashes (the daemon and the mount are alive at the end), and reads succeed again after
# every restart. Prints the read and error counts and, per kill, the recovery time (restart to
# the first read that succeeded after it).
#
#   SOAK_SECONDS=150 SOAK_KILLS=2 (CI)      SOAK_SECONDS=3600 SOAK_KILLS=100 (the long run)
#   SOAK_READERS=4 reader threads, SOAK_PAUSE_MS=0 between one reader's reads (a gentler load)
source "$(dirname "$0")/lib.sh"
seconds=${SOAK_SECONDS:-150}
kills=${SOAK_KILLS:-2}
readers_n=${SOAK_READERS:-4}
pause_ms=${SOAK_PAUSE_MS:-0}
e2e_init soak $((seconds + 150))

step "a mixed dataset: 300 small files, 12 of 4 MiB, 2 of 48 MiB"
mkdir -p "$ROOT/soak/small" "$ROOT/soak/mid" "$ROOT/soak/big"
"$PY" - "$ROOT/soak" >"$WORK/sums" <<'PY'
import hashlib, os, random, sys
root = sys.argv[1]
rng = random.Random(17)
def put(rel, size):
    data = rng.randbytes(size)
    with open(os.path.join(root, rel), "wb") as f:
        f.write(data)
    print(hashlib.sha256(data).hexdigest(), size, rel)
for i in range(300):
    put(f"small/f{i:03d}", rng.randint(0, 256 << 10))
for i in range(12):
    put(f"mid/m{i:02d}", (4 << 20) + rng.randint(0, 4096))
for i in range(2):
    put(f"big/b{i}", (48 << 20) + rng.randint(0, 4096))
PY
cat >"$WORK/gw.yaml" <<'YAML'
faults:
  seed: 3
  http:
    - op: GetObject
      percent: 6
      error: SlowDown
    - op: GetObject
      percent: 4
      reset_after: 300KiB
    - op: GetObject
      percent: 5
      delay: 300ms
    - op: HeadObject
      percent: 4
      error: SlowDown
    - op: ListObjectsV2
      every: 5
      delay: 200ms
YAML
GATEWAY_EXTRA_ARGS="--config $WORK/gw.yaml"
start_gateway
# Short metadata TTLs: lookups and listings keep going to the (faulty, restarting) gateway.
mount_bucket soak --metadata-ttl 2s --negative-ttl 1s
MAIN_PID=$MOUNT_PID

step "reading for ${seconds} s with ${readers_n} readers, killing the gateway ${kills} times"
# Readers: random files, whole, half of them with O_DIRECT (no page cache: every byte comes
# through the daemon), each checked against its sha256. One line per read in $WORK/reads:
# "<monotonic time> ok|err|corrupt <bytes> <path> [errno]".
"$PY" - "$MNT" "$WORK/sums" "$seconds" "$WORK/reads" "$readers_n" "$pause_ms" \
  >"$WORK/readers.out" 2>&1 <<'PY' &
import hashlib, mmap, os, random, sys, threading, time
mnt, sums, seconds, out = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
nthreads, pause = int(sys.argv[5]), int(sys.argv[6]) / 1000
files = [l.split() for l in open(sums)]
end = time.monotonic() + seconds
lock = threading.Lock()
log = open(out, "w", buffering=1)
def read_one(path, direct):
    h = hashlib.sha256(); n = 0
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECT if direct else 0))
    try:
        buf = mmap.mmap(-1, 1 << 20)
        while True:
            got = os.readv(fd, [buf])
            if got == 0: break
            h.update(buf[:got]); n += got
    finally:
        os.close(fd)
    return n, h.hexdigest()
def reader(seed):
    rng = random.Random(seed)
    while time.monotonic() < end:
        want, size, rel = rng.choice(files)
        path = os.path.join(mnt, rel)
        try:
            n, got = read_one(path, rng.random() < 0.5)
            verdict = "ok" if (n, got) == (int(size), want) else "corrupt"
            line = f"{time.monotonic():.3f} {verdict} {n} {rel}"
        except OSError as e:
            line = f"{time.monotonic():.3f} err 0 {rel} {e.errno}"
        with lock:
            log.write(line + "\n")
        if pause: time.sleep(pause)
threads = [threading.Thread(target=reader, args=(i,)) for i in range(nthreads)]
for t in threads: t.start()
for t in threads: t.join()
PY
readers=$!
restarts=()
fired=0
now() { "$PY" -c 'import time; print(f"{time.monotonic():.3f}")'; }
# faults_fired: how many injected faults this gateway process has fired so far (admin metrics).
faults_fired() {
  curl -sS --max-time 5 --aws-sigv4 "aws:amz:us-east-1:s3" --user "$GW_ACCESS_KEY:$GW_SECRET_KEY" \
    -H "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" \
    "$ENDPOINT/_reelfs/admin/metrics" 2>/dev/null |
    "$PY" -c 'import json,sys; print(sum(r["fired"] for r in json.load(sys.stdin)["http_faults"]))' \
    2>/dev/null || echo 0
}
for k in $(seq 1 "$kills"); do
  # Kills spread over the run, the last one well before the end so recovery can be seen.
  sleep "$("$PY" -c "print(max(0.5, $seconds * 0.8 / $kills - 1))")"
  kill -0 "$MAIN_PID" 2>/dev/null || fail "the daemon died before kill $k"
  fired=$((fired + $(faults_fired)))
  killed_at=$(now)
  kill_gateway_hard
  sleep 1
  start_gateway "$PORT"
  restarts+=("$killed_at:$(now)")
done
rc=0; wait $readers || rc=$?
[[ $rc == 0 ]] || fail "readers failed ($rc): $(tail -5 "$WORK/readers.out")"
fired=$((fired + $(faults_fired)))
echo "soak: the gateway fired $fired injected faults (503, reset mid-body, delay)"
[[ $fired -gt 0 ]] || fail "no injected fault fired: the soak did not test recovery from faults"

step "verdict"
kill -0 "$MAIN_PID" 2>/dev/null || fail "the reelfs daemon died during the soak"
_mounted "$MNT" || fail "the mount went away during the soak"
"$PY" - "$WORK/reads" "${restarts[@]}" <<'PY' || fail "soak verdict"
import collections, sys
lines = [l.split() for l in open(sys.argv[1])]
restarts = [tuple(map(float, a.split(":"))) for a in sys.argv[2:]]
count = collections.Counter(l[1] for l in lines)
errnos = collections.Counter(l[4] for l in lines if l[1] == "err")
byte_total = sum(int(l[2]) for l in lines if l[1] == "ok")
print(f"soak: {len(lines)} reads, {count['ok']} ok ({byte_total / 2**20:.0f} MiB checked), "
      f"{count['err']} errors {dict(errnos)}, {count['corrupt']} corrupt")
bad = False
for i, (killed, t) in enumerate(restarts, 1):
    after = [float(l[0]) for l in lines if l[1] == "ok" and float(l[0]) > t]
    errs = sum(1 for l in lines if l[1] == "err" and killed <= float(l[0]) <= t + 5)
    if after:
        print(f"soak: kill {i}: first good read {min(after) - t:.2f} s after the restart "
              f"({min(after) - killed:.2f} s after the kill), {errs} failed reads around it")
    else:
        print(f"soak: kill {i}: no good read after the restart"); bad = True
if count["corrupt"]:
    print("soak: corrupt reads:", [l for l in lines if l[1] == "corrupt"][:5]); bad = True
if count["ok"] == 0:
    print("soak: no read succeeded"); bad = True
sys.exit(1 if bad else 0)
PY
unmount_and_wait "$MNT" "$MAIN_PID"
echo "PASS"
