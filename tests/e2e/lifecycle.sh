#!/usr/bin/env bash
# e2e: mounting and unmounting. Proves: daemon mode (no -f) returns only once the mount is usable
# and its daemon exits after fusermount3 -u; a -f daemon unmounts cleanly and exits 0 on
# fusermount3 -u, on SIGTERM and on SIGINT (mount gone from /proc/mounts); SIGTERM with a file
# still open still takes the mount away; a missing mount point is an error, not a hang;
# --log-format json writes the daemon's log as JSON lines that parse.
source "$(dirname "$0")/lib.sh"
e2e_init lifecycle 150

mkdir -p "$ROOT/life/d"
echo "hello" >"$ROOT/life/d/hello.txt"
start_gateway

step "daemon mode: returns when mounted; fusermount3 -u stops the daemon"
MOUNTED_DIRS+=("$MNT"); echo "$MNT" >>"$WORK/mounts"
"$REELFS_BIN" mount life "$MNT" --endpoint "$ENDPOINT" --log-file "$WORK/daemon.log" \
  --log-format json </dev/null >"$WORK/daemon.out" 2>&1 || fail "daemon-mode mount exited with $?: $(cat "$WORK/daemon.out")"
_mounted "$MNT" || fail "daemon-mode mount returned before the mount was there"
[[ "$(cat "$MNT/d/hello.txt")" == hello ]] || fail "read through the daemon-mode mount"
dpids=$(daemon_pids_for "$MNT")
[[ -n "$dpids" ]] || fail "no daemon process found for $MNT"
fusermount3 -u "$MNT" || fail "fusermount3 -u"
for _ in $(seq 100); do
  alive=""; for p in $dpids; do kill -0 "$p" 2>/dev/null && alive=1; done
  [[ -z $alive ]] && break; sleep 0.1
done
[[ -z $alive ]] || fail "daemon still running 10 s after fusermount3 -u"
_mounted "$MNT" && fail "still mounted"
echo "  ok (daemon $dpids exited)"

step "--log-format json: every line of the daemon's log is one JSON object"
python3 - "$WORK/daemon.log" <<'PY' || fail "the daemon's JSON log: see above"
import json, sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
assert lines, "empty log"
docs = [json.loads(l) for l in lines]  # raises on a line that is not JSON
for d in docs:
    assert set(d) == {"time", "level", "subject", "msg"}, d
assert any(d["level"] == "info" for d in docs), "no INFO line (the mount's lifecycle)"
print(f"  ok ({len(docs)} lines, subjects {sorted({d['subject'] for d in docs})})")
PY

for sig in TERM INT; do
  step "-f: SIG$sig unmounts and exits 0"
  mount_bucket life
  [[ "$(cat "$MNT/d/hello.txt")" == hello ]] || fail "read before SIG$sig"
  kill -"$sig" "$MOUNT_PID"
  for _ in $(seq 100); do kill -0 "$MOUNT_PID" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$MOUNT_PID" 2>/dev/null && fail "daemon still running 10 s after SIG$sig"
  rc=0; wait "$MOUNT_PID" || rc=$?
  [[ $rc == 0 ]] || fail "daemon exited with $rc after SIG$sig"
  _mounted "$MNT" && fail "still in /proc/mounts after SIG$sig"
  MOUNT_PID=""
  echo "  ok"
done

step "-f: SIGTERM with a file held open still takes the mount away"
mount_bucket life
exec 8<"$MNT/d/hello.txt"
kill -TERM "$MOUNT_PID"
for _ in $(seq 100); do kill -0 "$MOUNT_PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$MOUNT_PID" 2>/dev/null && fail "daemon still running 10 s after SIGTERM with an open file"
wait "$MOUNT_PID" || echo "  (daemon exited with $? with a file open)"
exec 8<&-
_mounted "$MNT" && fail "still in /proc/mounts after SIGTERM with an open file"
MOUNT_PID=""
echo "  ok"

step "fusermount3 -u on a -f mount: exits 0"
mount_bucket life
unmount_and_wait "$MNT" "$MOUNT_PID"
MOUNT_PID=""
echo "  ok"

step "a missing mount point is an error"
rc=0
timeout 20 "$REELFS_BIN" mount life "$WORK/no/such/dir" --endpoint "$ENDPOINT" -f \
  >"$WORK/missing.out" 2>&1 || rc=$?
[[ $rc != 0 && $rc != 124 ]] || fail "mount on a missing directory: exit $rc"
echo "  exit $rc: $(head -1 "$WORK/missing.out")"
echo "PASS"
