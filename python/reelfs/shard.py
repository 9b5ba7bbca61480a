"""Sharding a dataset over the ranks of a distributed job, by tape cartridge.

``DistributedSampler`` deals indices round-robin, so with data on tape every rank asks for files
on every cartridge and the ranks' recalls compete for the same tapes: four ranks can make the
library mount one cartridge four times. :func:`assign` instead gives each cartridge's files to as
few ranks as it can while keeping the counts equal, which DDP needs (a rank that runs out of
batches first leaves the others waiting in an all-reduce forever). The rule (docs/tape.md
"Distributed training"):

1. Group indices by cartridge (``user.hsm.tape``); an index without a tape hint is a group of its
   own. Order the groups largest first (ties: by cartridge name, or shuffled with
   ``seed + epoch`` when ``shuffle``), and each group's indices by index (or shuffled).
2. Every rank has the same capacity: ``ceil(n / ranks)`` samples, or ``floor`` with ``drop_last``.
3. Each group goes to the rank with the most room left (lowest rank on a tie); what does not fit
   there goes on to the rank with the most room after it, and so on (a split cartridge). With
   ``drop_last`` what fits nowhere is dropped: at most ``ranks - 1`` indices, from the groups
   placed last (the smallest).
4. Without ``drop_last`` a rank with room left is padded with its own indices again (the same
   files, so no other tape), as ``DistributedSampler`` pads with repeats.

The trade-off against a uniform shuffle: the samples of one cartridge all go to a few ranks, so a
rank's batches are less mixed *within an epoch* when a cartridge holds related data (say, written
in key order). The order inside each rank is still shuffled, the assignment changes every epoch
when ``shuffle`` is on, and the gradient DDP averages still covers every rank's samples. Pass
``by="index"`` for DistributedSampler's round-robin deal.

Every rank must compute the same assignment: the same ``n``, cartridges, seed and epoch.
:func:`digest` gives a short fingerprint of an assignment's inputs that ranks can compare.

Pure functions, no torch, no I/O: safe from any thread.
"""

import hashlib
import heapq
import math
import random

__all__ = ["Shard", "assign", "digest"]


class Shard:
    """One rank's share of an epoch.

    ``own``: the indices assigned to this rank (each index in exactly one rank's ``own``, unless
    dropped); ``padding``: indices of ``own`` repeated to reach ``per_rank``; ``dropped``: the
    indices no rank got (``drop_last``); ``cartridges``: groups with a cartridge in ``own``;
    ``split``: how many cartridges (over all ranks) went to more than one rank.
    """

    __slots__ = ("own", "padding", "dropped", "per_rank", "cartridges", "split")

    def __init__(self, own, padding, dropped, per_rank, cartridges, split):
        self.own = own
        self.padding = padding
        self.dropped = dropped
        self.per_rank = per_rank
        self.cartridges = cartridges
        self.split = split

    def __len__(self):
        return len(self.own) + len(self.padding)

    def stats(self):
        return {"own": len(self.own), "padding": len(self.padding), "dropped": len(self.dropped),
                "per_rank": self.per_rank, "cartridges": self.cartridges,
                "cartridges_split": self.split}


def per_rank(n, ranks, drop_last):
    """The number of samples each rank yields per epoch."""
    _check(ranks, 0)
    return n // ranks if drop_last else math.ceil(n / ranks)


def _check(ranks, rank):
    if not isinstance(ranks, int) or ranks < 1:
        raise ValueError(f"num_replicas must be a positive integer, not {ranks!r}")
    if not isinstance(rank, int) or not 0 <= rank < ranks:
        raise ValueError(f"rank must be in [0, {ranks}), not {rank!r}")


def assign(indices, cartridge_of, ranks, rank, *, drop_last=False, shuffle=False, seed=0,
           epoch=0, by="cartridge"):
    """This rank's :class:`Shard` of ``indices`` (see the module doc for the rule).

    ``cartridge_of(i)`` is index ``i``'s cartridge, or None without a tape hint; it is not called
    when ``by="index"``.
    """
    _check(ranks, rank)
    if by not in ("cartridge", "index"):
        raise ValueError(f"by must be 'cartridge' or 'index', not {by!r}")
    indices = list(indices)
    n = len(indices)
    per = per_rank(n, ranks, drop_last)
    rng = random.Random(seed + epoch)
    if by == "index":
        order = list(indices)
        if shuffle:
            rng.shuffle(order)
        # DistributedSampler's deal: pad the whole list first, then take every ranks-th.
        kept = min(n, per * ranks)
        padded = order[:kept] + _cycle(order, per * ranks - kept)
        mine = [padded[p] for p in range(rank, per * ranks, ranks) if p < kept]
        padding = [padded[p] for p in range(rank, per * ranks, ranks) if p >= kept]
        return Shard(mine, padding, order[kept:], per, 0, 0)

    groups = {}
    singles = []
    for i in indices:
        c = cartridge_of(i)
        if c is None:
            singles.append([i])
        else:
            groups.setdefault(str(c), []).append(i)
    named = sorted(groups.items())
    if shuffle:
        rng.shuffle(named)
        rng.shuffle(singles)
        for _, members in named:
            rng.shuffle(members)
    # Stable: equal sizes keep the (shuffled or sorted) order above; singles after every tape.
    ordered = sorted(named, key=lambda kv: -len(kv[1])) + [(None, s) for s in singles]

    # A max-heap of (room left, rank): lowest rank first among equals; a full rank leaves it.
    heap = [(-per, r) for r in range(ranks)] if per else []
    heapq.heapify(heap)
    owners = {}  # cartridge -> set of ranks
    mine, dropped = [], []
    mine_cartridges = 0
    for cart, members in ordered:
        pos = 0
        took = False
        while pos < len(members):
            if not heap:
                dropped.extend(members[pos:])
                break
            neg_room, r = heapq.heappop(heap)
            take = members[pos:pos - neg_room]
            pos += len(take)
            if neg_room + len(take) < 0:
                heapq.heappush(heap, (neg_room + len(take), r))
            if cart is not None:
                owners.setdefault(cart, set()).add(r)
            if r == rank:
                mine.extend(take)
                took = True
        if took and cart is not None:
            mine_cartridges += 1
    split = sum(1 for rs in owners.values() if len(rs) > 1)
    padding = [] if drop_last else _cycle(mine or indices[rank % n:] + indices[:rank % n]
                                           if n else [], per - len(mine))
    return Shard(mine, padding, dropped, per, mine_cartridges, split)


def _cycle(pool, k):
    if k <= 0 or not pool:
        return []
    return [pool[j % len(pool)] for j in range(k)]


def digest(indices, cartridge_of, ranks, *, drop_last, shuffle, seed, epoch, by):
    """A fingerprint of everything :func:`assign` depends on except the rank (hex, 16 chars)."""
    h = hashlib.sha256(repr((ranks, drop_last, shuffle, seed, epoch, by)).encode())
    for i in indices:
        c = cartridge_of(i) if by == "cartridge" else None
        h.update(f"{i}\0{c}\n".encode())
    return h.hexdigest()[:16]
