"""PyTorch integration: train while the rest of the dataset is still being recalled from tape.

:class:`TapeOrderSampler` is a ``torch.utils.data.Sampler`` for a map-style dataset whose samples
are files under a reelfs mount. At the start of each epoch it asks the mount to stage every file
that is not readable (all at once, so the tape library can batch per cartridge), then yields the
indices of readable files first (shuffled if asked) and the others as they come online. Give it
to a DataLoader as ``sampler=``; the DataLoader's workers then only open readable files, so
training starts at once instead of after the whole recall:

.. code-block:: python

    from torch.utils.data import DataLoader
    from reelfs.torch import TapeOrderSampler

    sampler = TapeOrderSampler(dataset.paths, shuffle=True, seed=0, timeout=3600)
    loader = DataLoader(dataset, batch_size=32, sampler=sampler, num_workers=4)

:class:`TapeOrderIterable` does the same for a map-style dataset as an ``IterableDataset``; with
several DataLoader workers each worker takes every ``num_workers``-th index and orders its share
by readiness on its own.

:class:`GpuFileDataset` is a map-style dataset whose item ``i`` is the whole file ``paths[i]`` as a
1-D tensor on ``device``, read with :func:`reelfs.gpu.read_into` (through the side channel when
the mount has one); it shares its index space with :class:`TapeOrderSampler`, so the two compose
as ``DataLoader(GpuFileDataset(paths), sampler=TapeOrderSampler(paths))``.
:class:`GpuFileIterable` reads the same items in batches with :func:`reelfs.gpu.read_many`,
in the order of an optional sampler.

The ordering itself (backoff, re-requests, failures, timeouts) is :class:`reelfs.order.ReadyOrder`;
see there for every argument. torch is imported by this module only, so :mod:`reelfs.hsm` works
without it.
"""

import errno as _errno
import os as _os

try:
    import torch as _torch
    import torch.utils.data as _data
except ImportError as _err:  # pragma: no cover - depends on the machine
    raise ImportError(
        "reelfs.torch needs PyTorch (Debian: apt-get install python3-torch; pip: torch); "
        "reelfs.hsm and reelfs.order work without it") from _err

from . import gpu as _gpu
from . import hsm as _hsm
from . import shard as _shard
from .order import ReadyOrder, StagingFailed, StagingTimeout

__all__ = ["TapeOrderSampler", "TapeOrderIterable", "GpuFileDataset", "GpuFileIterable",
           "StagingFailed", "StagingTimeout"]


def _world(num_replicas, rank):
    """(num_replicas, rank): as given, else from torch.distributed when initialised, else (1, 0)."""
    dist = _torch.distributed
    live = dist.is_available() and dist.is_initialized()
    if num_replicas is None:
        num_replicas = dist.get_world_size() if live else 1
    if rank is None:
        rank = dist.get_rank() if live else 0
    _shard.per_rank(0, num_replicas, False)  # validates num_replicas
    if not isinstance(rank, int) or not 0 <= rank < num_replicas:
        raise ValueError(f"rank must be in [0, {num_replicas}), not {rank!r}")
    return num_replicas, rank


class _Sharding:
    """What the sampler and the iterable share: the paths, the rank's place, the cartridge map."""

    def __init__(self, paths, path_of, length, num_replicas, rank, drop_last, shard_by,
                 verify_ranks, shuffle, seed):
        if (paths is None) == (path_of is None):
            raise ValueError("give exactly one of paths and path_of")
        if paths is not None:
            self.paths = list(paths)
            self.path_of = self.paths.__getitem__
            self.length = len(self.paths)
        else:
            if length is None:
                raise ValueError("path_of needs length")
            self.paths = None
            self.path_of = path_of
            self.length = int(length)
        if shard_by not in ("cartridge", "index"):
            raise ValueError(f"shard_by must be 'cartridge' or 'index', not {shard_by!r}")
        self.replicas, self.rank = _world(num_replicas, rank)
        self.drop_last = bool(drop_last)
        self.shard_by = shard_by
        self.verify_ranks = verify_ranks
        self.shuffle = shuffle
        self.seed = seed
        self._cartridges = None

    def per_rank(self):
        return _shard.per_rank(self.length, self.replicas, self.drop_last)

    def refresh_cartridges(self):
        self._cartridges = None

    def cartridge_of(self, i):
        if self._cartridges is None:
            # Read once: a file's cartridge does not change during a job, and every epoch must
            # shard the same way on every rank (a rank that re-read while a hint changed would
            # disagree with the others).
            self._cartridges = [_hsm.cartridge(self.path_of(k)) for k in range(self.length)]
        return self._cartridges[i]

    def shard(self, epoch):
        """This rank's :class:`reelfs.shard.Shard` of ``epoch``."""
        args = dict(drop_last=self.drop_last, shuffle=self.shuffle, seed=self.seed, epoch=epoch,
                    by=self.shard_by)
        out = _shard.assign(range(self.length), self.cartridge_of, self.replicas, self.rank,
                            **args)
        if self.verify_ranks:
            self._verify(_shard.digest(range(self.length), self.cartridge_of, self.replicas,
                                       **args))
        return out

    def _verify(self, mine):
        dist = _torch.distributed
        if not (dist.is_available() and dist.is_initialized()):
            return  # nothing to compare with
        every = [None] * dist.get_world_size()
        dist.all_gather_object(every, mine)
        if len(set(every)) > 1:
            raise RuntimeError(
                "the ranks disagree on the dataset's shards (length, cartridges, seed or epoch): "
                f"digests by rank {every}; every rank must see the same files and tape hints")


class TapeOrderSampler(_data.Sampler):
    """Yields every index once per epoch, in the order its file becomes readable.

    Args:
      paths: the file of each dataset index, or None with ``path_of`` and ``length``.
      path_of, length: ``path_of(i)`` gives the file of index ``i`` for ``i < length``.
      stage: ``"files"`` (default), ``"directory"`` or False (see :class:`reelfs.order.ReadyOrder`).
      shuffle, seed: shuffle readable indices, seeded with ``seed + epoch`` (reproducible).
      timeout: seconds per epoch before :class:`StagingTimeout` (None: wait as long as it takes).
      num_replicas, rank: the distributed job's size and this process's place in it, as
        ``DistributedSampler``; default: from torch.distributed when it is initialised, else one
        replica. With several, this rank yields only its share (:mod:`reelfs.shard`): whole
        cartridges where the counts allow, the same count on every rank.
      drop_last: with several replicas, drop the few indices (< num_replicas) that would make the
        shares unequal, instead of padding the short ranks with repeats of their own indices.
      shard_by: ``"cartridge"`` (default; ``user.hsm.tape``, read once per sampler) or
        ``"index"`` (DistributedSampler's round-robin deal).
      verify_ranks: at each epoch, compare a digest of the shard inputs across ranks (one
        ``all_gather_object``, so every rank must iterate) and raise if they differ.
      Other keyword arguments go to :class:`reelfs.order.ReadyOrder`.

    Call ``set_epoch(e)`` before each epoch under DDP (as with ``DistributedSampler``) so every
    rank shuffles and shards alike. After (or during) an epoch, ``stats`` holds what it saw:
    initially_readable, staged, rerequests, polls, yielded, failed; with several replicas also
    own, padding, dropped, per_rank, cartridges, cartridges_split.
    """

    def __init__(self, paths=None, *, path_of=None, length=None, stage="files", shuffle=False,
                 seed=0, timeout=None, num_replicas=None, rank=None, drop_last=False,
                 shard_by="cartridge", verify_ranks=False, **kwargs):
        super().__init__(None)
        self._sharding = _Sharding(paths, path_of, length, num_replicas, rank, drop_last,
                                   shard_by, verify_ranks, shuffle, seed)
        self._kwargs = dict(stage=stage, shuffle=shuffle, seed=seed, timeout=timeout, **kwargs)
        # Built once with every index: validates the arguments now, not at the first epoch.
        self._order = self._make_order(None)
        self._shard = None
        self._epoch = 0

    def _make_order(self, indices):
        sh = self._sharding
        if sh.paths is not None:
            return ReadyOrder(sh.paths, indices=indices, **self._kwargs)
        return ReadyOrder(path_of=sh.path_of, length=sh.length, indices=indices, **self._kwargs)

    @property
    def num_replicas(self):
        return self._sharding.replicas

    @property
    def rank(self):
        return self._sharding.rank

    def __len__(self):
        return self._sharding.per_rank()

    def __iter__(self):
        epoch = self._epoch
        self._epoch += 1
        if self._sharding.replicas == 1:
            self._order.set_epoch(epoch)
            return iter(self._order)
        self._shard = self._sharding.shard(epoch)
        self._order = self._make_order(self._shard.own)
        self._order.set_epoch(epoch)
        return self._run(self._order, self._shard)

    @staticmethod
    def _run(order, shard):
        yield from order
        yield from shard.padding  # repeats of indices already yielded: readable by now

    def set_epoch(self, epoch):
        self._epoch = epoch

    def refresh_cartridges(self):
        """Reads the files' cartridges again at the next epoch (on every rank alike)."""
        self._sharding.refresh_cartridges()

    @property
    def stats(self):
        out = dict(self._order.stats)
        if self._shard is not None:
            out.update(self._shard.stats())
        return out


class TapeOrderIterable(_data.IterableDataset):
    """A map-style ``dataset`` read in tape-readiness order, as an ``IterableDataset``.

    Yields ``dataset[i]`` (or ``(i, dataset[i])`` with ``return_index=True``) for every index once
    per epoch. Under a DataLoader with ``num_workers=N``, worker ``k`` takes every N-th index of
    the rank's share, so each index is still yielded exactly once overall. With
    ``stage="directory"`` only worker 0 sends the (recursive) request.

    ``paths`` / ``path_of``, ``num_replicas``, ``rank``, ``drop_last``, ``shard_by`` and the other
    keyword arguments are those of :class:`TapeOrderSampler` (the rank is resolved here, in the
    process that builds the dataset, not in its workers).
    """

    def __init__(self, dataset, paths=None, *, path_of=None, return_index=False,
                 num_replicas=None, rank=None, drop_last=False, shard_by="cartridge", **kwargs):
        super().__init__()
        self.dataset = dataset
        self.return_index = return_index
        if paths is None and path_of is None:
            raise ValueError("give paths or path_of")
        self._sharding = _Sharding(paths, path_of, len(dataset) if paths is None else None,
                                   num_replicas, rank, drop_last, shard_by, False,
                                   kwargs.get("shuffle", False), kwargs.get("seed", 0))
        self._kwargs = kwargs
        self._epoch = 0

    def __len__(self):
        return self._sharding.per_rank()

    def set_epoch(self, epoch):
        self._epoch = epoch

    def __iter__(self):
        info = _data.get_worker_info()
        sh = self._sharding
        epoch = self._epoch
        self._epoch += 1
        if sh.replicas == 1:
            own, padding = list(range(sh.length)), []
        else:
            share = sh.shard(epoch)
            own, padding = share.own, share.padding
        kwargs = dict(self._kwargs)
        if info is not None:
            # Positions in own + padding, dealt over the workers.
            whole, n_own = own + padding, len(own)
            mine = range(info.id, len(whole), info.num_workers)
            own = [whole[p] for p in mine if p < n_own]
            padding = [whole[p] for p in mine if p >= n_own]
            if info.id != 0 and kwargs.get("stage", "files") == "directory":
                kwargs["stage"] = False
            # Each worker shuffles its own share differently but reproducibly.
            kwargs["seed"] = kwargs.get("seed", 0) + 7919 * info.id
        if sh.paths is not None:
            order = ReadyOrder(sh.paths, indices=own, **kwargs)
        else:
            order = ReadyOrder(path_of=sh.path_of, length=sh.length, indices=own, **kwargs)
        order.set_epoch(epoch)
        for i in order:
            yield (i, self.dataset[i]) if self.return_index else self.dataset[i]
        for i in padding:
            yield (i, self.dataset[i]) if self.return_index else self.dataset[i]


class GpuFileDataset(_data.Dataset):
    """Item ``i``: the whole file ``paths[i]`` as a 1-D tensor of ``dtype`` on ``device``.

    Read with :func:`reelfs.gpu.read_into` (tiers: see :mod:`reelfs.gpu`); ``last_tier`` says
    which carried the latest item. A file whose size is not a multiple of the dtype's size raises
    ``ValueError``; a file that shrinks while read raises ``OSError(EIO)``. With a CUDA device use
    ``num_workers=0`` (CUDA does not survive the DataLoader's fork), or give the workers CPU
    tensors and move batches in the main process.
    """

    def __init__(self, paths, device="cpu", dtype=_torch.uint8):
        self.paths = list(paths)
        self.device = _torch.device(device)
        self.dtype = dtype
        self.last_tier = None

    def __len__(self):
        return len(self.paths)

    def empty_for(self, i):
        """An uninitialised tensor the size of file ``i``."""
        size = _os.stat(self.paths[i]).st_size
        width = _torch.empty((), dtype=self.dtype).element_size()
        if size % width:
            raise ValueError(f"{self.paths[i]}: {size} bytes is not a whole number of "
                             f"{self.dtype} elements")
        return _torch.empty(size // width, dtype=self.dtype, device=self.device)

    def __getitem__(self, i):
        out = self.empty_for(i)
        n, self.last_tier = _gpu.read_into(self.paths[i], out)
        _check_whole(self.paths[i], n, out)
        return out


def _check_whole(path, n, out):
    want = out.numel() * out.element_size()
    if n != want:
        raise OSError(_errno.EIO, f"read {n} of {want} bytes (the file shrank while read)", path)


class GpuFileIterable(_data.IterableDataset):
    """The items of a :class:`GpuFileDataset`, read ``batch_size`` files at a time with
    :func:`reelfs.gpu.read_many` (pipelined on one side-channel connection).

    ``sampler``: an iterable of indices (e.g. a :class:`TapeOrderSampler` over the same paths)
    giving the order; default ``range(len(dataset))``. Under a DataLoader with ``num_workers=N``
    worker ``k`` takes every N-th index of that order, so each index is yielded once overall.
    Yields tensors, or ``(i, tensor)`` with ``return_index=True``.
    """

    def __init__(self, dataset, sampler=None, batch_size=64, return_index=False):
        super().__init__()
        self.dataset = dataset
        self.sampler = sampler
        self.batch_size = batch_size
        self.return_index = return_index

    def __len__(self):
        return len(self.dataset)

    def __iter__(self):
        order = iter(self.sampler) if self.sampler is not None else iter(range(len(self.dataset)))
        info = _data.get_worker_info()
        if info is not None:
            order = (i for k, i in enumerate(order) if k % info.num_workers == info.id)
        batch = []
        for i in order:
            batch.append(i)
            if len(batch) == self.batch_size:
                yield from self._read(batch)
                batch = []
        if batch:
            yield from self._read(batch)

    def _read(self, indices):
        outs = [self.dataset.empty_for(i) for i in indices]
        results = _gpu.read_many([(self.dataset.paths[i], out) for i, out in zip(indices, outs)])
        for i, out, (n, _) in zip(indices, outs, results):
            _check_whole(self.dataset.paths[i], n, out)
            yield (i, out) if self.return_index else out
