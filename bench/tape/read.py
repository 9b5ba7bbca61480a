#!/usr/bin/env python3
"""bench/tape reader: a PyTorch DataLoader over every file of a manifest, under a mount.

    read.py MOUNT MANIFEST [--workers 4] [--batch 8] [--order random|sampler] [--limit N]
            [--start-when PATH]

MANIFEST: "sha256  key" lines. --order random: DataLoader(shuffle=True), what a training job does
today; sampler: reelfs.torch.TapeOrderSampler (stages everything, yields files as they come
online). Every sample is checked against the manifest; each index exactly once. Prints one JSON
line: samples, bytes, wall_s. Exit 1 on a mismatch.
"""
import argparse
import hashlib
import json
import os
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Files(Dataset):
    def __init__(self, paths):
        self.paths = paths

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        with open(self.paths[i], "rb") as f:
            return i, hashlib.sha256(f.read()).hexdigest(), os.fstat(f.fileno()).st_size


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mount")
    ap.add_argument("manifest")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--order", choices=["random", "sampler"], default="random")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--limit", type=int, default=0, help="read only the first N of the order")
    ap.add_argument("--start-when", metavar="PATH",
                    help="create PATH.ready once set up, start reading once PATH exists")
    args = ap.parse_args()
    manifest = [line.rstrip("\n").split("  ", 1) for line in open(args.manifest)]
    paths = [os.path.join(args.mount, key) for _, key in manifest]
    torch.manual_seed(args.seed)
    if args.order == "sampler":
        from reelfs.torch import TapeOrderSampler
        loader = DataLoader(Files(paths), batch_size=args.batch, num_workers=args.workers,
                            sampler=TapeOrderSampler(paths, shuffle=True, seed=args.seed,
                                                     poll_min=0.05, poll_max=0.5),
                            collate_fn=lambda b: b)
    else:
        loader = DataLoader(Files(paths), batch_size=args.batch, num_workers=args.workers,
                            shuffle=True, collate_fn=lambda b: b)
    seen = [0] * len(paths)
    n = nbytes = 0
    if args.start_when:
        open(args.start_when + ".ready", "w").close()  # imports done, loader built
        while not os.path.exists(args.start_when):
            time.sleep(0.01)
    t0 = time.monotonic()
    for batch in loader:
        for i, digest, size in batch:
            if digest != manifest[i][0]:
                sys.exit(f"sample {manifest[i][1]} differs from the source")
            seen[i] += 1
            n += 1
            nbytes += size
        if args.limit and n >= args.limit:
            break
    if not args.limit and seen != [1] * len(paths):
        sys.exit("not every index exactly once")
    print(json.dumps({"samples": n, "bytes": nbytes, "wall_s": round(time.monotonic() - t0, 2)}))


if __name__ == "__main__":
    main()
