#!/usr/bin/env bash
# e2e: PyTorch DataLoader over the mount (dataloader_test.py does the checking): 1 000 files of
# 1 KiB .. 256 KiB in 10 directories, num_workers=4, shuffle=True, two epochs (the second one
# from the kernel's and reelfs' caches), every sample verified against a sha256 manifest made
# from the source. Skips (77) when no python3 can import torch.
source "$(dirname "$0")/lib.sh"
e2e_init dataloader 200
export LC_ALL=C
TPY=$(find_python torch numpy) || skip "no python3 can import torch and numpy (Debian: python3-torch)"

step "generating 1 000 files and their manifest"
"$PY" - "$ROOT/train" <<'PY'
import os, random, sys
root = sys.argv[1]
rng = random.Random(5)
for i in range(1000):
    d = os.path.join(root, f"class-{i % 10:02d}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"sample-{i:04d}.bin"), "wb") as f:
        f.write(rng.randbytes(rng.choice([1024, 4096, 10000, 65536, 262144])))
PY
sums "$ROOT/train" >"$WORK/manifest"
start_gateway
mount_bucket train
MAIN_PID=$MOUNT_PID

step "DataLoader(num_workers=4, shuffle=True) over $MNT"
"$TPY" "$(dirname "$0")/dataloader_test.py" "$MNT" "$WORK/manifest" 2 || fail "dataloader_test.py failed ($?)"

unmount_and_wait "$MNT" "$MAIN_PID"
echo "PASS"
