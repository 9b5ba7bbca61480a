#!/usr/bin/env python3
"""The checks of tests/e2e/side_channel.sh on a real mount, one subcommand per step; each compares
against the source tree the gateway serves. Exit 0: passed; 77: a precondition is missing (the
reason is printed); anything else: failed.

  probe MNT                       the mount announces a side channel and it answers HELLO
  ranges SRC MNTFILE              1 000 random ranges read_into a registered memfd and a bytearray
  small SRCDIR MNTDIR             every file under MNTDIR in one read_many batch, byte-exact
  eperm MNT OUTSIDE               OPEN_FILE of a file outside the mount -> PermissionError (EPERM)
  buffers MNT MNTFILE             buffers that are not what they claim: EINVAL, EOPNOTSUPP; the
                                  connection and a good memfd keep working after each
  arrays SRC MNTFILE              numpy array and CPU torch tensor targets (torch part skipped)
  dataset SRCDIR MNTDIR           GpuFileDataset in a DataLoader (2 workers), every sample checked
  kill SRCDIR MNTDIR              a client SIGKILLed mid-batch while this one keeps reading, and
                                  no write into its memfd once the daemon has seen it go
  victim MNTDIR                   (kill's child) READs of every file under MNTDIR, forever
"""
import errno
import hashlib
import json
import mmap
import os
import random
import signal
import subprocess
import sys
import time

from reelfs import gpu
from reelfs import side_channel as sc

SKIP = 77


def files_under(d):
    out = []
    for dirpath, _, names in os.walk(d):
        out.extend(os.path.join(dirpath, n) for n in names)
    return sorted(out)


def expect(src_dir, mnt_dir, path):
    with open(os.path.join(src_dir, os.path.relpath(path, mnt_dir)), "rb") as f:
        return f.read()


def probe(mnt):
    try:
        sock = sc.socket_path_for(mnt)
    except sc.SideChannelUnavailable as err:
        print(f"SKIP: {err}")
        return SKIP
    root, _ = sc.mount_info(mnt)
    metrics = json.loads(os.getxattr(root, "user.reelfs.metrics"))
    if metrics.get("side_channel") is None:
        # The daemon publishes its server's counters there once one runs; a socket announced
        # without them is a reelfs whose mount does not start the server yet.
        print(f"SKIP: the mount announces {sock} but runs no side channel server "
              "(user.reelfs.metrics has no side_channel counters)")
        return SKIP
    with sc.Client.connect(sock) as c:  # a server that runs must answer: an error fails
        print(f"  side channel {sock}: version {c.server_version}, "
              f"capabilities {c.server_capabilities:#x}")
    return 0


def ranges(src, mnt_file):
    size = os.path.getsize(src)
    rng = random.Random(1000)
    buf = gpu.memfd_buffer(mnt_file, 4 << 20)
    with open(src, "rb") as f:
        for i in range(1000):
            kind = i % 4
            n = rng.choice([1, 17, 4096, 65536 + 3, 1 << 20, 4 << 20])
            if kind == 0:  # near or past the end
                off = max(0, size - rng.randrange(0, 70000))
            else:
                off = rng.randrange(0, size)
            want = os.pread(f.fileno(), n, off)
            if i % 2:
                out = buf
                n_got, tier = gpu.read_into(mnt_file, memoryview(buf)[:n] if n < len(buf) else buf,
                                            off)
                got = bytes(memoryview(buf)[:n_got])
            else:
                out = bytearray(n)
                n_got, tier = gpu.read_into(mnt_file, out, off)
                got = bytes(out[:n_got])
            if tier != "host" or got != want:
                sys.exit(f"range {i}: offset {off} length {n}: tier {tier}, {n_got} bytes, "
                         f"want {len(want)}, {'equal' if got == want else 'different'}")
            del out
        # A read into the memfd itself (registered on this thread's connection: no staging).
        n_got, tier = gpu.read_into(mnt_file, buf, size - 100)
        if (n_got, tier, buf[:100]) != (100, "host", os.pread(f.fileno(), 100, size - 100)):
            sys.exit(f"read into the registered memfd: {n_got} bytes, tier {tier}")
    # READs of 1 MiB and more took the direct path (one ranged GET into the buffer), the others
    # the prefetcher: both were checked above.
    root, _ = sc.mount_info(mnt_file)
    counters = json.loads(os.getxattr(root, "user.reelfs.metrics"))["side_channel"]
    if counters.get("direct_reads", 0) == 0 or counters["direct_bytes"] > counters["bytes_read"]:
        sys.exit(f"no direct READs counted: {counters}")
    print(f"  1000 ranges byte-exact (memfd and bytearray targets, tier host; "
          f"{counters['direct_reads']} direct READs, "
          f"{counters['reads'] - counters['direct_reads']} through the prefetcher)")
    return 0


def side_channel_counters(path):
    root, _ = sc.mount_info(path)
    return json.loads(os.getxattr(root, "user.reelfs.metrics"))["side_channel"]


def small(src_dir, mnt_dir):
    paths = files_under(mnt_dir)
    outs = [bytearray(4096) for _ in paths]
    before = side_channel_counters(mnt_dir)["path_opens"]
    results = gpu.read_many(list(zip(paths, outs)))
    for p, out, (n, tier) in zip(paths, outs, results):
        want = expect(src_dir, mnt_dir, p)
        if tier != "host" or bytes(out[:n]) != want:
            sys.exit(f"{p}: tier {tier}, {n} bytes, want {len(want)}")
    opened = side_channel_counters(mnt_dir)["path_opens"] - before
    if opened < len(paths):
        sys.exit(f"read_many opened {opened} of {len(paths)} files by READ_PATH")
    print(f"  {len(paths)} files in one read_many batch (READ_PATH each), every byte checked")
    return 0


def paths(src_dir, mnt_dir):
    """OPEN_PATH and READ_PATH by hand: bytes, and the errno of each bad path."""
    root, _ = sc.mount_info(mnt_dir)
    files = files_under(mnt_dir)[:50]
    with sc.Client.for_path(mnt_dir) as c:
        if not c.server_capabilities & sc.CAP_OPEN_PATH:
            sys.exit(f"the daemon does not offer OPEN_PATH: {c.server_capabilities:#x}")
        buf = c.register_memfd(1 << 20)
        for p in files:
            rel = os.path.relpath(p, root)
            fid = c.open_path(rel)
            n, _ = c.read(fid, 0, 8192, buf)
            c.close_file(fid)
            if bytes(buf[:n]) != expect(src_dir, mnt_dir, p):
                sys.exit(f"OPEN_PATH {rel}: bytes differ")
        # READ_PATH at an offset, pipelined.
        tags = {c.submit_read_path(os.path.relpath(p, root), 100, 4096, buf, i * 4096): p
                for i, p in enumerate(files[:16])}
        for tag, result, _ in c.completions():
            p = tags[tag]
            i = list(tags).index(tag)
            if bytes(buf[i * 4096:i * 4096 + result]) != expect(src_dir, mnt_dir, p)[100:4196]:
                sys.exit(f"READ_PATH {p} at offset 100: bytes differ")
        some_dir = os.path.relpath(os.path.dirname(files[0]), root)
        some_file = os.path.relpath(files[0], root)
        for bad, want in ((some_dir, errno.EISDIR), (some_dir + "/no-such-file", errno.ENOENT),
                          (some_file + "/x", errno.ENOTDIR), (some_dir + "/../x", errno.EINVAL),
                          ("/" + some_file, errno.EINVAL), (some_dir + "//x", errno.EINVAL)):
            try:
                c.open_path(bad)
            except OSError as err:
                if err.errno != want:
                    sys.exit(f"OPEN_PATH {bad!r}: {err}, want {errno.errorcode[want]}")
            else:
                sys.exit(f"OPEN_PATH {bad!r} succeeded, want {errno.errorcode[want]}")
            tag = c.submit_read_path(bad, 0, 10, buf)
            result, _ = c.wait_for(tag)
            if result != -want:
                sys.exit(f"READ_PATH {bad!r}: {result}, want -{errno.errorcode[want]}")
    print(f"  OPEN_PATH and READ_PATH: {len(files)} files byte-exact; EISDIR, ENOENT, ENOTDIR "
          "and EINVAL for bad paths")
    return 0


def eperm(mnt, outside):
    with sc.Client.for_path(mnt) as c:
        try:
            c.open_file(outside)
        except PermissionError as err:
            if err.errno != errno.EPERM:
                sys.exit(f"open_file({outside}): {err}, want EPERM")
            print(f"  {outside}: {err}")
            return 0
        sys.exit(f"open_file({outside}) outside the mount was accepted")


def buffers(mnt, mnt_file):
    """A memfd or a plain file registered as a dma-buf is EINVAL (no exporter in its fdinfo); a
    CUDA IPC handle is EOPNOTSUPP (the daemon opens no CUDA context); an unsealed memfd is
    EINVAL. Each refusal costs only its request: a memfd registered after them reads the file."""
    with sc.Client.for_path(mnt) as c:
        if not c.server_capabilities & sc.CAP_DMABUF:
            sys.exit("the daemon does not offer dmabuf in its HELLO")
        page = mmap.PAGESIZE
        fake = sc._memfd(4 * page, "not-a-dmabuf")
        plain = os.open(mnt_file, os.O_RDONLY)
        unsealed = os.memfd_create("unsealed", os.MFD_CLOEXEC)
        os.ftruncate(unsealed, page)
        try:
            for what, call, want in (
                    ("a memfd as a dma-buf", lambda: c.register_dmabuf(fake, 4 * page),
                     errno.EINVAL),
                    ("a file of the mount as a dma-buf", lambda: c.register_dmabuf(plain, page),
                     errno.EINVAL),
                    ("an unsealed memfd", lambda: c._check(
                        c._request(sc.RegisterBuffer(sc.KIND_MEMFD, page), fds=[unsealed]),
                        "memfd"), errno.EINVAL),
                    ("a CUDA IPC handle", lambda: c._check(
                        c._request(sc.RegisterBuffer(sc.KIND_CUDA_IPC, 1 << 20, bytes(64))),
                        "cuda_ipc"), errno.EOPNOTSUPP)):
                try:
                    call()
                except OSError as err:
                    if err.errno != want:
                        sys.exit(f"{what}: {err}, want {errno.errorcode[want]}")
                    print(f"  {what}: {errno.errorcode[err.errno]}")
                    continue
                sys.exit(f"{what}: accepted")
        finally:
            for fd in (fake, plain, unsealed):
                os.close(fd)
        buf = c.register_memfd(1 << 20)
        fid = c.open_path(os.path.basename(mnt_file))
        n, _ = c.read(fid, 0, 1 << 20, buf)
        with open(mnt_file, "rb") as f:
            if bytes(buf[:n]) != f.read(n) or n == 0:
                sys.exit("after the refusals, a memfd READ came back wrong")
        print(f"  after the refusals: a {n}-byte READ into a memfd, byte-exact")
    return 0


def arrays(src, mnt_file):
    try:
        import numpy as np
    except ImportError:
        print("SKIP: no numpy in this python")
        return SKIP
    with open(src, "rb") as f:
        want = f.read(1 << 20)
    a = np.zeros(1 << 18, dtype=np.float32)
    n, tier = gpu.read_into(mnt_file, a)
    if (n, tier) != (1 << 20, "host") or a.tobytes() != want:
        sys.exit(f"numpy float32 target: {n} bytes, tier {tier}")
    print("  numpy float32 array byte-exact")
    try:
        import torch
    except ImportError:
        print("  (no torch: tensor target skipped)")
        return 0
    t = torch.zeros(1 << 19, dtype=torch.int16)
    n, tier = gpu.read_into(mnt_file, t)
    if (n, tier) != (1 << 20, "host") or t.numpy().tobytes() != want:
        sys.exit(f"torch int16 target: {n} bytes, tier {tier}")
    print("  CPU torch int16 tensor byte-exact")
    return 0


def dataset(src_dir, mnt_dir):
    try:
        import torch  # noqa: F401
        from torch.utils.data import DataLoader
    except ImportError:
        print("SKIP: no torch in this python")
        return SKIP
    from reelfs.torch import GpuFileDataset, GpuFileIterable
    paths = files_under(mnt_dir)[:2000]
    want = {i: hashlib.sha256(expect(src_dir, mnt_dir, p)).hexdigest() for i, p in enumerate(paths)}
    ds = GpuFileDataset(paths)

    class Indexed(torch.utils.data.Dataset):
        def __len__(self):
            return len(ds)

        def __getitem__(self, i):
            return i, ds[i], ds.last_tier

    seen = {}
    for i, t, tier in DataLoader(Indexed(), batch_size=None, shuffle=True, num_workers=2):
        if tier != "host" or hashlib.sha256(t.numpy().tobytes()).hexdigest() != want[i]:
            sys.exit(f"GpuFileDataset sample {i} ({paths[i]}): tier {tier}, bytes differ")
        seen[i] = seen.get(i, 0) + 1
    if seen != {i: 1 for i in want}:
        sys.exit("GpuFileDataset: not every sample exactly once")
    seen = {}
    for i, t in DataLoader(GpuFileIterable(ds, batch_size=128, return_index=True), batch_size=None,
                           num_workers=2):
        if hashlib.sha256(t.numpy().tobytes()).hexdigest() != want[i]:
            sys.exit(f"GpuFileIterable sample {i}: bytes differ")
        seen[i] = seen.get(i, 0) + 1
    if seen != {i: 1 for i in want}:
        sys.exit("GpuFileIterable: not every sample exactly once")
    print(f"  GpuFileDataset and GpuFileIterable in DataLoaders: {len(paths)} samples verified")
    return 0


def victim(mnt_dir):
    """Reads 512 files under mnt_dir into one memfd, 64 READs in flight, forever; prints
    "ready FD" (its memfd's fd number) once the first round is in."""
    paths = files_under(mnt_dir)[:512]  # the daemon keeps an fd per file id
    with sc.Client.for_path(mnt_dir, max_in_flight=64) as c:
        buf = c.register_memfd(64 * 4096)
        fds = [os.open(p, os.O_RDONLY) for p in paths]
        fids = c.open_files(fds, paths)
        for fd in fds:
            os.close(fd)
        for fid in fids:
            if isinstance(fid, OSError):
                raise fid
        first = True
        while True:
            for k, fid in enumerate(fids):
                c.submit_read(fid, 0, 4096, buf, (k % 64) * 4096)
            for _ in c.completions():
                pass
            if first:
                print(f"ready {buf.fd}", flush=True)
                first = False


def clients_connected(mnt_dir):
    root, _ = sc.mount_info(mnt_dir)
    try:
        doc = json.loads(os.getxattr(root, "user.reelfs.metrics"))
        return int(doc["side_channel"]["clients_connected"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def kill(src_dir, mnt_dir):
    paths = files_under(mnt_dir)[:3000]
    want = [expect(src_dir, mnt_dir, p) for p in paths]

    def check_round(label):
        outs = [bytearray(4096) for _ in paths]
        for p, w, o, (n, _) in zip(paths, want, outs, gpu.read_many(list(zip(paths, outs)))):
            if bytes(o[:n]) != w:
                sys.exit(f"{label}: {p} differs")

    check_round("before")
    mine = clients_connected(mnt_dir)  # this process's connections (gpu's, for this thread)
    child = subprocess.Popen([sys.executable, os.path.abspath(__file__), "victim", mnt_dir],
                             stdout=subprocess.PIPE, text=True)
    try:
        line = child.stdout.readline().split()
        if not line or line[0] != "ready":
            sys.exit(f"the victim client did not start (exit {child.wait()})")
        # The victim's memfd, seen through its fd table while it lives.
        memfd = os.open(f"/proc/{child.pid}/fd/{line[1]}", os.O_RDWR)
        # The victim submits with no pause, so it is mid-batch whenever it dies.
        check_round("beside the victim")
        child.send_signal(signal.SIGKILL)
        child.wait()
        if mine is not None:
            # Once the daemon has seen the disconnect, nothing may write into that memfd again.
            while clients_connected(mnt_dir) != mine:
                time.sleep(0.05)
            view = mmap.mmap(memfd, 64 * 4096)
            view[:] = b"\xee" * len(view)
        for r in range(3):
            check_round(f"after the kill, round {r}")
        if mine is not None:
            if view[:] != b"\xee" * len(view):
                sys.exit("the daemon wrote into the dead client's memfd after its disconnect")
            print("  no write into the dead client's memfd after its disconnect")
        else:
            print("  (user.reelfs.metrics has no side_channel.clients_connected: the "
                  "after-disconnect write check is skipped)")
        os.close(memfd)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    # The mount is still whole: a fresh connection works too.
    with sc.Client.for_path(mnt_dir) as c:
        fid = c.open_file(paths[0])
        buf = c.register_memfd(4096)
        n, _ = c.read(fid, 0, 4096, buf)
        if bytes(buf[:n]) != want[0]:
            sys.exit("a fresh connection after the kill read wrong bytes")
    print(f"  a client SIGKILLed mid-batch; this one read {len(paths)} files x 5 rounds byte-exact")
    return 0


def main(argv):
    cmds = {"probe": probe, "ranges": ranges, "small": small, "paths": paths, "eperm": eperm,
            "buffers": buffers, "arrays": arrays,
            "dataset": dataset, "kill": kill, "victim": victim}
    if len(argv) < 2 or argv[1] not in cmds:
        sys.exit(__doc__)
    return cmds[argv[1]](*argv[2:])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
