#!/usr/bin/env python3
"""The lower bound (c) of bench/tape: the least simulated time in which the simulated library
could read a bucket's archived objects, whatever the client does (bench/tape/README.md).

    lower_bound.py CATALOG_DB BUCKET --drives 4 [--set drive.rate_mb_s=0.25 ...]

Reads where every object sits (cartridge, first block, bytes) from the gateway's catalog and
prints one JSON object. The parameters are the simulator's (gateway/tape/config.h, LTO-9 preset)
with the same overrides the benchmark gave the gateway (--set, one per YAML key it overrode).

Bound: with C cartridges and D drives, each cartridge c must be loaded, positioned at its first
extent (locate from the load point), and read in one pass in block order (locates between
non-contiguous extents by the simulator's own cost model), M_c in all; every cartridge beyond the
first on a drive costs that drive a rewind and an unload of the previous one, S each (the robot
fetches the next cartridge during them and puts the old one away after: no robot time is on the
drive's path, since a move is shorter than any rewind); and the drives' first cartridges must be
fetched, by R robots in turn: drive k (in the order the robots serve them) starts loading no
earlier than (floor(k / R) + 1) * robot_move_s. The sum over drives of their finishing times is at
least sum(M_c) + (C - D) * S + sum of those first fetches, and the makespan is at least the mean:
LB = that sum / D. It also cannot be less than one fetch plus the longest single M_c. Nothing else
(robot queueing, request arrival, client polling) is counted, so every real schedule takes at
least LB.
"""
import argparse
import json
import math
import sqlite3
import sys

# gateway/tape/config.h: LibraryConfig with the lto9 preset.
DEFAULTS = {
    "drive.rate_mb_s": 400.0, "drive.load_s": 17.0, "drive.unload_s": 30.0,
    "drive.rewind_small_s": 55.0, "drive.rewind_medium_s": 110.0, "drive.rewind_large_s": 165.0,
    "drive.rewind_small_gb": 5.0, "drive.rewind_medium_gb": 50.0,
    "drive.capacity_bytes": 18e12, "drive.wraps": 280, "drive.lpos_min": 2696,
    "drive.lpos_max": 171097, "drive.locate_scale": 1.0,
    "robots": 1, "robot_move_s": 12.0, "block_bytes": 256 * 1024,
}
BYTES_PER_GB = 1e9  # gateway/tape: kBytesPerGb (decimal)


class Geometry:
    """gateway/tape/geometry.cc: block -> (wrap, band, lpos), serpentine over 4 bands."""

    def __init__(self, p):
        self.capacity_blocks = int(p["drive.capacity_bytes"]) // int(p["block_bytes"])
        self.wraps = int(p["drive.wraps"])
        self.blocks_per_wrap = (self.capacity_blocks + self.wraps - 1) // self.wraps
        self.lpos_min, self.lpos_max = int(p["drive.lpos_min"]), int(p["drive.lpos_max"])

    def position(self, block):
        block = min(block, self.capacity_blocks - 1)
        wrap = block // self.blocks_per_wrap
        band = wrap // (self.wraps // 4)
        fraction = (block % self.blocks_per_wrap) / self.blocks_per_wrap
        along = fraction * (self.lpos_max - self.lpos_min)
        lpos = int(self.lpos_min + along if wrap % 2 == 0 else self.lpos_max - along)
        return wrap, band, lpos


def locate_s(geo, scale, a, b):
    """gateway/tape/locate_model.cc: CTA's cost heuristic; 0 when b is under the head."""
    if a == b:
        return 0.0
    (wa, ba, la), (wb, bb, lb) = geo.position(a), geo.position(b)
    middle = (geo.lpos_min + geo.lpos_max) / 2
    step_back = wa == wb and (lb < la if wa % 2 == 0 else lb > la)
    cost = (4.29 + 6.69 * (wa != wb) + 3.2 * (ba != bb) - 6.04 * ((la < middle) != (lb < middle))
            + 5.22 * ((wa % 2) != (wb % 2)) + 11.32 * step_back + 0.0006192 * abs(lb - la))
    return cost * scale


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("catalog")
    ap.add_argument("bucket")
    ap.add_argument("--drives", type=int, required=True)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args()
    p = dict(DEFAULTS)
    for kv in args.set:
        k, v = kv.split("=", 1)
        if k not in p:
            sys.exit(f"unknown parameter {k}")
        p[k] = float(v)
    geo = Geometry(p)
    scale = p["drive.locate_scale"]
    block = int(p["block_bytes"])

    db = sqlite3.connect(f"file:{args.catalog}?mode=ro", uri=True)
    carts = {}
    for cart, start, nbytes in db.execute(
            "SELECT cartridge, start_block, bytes FROM archive_objects WHERE bucket = ?",
            (args.bucket,)):
        carts.setdefault(cart, []).append((start, nbytes))
    if not carts:
        sys.exit(f"no archived objects in bucket {args.bucket}")

    rate = p["drive.rate_mb_s"] * 1e6
    per = {}
    for cart, extents in sorted(carts.items()):
        extents.sort()
        head, loc, nbytes = 0, 0.0, 0
        for start, n in extents:  # one pass in block order
            loc += locate_s(geo, scale, head, start)
            head = start + max(1, math.ceil(n / block))
            nbytes += n
        gb = nbytes / BYTES_PER_GB
        rewind = (p["drive.rewind_small_s"] if gb < p["drive.rewind_small_gb"] else
                  p["drive.rewind_medium_s"] if gb < p["drive.rewind_medium_gb"] else
                  p["drive.rewind_large_s"])
        per[cart] = {"objects": len(extents), "bytes": nbytes, "locate_s": loc,
                     "read_s": nbytes / rate,
                     "mount_s": p["drive.load_s"] + loc + nbytes / rate,
                     "swap_s": max(rewind + p["drive.unload_s"], p["robot_move_s"])}
    c, d = len(per), min(args.drives, len(per))
    robots = max(1, int(p["robots"]))
    mounts = sum(v["mount_s"] for v in per.values())
    # The C - D cheapest swaps (the last cartridge on each drive is never swapped out).
    swaps = sum(sorted(v["swap_s"] for v in per.values())[:c - d])
    fetches = sum((k // robots + 1) * p["robot_move_s"] for k in range(d))
    lb = max((mounts + swaps + fetches) / d,
             p["robot_move_s"] + max(v["mount_s"] for v in per.values()))
    reading = sum(v["read_s"] for v in per.values())
    busy = mounts + swaps  # loading, locating, reading, rewinding, unloading
    print(json.dumps({
        "lower_bound_s": round(lb, 1), "cartridges": c, "drives": d, "mounts": c,
        "objects": sum(v["objects"] for v in per.values()),
        "bytes": sum(v["bytes"] for v in per.values()),
        "reading_s": round(reading, 1), "drive_busy_s": round(busy, 1),
        "drive_efficiency": round(reading / busy, 4),
        "per_cartridge": {k: {kk: round(vv, 2) if isinstance(vv, float) else vv
                              for kk, vv in v.items()} for k, v in per.items()},
    }))


if __name__ == "__main__":
    main()
