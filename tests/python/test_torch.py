#!/usr/bin/env python3
"""Unit tests of reelfs.torch with a real DataLoader (worker processes) and no mount.

fake_mount.FakeArchive plays the mount and the library on plain files with user.hsm.state. Each
sample is read by a DataLoader worker and carries the state its file had when the worker opened
it, so "only readable files are read" is checked where it matters. Exits 77 without torch (run.sh
picks an interpreter that has it) or without user xattrs.
"""
import ctypes
import errno
import hashlib
import json
import mmap
import os
import sys
import tempfile
import unittest
from unittest import mock

try:
    import torch
    from torch.utils.data import DataLoader, Dataset
except ImportError as e:
    print(f"SKIP: cannot import torch ({e})")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_mount import FakeArchive  # noqa: E402

from fake_side_channel import FakeSideChannel  # noqa: E402

from reelfs import side_channel as sc  # noqa: E402

from reelfs.torch import (  # noqa: E402
    GpuFileDataset, GpuFileIterable, StagingTimeout, TapeOrderIterable, TapeOrderSampler)


class Files(Dataset):
    def __init__(self, paths):
        self.paths = paths

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        state = os.getxattr(self.paths[i], "user.hsm.state").decode()
        with open(self.paths[i], "rb") as f:
            data = f.read()
        return i, state, torch.frombuffer(bytearray(data), dtype=torch.uint8)


def as_list(batch):
    return batch


class TorchTest(unittest.TestCase):
    def setUp(self):
        self.online = set(range(0, 60, 6))  # 10 of 60
        self.a = FakeArchive(60, online=self.online)

    def tearDown(self):
        self.a.close()

    def check_samples(self, samples):
        seen = [0] * 60
        for i, state, tensor in samples:
            self.assertIn(state, ("online", "restored"), f"sample {i} read while {state}")
            self.assertEqual(hashlib.sha256(tensor.numpy().tobytes()).hexdigest(),
                             self.a.digests[i], f"sample {i} bytes")
            seen[i] += 1
        self.assertEqual(seen, [1] * 60, "every index exactly once")

    def test_sampler_with_dataloader_workers(self):
        a = self.a
        a.start([i for i in range(60) if i not in self.online][::-1], batch=10)
        sampler = TapeOrderSampler(a.paths, shuffle=True, seed=2, poll_min=0.005, poll_max=0.02)
        self.assertEqual(len(sampler), 60)
        # The DataLoader takes prefetch_factor (2) x num_workers batches of indices from the
        # sampler before it hands out the first batch: 4 x 2 = 8 <= the 10 readable files.
        loader = DataLoader(Files(a.paths), batch_size=2, sampler=sampler, num_workers=2,
                            collate_fn=as_list)
        samples = []
        offline_at_first_batch = None
        for batch in loader:
            if offline_at_first_batch is None:
                offline_at_first_batch = sum(s == "offline" or s == "staging" for s in a.states())
                a.release(5)  # only now does the library bring the rest online
            samples.extend(batch)
        self.check_samples(samples)
        self.assertEqual(offline_at_first_batch, 50, "the first batch came before any recall")
        self.assertEqual({i for i, _, _ in samples[:10]}, self.online)
        self.assertEqual(sampler.stats["initially_readable"], 10)
        self.assertEqual(sampler.stats["staged"], 50)

        # Second epoch: everything is online now; a new shuffle, still each index once.
        order2 = [i for batch in DataLoader(Files(a.paths), batch_size=5, sampler=sampler,
                                            num_workers=2, collate_fn=as_list)
                  for i, _, _ in batch]
        self.assertEqual(sorted(order2), list(range(60)))
        self.assertEqual(sampler.stats["staged"], 0)

    def test_iterable_wrapper_shards_over_workers(self):
        a = self.a
        a.start([i for i in range(60) if i not in self.online], batch=10, auto=True)
        ds = TapeOrderIterable(Files(a.paths), a.paths, shuffle=True, seed=5, poll_min=0.005,
                               poll_max=0.02)
        loader = DataLoader(ds, batch_size=4, num_workers=2, collate_fn=as_list)
        samples = [s for batch in loader for s in batch]
        self.check_samples(samples)
        self.assertEqual(len(a.requests_seen), 50)
        # Without workers, return_index wraps each sample.
        ds = TapeOrderIterable(Files(a.paths), path_of=lambda i: a.paths[i], return_index=True)
        pairs = list(ds)
        self.assertEqual([i for i, _ in pairs], list(range(60)))
        self.assertTrue(all(s[0] == i for i, s in pairs))

    def test_timeout_surfaces_in_the_training_loop(self):
        a = self.a
        a.start([], auto=True)  # staged, never online
        sampler = TapeOrderSampler(a.paths, timeout=0.3, poll_min=0.005, poll_max=0.02)
        loader = DataLoader(Files(a.paths), batch_size=5, sampler=sampler, collate_fn=as_list)
        got = []
        with self.assertRaises(StagingTimeout) as cm:
            for batch in loader:
                got.extend(i for i, _, _ in batch)
        self.assertEqual(sorted(got), sorted(self.online))
        self.assertEqual(len(cm.exception.pending), 50)


class GpuFileDatasetTest(unittest.TestCase):
    """GpuFileDataset / GpuFileIterable over a scripted side-channel daemon, in a DataLoader."""

    def setUp(self):
        self.fake = FakeSideChannel()
        self.bodies = [hashlib.sha256(str(i).encode()).digest() * (4 + i % 50) for i in range(80)]
        self.paths = [self.fake.file(f"g/{i:03d}.bin", b) for i, b in enumerate(self.bodies)]
        for p in self.paths:
            os.setxattr(p, "user.hsm.state", b"online")

    def tearDown(self):
        self.fake.close()

    def test_map_style_with_sampler_and_workers(self):
        ds = GpuFileDataset(self.paths, dtype=torch.int32)
        self.assertEqual(ds[3].dtype, torch.int32)
        self.assertEqual(ds.last_tier, "host")
        sampler = TapeOrderSampler(self.paths, stage=False, shuffle=True, seed=1)
        loader = DataLoader(ds, sampler=sampler, batch_size=None, num_workers=2)
        got = sorted(t.numpy().tobytes() for t in loader)
        self.assertEqual(got, sorted(self.bodies))  # every file once, byte-exact

    def test_iterable_in_batches_with_workers(self):
        ds = GpuFileDataset(self.paths)
        it = GpuFileIterable(ds, sampler=TapeOrderSampler(self.paths, stage=False), batch_size=16,
                             return_index=True)
        got = {}
        for i, t in DataLoader(it, batch_size=None, num_workers=2):
            self.assertNotIn(i, got)
            got[i] = t.numpy().tobytes()
        self.assertEqual(got, dict(enumerate(self.bodies)))
        pairs = list(GpuFileIterable(ds, batch_size=7, return_index=True))  # no workers
        self.assertEqual([i for i, _ in pairs], list(range(80)))

    def test_a_size_that_is_not_whole_elements(self):
        p = self.fake.file("odd.bin", b"abc")
        with self.assertRaises(ValueError):
            GpuFileDataset([p], dtype=torch.int16)[0]


class StagedCopyTest(unittest.TestCase):
    """reelfs.gpu's double-buffered path (pinned-staging for CUDA tensors): its chunking checked
    on a CPU target with synchronous copies, and for real on a CUDA device when there is one."""

    def setUp(self):
        from reelfs import gpu
        self.gpu = gpu
        self.fake = FakeSideChannel()
        self.data = hashlib.sha256(b"s").digest() * 40000 + b"tail"  # 1 280 004 bytes
        self.path = self.fake.file("staged.bin", self.data)

    def tearDown(self):
        self.fake.close()

    def test_double_buffering_in_small_chunks(self):
        gpu = self.gpu
        ch = gpu._channel_for(self.path)
        fd = os.open(self.path, os.O_RDONLY)
        try:
            fid = ch.client.open_file(fd)
            for offset, want, chunk in ((0, len(self.data), 65536), (5, 300001, 4096),
                                        (len(self.data) - 10, 10, 4096), (7, 4096 * 3, 4096)):
                dst = torch.zeros(want + 3, dtype=torch.uint8)
                n, tier = gpu._staged(ch, torch, fid, offset, dst, want, self.path, chunk=chunk)
                self.assertEqual((n, tier), (want, "host"))
                self.assertEqual(dst[:n].numpy().tobytes(), self.data[offset:offset + want])
                self.assertEqual(int(dst[n:].sum()), 0)  # nothing past the window
                ch.pinned = None  # the next case's chunk size gets its own pair
            self.assertEqual(ch.client.in_flight, 0)
        finally:
            os.close(fd)

    def test_cuda_tensor(self):
        if not torch.cuda.is_available():
            self.skipTest("no CUDA device")
        out = torch.zeros(len(self.data) // 4, dtype=torch.int32, device="cuda")
        n, tier = self.gpu.read_into(self.path, out)
        self.assertEqual(n, len(self.data) // 4 * 4)
        self.assertIn(tier, ("pinned-staging", "host"))
        self.assertEqual(out.cpu().numpy().tobytes(), self.data[:n])


class _FakeDriver:
    """The two libcuda entry points of the rdma-gpu rung. The "device memory" is a memfd mapped
    in this process: an export of exactly that mapping's pages is a dup of the memfd (what the
    fake daemon maps, as the real one maps a CPU-mappable dma-buf); any other range fails as
    CUDA_ERROR_INVALID_VALUE (1) would."""

    def __init__(self, memfd, address, size):
        self.memfd, self.address, self.size = memfd, address, size
        self.rc = 0  # an export error to return
        self.exports = []
        self.flushes = []
        self.ipc_handles = {}  # handle -> the allocation base it names
        self.cuMemGetHandleForAddressRange = self._export
        self.cuFlushGPUDirectRDMAWrites = lambda target, scope: self.flushes.append((target, scope))
        self.cuMemGetAddressRange_v2 = self._address_range
        self.cuIpcGetMemHandle = self._ipc_handle

    def _address_range(self, base, size, ptr):
        if not self.address <= ptr < self.address + self.size:
            return 1
        base._obj.value, size._obj.value = self.address, self.size
        return 0

    def _ipc_handle(self, out, base):
        if base != self.address:
            return 1  # CUDA wants the allocation's base
        handle = hashlib.sha256(str(base).encode()).digest() * 2
        ctypes.memmove(out, handle, 64)
        self.ipc_handles[handle] = base
        return 0

    def _export(self, handle, base, size, kind, flags):
        self.exports.append((base, size, kind, flags))
        if self.rc:
            return self.rc
        if base != self.address or size > self.size or size % mmap.PAGESIZE or kind != 1:
            return 1
        handle._obj.value = os.dup(self.memfd)
        return 0


class GpuDirectTest(unittest.TestCase):
    """reelfs.gpu's rdma-gpu rung against the fake daemon and a fake driver: the range exported
    (the tensor's pages), the READs at the tensor's offset in them, the fd closed and the buffer
    released, the flush; and each reason the rung is not taken, kept so it is not retried."""

    def setUp(self):
        from reelfs import gpu
        self.gpu = gpu
        self.fake = FakeSideChannel()
        self.data = hashlib.sha256(b"g").digest() * 50000 + b"odd"  # 1 600 003 bytes
        self.path = self.fake.file("direct.bin", self.data)
        self.size = 2 << 20
        self.memfd = os.memfd_create("fake-gpu", os.MFD_CLOEXEC)
        os.ftruncate(self.memfd, self.size)
        self.map = mmap.mmap(self.memfd, self.size, flags=mmap.MAP_SHARED)
        self.mem = torch.frombuffer(self.map, dtype=torch.uint8)
        self.driver = _FakeDriver(self.memfd, self.mem.data_ptr(), self.size)
        patches = [mock.patch.object(gpu, "_libcuda", self.driver),
                   mock.patch.object(torch.cuda, "synchronize", lambda *a: None)]
        for p in patches:
            p.start()
            self.addCleanup(p.stop)

    def tearDown(self):
        del self.mem
        self.map.close()
        os.close(self.memfd)
        self.fake.close()

    def memfd_links(self):
        return sum(os.readlink(f"/proc/self/fd/{fd}").startswith("/memfd:fake-gpu")
                   for fd in os.listdir("/proc/self/fd") if fd.isdigit() and
                   os.path.exists(f"/proc/self/fd/{fd}"))

    def direct(self, offset, want, at=100):
        ch = self.gpu._channel_for(self.path)
        fd = os.open(self.path, os.O_RDONLY)
        try:
            fid = ch.client.open_file(fd)
            dst = self.mem[at:at + want]
            return ch, self.gpu._gpu_direct(ch, torch, fid, offset, dst, want, self.path)
        finally:
            os.close(fd)

    def test_into_the_exported_pages_at_the_tensor_offset(self):
        self.fake.capabilities = sc.CAP_RDMA | sc.CAP_DMABUF
        links = self.memfd_links()
        want = len(self.data) - 7
        ch, n = self.direct(7, want)
        self.assertEqual(n, want)
        self.assertEqual(self.mem[100:100 + n].numpy().tobytes(), self.data[7:])
        self.assertEqual(int(self.mem[:100].sum()) + int(self.mem[100 + n:].sum()), 0)
        page = mmap.PAGESIZE
        self.assertEqual(self.driver.exports,
                         [(self.mem.data_ptr(), -(-(100 + want) // page) * page, 1, 0)])
        self.assertEqual(self.driver.flushes, [(0, 100)])
        self.assertEqual(self.memfd_links(), links)  # the exported fd is closed
        self.assertEqual((self.fake.dmabufs, ch.client.in_flight, ch.no_gpu_direct), (1, 0, None))

    def test_cuda_ipc_where_no_dma_buf_can_be_exported(self):
        self.fake.capabilities = sc.CAP_RDMA | sc.CAP_DMABUF | sc.CAP_CUDA_IPC
        self.driver.rc = 801  # the proprietary module: no dma-buf export
        handle = hashlib.sha256(str(self.mem.data_ptr()).encode()).digest() * 2
        self.fake.ipc_exports[handle] = self.memfd
        want = 300001
        ch, n = self.direct(11, want, at=5000)
        self.assertEqual(n, want)
        self.assertEqual(self.mem[5000:5000 + n].numpy().tobytes(), self.data[11:11 + want])
        self.assertEqual(int(self.mem[:5000].sum()) + int(self.mem[5000 + n:].sum()), 0)
        self.assertEqual(list(self.driver.ipc_handles.values()), [self.mem.data_ptr()])
        self.assertEqual((self.driver.flushes, ch.no_gpu_direct), ([(0, 100)], None))
        self.fake.capabilities = sc.CAP_RDMA | sc.CAP_DMABUF  # no cuda_ipc offered: a reason
        self.gpu._drop_channel(ch)
        ch, n = self.direct(0, 4096)
        self.assertIsNone(n)
        self.assertIn("CUDA error 801", ch.no_gpu_direct)
        self.assertIn("does not offer cuda_ipc", ch.no_gpu_direct)
        self.gpu._drop_channel(ch)

    def test_reasons_kept_and_not_retried(self):
        ch, n = self.direct(0, 4096)  # the fake offers neither rdma nor dmabuf
        self.assertIsNone(n)
        self.assertIn("no --rdma", ch.no_gpu_direct)
        self.assertEqual(self.driver.exports, [])
        self.gpu._drop_channel(ch)
        self.fake.capabilities = sc.CAP_RDMA | sc.CAP_DMABUF
        self.fake.dmabuf_answer = errno.EOPNOTSUPP
        links = self.memfd_links()
        ch, n = self.direct(0, 4096)
        self.assertIsNone(n)
        self.assertIn("cannot land", ch.no_gpu_direct)
        self.assertEqual(self.memfd_links(), links)
        ch, n = self.direct(0, 4096)
        self.assertIsNone(n)
        self.assertEqual(len(self.driver.exports), 1)  # not tried again on this connection
        self.gpu._drop_channel(ch)
        self.driver.rc = 801  # CUDA_ERROR_NOT_SUPPORTED
        ch, n = self.direct(0, 4096)
        self.assertIsNone(n)
        self.assertIn("CUDA error 801", ch.no_gpu_direct)
        self.gpu._drop_channel(ch)


TAPES = 5  # the 50 offline files of DdpTest, 10 per cartridge; the 10 online ones have no hint


def _ddp_rank(rank, world, init, paths, out_dir):
    """One rank of DdpTest: its own process, a gloo process group, a sampler from it."""
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    try:
        result = {"epochs": [], "mismatch": None}
        sampler = TapeOrderSampler(paths, shuffle=True, seed=3, verify_ranks=True,
                                   poll_min=0.005, poll_max=0.02, timeout=60)
        assert (sampler.num_replicas, sampler.rank) == (world, rank)
        for epoch in range(2):
            sampler.set_epoch(epoch)
            loader = DataLoader(Files(paths), batch_size=4, sampler=sampler, num_workers=0,
                                collate_fn=as_list)
            seen = []
            for batch in loader:
                for i, state, tensor in batch:
                    ok = hashlib.sha256(tensor.numpy().tobytes()).hexdigest()
                    seen.append([i, state, ok])
            result["epochs"].append({"seen": seen, "len": len(sampler), "stats": sampler.stats})
            dist.barrier()
        # A rank that shards differently (another seed) is caught on every rank, not read from.
        bad = TapeOrderSampler(paths, shuffle=True, seed=3 + (rank == 2), verify_ranks=True)
        try:
            next(iter(bad))
        except RuntimeError as err:
            result["mismatch"] = str(err)
        with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
            json.dump(result, f)
    finally:
        dist.destroy_process_group()


class DdpTest(unittest.TestCase):
    """TapeOrderSampler under torch.distributed (gloo, 4 processes), as DDP uses it."""

    def setUp(self):
        self.online = set(range(0, 60, 6))
        self.a = FakeArchive(60, online=self.online)
        offline = [i for i in range(60) if i not in self.online]
        for k, i in enumerate(offline):
            os.setxattr(self.a.paths[i], "user.hsm.tape", b"T%d" % (k // 10))
        self.cart = {i: k // 10 for k, i in enumerate(offline)}
        self.a.start(offline, batch=10, auto=True)

    def tearDown(self):
        self.a.close()

    def test_four_ranks_read_every_sample_once(self):
        import torch.distributed as dist
        import torch.multiprocessing as mp
        if not dist.is_available() or not dist.is_gloo_available():
            self.skipTest("torch.distributed without gloo")
        world = 4
        with tempfile.TemporaryDirectory() as tmp:
            init = "file://" + os.path.join(tmp, "store")
            mp.start_processes(_ddp_rank, args=(world, init, self.a.paths, tmp), nprocs=world,
                               start_method="fork")
            ranks = []
            for r in range(world):
                with open(os.path.join(tmp, f"rank{r}.json")) as f:
                    ranks.append(json.load(f))
        for epoch in range(2):
            seen = [0] * 60
            touched = 0
            for r, res in enumerate(ranks):
                ep = res["epochs"][epoch]
                self.assertEqual(len(ep["seen"]), 15, f"rank {r} epoch {epoch}: equal counts")
                self.assertEqual(ep["len"], 15)
                for i, state, digest in ep["seen"]:
                    self.assertIn(state, ("online", "restored"), f"sample {i} read while {state}")
                    self.assertEqual(digest, self.a.digests[i], f"sample {i} bytes")
                    seen[i] += 1
                touched += len({self.cart[i] for i, _, _ in ep["seen"] if i in self.cart})
                self.assertEqual(ep["stats"]["padding"], 0)
            self.assertEqual(seen, [1] * 60, f"epoch {epoch}: every sample exactly once")
            # 5 cartridges over 4 ranks of 15: at most one split per rank that filled up.
            self.assertLessEqual(touched, TAPES + world - 1, f"epoch {epoch}: cartridges")
        # Each offline file was asked for by exactly one rank (its owner), once.
        self.assertEqual(sorted(self.a.requests_seen),
                         sorted(self.a.paths[i] for i in self.cart))
        for r, res in enumerate(ranks):
            self.assertIsNotNone(res["mismatch"], f"rank {r} did not notice rank 2's seed")
            self.assertIn("disagree", res["mismatch"])

    def test_explicit_ranks_with_iterable_and_workers(self):
        # No process group: num_replicas/rank given, as a launcher without torch.distributed would.
        # The ranks run one after another here, so everything is online (the fake library brings
        # files online in one fixed order and would wait for the other ranks' requests).
        self.a.stop()
        for i in range(60):
            self.a.set_state(i, "online")
        seen = [0] * 60
        for rank in range(3):
            ds = TapeOrderIterable(Files(self.a.paths), self.a.paths, num_replicas=3, rank=rank,
                                   shuffle=True, seed=1, poll_min=0.005, poll_max=0.02)
            self.assertEqual(len(ds), 20)
            got = [s for b in DataLoader(ds, batch_size=4, num_workers=2, collate_fn=as_list)
                   for s in b]
            self.assertEqual(len(got), 20, f"rank {rank}")
            for i, state, tensor in got:
                self.assertEqual(hashlib.sha256(tensor.numpy().tobytes()).hexdigest(),
                                 self.a.digests[i])
                seen[i] += 1
        self.assertEqual(seen, [1] * 60)
        # 61 samples over 4 ranks: padded to 16 each with a rank's own indices; drop_last: 15.
        paths = self.a.paths + [self.a.paths[0]]
        for drop_last, per in ((False, 16), (True, 15)):
            total = []
            for rank in range(4):
                s = TapeOrderSampler(paths, num_replicas=4, rank=rank, drop_last=drop_last,
                                     stage=False, poll_min=0.005, poll_max=0.02, timeout=30)
                got = list(s)
                self.assertEqual(len(got), per)
                self.assertLessEqual(set(got[len(got) - s.stats["padding"]:]),
                                     set(got[:len(got) - s.stats["padding"]]))
                total += got[:len(got) - s.stats["padding"]]
            self.assertEqual(len(total), len(set(total)))
            self.assertEqual(len(total), 61 if not drop_last else 60)
        with self.assertRaises(ValueError):
            TapeOrderSampler(self.a.paths, num_replicas=2, rank=2)


if __name__ == "__main__":
    unittest.main(verbosity=2)
