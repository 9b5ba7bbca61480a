#!/usr/bin/env bash
# bench/tape: reading a dataset that sits on simulated tape, three ways (bench/tape/README.md).
#
#   bench/tape/run.sh                       # 2 000 objects on 20 cartridges, 4 drives: a few minutes
#   CASES="b" bench/tape/run.sh             # only some of: a b  ((c) is always computed)
#
#  (a) a DataLoader in random order (shuffle=True, 4 workers) through a --offline=wait mount,
#      nothing staged: every read of an offline file asks for its own recall (today's tools);
#  (b) `reelfs stage -r --wait` of the whole directory, then the same DataLoader reads it;
#  (c) the lower bound from the simulator's parameters and the objects' places on tape
#      (bench/tape/lower_bound.py).
# Each of (a) and (b) runs on a fresh gateway (library in its initial state, everything offline)
# and reads every object, checked against its sha256. Simulated time, mounts and drive time come
# from the gateway's admin metrics (docs/protocols/admin.md), as differences over the run.
#
# Environment (all optional):
#   BUILD_DIR=build            where gateway/reelfs-gateway and cli/reelfs are
#   OBJECTS=2000 CARTRIDGES=20 DRIVES=4 OBJECT_BYTES=262144
#   SCALE=1600                 byte-valued drive parameters divided by this (README: each
#                              256 KiB object then stands for a ~420 MB one on a real LTO-9)
#   SPEEDUP_A=1000 SPEEDUP_B=10 simulated seconds per real second in (a) and (b)
#   WORKERS=4                  DataLoader workers
#   STAGE_OPTS                 `reelfs stage` options (default: --rate 5000 --poll 100ms
#                              --poll-max 500ms: the library runs 10x real time)
#   RESULT_FILE                markdown table (default /tmp/reelfs-tape-bench-DATE.md)
#   KEEP_WORK=1                keep the work directory (under $TMPDIR, default /dev/shm)
#   REELFS_GATEWAY_BIN, REELFS_BIN   binaries other than $BUILD_DIR's
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
BUILD_DIR=${BUILD_DIR:-build}
[[ $BUILD_DIR = /* ]] || BUILD_DIR="$repo/$BUILD_DIR"
OBJECTS=${OBJECTS:-2000}
CARTRIDGES=${CARTRIDGES:-20}
DRIVES=${DRIVES:-4}
OBJECT_BYTES=${OBJECT_BYTES:-262144}
SCALE=${SCALE:-1600}
SPEEDUP_A=${SPEEDUP_A:-1000}
SPEEDUP_B=${SPEEDUP_B:-10}
WORKERS=${WORKERS:-4}
CASES=${CASES:-"a b"}
STAGE_OPTS=${STAGE_OPTS:---rate 5000 --poll 100ms --poll-max 500ms}
stamp=$(date -u +%Y%m%d-%H%M%S)
RESULT_FILE=${RESULT_FILE:-/tmp/reelfs-tape-bench-$stamp.md}
export REELFS_GATEWAY_BIN=${REELFS_GATEWAY_BIN:-$BUILD_DIR/gateway/reelfs-gateway}
export REELFS_BIN=${REELFS_BIN:-$BUILD_DIR/cli/reelfs}
# The gateway fdatasyncs every archived and every restored object: on a disk, 2 000 of them each
# way cost tens of seconds of real time, which the library's fast clock would count as thousands
# of simulated seconds. A tmpfs work directory (1.5 GB) keeps the disk out of the measurement.
if [[ -z "${TMPDIR:-}" && -d /dev/shm && -w /dev/shm ]]; then export TMPDIR=/dev/shm; fi

source "$repo/tests/e2e/lib.sh"
source "$repo/tests/e2e/tape_lib.sh"
source "$repo/tests/e2e/tape_more.sh"
set +e  # a benchmark reports what failed instead of stopping at the first non-zero status
e2e_init tape-bench 3000
TPY=$(find_python torch numpy) || skip "no python3 can import torch (Debian: python3-torch)"
export PYTHONPATH="$repo/python" PYTHONDONTWRITEBYTECODE=1
log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }

# The library: LTO-9 full height, every byte-valued parameter divided by SCALE (rate, capacity,
# the rewind classes); times as the preset has them. One block per object.
rate=$("$PY" -c "print(400 / $SCALE)")
capacity=$("$PY" -c "print(int(18e12 / $SCALE))")
small_gb=$("$PY" -c "print(5 / $SCALE)")
medium_gb=$("$PY" -c "print(50 / $SCALE)")
export TAPE_DRIVES=$DRIVES TAPE_BLOCK_BYTES=$OBJECT_BYTES TAPE_HINTS=true
export TAPE_EXTRA_YAML="drive:
  rate_mb_s: $rate
  capacity_bytes: $capacity
  rewind_small_gb: $small_gb
  rewind_medium_gb: $medium_gb"
lb_set=(--set "drive.rate_mb_s=$rate" --set "drive.capacity_bytes=$capacity"
        --set "drive.rewind_small_gb=$small_gb" --set "drive.rewind_medium_gb=$medium_gb"
        --set "block_bytes=$OBJECT_BYTES")

log "generating $OBJECTS objects of $OBJECT_BYTES bytes; archiving them on $CARTRIDGES cartridges"
gen_objects data "$OBJECTS" "$OBJECT_BYTES"
tape_config versitygw
archive_offline data "$CARTRIDGES" key
"$PY" "$here/lower_bound.py" "$ROOT/.reelfs-gateway/catalog.db" data --drives "$DRIVES" \
  "${lb_set[@]}" >"$WORK/c.json" || fail "lower_bound.py failed"
log "(c) lower bound: $("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["lower_bound_s"])' "$WORK/c.json") s"

snapshot() { tape_metrics >"$WORK/$1.json" || fail "metrics"; }
# run_case NAME SPEEDUP: fresh gateway, everything offline, a wait mount.
start_case() {
  TAPE_SPEEDUP=$2 tape_config versitygw
  start_tape_gateway
  release_bucket data >/dev/null
  [[ $(catalog_count data offline) == "$OBJECTS" ]] || fail "not all objects offline"
  TAPE_OFFLINE_TIMEOUT=3600s mount_tape data "$MNT" wait
  CASE_PID=$MOUNT_PID
}
end_case() {
  unmount_and_wait "$MNT" "$CASE_PID"
  stop_tape_gateway
}

for c in $CASES; do
  case $c in
    a)
      log "(a) DataLoader, random order, --offline=wait, no staging (library x$SPEEDUP_A)"
      # Polled every 10-20 ms (10-20 simulated s at x1000, against ~200 s per recall), so the
      # client's latency barely adds to what the library itself costs.
      TAPE_RESTORE_POLL=10ms TAPE_RESTORE_POLL_MAX=20ms start_case a "$SPEEDUP_A"
      snapshot a0
      t0=$(date +%s.%N)
      "$TPY" "$here/read.py" "$MNT" "$WORK/data.sums" --workers "$WORKERS" --order random \
        >"$WORK/a.read" 2>"$WORK/a.err" || log "(a) reader failed: $(tail -n 3 "$WORK/a.err")"
      t1=$(date +%s.%N)
      snapshot a1
      echo "{\"wall_s\": $("$PY" -c "print(round($t1 - $t0, 1))")}" >"$WORK/a.wall"
      end_case
      ;;
    b)
      log "(b) reelfs stage -r --wait, then the DataLoader (library x$SPEEDUP_B)"
      start_case b "$SPEEDUP_B"
      # The training process is up (python, torch imported) before staging starts, and reads
      # as soon as `reelfs stage --wait` returns.
      "$TPY" "$here/read.py" "$MNT" "$WORK/data.sums" --workers "$WORKERS" --order random \
        --start-when "$WORK/b.staged" >"$WORK/b.read" 2>"$WORK/b.err" &
      reader=$!
      for _ in $(seq 600); do [[ -e "$WORK/b.staged.ready" ]] && break; sleep 0.1; done
      snapshot b0
      t0=$(date +%s.%N)
      "$REELFS_BIN" stage -r --wait $STAGE_OPTS "$MNT/d" >"$WORK/b.stage" 2>&1 ||
        log "(b) reelfs stage exited $?: $(tail -n 3 "$WORK/b.stage")"
      touch "$WORK/b.staged"
      t1=$(date +%s.%N)
      snapshot b1
      wait "$reader" || log "(b) reader failed: $(tail -n 3 "$WORK/b.err")"
      t2=$(date +%s.%N)
      snapshot b2
      echo "{\"wall_s\": $("$PY" -c "print(round($t2 - $t0, 1))"), \"stage_wall_s\": $("$PY" -c "print(round($t1 - $t0, 1))")}" >"$WORK/b.wall"
      end_case
      ;;
    *) fail "unknown case $c (a b)" ;;
  esac
done

"$PY" - "$WORK" "$OBJECTS" "$CARTRIDGES" "$DRIVES" "$OBJECT_BYTES" "$SCALE" "$SPEEDUP_A" \
  "$SPEEDUP_B" >"$RESULT_FILE" <<'PY'
import json, os, sys
work, objects, carts, drives, size, scale, sa, sb = sys.argv[1:]
def load(name):
    p = os.path.join(work, name)
    return json.load(open(p)) if os.path.exists(p) and os.path.getsize(p) else None
BUSY = ("loading", "locating", "reading", "rewinding", "unloading")
def delta(m0, m1):
    t0, t1 = m0["tape"], m1["tape"]
    busy = sum(t1["drive_time_s"][k] - t0["drive_time_s"][k] for k in BUSY)
    reading = t1["drive_time_s"]["reading"] - t0["drive_time_s"]["reading"]
    per0, per1 = t0["mounts"]["per_cartridge"], t1["mounts"]["per_cartridge"]
    per = {k: v - per0.get(k, 0) for k, v in per1.items()}
    return {"sim_s": t1["now_s"] - t0["now_s"], "mounts": t1["mounts"]["total"] - t0["mounts"]["total"],
            "max_per_cart": max(per.values(), default=0), "eff": reading / busy if busy else 0,
            "recalls": m1["archive"]["recalls_submitted"] - m0["archive"]["recalls_submitted"]}
rows = []
c = load("c.json")
res = {}
a0, a1 = load("a0.json"), load("a1.json")
if a0 and a1:
    res["a"] = delta(a0, a1); res["a"]["wall"] = load("a.wall")["wall_s"]
    res["a"]["read"] = load("a.read")
b0, b1, b2 = load("b0.json"), load("b1.json"), load("b2.json")
if b0 and b2:
    res["b"] = delta(b0, b2); res["b"]["wall"] = load("b.wall")["wall_s"]
    res["b"]["stage_sim_s"] = b1["tape"]["now_s"] - b0["tape"]["now_s"]
    res["b"]["read"] = load("b.read")
print(f"Dataset: {objects} objects of {int(size) // 1024} KiB on {carts} cartridges, {drives} drives, "
      f"byte parameters / {scale}; library x{sa} in (a), x{sb} in (b).\n")
print("| way | simulated time (s) | vs (c) | mounts | max mounts per cartridge | recalls | drive efficiency (reading / busy) | wall (s) | samples verified |")
print("|---|---|---|---|---|---|---|---|---|")
lb = c["lower_bound_s"]
names = {"a": "(a) DataLoader, random order, --offline=wait, no staging",
         "b": "(b) `reelfs stage -r --wait`, then the DataLoader"}
for k in ("a", "b"):
    if k not in res:
        print(f"| {names[k]} | not run | | | | | | | |"); continue
    r = res[k]
    extra = f" (stage {r['stage_sim_s']:.0f})" if k == "b" else ""
    samples = r["read"]["samples"] if r.get("read") else "failed"
    print(f"| {names[k]} | {r['sim_s']:.0f}{extra} | {r['sim_s'] / lb:.2f}x | {r['mounts']} | "
          f"{r['max_per_cart']} | {r['recalls']} | {r['eff']:.1%} | {r['wall']} | {samples} |")
print(f"| (c) lower bound (bench/tape/lower_bound.py) | {lb:.0f} | 1.00x | {c['mounts']} | 1 | "
      f"{c['objects']} | {c['drive_efficiency']:.1%} | computed | |")
print()
if "a" in res and "b" in res:
    b_over_c = res["b"]["sim_s"] / lb - 1
    a_over_b = res["a"]["sim_s"] / res["b"]["sim_s"]
    print("| design target | measured | met |\n|---|---|---|")
    print(f"| (b) within 15 % of (c) | {b_over_c:+.1%} | {'yes' if b_over_c <= 0.15 else '**no**'} |")
    print(f"| (b) at least 10x faster than (a) | {a_over_b:.1f}x | {'yes' if a_over_b >= 10 else '**no**'} |")
PY
cat "$RESULT_FILE"
log "table written to $RESULT_FILE"
