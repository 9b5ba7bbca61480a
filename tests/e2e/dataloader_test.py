#!/usr/bin/env python3
"""e2e: a PyTorch DataLoader (num_workers=4, shuffle=True) reading files through the mount.

   dataloader_test.py MOUNT_DIR MANIFEST [EPOCHS]

MANIFEST has one "sha256  relative/path" line per file, made from the source tree. Every sample
the loader yields (raw bytes as a uint8 tensor, read by a worker process through the mount) is
checked against it; every file must be seen exactly once per epoch. Exits 77 (skip) when torch
cannot be imported. Proves that forked worker processes reading many small files concurrently,
in shuffled order, get exactly the source's bytes.
"""
import hashlib
import os
import sys
import time

try:
    import torch
    from torch.utils.data import DataLoader, Dataset
except ImportError as e:  # python3-torch missing: skip, loudly
    print(f"SKIP: cannot import torch ({e})")
    sys.exit(77)


class Files(Dataset):
    def __init__(self, root, rel_paths):
        self.root = root
        self.rel_paths = rel_paths

    def __len__(self):
        return len(self.rel_paths)

    def __getitem__(self, i):
        with open(os.path.join(self.root, self.rel_paths[i]), "rb") as f:
            data = f.read()
        return i, torch.frombuffer(bytearray(data), dtype=torch.uint8) if data else torch.empty(0, dtype=torch.uint8)


def keep_as_list(batch):  # variable-length samples: no stacking
    return batch


def main():
    mount, manifest_path = sys.argv[1], sys.argv[2]
    epochs = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    manifest = []
    with open(manifest_path) as f:
        for line in f:
            digest, rel = line.rstrip("\n").split("  ", 1)
            manifest.append((rel.removeprefix("./"), digest))
    paths = [p for p, _ in manifest]
    loader = DataLoader(Files(mount, paths), batch_size=16, shuffle=True, num_workers=4,
                        collate_fn=keep_as_list, persistent_workers=False)
    for epoch in range(epochs):
        seen = [0] * len(paths)
        order = []
        nbytes = 0
        t0 = time.monotonic()
        for batch in loader:
            for i, tensor in batch:
                data = tensor.numpy().tobytes()
                if hashlib.sha256(data).hexdigest() != manifest[i][1]:
                    sys.exit(f"FAIL: sample {paths[i]} ({len(data)} bytes) differs from the source")
                seen[i] += 1
                order.append(i)
                nbytes += len(data)
        dt = time.monotonic() - t0
        if any(c != 1 for c in seen):
            bad = [paths[i] for i, c in enumerate(seen) if c != 1][:5]
            sys.exit(f"FAIL: epoch {epoch}: samples not seen exactly once: {bad}")
        if order == sorted(order):
            sys.exit("FAIL: shuffle=True but samples came in file order")
        print(f"epoch {epoch}: {len(paths)} samples verified, {nbytes / 1048576:.1f} MiB, "
              f"{len(paths) / dt:.0f} samples/s, {nbytes / 1048576 / dt:.1f} MiB/s")
    print("PASS")


if __name__ == "__main__":
    main()
