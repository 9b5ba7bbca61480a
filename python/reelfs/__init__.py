"""reelfs: Python helpers for reelfs mounts of tape-backed S3 archives (pure Python).

- :mod:`reelfs.hsm`: tape state of files (``state``, ``states``, ``summary``, ``request_stage``)
  through the mount's extended attributes.
- :mod:`reelfs.order`: dataset indices in the order their files become readable.
- :mod:`reelfs.shard`: a dataset split over the ranks of a distributed job, by cartridge.
- :mod:`reelfs.side_channel`: the side channel's wire format and client (sealed memfds, pipelined
  READs on the mount's Unix socket).
- :mod:`reelfs.gpu`: ``read_into`` / ``read_many`` into host buffers, numpy arrays and torch
  tensors (CPU or CUDA) through the side channel, ``pread`` without one.
- :mod:`reelfs.torch`: a PyTorch ``Sampler`` and ``IterableDataset`` built on it (imports torch;
  import it explicitly: ``from reelfs.torch import TapeOrderSampler``).

See python/README.md.
"""

from . import gpu, hsm, shard, side_channel
from .hsm import HsmError, NotOnReelfsError, request_stage, state, states, summary
from .order import ReadyOrder, StagingFailed, StagingTimeout

__version__ = "0.1.0"
__all__ = ["gpu", "hsm", "shard", "side_channel",
           "HsmError", "NotOnReelfsError", "request_stage", "state", "states", "summary",
           "ReadyOrder", "StagingFailed", "StagingTimeout"]
