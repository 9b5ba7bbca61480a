"""Readiness order: dataset indices in the order their files become readable.

The engine behind :mod:`reelfs.torch`, kept free of torch so it can be used (and tested) without
it. One epoch of :class:`ReadyOrder`:

1. reads every file's ``user.hsm.state``;
2. optionally asks the mount to stage everything that is not readable, all at once (one
   ``user.hsm.request`` per file, or one on their common directory), because a tape library
   serves a large batch per cartridge far faster than requests trickling in one by one
   (docs/tape.md);
3. yields the indices of the readable files (online or restored), shuffled when asked;
4. polls the rest with exponential backoff and yields each as it becomes readable, shuffled
   within each newly-readable group.

Every index is yielded exactly once per epoch, unless a file fails: a file seen ``offline`` again
after a request (the gateway's StageFail, or the releaser won a race) is requested again, at most
``max_rerequests`` times ``rerequest_interval`` apart; then it is failed. Failures and timeouts
are raised as :class:`StagingFailed` / :class:`StagingTimeout` *after* every other index has been
yielded (or, for the timeout, when it expires), naming the files. ``on_error="skip"`` drops
failed files with a warning instead.

Thread-safety: one iteration at a time per object; separate objects are independent.
"""

import os
import random
import time
import warnings

from . import hsm

__all__ = ["ReadyOrder", "StagingFailed", "StagingTimeout"]


class StagingFailed(hsm.HsmError):
    """Some files never became readable. ``failed`` maps each path to the reason."""

    def __init__(self, failed):
        self.failed = dict(failed)
        first = list(self.failed.items())[:5]
        more = f" (and {len(self.failed) - 5} more)" if len(self.failed) > 5 else ""
        detail = "; ".join(f"{p}: {why}" for p, why in first)
        super().__init__(f"{len(self.failed)} file(s) could not be staged: {detail}{more}")


class StagingTimeout(hsm.HsmError, TimeoutError):
    """``timeout`` passed before every file became readable. ``pending`` maps path to last state."""

    def __init__(self, pending, timeout):
        self.pending = dict(pending)
        self.timeout = timeout
        first = list(self.pending.items())[:5]
        more = f" (and {len(self.pending) - 5} more)" if len(self.pending) > 5 else ""
        detail = ", ".join(f"{p} ({s})" for p, s in first)
        super().__init__(f"{len(self.pending)} file(s) still not readable after {timeout:g} s: "
                         f"{detail}{more}")


def _common_directory(paths):
    dirs = {os.path.dirname(os.path.abspath(os.fsdecode(p))) for p in paths}
    return os.path.commonpath(sorted(dirs)) if dirs else None


class ReadyOrder:
    """Iterates dataset indices in the order their files become readable (see the module doc).

    Args:
      paths: the file of each index (a sequence), or None when ``path_of`` is given.
      path_of: ``path_of(index) -> path``; needs ``length``.
      length: the number of indices when ``path_of`` is used.
      indices: iterate only these indices (default: all); used to shard over workers.
      stage: ``"files"`` (or True): one staging request per file that is not readable;
        ``"directory"``: one recursive request on the files' deepest common directory (cheaper
        for a whole directory tree; it stages files outside the dataset that live there too);
        False: request nothing (someone else stages, e.g. ``reelfs stage``; offline files are
        then only waited for).
      shuffle, seed: shuffle each group of readable indices with ``random.Random(seed + epoch)``.
      poll_min, poll_max: seconds between polls of the pending files; doubles while nothing new
        becomes readable, back to ``poll_min`` when something does.
      timeout: seconds from the start of an epoch until every file must be readable (None: no
        limit); then :class:`StagingTimeout`.
      max_rerequests, rerequest_interval: how often, and how far apart, a file seen offline after
        its request is asked for again before it counts as failed.
      on_error: ``"raise"`` (default) or ``"skip"`` for failed files.
    """

    def __init__(self, paths=None, *, path_of=None, length=None, indices=None, stage="files",
                 shuffle=False, seed=0, poll_min=0.2, poll_max=10.0, timeout=None,
                 max_rerequests=5, rerequest_interval=10.0, on_error="raise"):
        if (paths is None) == (path_of is None):
            raise ValueError("give exactly one of paths and path_of")
        if paths is not None:
            paths = list(paths)
            self._path_of = paths.__getitem__
            self._length = len(paths)
        else:
            if length is None:
                raise ValueError("path_of needs length")
            self._path_of = path_of
            self._length = int(length)
        if stage is True:
            stage = "files"
        if stage not in ("files", "directory", False, None):
            raise ValueError(f"stage must be 'files', 'directory' or False, not {stage!r}")
        if on_error not in ("raise", "skip"):
            raise ValueError(f"on_error must be 'raise' or 'skip', not {on_error!r}")
        if not 0 < poll_min <= poll_max:
            raise ValueError("need 0 < poll_min <= poll_max")
        self._indices = list(range(self._length)) if indices is None else list(indices)
        self.stage = stage or False
        self.shuffle = shuffle
        self.seed = seed
        self.poll_min = poll_min
        self.poll_max = poll_max
        self.timeout = timeout
        self.max_rerequests = max_rerequests
        self.rerequest_interval = rerequest_interval
        self.on_error = on_error
        self.epoch = 0
        # What the last epoch saw, for logs and tests: initially_readable, staged (requests
        # made up front), rerequests, polls, yielded, failed.
        self.stats = {}

    def __len__(self):
        return len(self._indices)

    def set_epoch(self, epoch):
        """Fixes the epoch number (the shuffle seed is ``seed + epoch``), as DistributedSampler."""
        self.epoch = epoch

    def __iter__(self):
        epoch = self.epoch
        self.epoch += 1
        return self._run(epoch)

    # -- one epoch -------------------------------------------------------------------------------

    def _run(self, epoch):
        rng = random.Random(self.seed + epoch)
        start = time.monotonic()
        stats = {"initially_readable": 0, "staged": 0, "rerequests": 0, "polls": 0, "yielded": 0,
                 "failed": 0}
        self.stats = stats
        path = {i: self._path_of(i) for i in self._indices}
        pending = {}  # index -> last state seen
        ready = []
        for i in self._indices:
            s = hsm.state(path[i])  # NotOnReelfsError here: the dataset is not on a mount
            if hsm.is_readable(s):
                ready.append(i)
            else:
                pending[i] = s
        stats["initially_readable"] = len(ready)

        requested_at = {}
        rerequests = {}
        failed = {}
        if self.stage and pending:
            if self.stage == "directory":
                hsm.request_stage(_common_directory(path[i] for i in pending))
                stats["staged"] = 1
            else:
                for i in pending:
                    self._request(path[i], i, failed)
                stats["staged"] = len(pending) - len(failed)
            now = time.monotonic()
            for i in pending:
                requested_at[i] = now
        for i in failed:
            pending.pop(i, None)

        yield from self._emit(ready, rng, stats)

        delay = self.poll_min
        read_errors = {}
        while pending:
            if self.timeout is not None and time.monotonic() - start > self.timeout:
                raise StagingTimeout({path[i]: s for i, s in pending.items()}, self.timeout)
            stats["polls"] += 1
            newly = []
            for i in list(pending):
                try:
                    s = hsm.state(path[i])
                    read_errors.pop(i, None)
                except OSError as err:
                    # A transient error (EINTR, EIO) is retried; three in a row fail the file.
                    read_errors[i] = read_errors.get(i, 0) + 1
                    if read_errors[i] >= 3:
                        failed[i] = f"cannot read its state: {err.strerror or err}"
                        del pending[i]
                    continue
                pending[i] = s
                if hsm.is_readable(s):
                    newly.append(i)
                    del pending[i]
                elif s == "offline" and self.stage:
                    now = time.monotonic()
                    if now - requested_at.get(i, 0.0) < self.rerequest_interval:
                        continue  # the mount may not have noticed the request yet
                    if rerequests.get(i, 0) >= self.max_rerequests:
                        failed[i] = (f"still offline after {self.max_rerequests + 1} restore "
                                     "requests (the restore failed, or the copy was released "
                                     "again each time)")
                        del pending[i]
                        continue
                    rerequests[i] = rerequests.get(i, 0) + 1
                    stats["rerequests"] += 1
                    requested_at[i] = now
                    self._request(path[i], i, failed)
                    if i in failed:
                        del pending[i]
            if newly:
                delay = self.poll_min
                yield from self._emit(newly, rng, stats)
            elif pending:
                time.sleep(delay)
                delay = min(delay * 2, self.poll_max)

        stats["failed"] = len(failed)
        if failed:
            named = {path[i]: why for i, why in failed.items()}
            if self.on_error == "raise":
                raise StagingFailed(named)
            warnings.warn(str(StagingFailed(named)), RuntimeWarning, stacklevel=2)

    def _request(self, p, i, failed):
        try:
            hsm.request_stage(p)
        except OSError as err:
            failed[i] = f"staging request refused: {err.strerror or err}"

    def _emit(self, group, rng, stats):
        if self.shuffle:
            rng.shuffle(group)
        for i in group:
            stats["yielded"] += 1
            yield i
