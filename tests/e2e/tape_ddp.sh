#!/usr/bin/env bash
# e2e (issue 15): a distributed training job over a dataset on tape. torch.distributed (gloo, CPU)
# with world_size 4, one process per "host", each with its own reelfs mount of the same bucket,
# and reelfs.torch.TapeOrderSampler sharding by cartridge (python/reelfs/shard.py).
#
# 200 files of 16 KiB: train/online/ 40 never archived, train/tape/ 160 archived on 5 cartridges
# with tape hints (user.hsm.tape) and released; the library runs 5x real time.
#  1. Two epochs, 4 ranks (set_epoch, shuffle, verify_ranks): every sample read exactly once per
#     epoch across the ranks, its bytes equal to the source (sha256), each file readable when
#     the rank opened it, 50 samples per rank, each rank's offline files requested by that rank
#     only, and one recall per object at the gateway (archive.recalls_submitted = 160).
#  2. The tape files released again; `reelfs stage --wait` run at once on all 4 mounts for the
#     whole tree (4 hosts preparing the same job): still one recall per object, every stage
#     command exits 0 with every file readable on its own mount.
# Hosts 0 and 1 mount through the gateway that owns the root, hosts 2 and 3 through a second
# gateway process, a `--front-end` over the same root: their restores are recorded in the shared
# catalog and run once by the owner's library (docs/gateway.md "Several front ends over one root").
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/tape_lib.sh"
source "$(dirname "$0")/tape_more.sh"
e2e_init tape_ddp 370
export LC_ALL=C
TPY=$(find_python torch numpy) || skip "no python3 can import torch and numpy (Debian: python3-torch)"
"$TPY" -c 'import torch.distributed as d, sys; sys.exit(0 if d.is_available() and d.is_gloo_available() else 1)' \
  || skip "torch.distributed has no gloo backend"
export PYTHONPATH="$(cd "$(dirname "$0")/../../python" && pwd)"
export PYTHONDONTWRITEBYTECODE=1
WORLD=4

step "200 files, 160 of them archived on 5 cartridges (with tape hints) and released"
gen_train_set "$ROOT/data" "$WORK/data.sums" 4
TAPE_SPEEDUP=5 TAPE_HINTS=true tape_config versitygw
archive_offline data 5 key train/tape/
start_tape_gateway
[[ $(catalog_count data offline) == 160 ]] || fail "catalog: $(catalog_states data | head)"
OWNER_PID=$GW_PID OWNER_PORT=$PORT OWNER_ENDPOINT=$ENDPOINT
GW_FRONT_END=1 start_tape_gateway
FE_ENDPOINT=$ENDPOINT
EXTRA_PIDS+=("$GW_PID")
GW_PID=$OWNER_PID PORT=$OWNER_PORT ENDPOINT=$OWNER_ENDPOINT  # admin metrics: the owner's
export AWS_ENDPOINT_URL=$ENDPOINT
echo "   owner $OWNER_ENDPOINT (hosts 0, 1), front end $FE_ENDPOINT (hosts 2, 3)"
PIDS=()
mount_all() {
  PIDS=()
  for r in $(seq 0 $((WORLD - 1))); do
    if (( r < 2 )); then
      mount_tape data "$WORK/host$r" wait
    else
      ENDPOINT=$FE_ENDPOINT mount_tape data "$WORK/host$r" wait
    fi
    PIDS+=("$MOUNT_PID")
  done
}
unmount_all() {
  for r in $(seq 0 $((WORLD - 1))); do unmount_and_wait "$WORK/host$r" "${PIDS[$r]}"; done
}
mount_all
hint=$(getfattr --only-values -n user.hsm.tape "$WORK/host0/train/tape/00001.bin" 2>/dev/null) \
  || fail "no user.hsm.tape on an archived file (tape hints off?)"
echo "   train/tape/00001.bin is on $hint"

cat >"$WORK/rank.py" <<'PY'
import hashlib, json, os, sys
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset
from reelfs import hsm
from reelfs.torch import TapeOrderSampler

rank, world, init, mount, sums, out = sys.argv[1:7]
rank, world = int(rank), int(world)
dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
manifest = [line.rstrip("\n").split("  ", 1) for line in open(sums)]
paths = [os.path.join(mount, key) for _, key in manifest]


class Files(Dataset):
    def __len__(self):
        return len(paths)

    def __getitem__(self, i):
        state = hsm.state(paths[i])  # what this rank saw when it opened the file
        with open(paths[i], "rb") as f:
            data = f.read()
        return i, state, hashlib.sha256(data).hexdigest()


sampler = TapeOrderSampler(paths, shuffle=True, seed=7, timeout=240, poll_min=0.05,
                           poll_max=0.5, verify_ranks=True)
epochs = []
for epoch in range(2):
    sampler.set_epoch(epoch)
    seen = [s for batch in DataLoader(Files(), batch_size=4, sampler=sampler, num_workers=0,
                                      collate_fn=lambda b: b) for s in batch]
    epochs.append({"seen": seen, "stats": sampler.stats, "len": len(sampler)})
    dist.barrier()  # as DDP's all-reduce would: every rank finishes the epoch together
with open(out, "w") as f:
    json.dump({"rank": rank, "epochs": epochs}, f)
dist.destroy_process_group()
PY

cat >"$WORK/check.py" <<'PY'
import json, sys
sums, world = sys.argv[1], int(sys.argv[2])
outs = sys.argv[3:]
manifest = [line.rstrip("\n").split("  ", 1) for line in open(sums)]
ranks = [json.load(open(p)) for p in outs]
for epoch in range(2):
    count = [0] * len(manifest)
    per = []
    for r in ranks:
        ep = r["epochs"][epoch]
        per.append(len(ep["seen"]))
        for i, state, digest in ep["seen"]:
            if digest != manifest[i][0]:
                sys.exit(f"FAIL: rank {r['rank']} read {manifest[i][1]}: bytes differ")
            if state not in ("online", "restored", "cached"):
                sys.exit(f"FAIL: rank {r['rank']} opened {manifest[i][1]} while {state}")
            count[i] += 1
    if per != [len(manifest) // world] * world:
        sys.exit(f"FAIL: epoch {epoch}: samples per rank {per}")
    if count != [1] * len(manifest):
        bad = [manifest[i][1] for i, c in enumerate(count) if c != 1][:5]
        sys.exit(f"FAIL: epoch {epoch}: not every sample exactly once: {bad}")
    stats = [r["epochs"][epoch]["stats"] for r in ranks]
    print(f"   ok: epoch {epoch}: {sum(per)} samples, {per} per rank, each once, bytes verified; "
          f"cartridges per rank {[s['cartridges'] for s in stats]}, "
          f"split {stats[0]['cartridges_split']}")
staged = [r["epochs"][0]["stats"]["staged"] for r in ranks]
print(f"   ok: staging requests per rank in epoch 0: {staged} (sum {sum(staged)})")
if sum(staged) != 160:
    sys.exit(f"FAIL: the ranks requested {sum(staged)} restores for 160 offline files")
PY

step "pass 1: 4 ranks (gloo), 2 epochs, TapeOrderSampler sharding by cartridge"
s0=$(metric archive.recalls_submitted)
RANK_PIDS=()
for r in $(seq 0 $((WORLD - 1))); do
  "$TPY" "$WORK/rank.py" "$r" "$WORLD" "file://$WORK/dist-store" "$WORK/host$r" \
    "$WORK/data.sums" "$WORK/rank$r.json" >"$WORK/rank$r.log" 2>&1 &
  RANK_PIDS+=("$!")
done
for r in $(seq 0 $((WORLD - 1))); do
  wait "${RANK_PIDS[$r]}" || fail "rank $r failed: $(tail -n 15 "$WORK/rank$r.log")"
done
"$TPY" "$WORK/check.py" "$WORK/data.sums" "$WORLD" "$WORK"/rank[0-3].json || fail "pass 1"
expect "pass 1: recalls submitted (one per object)" "$(($(metric archive.recalls_submitted) - s0))" 160
read -r mounts max_per carts < <(tape_mounts)
echo "   library: $mounts mounts of $carts cartridges, at most $max_per per cartridge"

step "pass 2: released again; reelfs stage --wait on all 4 hosts at once, same tree"
unmount_all
release_bucket data >/dev/null
[[ $(catalog_count data offline) == 160 ]] || fail "release: $(catalog_states data | head)"
mount_all
s0=$(metric archive.recalls_submitted); j0=$(metric archive.recalls_joined)
STAGE_PIDS=()
for r in $(seq 0 $((WORLD - 1))); do
  "$REELFS_BIN" stage --wait --timeout 200s --poll 100ms --poll-max 1s "$WORK/host$r/train" \
    >"$WORK/stage$r.out" 2>&1 &
  STAGE_PIDS+=("$!")
done
for r in $(seq 0 $((WORLD - 1))); do
  wait "${STAGE_PIDS[$r]}" || fail "reelfs stage on host $r: $(tail -n 5 "$WORK/stage$r.out")"
done
expect "pass 2: recalls submitted (one per object)" "$(($(metric archive.recalls_submitted) - s0))" 160
echo "   recalls joined (requests for an object already on its way): $(($(metric archive.recalls_joined) - j0))"
for r in $(seq 0 $((WORLD - 1))); do
  "$TPY" - "$WORK/host$r" "$WORK/data.sums" <<'PY' || fail "host $r: files not readable after stage --wait"
import sys
from reelfs import hsm
mount, sums = sys.argv[1:3]
keys = [line.rstrip("\n").split("  ", 1)[1] for line in open(sums)]
bad = [k for k in keys if not hsm.is_readable(hsm.state(f"{mount}/{k}"))]
sys.exit(f"not readable: {bad[:5]}" if bad else 0)
PY
done
echo "   ok: every file readable on all 4 hosts"

unmount_all
stop_tape_gateway
echo "PASS"
