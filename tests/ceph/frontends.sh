#!/usr/bin/env bash
# ceph (issue 20): two stateless radosgw front ends over one cluster, the scale-out model, with
# one reelfs mount on each. Proves:
#  - both mounts read the same objects byte-exact at once (8 readers, 4 per front end);
#  - a file written through the mount on front end 2 is read through the mount on front end 1
#    (one cluster behind both: no front end holds state of its own);
#  - radosgw 2 SIGKILLed while its mount streams 256 MiB: that read either fails with EIO or
#    returns the right bytes, never wrong ones; the mount on front end 1 reads on unaffected;
#    once radosgw 2 is back on its port, the same mount reads the file byte-exact again (no
#    remount).
#  - one mount over both front ends (`--endpoint EP1,EP2`): radosgw 1 SIGKILLed while it reads
#    256 MiB, the read finishes with the right bytes through front end 2; radosgw 1 back on its
#    port is probed back and takes requests again (user.reelfs.metrics "endpoints").
# Run by tests/ceph/run.sh (E2E_SERVER=rgw).
source "$(dirname "$0")/../e2e/lib.sh"
e2e_init ceph-frontends 230
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)

mkdir -p "$ROOT/front"
declare -A want
for i in 0 1 2 3; do want[f$i]=$(gen_file "$ROOT/front/f$i.bin" $((24 * 1048576 + i * 4099)) $((40 + i))); done
want[big]=$(gen_big_file "$ROOT/front/big.bin" $((256 * 1048576 + 5)))
start_gateway
EP1=${RGW_ENDPOINTS%% *}
EP2=${RGW_ENDPOINTS##* }
[[ $EP1 != "$EP2" ]] || fail "cluster.env names one front end: $RGW_ENDPOINTS"

step "a mount on each front end ($EP1, $EP2)"
# --metadata-ttl 0 on front end 1's mount: its listings are not reused, so a key that another
# client writes later is seen at once (with the default 1 h, a cached listing is authoritative:
# docs/semantics.md "Lookup").
ENDPOINT=$EP1 MOUNT_DIR="$WORK/m1" MOUNT_LOG="$WORK/m1.log" mount_bucket front --metadata-ttl 0
PID1=$MOUNT_PID
ENDPOINT=$EP2 MOUNT_DIR="$WORK/m2" MOUNT_LOG="$WORK/m2.log" mount_bucket front
PID2=$MOUNT_PID

step "8 readers, 4 per front end, byte-exact"
pids=()
for m in m1 m2; do
  for i in 0 1 2 3; do
    ( got=$(sha256sum <"$WORK/$m/f$i.bin" | cut -d' ' -f1)
      [[ $got == "${want[f$i]}" ]] || { echo "$m/f$i.bin differs" >&2; exit 1; } ) &
    pids+=($!)
  done
done
for p in "${pids[@]}"; do wait "$p" || fail "a concurrent reader saw wrong bytes"; done

step "written through front end 2, read through front end 1"
gen_file "$WORK/w.bin" $((12 * 1048576 + 1)) 50 >/dev/null
cp "$WORK/w.bin" "$WORK/m2/written-via-2.bin" || fail "cp into the mount on front end 2"
cmp "$WORK/m1/written-via-2.bin" "$WORK/w.bin" || fail "front end 1 reads other bytes"

step "radosgw 2 SIGKILLed mid-read: EIO or the right bytes; front end 1 unaffected"
# A slow reader (dd with a small block) so that the kill lands mid-stream.
( set +e +o pipefail
  dd if="$WORK/m2/big.bin" bs=64K status=none 2>"$WORK/dd2.err" | sha256sum | cut -d' ' -f1 \
    >"$WORK/dd2.sum"
  echo "${PIPESTATUS[0]}" >"$WORK/dd2.rc" ) &
reader=$!
sleep 0.5
"$here/cluster.sh" rgw-kill "$CEPH_DIR" 2 || fail "could not kill radosgw 2"
got1=$(sha256sum <"$WORK/m1/big.bin" | cut -d' ' -f1)
[[ $got1 == "${want[big]}" ]] || fail "front end 1's mount read wrong bytes while 2 was down"
wait "$reader" || true
rc2=$(cat "$WORK/dd2.rc")
if [[ $rc2 == 0 ]]; then
  [[ $(cat "$WORK/dd2.sum") == "${want[big]}" ]] || fail "the read on front end 2 returned WRONG bytes"
  echo "  the read on front end 2 completed with the right bytes (it was ahead of the kill)"
else
  grep -q 'Input/output error' "$WORK/dd2.err" || fail "the read on front end 2: $(cat "$WORK/dd2.err")"
  echo "  the read on front end 2 failed with EIO (dd exit $rc2), as it should"
fi

step "radosgw 2 back on its port: the same mount reads byte-exact again"
"$here/cluster.sh" rgw-start "$CEPH_DIR" 2 || fail "could not restart radosgw 2"
got2=$(sha256sum <"$WORK/m2/big.bin" | cut -d' ' -f1) || fail "read after restart failed"
[[ $got2 == "${want[big]}" ]] || fail "front end 2's mount reads wrong bytes after the restart"

unmount_and_wait "$WORK/m2" "$PID2"
unmount_and_wait "$WORK/m1" "$PID1"

step "one mount over both front ends: radosgw 1 SIGKILLed mid-read, the read goes on through 2"
ENDPOINT="$EP1,$EP2" MOUNT_DIR="$WORK/m3" MOUNT_LOG="$WORK/m3.log" mount_bucket front
PID3=$MOUNT_PID
field() {  # field I NAME: endpoint I of the mount on m3 (user.reelfs.metrics)
  getfattr --absolute-names --only-values -n user.reelfs.metrics "$WORK/m3" |
    "$PY" -c 'import json,sys; print(json.load(sys.stdin)["endpoints"][int(sys.argv[1])][sys.argv[2]])' "$1" "$2"
}
# The reader pauses at 64 MiB; radosgw 1 is killed while it waits (the mount's prefetch in
# flight on both front ends), then it reads on.
"$PY" - "$WORK/m3/big.bin" "$WORK/pause" <<'PY' >"$WORK/m3.read" 2>&1 &
import hashlib, os, sys, time
path, mark = sys.argv[1:3]
h, done = hashlib.sha256(), 0
with open(path, "rb", buffering=0) as f:
    while b := f.read(4 << 20):
        h.update(b)
        done += len(b)
        if done == 64 << 20:
            open(mark, "w").close()
            while not os.path.exists(mark + ".go"):
                time.sleep(0.01)
print(h.hexdigest())
PY
reader=$!
for _ in $(seq 3000); do [[ -e "$WORK/pause" ]] && break; kill -0 "$reader" 2>/dev/null || break; sleep 0.01; done
[[ -e "$WORK/pause" ]] || fail "the reader on m3 did not reach 64 MiB: $(cat "$WORK/m3.read")"
"$here/cluster.sh" rgw-kill "$CEPH_DIR" 1 || fail "could not kill radosgw 1"
touch "$WORK/pause.go"
wait "$reader" || fail "the read over both front ends failed: $(cat "$WORK/m3.read")"
[[ $(cat "$WORK/m3.read") == "${want[big]}" ]] || fail "the read over both front ends returned WRONG bytes"
[[ $(field 0 downs) -ge 1 ]] || fail "front end 1 was never marked down"
echo "  the read finished byte-exact through front end 2 ($(field 1 requests) attempts there)"

step "radosgw 1 back on its port: probed back, it takes requests again"
"$here/cluster.sh" rgw-start "$CEPH_DIR" 1 || fail "could not restart radosgw 1"
for _ in $(seq 300); do [[ $(field 0 state) == up ]] && break; sleep 0.1; done
[[ $(field 0 state) == up ]] || fail "front end 1 not back in the mount's endpoint set"
before=$(field 0 requests)
for i in 0 1 2 3; do
  got=$(sha256sum <"$WORK/m3/f$i.bin" | cut -d' ' -f1)
  [[ $got == "${want[f$i]}" ]] || fail "m3/f$i.bin differs"
done
[[ $(field 0 requests) -gt $before ]] || fail "front end 1 took no request after it came back"
echo "  front end 1 up again: $(( $(field 0 requests) - before )) attempts since"
unmount_and_wait "$WORK/m3" "$PID3"
echo "PASS"
