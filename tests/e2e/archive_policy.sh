#!/usr/bin/env bash
# e2e (issue 14): a checkpoint written through a real reelfs mount flows to tape by the gateway's
# archive policy, goes offline, comes back and reads byte-identical (docs/gateway.md "Archive
# policy").
#
#  - gateway: aws personality, tape hints, LTO-9 library x2000, two archive sets: ckpt/ (after: 1s,
#    cartridges RLE000L9/RLE001L9, disk copies kept) and opt/ (after: 1s, release_after: 1s);
#  - written through the mount: a torch.save checkpoint of 40 MiB of random bytes (or the 40 MiB
#    themselves without torch) under ckpt/, a 3 MiB file under opt/;
#  - the policy archives both: catalog premigrated (opt/ then offline by release_after), the
#    checkpoint's extent on the cartridge image file holds the source's bytes, the AWS CLI reads the
#    premigrated checkpoint; the admin release takes it offline (empty placeholder, GET 403
#    InvalidObjectState);
#  - a fresh mount (no page cache): `reelfs stage --wait` the checkpoint, read it through the mount,
#    sha256 equal to the source (and torch.load gives the tensor); the opt/ file restored on read
#    (--offline=wait), sha256 equal; its restored copy is not released again by release_after;
#  - the admin metrics count the tape writes and recalls; the admin timeline SVG shows "writing"
#    intervals on the sets' cartridges next to the "reading" ones.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/tape_lib.sh"
source "$(dirname "$0")/tape_more.sh"
e2e_init archive_policy 280
export LC_ALL=C
command -v aws >/dev/null || skip "aws (AWS CLI) not installed"
reelfs() { "$REELFS_BIN" "$@"; }  # endpoint: AWS_ENDPOINT_URL (start_gateway)

mkdir -p "$ROOT/train"
TAPE_HINTS=true ARCHIVE_EXTRA_YAML='scan_interval: 200ms
policy:
  - name: checkpoints
    bucket: train
    prefix: ckpt/
    after: 1s
    cartridges: [RLE000L9, RLE001L9]
  - name: optimizer
    bucket: train
    prefix: opt/
    after: 1s
    release_after: 1s
    cartridges: [RLO000L9]' tape_config aws
start_tape_gateway
mount_bucket train

step "write a checkpoint and a second file through the mount"
head -c $((40 * 1048576 + 4321)) /dev/urandom >"$WORK/weights.bin"
TPY=$(find_python torch) || TPY=""
mkdir -p "$MNT/ckpt" "$MNT/opt"
if [[ -n $TPY ]]; then
  "$TPY" -c 'import sys, torch; torch.save({"w": torch.frombuffer(bytearray(open(sys.argv[1], "rb").read()), dtype=torch.uint8)}, sys.argv[2])' \
    "$WORK/weights.bin" "$WORK/step-100.pt" || fail "torch.save"
  what="torch.save checkpoint"
else
  cp "$WORK/weights.bin" "$WORK/step-100.pt"
  what="40 MiB of random bytes (no python3 with torch)"
fi
cp "$WORK/step-100.pt" "$MNT/ckpt/step-100.pt" || fail "cp through the mount"
head -c 3145728 /dev/urandom >"$WORK/opt.bin"
cp "$WORK/opt.bin" "$MNT/opt/opt-100.bin" || fail "cp through the mount"
CKPT_SUM=$(sha256sum <"$WORK/step-100.pt" | cut -d' ' -f1)
OPT_SUM=$(sha256sum <"$WORK/opt.bin" | cut -d' ' -f1)
echo "   $what: $(stat -c %s "$WORK/step-100.pt") bytes, sha256 $CKPT_SUM"

step "the policy archives them; opt/ goes offline by release_after"
# One catalog read: two reads would count opt/ twice when it goes offline between them.
# Whether KEY is in STATE. The listing is read whole first: `grep -q` in a pipe would exit at the
# first match and the lister's next line would die of EPIPE, failing the pipe (pipefail).
has_state() {
  local states
  states=$(catalog_states train)
  grep -qx "$1"$'\t'"$2" <<<"$states"
}
archived() { catalog_states train | awk -F'\t' '$2 == "premigrated" || $2 == "offline" { n++ } END { print n + 0 }'; }
for _ in $(seq 300); do
  [[ $(archived) == 2 ]] && break
  sleep 0.1
done
[[ $(archived) == 2 ]] || fail "not archived by the policy: $(catalog_states train)"
has_state ckpt/step-100.pt premigrated ||
  fail "the checkpoint is not premigrated: $(catalog_states train)"
for _ in $(seq 300); do
  has_state opt/opt-100.bin offline && break
  sleep 0.1
done
has_state opt/opt-100.bin offline ||
  fail "release_after did not release opt/: $(catalog_states train)"
[[ $(stat -c %s "$ROOT/train/opt/opt-100.bin") == 0 ]] || fail "opt/ disk copy not released"
echo "   ok: $(catalog_states train | tr '\t\n' '= ')"

step "the checkpoint's extent on RLE000L9 holds the source's bytes; the AWS CLI reads it"
img="$ROOT/.reelfs-gateway/tapes/RLE000L9.img"
[[ -s $img ]] || fail "no cartridge image $img"
# The extent on the image holds the source's bytes (block size 4096, tape_config).
"$PY" - "$ROOT/.reelfs-gateway/catalog.db" "$img" "$CKPT_SUM" <<'PY' || fail "extent on the cartridge image"
import hashlib, sqlite3, sys
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True, timeout=10)
cart, start, n = db.execute("SELECT cartridge, start_block, bytes FROM archive_objects "
                            "WHERE bucket = 'train' AND key = 'ckpt/step-100.pt'").fetchone()
assert cart == "RLE000L9", cart
with open(sys.argv[2], "rb") as f:
    f.seek(start * 4096)
    got = hashlib.sha256(f.read(n)).hexdigest()
assert got == sys.argv[3], (got, sys.argv[3])
print("   extent: %s block %d, %d bytes, sha256 matches" % (cart, start, n))
PY
# GLACIER (aws personality) but the disk copy is there: the CLI must be told to try.
aws --endpoint-url "$ENDPOINT" s3 cp --only-show-errors --force-glacier-transfer \
  s3://train/ckpt/step-100.pt "$WORK/dl" || fail "aws cp premigrated"
[[ $(sha256sum <"$WORK/dl" | cut -d' ' -f1) == "$CKPT_SUM" ]] || fail "premigrated GET differs"
echo "   ok: GET while premigrated, sha256 equal"

step "admin release: the checkpoint goes offline: placeholder, GET 403 InvalidObjectState"
release_bucket train ckpt%2F >/dev/null
has_state ckpt/step-100.pt offline || fail "not released: $(catalog_states train)"
[[ $(stat -c %s "$ROOT/train/ckpt/step-100.pt") == 0 ]] || fail "disk copy not released"
rc=0; aws --endpoint-url "$ENDPOINT" s3 cp --only-show-errors --force-glacier-transfer \
  s3://train/ckpt/step-100.pt "$WORK/dl" 2>"$WORK/get.err" || rc=$?
[[ $rc != 0 ]] && grep -q InvalidObjectState "$WORK/get.err" || fail "GET offline: rc $rc $(cat "$WORK/get.err")"

step "fresh mount; reelfs stage --wait the checkpoint, read it through the mount"
unmount_and_wait "$MNT" "$MOUNT_PID"
mount_bucket train
rc=0; reelfs stage --wait --timeout 120s "s3://train/ckpt/step-100.pt" >"$WORK/stage.out" 2>&1 || rc=$?
[[ $rc == 0 ]] || fail "stage exited $rc: $(tail -n 5 "$WORK/stage.out")"
got=$(sha256sum <"$MNT/ckpt/step-100.pt" | cut -d' ' -f1)
[[ $got == "$CKPT_SUM" ]] || fail "checkpoint read through the mount differs: $got"
echo "   ok: sha256 of ckpt/step-100.pt through the mount"
if [[ -n $TPY ]]; then
  "$TPY" -c 'import sys, torch; d = torch.load(sys.argv[1]); assert bytes(d["w"].numpy()) == open(sys.argv[2], "rb").read()' \
    "$MNT/ckpt/step-100.pt" "$WORK/weights.bin" || fail "torch.load of the restored checkpoint"
  echo "   ok: torch.load through the mount gives the saved tensor"
fi

step "the opt/ file: restored on read (--offline=wait)"
got=$(sha256sum <"$MNT/opt/opt-100.bin" | cut -d' ' -f1)
[[ $got == "$OPT_SUM" ]] || fail "opt-100.bin read through the mount differs: $got"
echo "   ok: sha256 of opt/opt-100.bin through the mount"

step "restored copies stay: release_after (1 s) is for never-restored copies"
scans=$(tape_metrics | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["archive"]["policy"]["scans"])')
for _ in $(seq 300); do  # until the engine has scanned 10 more times (200 ms apart)
  (( $(tape_metrics | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["archive"]["policy"]["scans"])') >= scans + 10 )) && break
  sleep 0.2
done
[[ $(catalog_count train premigrated) == 2 ]] || fail "restored copies released: $(catalog_states train)"

step "metrics and the admin timeline show the archive writes next to the recalls"
tape_metrics >"$WORK/metrics.json"
"$PY" - "$WORK/metrics.json" <<'PY' || fail "metrics: $(cat "$WORK/metrics.json")"
import json, sys
m = json.load(open(sys.argv[1]))
t, a = m["tape"], m["archive"]
assert t["writes"]["ok"] >= 1 and t["writes"]["failed"] == 0, t["writes"]
assert t["bytes_written"] >= 40 * 1048576 + 3145728, t["bytes_written"]
assert t["drive_time_s"]["writing"] > 0, t["drive_time_s"]
assert t["requests"]["ok"] == 2, t["requests"]
assert a["policy"]["archived_objects"] == 2 and a["policy"]["released_objects"] == 1, a["policy"]
assert a["released_objects"] == 2, a  # one by release_after, one by the admin release
print("   tape: %d writes (%d bytes, %.1f s simulated writing), %d recalls" %
      (t["writes"]["ok"], t["bytes_written"], t["drive_time_s"]["writing"], t["requests"]["ok"]))
PY
gw_admin GET timeline.svg >"$WORK/timeline.svg"
"$PY" - "$WORK/timeline.svg" <<'PY' || fail "timeline"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
titles = [e.text or "" for e in root.iter() if e.tag.endswith("title")]
for cart in ("RLE000L9", "RLO000L9"):
    writes = [t for t in titles if t.startswith("writing " + cart)]
    reads = [t for t in titles if t.startswith("reading " + cart)]
    assert writes and reads, (cart, titles[:30])
    print("   timeline: %s: %d writing, %d reading intervals" % (cart, len(writes), len(reads)))
PY

unmount_and_wait "$MNT" "$MOUNT_PID"
stop_tape_gateway
echo "PASS"
