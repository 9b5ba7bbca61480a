#!/usr/bin/env bash
# e2e: the mount in front of a server that breaks the protocol (issue 17 items 5-7):
# tests/e2e/hostile_server.py (Python standard library, no auth) instead of reelfs-gateway.
# Proves, on a real FUSE mount:
#  - a GET answered with another ETag (a 200 text/html of the object's size, a 206, a 200 with
#    no ETag) fails read() with ESTALE, and none of its bytes ever reaches read();
#  - a shifted, unparsable or over-long Content-Range fails read() with EIO (not EINVAL);
#  - a listing whose continuation token repeats fails opendir with EIO after two LISTs, and
#    malformed listing XML fails opendir with EIO;
#  - an `ls` stuck on a listing that never answers dies at once of a signal (FUSE INTERRUPT is
#    answered EINTR), and SIGTERM to the daemon unmounts while another such `ls` is stuck.
source "$(dirname "$0")/lib.sh"
e2e_init misbehaving 150

step "starting the hostile server"
"$PY" "$(dirname "$0")/hostile_server.py" "$WORK/hport" "$WORK/requests.log" \
  >"$WORK/hostile.out" 2>&1 &
HS_PID=$!
for i in $(seq 100); do [[ -s "$WORK/hport" ]] && break; sleep 0.1; done
[[ -s "$WORK/hport" ]] || fail "hostile server did not start: $(cat "$WORK/hostile.out")"
ENDPOINT="http://127.0.0.1:$(cat "$WORK/hport")"
# The server goes with the teardown, which must still see the test's exit status.
trap '_rc=$?; kill "$HS_PID" 2>/dev/null; (exit $_rc); e2e_teardown' EXIT
mount_bucket hb --log-level info
MAIN_PID=$MOUNT_PID

step "reads: errno per server fault, and never a wrong byte"
"$PY" - "$MNT" "$(dirname "$0")" <<'PY' || fail "read checks failed (see above)"
import errno, os, sys
sys.path.insert(0, sys.argv[2])
import hostile_server as hs
mnt = sys.argv[1]
want = {"ignore-200": errno.ESTALE, "ignore-206": errno.ESTALE, "no-etag-200": errno.ESTALE,
        "shifted": errno.EIO, "garbage-cr": errno.EIO, "overlong": errno.EIO}
bad = 0
def read_all(name):
    """Reads the file in 64 KiB reads; returns (bytes read OK, errno of the first failure)."""
    fd = os.open(os.path.join(mnt, name), os.O_RDONLY)
    got, err = b"", 0
    try:
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError as e:
                err = e.errno
                break
            if not chunk:
                break
            got += chunk
    finally:
        os.close(fd)
    return got, err
got, err = read_all("good")
if err or got != hs.DATA["good"]:
    print("good: errno %d, %d bytes, equal=%s" % (err, len(got), got == hs.DATA["good"])); bad += 1
for name, expected in want.items():
    got, err = read_all(name)
    honest = hs.DATA[name]
    # Whatever was returned must be the object's own bytes at their offsets: no 'X', no shift.
    if got != honest[:len(got)]:
        print("%s: WRONG BYTES returned (%d bytes, %d of them X)" % (name, len(got), got.count(b"X")))
        bad += 1
    if err != expected:
        print("%s: errno %s (%s), expected %s" % (name, err, os.strerror(err) if err else "none",
                                                  errno.errorcode[expected]))
        bad += 1
    else:
        print("%s: %s after %d good bytes" % (name, errno.errorcode[err], len(got)))
for d, expected in (("loop", errno.EIO), ("badxml", errno.EIO)):
    try:
        os.listdir(os.path.join(mnt, d))
        print("%s: listed without an error" % d); bad += 1
    except OSError as e:
        if e.errno != expected:
            print("%s: errno %d (%s), expected %s" % (d, e.errno, e.strerror, errno.errorcode[expected]))
            bad += 1
        else:
            print("%s: %s" % (d, errno.errorcode[e.errno]))
sys.exit(1 if bad else 0)
PY
loops=$(grep -cE 'prefix=loop(%2F|/)' "$WORK/requests.log" || true)
echo "LIST requests for loop/: $loops"
# One opendir (the kernel may retry it once) lists two pages: the repeated token stops it there.
(( loops >= 2 && loops <= 4 )) || fail "the repeating listing took $loops LISTs (want 2..4)"

step "the CLI's listings follow the same paging rule: reelfs ls fails instead of looping"
rc=0
timeout 60 "$REELFS_BIN" --endpoint "$ENDPOINT" ls s3://hb/loop/ >"$WORK/cli_ls.out" 2>&1 || rc=$?
[[ $rc == 1 ]] || fail "reelfs ls on the repeating listing: exit $rc, want 1: $(tail -3 "$WORK/cli_ls.out")"
grep -q "continuation token" "$WORK/cli_ls.out" ||
  fail "reelfs ls did not name the repeated token: $(tail -3 "$WORK/cli_ls.out")"
echo "  reelfs ls: exit 1, $(grep -o 'repeated[^:]*' "$WORK/cli_ls.out" | head -1)"

step "an ls stuck on a listing dies of SIGTERM at once (FUSE INTERRUPT answered EINTR)"
stuck_lists() { grep -cE 'prefix=stuck2?(%2F|/)' "$WORK/requests.log" || true; }
before=$(stuck_lists)
ls "$MNT/stuck" >"$WORK/ls1.out" 2>&1 &
LS1=$!
for i in $(seq 100); do (( $(stuck_lists) > before )) && break; sleep 0.1; done
(( $(stuck_lists) > before )) || fail "ls never reached the stuck listing"
sleep 0.5
kill -0 "$LS1" 2>/dev/null || fail "ls ended before it was signalled: $(cat "$WORK/ls1.out")"
kill -TERM "$LS1"
for i in $(seq 100); do kill -0 "$LS1" 2>/dev/null || break; sleep 0.1; done
kill -0 "$LS1" 2>/dev/null && fail "ls is still stuck 10 s after SIGTERM (INTERRUPT not answered)"
wait "$LS1" 2>/dev/null || true
kill -0 "$MAIN_PID" 2>/dev/null || fail "the daemon died"

step "SIGTERM to the daemon unmounts while an ls is stuck"
before=$(stuck_lists)
ls "$MNT/stuck2" >"$WORK/ls2.out" 2>&1 &
LS2=$!
for i in $(seq 100); do (( $(stuck_lists) > before )) && break; sleep 0.1; done
(( $(stuck_lists) > before )) || fail "the second ls never reached the stuck listing"
sleep 0.5
kill -0 "$LS2" 2>/dev/null || fail "the second ls ended early: $(cat "$WORK/ls2.out")"
kill -TERM "$MAIN_PID"
for i in $(seq 150); do kill -0 "$MAIN_PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$MAIN_PID" 2>/dev/null && fail "daemon still running 15 s after SIGTERM with an ls stuck"
rc=0; wait "$MAIN_PID" || rc=$?
echo "daemon exit status $rc"
_mounted "$MNT" && fail "$MNT still mounted after SIGTERM"
for i in $(seq 50); do kill -0 "$LS2" 2>/dev/null || break; sleep 0.1; done
kill -0 "$LS2" 2>/dev/null && fail "ls still stuck after the unmount"
wait "$LS2" 2>/dev/null || true
echo "ls after the unmount: $(cat "$WORK/ls2.out")"
grep -q 'requests still unanswered at teardown' "$WORK/mount.log" &&
  fail "teardown leaked the session: $(grep 'unanswered' "$WORK/mount.log")"
MOUNT_PID=""
# The log file is complete once the daemon has exited (it is written through a buffer).
grep -q 'repeated the continuation token' "$WORK/mount.log" ||
  fail "no log line names the repeated continuation token"
grep -q 'answered 1 pending requests EINTR at unmount' "$WORK/mount.log" ||
  fail "the stuck ls was not answered at unmount"
echo "PASS"
