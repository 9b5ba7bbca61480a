#!/usr/bin/env python3
"""reelfs.side_channel's Client and reelfs.gpu against a scripted daemon (fake_side_channel.py):
discovery through user.reelfs.mount, fd passing, sealed memfds, completions out of submission
order matched by tag, errors as OSError / ProtocolError, the pread rung without a side channel,
read_many byte-exact. numpy and CPU torch targets where those import. Exits 77 without user
xattrs.
"""
import errno
import os
import random
import socket
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_side_channel import FakeSideChannel  # noqa: E402

from reelfs import gpu  # noqa: E402
from reelfs import side_channel as sc  # noqa: E402


def blob(seed, n):
    return random.Random(seed).randbytes(n)


class ClientTest(unittest.TestCase):
    def setUp(self):
        self.fake = FakeSideChannel()
        self.data = blob(1, 3 * 1024 * 1024 + 77)
        self.path = self.fake.file("d/big.bin", self.data)

    def tearDown(self):
        self.fake.close()

    def test_discovery_and_hello(self):
        self.assertEqual(sc.socket_path_for(self.path), self.fake.sock_path)
        root, info = sc.mount_info(self.path)
        self.assertEqual(root, os.path.realpath(self.fake.root))
        with sc.Client.for_path(self.path) as c:
            self.assertEqual(c.server_version, 1)

    def test_pipelined_reads_complete_out_of_order_and_match_by_tag(self):
        with sc.Client.for_path(self.path) as c:
            fid = c.open_file(self.path)
            buf = c.register_memfd(1 << 20)
            self.assertEqual(len(buf) % 4096, 0)
            rng = random.Random(2)
            want = {}
            at = 0
            order = []
            self.fake.hold_reads = 40  # all 40 answered together, reversed
            for _ in range(40):
                n = rng.randrange(1, 20000)
                off = rng.randrange(0, len(self.data) + 100)
                tag = c.submit_read(fid, off, n, buf, at)
                want[tag] = (off, n, at)
                order.append(tag)
                at += n
            got = list(c.completions())
            self.assertEqual(sorted(t for t, _, _ in got), sorted(order))
            self.assertNotEqual([t for t, _, _ in got], order)  # the fake reverses each chunk
            for tag, result, path in got:
                off, n, at = want[tag]
                expect = self.data[off:off + n]
                self.assertEqual(result, len(expect))
                self.assertEqual(path, "http")
                self.assertEqual(bytes(memoryview(buf)[at:at + result]), expect)
            n, path = c.read(fid, len(self.data) - 10, 100, buf, 0)
            self.assertEqual((n, bytes(buf[:n])), (10, self.data[-10:]))
            c.release_buffer(buf)
            c.close_file(fid)

    def test_a_socket_fd_above_1024(self):
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard != resource.RLIM_INFINITY and hard <= 1100:
            self.skipTest(f"RLIMIT_NOFILE hard limit {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1100), hard))
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(self.fake.sock_path)
            high = socket.socket(fileno=os.dup2(s.fileno(), 1050))
            s.close()
            with sc.Client(high) as c:
                c._hello(0)  # select(2) could not wait on fd 1050; poll(2) can
                buf = c.register_memfd(4096)
                fid = c.open_file(self.path)
                self.assertEqual(c.read(fid, 5, 100, buf), (100, "http"))
                self.assertEqual(bytes(buf[:100]), self.data[5:105])
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    def test_errors(self):
        outside = tempfile.NamedTemporaryFile()
        with sc.Client.for_path(self.path) as c:
            with self.assertRaises(PermissionError) as cm:
                c.open_file(outside.name)
            self.assertEqual(cm.exception.errno, errno.EPERM)
            self.assertEqual(cm.exception.filename, outside.name)
            fid = c.open_file(self.path)
            buf = c.register_memfd(4096)
            with self.assertRaises(OSError) as cm:
                c.read(fid, 0, 8192, buf, 0)  # the window does not fit the buffer
            self.assertEqual(cm.exception.errno, errno.EINVAL)
            with self.assertRaises(OSError) as cm:
                c.read(fid + 1000, 0, 1, buf, 0)
            self.assertEqual(cm.exception.errno, errno.EBADF)
            with self.assertRaises(sc.InvalidFrame):
                c.submit_read(fid, 0, 0, buf, 0)  # refused before it is sent
            self.fake.fail_reads["big.bin"] = errno.ESTALE
            with self.assertRaises(OSError) as cm:
                c.read(fid, 0, 1, buf, 0)
            self.assertEqual((cm.exception.errno, cm.exception.filename),
                             (errno.ESTALE, self.path))

    def test_open_files_pipelined_with_a_refusal_in_place(self):
        outside = tempfile.NamedTemporaryFile()
        paths = [self.fake.file(f"o/{i}", b"x") for i in range(5)]
        fds = [os.open(p, os.O_RDONLY) for p in paths[:2]] + [os.open(outside.name, os.O_RDONLY)]
        fds += [os.open(p, os.O_RDONLY) for p in paths[2:]]
        try:
            with sc.Client.for_path(self.path) as c:
                got = c.open_files(fds, [f"n{i}" for i in range(6)])
                self.assertIsInstance(got[2], PermissionError)
                self.assertEqual(got[2].filename, "n2")
                ids = [g for g in got if isinstance(g, int)]
                self.assertEqual(len(set(ids)), 5)
                buf = c.register_memfd(4096)
                for fid in ids:
                    self.assertEqual(c.read(fid, 0, 10, buf), (1, "http"))
        finally:
            for fd in fds:
                os.close(fd)

    def test_unsealed_memfd_is_refused(self):
        with sc.Client.for_path(self.path) as c:
            fd = os.memfd_create("unsealed", os.MFD_CLOEXEC)
            os.ftruncate(fd, 4096)
            try:
                result = c._request(sc.RegisterBuffer(sc.KIND_MEMFD, 4096), fds=[fd])
            finally:
                os.close(fd)
            self.assertEqual(result, -errno.EINVAL)

    def test_error_frame_raises_protocol_error(self):
        s = socket.socket(socket.AF_UNIX)
        s.connect(self.fake.sock_path)
        s.sendall(sc.encode_frame(sc.Frame(1, sc.OpenFile())))  # no HELLO first
        c = sc.Client(s)
        with self.assertRaises(sc.ProtocolError) as cm:
            c._receive_frame()
        self.assertEqual(cm.exception.errno, 71)
        self.assertIn("no HELLO", str(cm.exception))

    def test_error_mid_stream_ends_the_client(self):
        ours, theirs = socket.socketpair()

        def daemon():
            hello = sc.decode_frame(theirs.recv(16 + 8))
            theirs.sendall(sc.encode_frame(sc.Frame(hello.tag, sc.Hello(1, sc.CAP_RDMA | 1 << 9))))
            theirs.recv(16 + 40)  # the READ
            theirs.sendall(sc.encode_frame(sc.Frame(0, sc.Error(90, "frame too long"))))
            theirs.close()

        import threading
        t = threading.Thread(target=daemon)
        t.start()
        c = sc.Client(ours)
        c._hello(sc.CAP_RDMA | sc.CAP_DMABUF)
        self.assertEqual((c.server_capabilities, c.capabilities), (sc.CAP_RDMA | 1 << 9,
                                                                   sc.CAP_RDMA))
        c.submit_read(1, 0, 10, 5)
        with self.assertRaises(sc.ProtocolError) as cm:
            c.wait()
        self.assertEqual(cm.exception.errno, 90)
        self.assertIn("frame too long", str(cm.exception))
        with self.assertRaises(ConnectionError):
            c.wait()
        with self.assertRaises(ConnectionError):
            c.submit_read(1, 0, 10, 5)
        t.join()

    def test_no_side_channel_member(self):
        fake = FakeSideChannel(announce=False)
        try:
            p = fake.file("x.bin", b"abc")
            with self.assertRaisesRegex(sc.SideChannelUnavailable, "no side channel"):
                sc.Client.for_path(p)
            out = bytearray(10)
            self.assertEqual(gpu.read_into(p, out), (3, "pread"))
            self.assertEqual(bytes(out[:3]), b"abc")
        finally:
            fake.close()


class GpuTest(unittest.TestCase):
    def setUp(self):
        self.fake = FakeSideChannel()
        self.data = blob(3, 20 * 1024 * 1024 + 5)  # more than one CHUNK, not a whole page
        self.path = self.fake.file("big.bin", self.data)

    def tearDown(self):
        self.fake.close()

    def test_read_into_host_buffers(self):
        out = bytearray(len(self.data) + 100)
        self.assertEqual(gpu.read_into(self.path, out), (len(self.data), "host"))
        self.assertEqual(bytes(out[:len(self.data)]), self.data)
        self.assertEqual(gpu.read_into(self.path, out, len(self.data)), (0, "host"))  # at EOF
        self.assertEqual(gpu.read_into(self.fake.file("empty", b""), out), (0, "host"))
        mem = gpu.memfd_buffer(self.path, 1 << 20)  # filled with no staging copy
        self.assertEqual(gpu.read_into(self.path, mem, 3), (1 << 20, "host"))
        self.assertEqual(bytes(mem[:1 << 20]), self.data[3:3 + (1 << 20)])
        rng = random.Random(4)
        for _ in range(50):
            off = rng.randrange(0, len(self.data) + 10)
            mv = memoryview(bytearray(rng.randrange(1, 70000)))
            n, tier = gpu.read_into(self.path, mv, off)
            self.assertEqual(tier, "host")
            self.assertEqual(bytes(mv[:n]), self.data[off:off + len(mv)])

    def test_read_many_byte_exact(self):
        files = [self.fake.file(f"s/{i:04d}", blob(i, 1024 + i % 3000)) for i in range(600)]
        self.fake.file("s/empty", b"")
        files.append(os.path.join(self.fake.root, "s/empty"))
        outs = [bytearray(4096) for _ in files]
        res = gpu.read_many([(p, o) for p, o in zip(files, outs)], window=64)
        for i, (p, o, (n, tier)) in enumerate(zip(files, outs, res)):
            with open(p, "rb") as f:
                want = f.read()
            self.assertEqual((n, tier), (len(want), "host"), p)
            self.assertEqual(bytes(o[:n]), want, p)
        # One file that fails costs an OSError naming it; the rest of the batch still completes.
        self.fake.fail_reads["0007"] = errno.EIO
        with self.assertRaises(OSError) as cm:
            gpu.read_many([(p, bytearray(4096)) for p in files[:20]])
        self.assertEqual((cm.exception.errno, cm.exception.filename), (errno.EIO, files[7]))
        del self.fake.fail_reads["0007"]
        # A missing file and a failing one: the rest are read, the first error (request order)
        # is raised at the end.
        self.fake.fail_reads["0009"] = errno.EIO
        outs = [bytearray(4096) for _ in range(12)]
        reqs = list(zip(files[:12], outs))
        reqs[11] = (os.path.join(self.fake.root, "s/missing"), outs[11])
        with self.assertRaises(OSError) as cm:
            gpu.read_many(reqs, window=4)
        self.assertEqual(cm.exception.errno, errno.EIO)
        with open(files[10], "rb") as f:
            want10 = f.read()
        self.assertEqual(bytes(outs[10][:len(want10)]), want10)
        with self.assertRaises(FileNotFoundError):
            gpu.read_many(reqs[10:], window=4)
        del self.fake.fail_reads["0009"]
        # A path outside any mount is no side-channel request at all: pread.
        outside = tempfile.NamedTemporaryFile()
        outside.write(b"xyz")
        outside.flush()
        self.assertEqual(gpu.read_many([(files[0], bytearray(9)), (outside.name, bytearray(9))])[1],
                         (3, "pread"))
        self.assertEqual(gpu.read_many([(files[3], bytearray(10), 5)]),
                         [(10, "host")])  # the connection is still in step

    def test_read_many_wraps_its_staging_ring(self):
        # Sizes from 1 B to 3 MiB under a 4 MiB-class ring and a window of 8: slices wrap and
        # come back out of order (the fake answers each chunk's READs in reverse).
        rng = random.Random(9)
        sizes = [rng.choice([1, 4095, 70000, 1 << 20, 3 << 20]) for _ in range(60)]
        files = [self.fake.file(f"w/{i:03d}", blob(100 + i, n)) for i, n in enumerate(sizes)]
        outs = [bytearray(n + 5) for n in sizes]
        old = gpu.RING_TARGET
        gpu.RING_TARGET = 4 << 20
        try:
            res = gpu.read_many(list(zip(files, outs, [0] * 30 + [1] * 30)), window=8)
        finally:
            gpu.RING_TARGET = old
        for i, (n, tier) in enumerate(res):
            want = blob(100 + i, sizes[i])[0 if i < 30 else 1:]
            self.assertEqual((n, tier), (len(want), "host"))
            self.assertEqual(bytes(outs[i][:n]), want, f"file {i}")

    def test_ring_slices_never_overlap(self):
        rng = random.Random(5)
        ring = gpu._Ring(1000)
        live = {}
        for step in range(5000):
            if live and (rng.random() < 0.5 or len(live) > 20):
                start = rng.choice(list(live))
                del live[start]
                ring.free(start)
                continue
            n = rng.randrange(1, 300)
            at = ring.alloc(n)
            if at is None:
                self.assertTrue(live, "an empty ring refused a slice")
                continue
            self.assertLessEqual(at + n, 1000)
            for s, m in live.items():
                self.assertTrue(at + n <= s or s + m <= at, f"step {step}: overlap")
            live[at] = n

    def test_numpy_and_torch_cpu(self):
        try:
            import numpy as np
        except ImportError:
            self.skipTest("no numpy")
        arr = np.zeros(1000, dtype=np.float32)
        n, tier = gpu.read_into(self.path, arr, 12)
        self.assertEqual((n, tier), (4000, "host"))
        self.assertEqual(arr.tobytes(), self.data[12:4012])
        try:
            import torch
        except ImportError:
            return
        t = torch.zeros(333, dtype=torch.int16)
        self.assertEqual(gpu.read_into(self.path, t, 9), (666, "host"))
        self.assertEqual(t.numpy().tobytes(), self.data[9:675])


if __name__ == "__main__":
    unittest.main(verbosity=1)
