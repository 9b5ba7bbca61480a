#!/usr/bin/env python3
"""The GPU measurements of tests/gpu/gpu_check.sh, through PyTorch (and CUDA's Python bindings
for the dma-buf export), so they run on any machine with a CUDA build of torch and need nothing
compiled here. Each subcommand prints one JSON line; a failed measurement is a JSON line with
"error", never a traceback, so one missing feature does not hide the others.

  gpu_check.py available                 exit 0 when torch sees a CUDA device, else 77
  gpu_check.py host-register GIB...      cudaHostRegister cost per size, 4 KiB pages vs THP
  gpu_check.py h2d MIB...                H2D GB/s: pageable, pinned (cudaHostAlloc), registered
                                         memfd (what the side channel's staging buffers are)
  gpu_check.py dmabuf MIB                cuMemGetHandleForAddressRange(DMA_BUF_FD) of a
                                         cudaMalloc range: the fd, or the error
  gpu_check.py read-into MNTFILE SRCFILE reelfs.gpu.read_into a CUDA tensor; a checksum computed
                                         on the GPU against the same checksum of the source
  gpu_check.py register MNTFILE          a CUDA tensor handed to the mount's daemon as a dma-buf
                                         and as a CUDA IPC handle (reelfs.gpu's own driver
                                         calls): what the daemon answered for each
"""
import ctypes
import json
import mmap
import os
import statistics
import sys
import time

SKIP = 77
GIB = 1 << 30
MIB = 1 << 20


def emit(**fields):
    print(json.dumps(fields), flush=True)


def torch_cuda():
    try:
        import torch
    except ImportError as err:
        return None, f"no torch ({err})"
    if not torch.cuda.is_available():
        return None, f"torch {torch.__version__} sees no CUDA device"
    return torch, None


def address_of(buf):
    return ctypes.addressof(ctypes.c_char.from_buffer(buf))


def cudart(torch):
    return torch.cuda.cudart()


def host_register(torch, sizes_gib):
    rt = cudart(torch)
    for gib in sizes_gib:
        size = int(gib * GIB)
        for pages, advice in (("4k", getattr(mmap, "MADV_NOHUGEPAGE", None)),
                              ("thp", getattr(mmap, "MADV_HUGEPAGE", None))):
            mm = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
            try:
                if advice is not None:
                    mm.madvise(advice)
                t0 = time.perf_counter()
                import numpy as np
                np.frombuffer(mm, dtype=np.uint8)[::4096] = 1  # fault every page in
                touch = time.perf_counter() - t0
                ptr = address_of(mm)
                t0 = time.perf_counter()
                err = rt.cudaHostRegister(ptr, size, 0)
                reg = time.perf_counter() - t0
                if int(err) != 0:
                    torch.cuda.synchronize()
                    emit(check="host_register", gib=gib, pages=pages, error=f"cudaError {int(err)}")
                    continue
                t0 = time.perf_counter()
                rt.cudaHostUnregister(ptr)
                unreg = time.perf_counter() - t0
                emit(check="host_register", gib=gib, pages=pages, touch_s=round(touch, 3),
                     register_s=round(reg, 4), unregister_s=round(unreg, 4),
                     register_gib_per_s=round(gib / reg, 1) if reg > 0 else None)
            except Exception as err:  # noqa: BLE001 - report, go on
                emit(check="host_register", gib=gib, pages=pages, error=repr(err))
            finally:
                mm.close()


def timed_copies(torch, src, dst, reps=10):
    """Median GB/s of src -> dst (non_blocking) timed with CUDA events."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    dst.copy_(src, non_blocking=True)  # warm-up
    torch.cuda.synchronize()
    rates = []
    for _ in range(reps):
        start.record()
        dst.copy_(src, non_blocking=True)
        end.record()
        end.synchronize()
        rates.append(src.numel() / (start.elapsed_time(end) / 1e3) / 1e9)
    return round(statistics.median(rates), 2)


def h2d(torch, sizes_mib):
    rt = cudart(torch)
    for mib in sizes_mib:
        n = int(mib * MIB)
        dev = torch.empty(n, dtype=torch.uint8, device="cuda")
        row = {"check": "h2d", "mib": mib}
        try:
            row["pageable_gb_s"] = timed_copies(torch, torch.ones(n, dtype=torch.uint8), dev)
            row["pinned_gb_s"] = timed_copies(
                torch, torch.ones(n, dtype=torch.uint8).pin_memory(), dev)
            fd = os.memfd_create("reelfs-gpu-check", os.MFD_CLOEXEC)
            try:
                os.ftruncate(fd, n)
                mm = mmap.mmap(fd, n)
                ptr = address_of(mm)
                err = int(rt.cudaHostRegister(ptr, n, 0))
                if err != 0:
                    row["memfd_error"] = f"cudaHostRegister: cudaError {err}"
                else:
                    try:
                        host = torch.frombuffer(mm, dtype=torch.uint8)
                        host.fill_(1)
                        row["registered_memfd_gb_s"] = timed_copies(torch, host, dev)
                        del host
                    finally:
                        rt.cudaHostUnregister(ptr)
                mm.close()
            finally:
                os.close(fd)
        except Exception as err:  # noqa: BLE001
            row["error"] = repr(err)
        emit(**row)
        del dev


def dmabuf(torch, mib):
    n = int(mib * MIB)
    dev = torch.empty(n, dtype=torch.uint8, device="cuda")
    try:
        from cuda.bindings import driver as cu
    except ImportError:
        try:
            from cuda import cuda as cu  # older cuda-python
        except ImportError as err:
            return emit(check="dmabuf", error=f"no CUDA Python bindings ({err})")
    try:
        kind = cu.CUmemRangeHandleType.CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD
        res = cu.cuMemGetHandleForAddressRange(dev.data_ptr(), n, kind, 0)
        err, fd = res[0], res[1]
        if int(err) != 0:
            return emit(check="dmabuf", mib=mib, error=f"CUresult {int(err)} ({err})")
        st = os.fstat(int(fd))
        link = os.readlink(f"/proc/self/fd/{int(fd)}")
        os.close(int(fd))
        emit(check="dmabuf", mib=mib, fd_ok=True, fd_link=link, st_size=st.st_size)
    except Exception as err:  # noqa: BLE001
        emit(check="dmabuf", mib=mib, error=repr(err))


# An order-sensitive checksum the GPU and numpy compute alike: sum over bytes of
# byte * (1 + index mod 65521), mod 2**63, in int64 chunks (no overflow within a chunk).
CHUNK = 1 << 24


def checksum_gpu(torch, t):
    total = 0
    for at in range(0, t.numel(), CHUNK):
        piece = t[at:at + CHUNK].to(torch.int64)
        w = (torch.arange(at, at + piece.numel(), device=t.device, dtype=torch.int64) % 65521) + 1
        total = (total + int((piece * w).sum().item())) % (1 << 63)
    return total


def checksum_cpu(path):
    import numpy as np
    total = 0
    with open(path, "rb") as f:
        at = 0
        while True:
            b = f.read(CHUNK)
            if not b:
                break
            piece = np.frombuffer(b, dtype=np.uint8).astype(np.int64)
            w = (np.arange(at, at + len(piece), dtype=np.int64) % 65521) + 1
            total = (total + int((piece * w).sum())) % (1 << 63)
            at += len(piece)
    return total


def read_into(torch, mnt_file, src_file):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "python"))
    from reelfs import gpu
    size = os.path.getsize(src_file)
    out = torch.empty(size, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    n, tier = gpu.read_into(mnt_file, out)
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    row = {"check": "read_into", "file": os.path.basename(src_file), "bytes": n, "tier": tier,
           "seconds": round(dt, 3), "gb_s": round(n / dt / 1e9, 2),
           "no_rdma_gpu_because": gpu.gpu_direct_reason(mnt_file)}
    row["gpu_checksum"] = checksum_gpu(torch, out[:n])
    row["source_checksum"] = checksum_cpu(src_file)
    row["equal"] = n == size and row["gpu_checksum"] == row["source_checksum"]
    emit(**row)
    return 0 if row["equal"] else 1


def register(torch, mnt_file):
    """The two ways reelfs.gpu hands GPU memory to the daemon, on a real GPU: the driver calls
    themselves, and the daemon's answer (on a mount without --rdma both are refused with
    EOPNOTSUPP, the reason in the mount's log: a GPU dma-buf has no CPU mapping, and CUDA IPC
    memory needs the NIC)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "python"))
    from reelfs import gpu, side_channel as sc
    n = 8 * MIB
    dev = torch.empty(n, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    lib = gpu._driver()
    with sc.Client.for_path(mnt_file) as c:
        rc, fd, _, length = gpu._dmabuf_of(lib, dev.data_ptr(), n)
        row = {"check": "register", "kind": "dmabuf", "export_cuda_error": rc}
        if rc == 0:
            try:
                row["daemon"] = answer(c, lambda: c.register_dmabuf(fd, length))
            finally:
                os.close(fd)
        emit(**row)
        rc, handle, _, length = gpu._ipc_handle_of(lib, dev.data_ptr(), n)
        row = {"check": "register", "kind": "cuda_ipc", "handle_cuda_error": rc,
               "offered": bool(c.server_capabilities & sc.CAP_CUDA_IPC)}
        if rc == 0:
            row["daemon"] = answer(c, lambda: c.register_cuda_ipc(handle, length))
        emit(**row)
    return 0


def answer(client, register):
    """The daemon's answer to `register()`: "registered" (then released), or the errno name."""
    try:
        buf = register()
    except OSError as err:
        return errno_name(err)
    client.release_buffer(buf)  # a failed release is the check's failure, not the answer
    return "registered"


def errno_name(err):
    import errno
    return errno.errorcode.get(err.errno, str(err.errno))


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    torch, why = torch_cuda()
    if torch is None:
        print(f"SKIP: {why}")
        return SKIP
    cmd = argv[1]
    if cmd == "available":
        emit(check="device", name=torch.cuda.get_device_name(0), torch=torch.__version__,
             cuda=torch.version.cuda)
        return 0
    if cmd == "host-register":
        host_register(torch, [float(x) for x in argv[2:]])
    elif cmd == "h2d":
        h2d(torch, [float(x) for x in argv[2:]])
    elif cmd == "dmabuf":
        dmabuf(torch, float(argv[2]))
    elif cmd == "read-into":
        return read_into(torch, argv[2], argv[3])
    elif cmd == "register":
        return register(torch, argv[2])
    else:
        sys.exit(__doc__)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
