#!/usr/bin/env bash
# e2e (issue 5): training over a dataset that is mostly on tape, with Debian's python3-torch
# DataLoader and reelfs.torch (python/), through a --offline=wait mount.
#
# 200 files of 16 KiB: train/online/ 40 never archived, train/tape/ 160 archived on 4 cartridges
# and released; the library runs 5x real time, so a cartridge needs >= 29 s of simulated robot
# and load time (about 6 s of real time) before its first file comes back.
#  1. TapeOrderSampler (shuffle, seed) in a DataLoader with num_workers=3: it stages the 160
#     offline files through user.hsm.request, yields the 40 readable files first and the others
#     as they come online.
#  2. The tape files released again, a fresh mount; TapeOrderIterable over the same map-style
#     dataset with num_workers=2 (each worker orders its share).
# Each pass checks: every sample's bytes against the source (sha256), every index exactly once,
# every file readable (user.hsm.state) when the worker opened it, and, when the first batch
# arrived in the training loop, files still not readable: training started before the recall
# finished. Pass 1 also: the first 40 samples are exactly the online files. Skips (77) when no
# python3 can import torch.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/tape_lib.sh"
source "$(dirname "$0")/tape_more.sh"
e2e_init tape_sampler 370
export LC_ALL=C
TPY=$(find_python torch numpy) || skip "no python3 can import torch and numpy (Debian: python3-torch)"
export PYTHONPATH="$(cd "$(dirname "$0")/../../python" && pwd)"
export PYTHONDONTWRITEBYTECODE=1

step "200 files, 160 of them archived on 4 cartridges and released"
gen_train_set "$ROOT/data" "$WORK/data.sums" 3
TAPE_SPEEDUP=5 tape_config versitygw
tape_count_requests
archive_offline data 4 key train/tape/
start_tape_gateway
[[ $(catalog_count data offline) == 160 ]] || fail "catalog: $(catalog_states data | head)"
mount_tape data "$MNT" wait
MAIN_PID=$MOUNT_PID

cat >"$WORK/train.py" <<'PY'
import hashlib, os, sys, warnings
import torch
from torch.utils.data import DataLoader, Dataset
from reelfs import hsm
from reelfs.torch import TapeOrderIterable, TapeOrderSampler

mount, sums, mode = sys.argv[1:4]
manifest = [line.rstrip("\n").split("  ", 1) for line in open(sums)]
paths = [os.path.join(mount, key) for _, key in manifest]
online = {i for i, (_, key) in enumerate(manifest) if key.startswith("train/online/")}


class Files(Dataset):
    def __len__(self):
        return len(paths)

    def __getitem__(self, i):
        state = hsm.state(paths[i])  # what the worker saw when it opened the file
        with open(paths[i], "rb") as f:
            data = f.read()
        return i, state, torch.frombuffer(bytearray(data), dtype=torch.uint8)


warnings.filterwarnings("ignore", message=".*worker processes in total.*")  # 3 on 2 CPUs: meant
opts = dict(shuffle=True, seed=1, timeout=240, poll_min=0.05, poll_max=0.5)
if mode == "sampler":
    sampler = TapeOrderSampler(paths, **opts)
    loader = DataLoader(Files(), batch_size=4, sampler=sampler, num_workers=3,
                        collate_fn=lambda b: b)
else:
    sampler = None
    loader = DataLoader(TapeOrderIterable(Files(), paths, **opts), batch_size=4, num_workers=2,
                        collate_fn=lambda b: b)

seen = [0] * len(paths)
order = []
not_readable_at_first_batch = None
for batch in loader:
    if not_readable_at_first_batch is None:
        states = hsm.states(paths, errors="unknown").values()
        not_readable_at_first_batch = sum(not hsm.is_readable(s) for s in states)
    for i, state, tensor in batch:
        if hashlib.sha256(tensor.numpy().tobytes()).hexdigest() != manifest[i][0]:
            sys.exit(f"FAIL: sample {manifest[i][1]} differs from the source")
        if not hsm.is_readable(state):
            sys.exit(f"FAIL: sample {manifest[i][1]} was opened while {state}")
        seen[i] += 1
        order.append(i)
if seen != [1] * len(paths):
    sys.exit(f"FAIL: not every index exactly once: {[i for i, c in enumerate(seen) if c != 1][:10]}")
print(f"   ok: {len(order)} samples verified, each index once, each file readable when opened")
if not not_readable_at_first_batch:
    sys.exit("FAIL: every file was already readable when the first batch arrived")
print(f"   ok: {not_readable_at_first_batch} files not yet readable when the first batch arrived")
if sampler is not None:
    if set(order[:len(online)]) != online:
        sys.exit("FAIL: the online files were not the first samples")
    if sampler.stats["initially_readable"] != len(online) or sampler.stats["staged"] != 160:
        sys.exit(f"FAIL: sampler stats {sampler.stats}")
    print(f"   ok: the {len(online)} online files came first; sampler {sampler.stats}")
PY

step "pass 1: TapeOrderSampler, DataLoader(num_workers=3)"
"$TPY" "$WORK/train.py" "$MNT" "$WORK/data.sums" sampler || fail "sampler pass failed"
read -r mounts max_per _ < <(tape_mounts)
echo "   library: $mounts mounts, at most $max_per per cartridge"

step "pass 2: tape files released again; TapeOrderIterable, DataLoader(num_workers=2)"
# A fresh mount: the first one trusts what it saw restored for its metadata TTL.
unmount_and_wait "$MNT" "$MAIN_PID"
release_bucket data >/dev/null
[[ $(catalog_count data offline) == 160 ]] || fail "release: $(catalog_states data | head)"
mount_tape data "$MNT" wait
MAIN_PID=$MOUNT_PID
"$TPY" "$WORK/train.py" "$MNT" "$WORK/data.sums" iterable || fail "iterable pass failed"

unmount_and_wait "$MNT" "$MAIN_PID"
stop_tape_gateway
echo "PASS"
