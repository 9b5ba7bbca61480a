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
# (Failover of one mount across both front ends is the scale-out issue's multi-endpoint client.)
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
echo "PASS"
