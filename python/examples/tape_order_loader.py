#!/usr/bin/env python3
"""Read every file under a reelfs mount with a PyTorch DataLoader, in tape-readiness order.

    PYTHONPATH=python python3 python/examples/tape_order_loader.py /mnt/archive/train [--workers 4]

Asks the mount to stage every offline file at once, starts reading the online ones immediately
and the others as they come back from tape, and prints progress: samples read, how many files
were still on tape when the first batch arrived, and the sampler's counters. Each sample is the
file's bytes; replace `Files.__getitem__` with your decoding.
"""
import argparse
import os
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

from reelfs import hsm
from reelfs.torch import TapeOrderSampler


class Files(Dataset):
    def __init__(self, paths):
        self.paths = paths

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        with open(self.paths[i], "rb") as f:
            data = f.read()
        return i, (torch.frombuffer(bytearray(data), dtype=torch.uint8) if data
                   else torch.empty(0, dtype=torch.uint8))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", help="a directory under a reelfs mount")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--timeout", type=float, default=None, help="seconds per epoch (default: none)")
    ap.add_argument("--stage", choices=["files", "directory", "none"], default="files")
    args = ap.parse_args()

    paths = sorted(os.path.join(d, f) for d, _, fs in os.walk(args.root) for f in fs)
    if not paths:
        sys.exit(f"no files under {args.root}")
    before = hsm.states(paths, errors="unknown")
    counts = {s: list(before.values()).count(s) for s in hsm.STATES if s in before.values()}
    print(f"{len(paths)} files: {counts}")

    sampler = TapeOrderSampler(paths, shuffle=True, seed=0, timeout=args.timeout,
                               stage=False if args.stage == "none" else args.stage)
    loader = DataLoader(Files(paths), batch_size=args.batch_size, sampler=sampler,
                        num_workers=args.workers, collate_fn=lambda batch: batch)
    t0 = time.monotonic()
    n = nbytes = 0
    for batch in loader:
        if n == 0:
            not_yet = sum(not hsm.is_readable(s)
                          for s in hsm.states(paths, errors="unknown").values())
            print(f"first batch after {time.monotonic() - t0:.1f} s; {not_yet} files not yet "
                  "readable")
        n += len(batch)
        nbytes += sum(t.numel() for _, t in batch)
        if n % (args.batch_size * 50) < args.batch_size:
            print(f"  {n}/{len(paths)} samples, {time.monotonic() - t0:.1f} s")
    print(f"done: {n} samples, {nbytes / 1e6:.1f} MB in {time.monotonic() - t0:.1f} s; "
          f"sampler: {sampler.stats}")


if __name__ == "__main__":
    main()
