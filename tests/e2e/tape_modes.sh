#!/usr/bin/env bash
# e2e (issue 5): what a read of an offline object does in each --offline mode, with the gateway's
# archive and simulated tape library, for the versitygw and aws personalities.
#
# Per personality, on one gateway root (16 objects of 300 000 bytes archived on 2 cartridges and
# released), three gateway runs (A and B for both personalities, then C for both):
#  A (library x2000, counting rules for RestoreObject and GetObject):
#    eacces: read -> EACCES, and no RestoreObject, no recall, the object stays offline;
#    eagain: read -> EAGAIN at once, and a recall is queued; once restored the same read succeeds;
#    wait:   read -> the source's bytes (sha256);
#    O_NONBLOCK open+read -> EAGAIN in all three mounts;
#    the side channel (read_into by fd, read_many by path) answers as the mount does in each mode;
#    50 concurrent readers (25 O_DIRECT, 25 buffered) of one offline object in a wait mount ->
#      exactly one RestoreObject and one recall at the gateway, 50 correct reads.
#  B (library x2000, every GET delayed 1.5 s before it runs): the releaser race. The test
#    releases the object (admin POST release) the moment the catalog shows it restored, so the
#    mount's GET lands on an offline object again (403 InvalidObjectState); the wait-mode read
#    must still return the right bytes, through a second recall nobody asked for by hand.
#  C (library in real time, x1: a recall takes >= 29 s of robot and load): an O_DIRECT read of an
#    offline object is interrupted by SIGALRM after 1 s (Python handler that raises): it must come
#    back with EINTR while the recall is still running (the catalog says so afterwards), and the
#    mount must keep answering.
# O_DIRECT for the interrupt: a buffered read of a missing page waits for the page lock, which
# only a fatal signal can interrupt (kernel behaviour, whatever the daemon does). An O_DIRECT read
# is interruptible only if the kernel sends it as a synchronous READ (no FUSE_CAP_ASYNC_DIO, or
# the handle opened with direct_io); the daemon then answers FUSE_INTERRUPT with EINTR.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/tape_lib.sh"
source "$(dirname "$0")/tape_more.sh"
e2e_init tape_modes 270
export LC_ALL=C

SIZE=300000
declare -A MPID  # mount dir -> daemon pid (reelfs mount -f)

mount_mode() {  # mount_mode DIR MODE [opts...]
  local dir=$1 mode=$2; shift 2
  mount_tape data "$dir" "$mode" "$@"
  MPID[$dir]=$MOUNT_PID
}
end_mounts() {
  local d
  for d in "${!MPID[@]}"; do unmount_and_wait "$d" "${MPID[$d]}"; unset "MPID[$d]"; done
}
ok_sum() { echo "OK $(sum_of data "$1")"; }

# phase PERSONALITY SPEEDUP [extra fault rules]: (re)starts the gateway on this personality's root.
phase() {
  local p=$1
  end_mounts
  stop_tape_gateway
  ROOT="$WORK/root-$p"
  TAPE_SPEEDUP=$2 tape_config "$p"
  TAPE_FAULTS_EXTRA_YAML=${3:-} tape_count_requests
  if [[ ! -d $ROOT ]]; then
    mkdir -p "$ROOT"
    gen_objects data 16 $SIZE
    archive_offline data 2 key
  fi
  start_tape_gateway
  release_bucket data >/dev/null  # whatever an earlier run restored is offline again
  [[ $(catalog_count data offline) == 16 ]] || fail "not every object offline: $(catalog_states data)"
}

for P in ${TAPE_MODES_PERSONALITIES:-versitygw aws}; do
  step "$P A: the three modes, O_NONBLOCK, 50 readers"
  phase "$P" 2000
  M=$WORK/m-$P
  mount_mode "$M-wait" wait
  mount_mode "$M-eagain" eagain
  mount_mode "$M-eacces" eacces

  r0=$(restore_requests); s0=$(metric archive.recalls_submitted)
  expect "eacces read" "$(probe_read "$M-eacces/d/00002.bin")" EACCES
  expect "eacces O_NONBLOCK" "$(probe_read "$M-eacces/d/00003.bin" nonblock)" EAGAIN
  expect "eacces stat size" "$(stat -c %s "$M-eacces/d/00002.bin")" $SIZE
  # The side channel obeys the mount's mode too: by fd (OPEN_FILE) and by path (READ_PATH).
  expect "eacces side channel (fd)" "$(sc_read "$M-eacces/d/00009.bin" fd)" EACCES
  expect "eacces side channel (path)" "$(sc_read "$M-eacces/d/00009.bin" path)" EACCES
  sleep 1  # a restore queued in the background would reach the gateway within milliseconds
  expect "eacces: RestoreObject requests" "$(restore_requests)" "$r0"
  expect "eacces: recalls" "$(metric archive.recalls_submitted)" "$s0"
  expect "eacces: catalog" "$(catalog_count data offline)" 16

  expect "eagain read" "$(probe_read "$M-eagain/d/00001.bin")" EAGAIN
  wait_catalog data d/00001.bin staging premigrated  # the EAGAIN queued a restore
  [[ $(metric archive.recalls_submitted) -gt $s0 ]] || fail "eagain: no recall submitted"
  expect "eagain O_NONBLOCK" "$(probe_read "$M-eagain/d/00004.bin" nonblock)" EAGAIN
  expect "eagain side channel (fd)" "$(sc_read "$M-eagain/d/00010.bin" fd)" EAGAIN
  expect "eagain side channel (path)" "$(sc_read "$M-eagain/d/00011.bin" path)" EAGAIN
  wait_catalog data d/00010.bin staging premigrated  # the side channel's EAGAIN queued it too
  wait_catalog data d/00001.bin premigrated
  got=""
  for _ in $(seq 150); do  # the mount notices the restore within its state TTL
    got=$(probe_read "$M-eagain/d/00001.bin")
    [[ $got == EAGAIN ]] || break
    sleep 0.2
  done
  expect "eagain read once restored" "$got" "$(ok_sum d/00001.bin)"

  # reelfs stage --wait tells the mount (user.hsm.request=refresh): a mount that trusts a seen
  # offline state for 10 minutes reads the object as soon as the command returns.
  mount_mode "$M-eagain-ttl" eagain --offline-state-ttl 10m
  expect "eagain (10m state TTL) read" "$(probe_read "$M-eagain-ttl/d/00014.bin")" EAGAIN
  rc=0; "$REELFS_BIN" stage --wait --timeout 120s --poll 100ms --poll-max 1s "$M-eagain-ttl/d/00014.bin" >"$WORK/stage14.out" \
    2>&1 || rc=$?
  [[ $rc == 0 ]] || fail "stage --wait of d/00014.bin exited $rc: $(cat "$WORK/stage14.out")"
  grep -q "did not take" "$WORK/stage14.out" && fail "the mount refused the refresh: $(cat "$WORK/stage14.out")"
  expect "eagain read right after stage --wait" "$(probe_read "$M-eagain-ttl/d/00014.bin")" \
    "$(ok_sum d/00014.bin)"

  expect "wait read" "$(probe_read "$M-wait/d/00000.bin")" "$(ok_sum d/00000.bin)"
  expect "wait O_NONBLOCK" "$(probe_read "$M-wait/d/00005.bin" nonblock)" EAGAIN
  expect "wait side channel (fd)" "$(sc_read "$M-wait/d/00012.bin" fd)" "$(ok_sum d/00012.bin)"
  expect "wait side channel (path)" "$(sc_read "$M-wait/d/00013.bin" path)" "$(ok_sum d/00013.bin)"
  # The O_NONBLOCK opens of the wait and eagain mounts may have queued restores: let any land
  # (milliseconds at x2000) before counting for the 50 readers.
  sleep 1

  step "$P A: 50 concurrent readers of one offline object (wait)"
  r0=$(restore_requests); s0=$(metric archive.recalls_submitted); j0=$(metric archive.recalls_joined)
  PYTHONPATH="$TAPE_MORE_DIR${PYTHONPATH:+:$PYTHONPATH}" \
    timeout -s KILL 120 "$PY" - "$M-wait/d/00006.bin" "$(sum_of data d/00006.bin)" <<'PY' ||
import hashlib, os, sys, threading
from direct_read import hash_aligned
path, want = sys.argv[1], sys.argv[2]
start = threading.Barrier(50)
results = [None] * 50
def reader(k):
    direct = k % 2 == 0
    h = hashlib.sha256()
    try:
        start.wait()
        fd = os.open(path, os.O_RDONLY | (os.O_DIRECT if direct else 0))
        try:
            hash_aligned(fd, h)
        finally:
            os.close(fd)
        results[k] = h.hexdigest()
    except OSError as e:
        results[k] = f"error {e}"
threads = [threading.Thread(target=reader, args=(k,)) for k in range(50)]
for t in threads: t.start()
for t in threads: t.join()
bad = [(k, r) for k, r in enumerate(results) if r != want]
if bad:
    sys.exit(f"{len(bad)} of 50 readers got wrong data or errors: {bad[:3]}")
print("   ok: 50 readers, 50 correct reads")
PY
    fail "50 readers"
  expect "50 readers: RestoreObject requests" "$(($(restore_requests) - r0))" 1
  expect "50 readers: recalls submitted" "$(($(metric archive.recalls_submitted) - s0))" 1
  expect "50 readers: recalls joined" "$(($(metric archive.recalls_joined) - j0))" 0

  step "$P B: the releaser wins the race against the mount's GET (wait)"
  phase "$P" 2000 '    - op: GetObject
      every: 1
      delay: 1500ms'
  mount_mode "$M-race" wait
  s0=$(metric archive.recalls_submitted)
  probe_read "$M-race/d/00007.bin" >"$WORK/race.out" &
  reader=$!
  wait_catalog data d/00007.bin premigrated
  release_bucket data "d%2F00007.bin" >/dev/null
  echo "   released d/00007.bin right after its restore"
  wait "$reader" || true
  expect "read across the release" "$(cat "$WORK/race.out")" "$(ok_sum d/00007.bin)"
  recalls=$(($(metric archive.recalls_submitted) - s0))
  [[ $recalls -ge 2 ]] || fail "expected a second recall after the release, got $recalls recall(s)"
  echo "   ok: $recalls recalls for one read, none asked for by hand"

done

# The interrupt phases last: a failure there does not hide the results above.
for P in ${TAPE_MODES_PERSONALITIES:-versitygw aws}; do
  M=$WORK/m-$P
  step "$P C: a read interrupted by a signal while the recall runs (library in real time)"
  phase "$P" 1
  mount_mode "$M-intr" wait
  out=$(timeout -s KILL 40 "$PY" - "$M-intr/d/00008.bin" <<'PY' || echo "KILLED (not interrupted within 40 s)"
import errno, mmap, os, signal, sys, time
class Interrupted(Exception):
    pass
def on_alarm(*_):
    raise Interrupted()
signal.signal(signal.SIGALRM, on_alarm)
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
buf = mmap.mmap(-1, 1 << 20)
signal.setitimer(signal.ITIMER_REAL, 1.0)
try:
    n = os.readv(fd, [buf])
    print(f"read returned {n} bytes")
except Interrupted:
    print("EINTR")
except OSError as e:
    print(errno.errorcode.get(e.errno, str(e.errno)))
PY
)
  expect "interrupted read" "$out" EINTR
  s=$(catalog_states data | awk -F'\t' '$1 == "d/00008.bin" { print $2 }')
  [[ $s == staging || $s == offline ]] ||
    fail "the read came back only after the recall finished ($s): SIGALRM did not interrupt it"
  echo "   ok: the recall is still running ($s) after the interrupted read"
  expect "mount still answers" "$(stat -c %s "$M-intr/d/00008.bin")" $SIZE
  ls "$M-intr/d" >/dev/null || fail "ls after the interrupted read"
done

end_mounts
stop_tape_gateway
echo "PASS"
