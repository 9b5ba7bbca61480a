#!/usr/bin/env bash
# reelfs stage / status / wait against reelfs-gateway's archive (issue 5), for both the versitygw
# and the aws personality: 2 000 objects released onto 20 cartridges, 4 drives, the simulated
# library on a fast clock (tape_lib.sh).
#   - `status --json` agrees object by object with the gateway's catalog, before and after;
#   - `wait` on offline objects nobody requested exits 1 and requests nothing;
#   - `stage -r --wait` of an s3:// URL exits 0, every object comes back readable (HEAD state of
#     all through status, GET + sha256 of a sample of 50) with at most one mount per cartridge:
#     versitygw without tape hints (cartridges hold key ranges: key order is tape order), aws with
#     hints and striped cartridges (only the hint order keeps it to one mount each);
#   - the same through a path under a mount, once the mount publishes user.reelfs.mount;
#   - a path outside any mount and a bad flag value exit 2;
#   - a stage whose --timeout passes while the library (now at real speed) still works exits 75.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/tape_lib.sh"
# The gateway fdatasyncs every object it archives and every recalled copy (4 000 each way): on
# tmpfs that costs nothing, and this test is about the client, not the disk.
if [[ -z "${TMPDIR:-}" && -d /dev/shm && -w /dev/shm ]]; then export TMPDIR=/dev/shm; fi
e2e_init tape_stage 560
step() { printf '== [%3ds] %s\n' "$SECONDS" "$*"; }

N=2000
CARTRIDGES=20
SIZE=4096
SAMPLE=50
export REELFS_LEDGER="$WORK/ledger.sqlite"
reelfs() { "$REELFS_BIN" "$@"; }  # endpoint: AWS_ENDPOINT_URL (start_gateway)
# Fast polling: the library runs 2000x real time.
STAGE_FLAGS=(--poll 100ms --poll-max 1s --rate 1000)

# status_vs_catalog BUCKET STATUS_JSON [HINTS]: every object in the status document and in the
# catalog, with matching states (and cartridges when HINTS=1). Prints the state counts.
status_vs_catalog() {
  local bucket=$1 json=$2 hints=${3:-0}
  "$PY" - "$ROOT/.reelfs-gateway/catalog.db" "$bucket" "$json" "$hints" <<'PY'
import collections, json, sqlite3, sys
db_path, bucket, doc_path, hints = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
db = sqlite3.connect("file:%s?mode=ro" % db_path, uri=True, timeout=10)
catalog = {}
for key, state, staging, cartridge in db.execute(
        "SELECT o.key, a.state, a.staging, a.cartridge FROM objects o LEFT JOIN archive_objects a "
        "ON a.bucket = o.bucket AND a.key = o.key WHERE o.bucket = ?", (bucket,)):
    name = {None: "online", 0: "online", 1: "premigrated", 2: "offline"}[state]
    if name == "offline" and staging:
        name = "staging"
    catalog[key] = (name, cartridge)
doc = json.load(open(doc_path))
# What the client may call each catalog state (versitygw lists premigrated objects as STANDARD:
# online; aws as GLACIER with a restore: restored).
allowed = {"online": {"online"}, "premigrated": {"online", "restored"},
           "offline": {"offline"}, "staging": {"staging"}}
seen = {}
bad = []
for o in doc["objects"]:
    seen[o["key"]] = o
    c = catalog.get(o["key"])
    if c is None:
        bad.append("%s: not in the catalog" % o["key"]); continue
    if o["state"] not in allowed[c[0]]:
        bad.append("%s: status says %s, catalog %s" % (o["key"], o["state"], c[0]))
    if hints and c[1] and (o["tape"] or {}).get("cartridge") != c[1]:
        bad.append("%s: tape %r, catalog cartridge %s" % (o["key"], o["tape"], c[1]))
missing = sorted(set(catalog) - set(seen))
if missing:
    bad.append("%d catalog objects missing from status, e.g. %s" % (len(missing), missing[:3]))
if bad:
    print("\n".join(bad[:20]), file=sys.stderr); sys.exit(1)
counts = collections.Counter(o["state"] for o in doc["objects"])
total = sum(v["objects"] for k, v in doc["summary"].items() if isinstance(v, dict))
assert total == len(doc["objects"]) == doc["summary"]["total_objects"], (total, len(doc["objects"]))
print(" ".join("%s=%d" % kv for kv in sorted(counts.items())))
PY
}

# sample_gets BUCKET: GET + sha256 of SAMPLE objects spread over the bucket.
sample_gets() {
  local bucket=$1 i key want got
  for ((i = 0; i < N; i += N / SAMPLE)); do
    key=$(printf 'd/%05d.bin' "$i")
    want=$(awk -v k="$key" '$2 == k { print $1 }' "$WORK/$bucket.sums")
    got=$(reelfs cat "s3://$bucket/$key" | sha256sum | cut -d' ' -f1)
    [[ -n $want && $got == "$want" ]] || fail "$bucket/$key: sha256 $got, want $want"
  done
}

run_personality() {
  local p=$1 hints=$2 order=$3 bucket="stage-$1" rc
  step "$p: $N objects on $CARTRIDGES cartridges (order $order, hints $hints)"
  ROOT="$WORK/root-$p"
  mkdir -p "$ROOT"
  gen_objects "$bucket" "$N" "$SIZE"
  TAPE_HINTS=$hints tape_config "$p" "$WORK/gateway-$p.yaml"
  local t0=$SECONDS
  archive_offline "$bucket" "$CARTRIDGES" "$order"
  echo "archived in $((SECONDS - t0)) s"
  start_tape_gateway

  step "$p: status --json agrees with the catalog (all offline)"
  reelfs status -r --json "s3://$bucket/" >"$WORK/$p-status0.json" || fail "status exited $?"
  counts=$(status_vs_catalog "$bucket" "$WORK/$p-status0.json" "$([[ $hints == true ]] && echo 1)") ||
    fail "$p: status disagrees with the catalog before staging"
  echo "$counts"
  [[ $counts == "offline=$N" ]] || fail "$p: expected $N offline, got $counts"

  step "$p: wait on offline objects nobody requested exits 1, requests nothing"
  rc=0; reelfs wait --timeout 1s --json "s3://$bucket/d/" >"$WORK/$p-wait0.json" 2>"$WORK/$p-wait0.err" || rc=$?
  [[ $rc == 1 ]] || fail "$p: wait exited $rc, want 1: $(tail -n 3 "$WORK/$p-wait0.err")"
  "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["result"]=="failed" and len(d["failed"])==int(sys.argv[2]), d["result"]' \
    "$WORK/$p-wait0.json" "$N" || fail "$p: wait --json document"
  [[ $(tape_metrics | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["archive"]["recalls_submitted"])') == 0 ]] ||
    fail "$p: wait submitted recalls"

  step "$p: stage -r --wait s3://$bucket/"
  t0=$SECONDS
  rc=0; reelfs stage -r --wait --timeout 150s --json "${STAGE_FLAGS[@]}" "s3://$bucket/" \
    >"$WORK/$p-stage.json" 2>"$WORK/$p-stage.err" || rc=$?
  echo "stage took $((SECONDS - t0)) s; $(head -n 1 "$WORK/$p-stage.err")"
  [[ $rc == 0 ]] || fail "$p: stage exited $rc: $(tail -n 5 "$WORK/$p-stage.err")"
  "$PY" - "$WORK/$p-stage.json" "$N" <<'PY' || fail "$p: stage --json document"
import json, sys
d = json.load(open(sys.argv[1])); n = int(sys.argv[2])
s = d["summary"]
assert d["result"] == "done" and d["exit_code"] == 0, d["result"]
assert d["requested"] == n, d["requested"]
assert s["online"]["objects"] + s["restored"]["objects"] == n, s
assert d["failed"] == [], d["failed"][:3]
PY
  read -r total max_per mounted < <(tape_mounts)
  echo "mounts: $total total, at most $max_per per cartridge, $mounted cartridges mounted"
  ((max_per <= 1 && total <= CARTRIDGES && mounted == CARTRIDGES)) ||
    fail "$p: $total mounts (max $max_per per cartridge) for $CARTRIDGES cartridges"

  step "$p: every object readable: status --json agrees with the catalog; $SAMPLE GETs verified"
  reelfs status -r --json "s3://$bucket/" >"$WORK/$p-status1.json" || fail "status exited $?"
  counts=$(status_vs_catalog "$bucket" "$WORK/$p-status1.json" "$([[ $hints == true ]] && echo 1)") ||
    fail "$p: status disagrees with the catalog after staging"
  echo "$counts"
  [[ $counts == "online=$N" || $counts == "restored=$N" ]] || fail "$p: not all readable: $counts"
  sample_gets "$bucket"

  step "$p: stage through a path under a mount"
  mount_bucket "$bucket"
  if "$PY" -c 'import os,sys; os.getxattr(sys.argv[1], "user.reelfs.mount")' "$MNT" 2>/dev/null; then
    release_bucket "$bucket" >/dev/null
    rc=0; "$REELFS_BIN" stage --wait --timeout 150s "${STAGE_FLAGS[@]}" "$MNT/d" \
      >"$WORK/$p-mstage.out" 2>&1 || rc=$?
    [[ $rc == 0 ]] || fail "$p: stage of $MNT/d exited $rc: $(tail -n 5 "$WORK/$p-mstage.out")"
    tail -n 1 "$WORK/$p-mstage.out"
    "$REELFS_BIN" status --json "$MNT/d" >"$WORK/$p-status2.json" || fail "status of $MNT/d"
    status_vs_catalog "$bucket" "$WORK/$p-status2.json" >/dev/null ||
      fail "$p: status through the mount disagrees with the catalog"
    want=$(awk '$2 == "d/00007.bin" { print $1 }' "$WORK/$bucket.sums")
    [[ $(sha256sum <"$MNT/d/00007.bin" | cut -d' ' -f1) == "$want" ]] || fail "$p: bytes via the mount"
  else
    echo "skipped: the mount does not publish user.reelfs.mount (yet)"
  fi
  unmount_and_wait "$MNT" "$MOUNT_PID"
  MOUNT_PID=""
  stop_tape_gateway
}

run_personality versitygw false key
run_personality aws true striped

step "usage and setup errors exit 2"
rc=0; reelfs status "$WORK" 2>"$WORK/usage.err" || rc=$?
[[ $rc == 2 ]] && grep -q "not under a reelfs mount" "$WORK/usage.err" ||
  fail "status of a plain directory exited $rc: $(cat "$WORK/usage.err")"
rc=0; reelfs stage --tier fast "s3://stage-aws/" 2>"$WORK/usage.err" || rc=$?
[[ $rc == 2 ]] || fail "stage --tier fast exited $rc: $(cat "$WORK/usage.err")"

step "a stage that times out while the library works exits 75"
# Same root (aws), the library at real speed now: a recall takes a robot move and a load (~30 s).
TAPE_SPEEDUP=1 TAPE_HINTS=true tape_config aws "$WORK/gateway-slow.yaml"
start_tape_gateway
release_bucket stage-aws >/dev/null
rc=0; reelfs stage --wait --timeout 2s --json "${STAGE_FLAGS[@]}" "s3://stage-aws/d/00001.bin" \
  >"$WORK/slow.json" 2>"$WORK/slow.err" || rc=$?
[[ $rc == 75 ]] || fail "stage with --timeout 2s exited $rc, want 75: $(tail -n 3 "$WORK/slow.err")"
"$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["result"]=="timed_out" and d["summary"]["staging"]["objects"]==1, d' \
  "$WORK/slow.json" || fail "timed-out --json document"
echo "PASS"
