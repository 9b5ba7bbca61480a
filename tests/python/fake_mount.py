"""A stand-in for a reelfs mount in the Python unit tests: plain files carrying user.hsm.state.

FakeArchive makes N files with known bytes in a private directory on a filesystem with user
extended attributes (ext4, xfs, tmpfs with user_xattr), sets each one's user.hsm.state, and runs a
thread that plays the mount and the tape library: it notices user.hsm.request=stage on a file or
a directory (recursive), turns the files it covers from offline to staging, and makes staging
files online in a fixed order ("cartridge" by "cartridge", `batch` files per step), waiting
until the test lets it go on (`release()`) or on its own with `auto=True`. Files listed in
`stage_fail` go back to offline each time they are requested (the gateway's StageFail).

No timing is asserted anywhere: the order of events is forced by the thread's steps.
"""

import errno
import hashlib
import os
import shutil
import sys
import tempfile
import threading
import time

SKIP = 77


def xattr_dir():
    """A fresh directory whose filesystem takes user.* xattrs on files and directories, or exit 77."""
    for base in (os.environ.get("TMPDIR"), "/var/tmp", "/tmp"):
        if not base or not os.path.isdir(base):
            continue
        d = tempfile.mkdtemp(prefix="reelfs-pytest.", dir=base)
        f = os.path.join(d, "probe")
        try:
            open(f, "wb").close()
            os.setxattr(f, "user.reelfs.probe", b"1")
            os.setxattr(d, "user.reelfs.probe", b"1")
            os.remove(f)
            os.removexattr(d, "user.reelfs.probe")
            return d
        except OSError:
            shutil.rmtree(d, ignore_errors=True)
    print("SKIP: no filesystem with user extended attributes under $TMPDIR, /var/tmp or /tmp")
    sys.exit(SKIP)


class FakeArchive:
    def __init__(self, n, online=(), sub_dirs=4, seed=1):
        self.root = xattr_dir()
        self.data_dir = os.path.join(self.root, "data")
        self.paths = []
        self.digests = []
        for i in range(n):
            d = os.path.join(self.data_dir, f"d{i % sub_dirs}")
            os.makedirs(d, exist_ok=True)
            p = os.path.join(d, f"f{i:04d}.bin")
            body = hashlib.sha256(f"{seed}:{i}".encode()).digest() * (1 + i % 7)
            with open(p, "wb") as f:
                f.write(body)
            self.paths.append(p)
            self.digests.append(hashlib.sha256(body).hexdigest())
        self.online = set(online)
        for i, p in enumerate(self.paths):
            self.set_state(i, "online" if i in self.online else "offline")
        self.requests_seen = []   # paths carrying user.hsm.request, in the order seen
        self.stage_fail = set()   # indices that go back to offline on each request
        self.history = []         # (index, state) transitions made by the thread, in order
        self._lock = threading.Lock()
        self._steps = threading.Semaphore(0)
        self._stop = threading.Event()
        self._thread = None

    # -- state ---------------------------------------------------------------------------------

    def set_state(self, i, s):
        os.setxattr(self.paths[i], "user.hsm.state", s.encode())

    def get_state(self, i):
        return os.getxattr(self.paths[i], "user.hsm.state").decode()

    def states(self):
        return [self.get_state(i) for i in range(len(self.paths))]

    # -- the thread ----------------------------------------------------------------------------

    def start(self, order, batch=5, auto=False):
        """Serves requests; makes staging files online in `order`, `batch` at a time.

        With auto=False each batch waits for one release(); with auto=True batches follow each
        other as fast as the thread loops (a few ms apart).
        """
        self._order = list(order)
        self._batch = batch
        self._auto = auto
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def release(self, steps=1):
        for _ in range(steps):
            self._steps.release()

    def stop(self):
        self._stop.set()
        self._steps.release()
        if self._thread:
            self._thread.join(10)

    def close(self):
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def _take_requests(self):
        covered = set()
        targets = [self.data_dir] + sorted({os.path.dirname(p) for p in self.paths}) + self.paths
        for t in targets:
            try:
                v = os.getxattr(t, "user.hsm.request")
            except OSError as err:
                if err.errno == errno.ENODATA:
                    continue
                raise
            os.removexattr(t, "user.hsm.request")
            assert v == b"stage", v
            self.requests_seen.append(t)
            for i, p in enumerate(self.paths):
                if p == t or p.startswith(t + os.sep):
                    covered.add(i)
        for i in sorted(covered):
            s = self.get_state(i)
            if s != "offline":
                continue
            new = "offline" if i in self.stage_fail else "staging"
            self.set_state(i, new)
            with self._lock:
                self.history.append((i, new))

    def _run(self):
        pos = 0
        owed = 0  # files the current step still has to bring online
        while not self._stop.is_set():
            self._take_requests()
            if pos >= len(self._order):
                time.sleep(0.005)
                continue
            if owed == 0:
                if not self._auto:
                    if not self._steps.acquire(timeout=0.005):
                        continue
                    if self._stop.is_set():
                        return
                else:
                    time.sleep(0.005)
                owed = self._batch
            # The step's batch comes online in the library's order. A file of it not requested
            # yet holds the rest back and the step stays owed: a step always brings a whole
            # batch, however the requests interleave with this thread's scans (a step that
            # ended early, with the test waiting for the whole batch, hung the test).
            while pos < len(self._order) and owed > 0:
                i = self._order[pos]
                if self.get_state(i) == "staging":
                    self.set_state(i, "online")
                    with self._lock:
                        self.history.append((i, "online"))
                    owed -= 1
                    pos += 1
                elif i in self.stage_fail or self.get_state(i) == "online":
                    pos += 1  # never comes (StageFail) or already there
                else:
                    break  # not requested yet: wait for the request
            if pos >= len(self._order):
                owed = 0
            elif owed > 0:
                time.sleep(0.005)
