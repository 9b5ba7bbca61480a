#!/usr/bin/env bash
# ceph (issue 20): tape semantics degrade cleanly on a server without Glacier restore. Ceph RGW 16
# has storage classes (placement targets: pools) but no RestoreObject and no x-amz-restore. Proves:
#  - every object reads as `online` (user.hsm.state), user.s3.storage_class is what RGW reports:
#    STANDARD, and a class of RGW's own (COLD, added to the zone's placement by cluster.sh);
#  - a mount with --offline=eacces reads every file (the offline path is never taken:
#    offline_reads and restore_waits stay 0 in user.reelfs.metrics);
#  - `reelfs status` counts every object online; `reelfs stage -r --wait` says there is nothing
#    to restore and exits 0, sending no RestoreObject (RGW would refuse one).
# Run by tests/ceph/run.sh (E2E_SERVER=rgw).
source "$(dirname "$0")/../e2e/lib.sh"
e2e_init ceph-tape 170
export LC_ALL=C
command -v getfattr >/dev/null || skip "getfattr not installed (Debian package attr)"

step "objects by the AWS CLI: STANDARD ones, and COLD ones"
mkdir -p "$ROOT/tapeb/d/e"
for i in 1 2 3; do gen_file "$ROOT/tapeb/d/std-$i.bin" $((100000 * i)) "$i" >/dev/null; done
gen_file "$ROOT/tapeb/d/e/deep.bin" 4097 9 >/dev/null
start_gateway
gen_file "$WORK/cold.bin" 300001 33 >/dev/null
# s3api, not `s3 cp`: the CLI's s3 commands accept AWS's class names only. COLD is the
# placement class tests/ceph/cluster.sh adds to the zone before radosgw starts.
aws --endpoint-url "$ENDPOINT" s3api put-object --bucket tapeb --key c/cold.bin \
  --storage-class COLD --body "$WORK/cold.bin" >/dev/null 2>"$WORK/cold.err" ||
  fail "PUT with storage class COLD refused: $(cat "$WORK/cold.err")"
sc=$(aws --endpoint-url "$ENDPOINT" s3api head-object --bucket tapeb --key c/cold.bin \
       --query StorageClass --output text)
echo "  RGW's HEAD: StorageClass $sc"
[[ $sc == COLD ]] || fail "RGW reports storage class $sc for the COLD object"

step "--offline=eacces mount: every object online, storage classes as RGW reports them"
mount_bucket tapeb --offline eacces
MAIN_PID=$MOUNT_PID
for f in d/std-1.bin d/std-2.bin d/std-3.bin d/e/deep.bin c/cold.bin; do
  st=$(getfattr --only-values -n user.hsm.state "$MNT/$f") || fail "getfattr user.hsm.state $f"
  [[ $st == online ]] || fail "$f is '$st', want online"
done
sc=$(getfattr --only-values -n user.s3.storage_class "$MNT/c/cold.bin") || fail "getfattr sc"
[[ $sc == COLD ]] || fail "user.s3.storage_class of the COLD object: '$sc'"
sc=$(getfattr --only-values -n user.s3.storage_class "$MNT/d/std-1.bin") || fail "getfattr sc"
[[ $sc == STANDARD || -z $sc ]] || fail "user.s3.storage_class of a STANDARD object: '$sc'"
echo "  user.s3.storage_class: STANDARD object '$sc', COLD object 'COLD'"
summary=$(getfattr --only-values -n user.hsm.summary "$MNT") || fail "getfattr user.hsm.summary"
echo "  user.hsm.summary: $summary"
"$PY" - "$summary" <<'PY' || fail "summary: $summary"
import json, sys
s = json.loads(sys.argv[1])["objects"]
assert s["online"] == 5 and s["offline"] == 0 and s["staging"] == 0, s
PY

step "every byte reads under --offline=eacces; the offline path is never taken"
for f in d/std-1.bin d/std-2.bin d/std-3.bin d/e/deep.bin; do
  cmp "$MNT/$f" "$ROOT/tapeb/$f" || fail "$f differs"
done
cmp "$MNT/c/cold.bin" "$WORK/cold.bin" || fail "the COLD object differs"
metrics=$(getfattr --only-values -n user.reelfs.metrics "$MNT") || fail "getfattr metrics"
"$PY" - "$metrics" <<'PY' || fail "metrics: $metrics"
import json, sys
fs = json.loads(sys.argv[1])["fs"]
assert fs["offline_reads"] == 0 and fs["restore_waits"] == 0, fs
PY

step "reelfs status: all online; reelfs stage -r --wait: nothing to restore, exit 0"
"$REELFS_BIN" status "$MNT" >"$WORK/status" || fail "reelfs status"
cat "$WORK/status"
[[ $(grep -c '^online' "$WORK/status") == 5 ]] || fail "status lines: $(cat "$WORK/status")"
rc=0
"$REELFS_BIN" stage -r --wait --timeout 30s "s3://tapeb/" --endpoint "$ENDPOINT" \
  >"$WORK/stage" 2>&1 || rc=$?
cat "$WORK/stage"
[[ $rc == 0 ]] || fail "reelfs stage exited $rc"
grep -q '^plan: 0 of 5 objects to request (0 B); 5 readable' "$WORK/stage" ||
  fail "reelfs stage does not say that nothing needs a restore"
"$REELFS_BIN" stage --wait --timeout 30s "$MNT/d" >"$WORK/stage2" 2>&1 ||
  fail "reelfs stage of a mounted directory: $(cat "$WORK/stage2")"

unmount_and_wait "$MNT" "$MAIN_PID"
echo "PASS"
