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
from .order import ReadyOrder, StagingFailed, StagingTimeout

__all__ = ["TapeOrderSampler", "TapeOrderIterable", "GpuFileDataset", "GpuFileIterable",
           "StagingFailed", "StagingTimeout"]


class TapeOrderSampler(_data.Sampler):
    """Yields every index once per epoch, in the order its file becomes readable.

    Args:
      paths: the file of each dataset index, or None with ``path_of`` and ``length``.
      path_of, length: ``path_of(i)`` gives the file of index ``i`` for ``i < length``.
      stage: ``"files"`` (default), ``"directory"`` or False (see :class:`reelfs.order.ReadyOrder`).
      shuffle, seed: shuffle readable indices, seeded with ``seed + epoch`` (reproducible).
      timeout: seconds per epoch before :class:`StagingTimeout` (None: wait as long as it takes).
      Other keyword arguments go to :class:`reelfs.order.ReadyOrder`.

    After (or during) an epoch, ``stats`` holds what it saw: initially_readable, staged,
    rerequests, polls, yielded, failed.
    """

    def __init__(self, paths=None, *, path_of=None, length=None, stage="files", shuffle=False,
                 seed=0, timeout=None, **kwargs):
        super().__init__(None)
        self._order = ReadyOrder(paths, path_of=path_of, length=length, stage=stage,
                                 shuffle=shuffle, seed=seed, timeout=timeout, **kwargs)

    def __len__(self):
        return len(self._order)

    def __iter__(self):
        return iter(self._order)

    def set_epoch(self, epoch):
        self._order.set_epoch(epoch)

    @property
    def stats(self):
        return self._order.stats


class TapeOrderIterable(_data.IterableDataset):
    """A map-style ``dataset`` read in tape-readiness order, as an ``IterableDataset``.

    Yields ``dataset[i]`` (or ``(i, dataset[i])`` with ``return_index=True``) for every index once
    per epoch. Under a DataLoader with ``num_workers=N``, worker ``k`` takes the indices ``i`` with
    ``i % N == k``, so each index is still yielded exactly once overall. With
    ``stage="directory"`` only worker 0 sends the (recursive) request.

    ``paths`` / ``path_of`` and the keyword arguments are those of :class:`TapeOrderSampler`.
    """

    def __init__(self, dataset, paths=None, *, path_of=None, return_index=False, **kwargs):
        super().__init__()
        self.dataset = dataset
        self.return_index = return_index
        if paths is None and path_of is None:
            raise ValueError("give paths or path_of")
        self._paths = list(paths) if paths is not None else None
        self._path_of = path_of
        self._kwargs = kwargs
        self._epoch = 0

    def __len__(self):
        return len(self.dataset)

    def set_epoch(self, epoch):
        self._epoch = epoch

    def __iter__(self):
        info = _data.get_worker_info()
        n = len(self.dataset)
        kwargs = dict(self._kwargs)
        if info is None:
            indices = range(n)
        else:
            indices = range(info.id, n, info.num_workers)
            if info.id != 0 and kwargs.get("stage", "files") == "directory":
                kwargs["stage"] = False
            # Each worker shuffles its own share differently but reproducibly.
            kwargs["seed"] = kwargs.get("seed", 0) + 7919 * info.id
        if self._paths is not None:
            order = ReadyOrder(self._paths, indices=indices, **kwargs)
        else:
            order = ReadyOrder(path_of=self._path_of, length=n, indices=indices, **kwargs)
        order.set_epoch(self._epoch)
        self._epoch += 1
        for i in order:
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
