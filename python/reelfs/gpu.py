"""Read files of a reelfs mount straight into host or GPU memory, through the side channel.

:func:`read_into` fills a caller's buffer (``bytearray``, ``memoryview``, an ``mmap``, a numpy
array, a torch tensor on the CPU or on a CUDA device) with a file's bytes and says which rung of
the ladder carried them (the *tier*):

==================  ==============================================================================
``rdma-gpu``        a CUDA tensor on a mount with ``--rdma``: its memory is exported as a dma-buf
                    (``cuMemGetHandleForAddressRange``), or else named by a CUDA IPC handle, and
                    registered with the daemon, whose NIC registers it; the gateway writes the
                    bytes straight into GPU memory. Where that fails (no dma-buf support and no
                    CUDA IPC rung, a NIC that imports neither, as Soft-RoCE), the reason is kept
                    per connection (:func:`gpu_direct_reason`) and the next rung is taken.
``pinned-staging``  a CUDA tensor: the daemon writes into two pinned, registered memfds in turn;
                    each chunk goes to the GPU with an asynchronous copy while the next one is read
``host``            a host buffer: the daemon writes into a registered memfd (reused per thread,
                    grown as needed), then one copy into ``out`` (none when ``out`` is itself a
                    :class:`reelfs.side_channel.Buffer` of this thread's connection)
``pread``           the mount has no side channel (``--side-channel=off``) or the path is not on a
                    reelfs mount: ``os.preadv`` into ``out`` (for a CUDA tensor into a pinned host
                    tensor, then one copy)
==================  ==============================================================================

.. code-block:: python

    import torch
    from reelfs import gpu

    out = torch.empty(size, dtype=torch.uint8, device="cuda")
    n, tier = gpu.read_into("/mnt/data/shard-0001.bin", out)
    results = gpu.read_many([(p, bytearray(4096), 0) for p in paths])   # pipelined

Reads follow the mount's semantics: an offline object obeys ``--offline=``, a changed one gives
``ESTALE``, each as ``OSError`` naming the path; a file outside the mount given to the side
channel is ``PermissionError``. torch and numpy are optional: they are used only when ``out`` is
one of theirs.

Thread-safety: every function may be called from any thread; each thread has its own connection
and staging buffers (a DataLoader worker process makes its own on first use).
"""

import collections
import ctypes
import errno
import mmap
import os
import sys
import threading

from . import side_channel as sc

__all__ = ["read_into", "read_many", "memfd_buffer", "gpu_direct_reason", "TIERS", "CHUNK",
           "WINDOW"]

TIERS = ("rdma-gpu", "pinned-staging", "host", "pread")
# One READ's size within a large read: several in flight let the daemon fetch parts in parallel.
CHUNK = 8 << 20
# The largest host staging buffer; a larger read goes through it in turns.
STAGING_MAX = 64 << 20
# READs in flight per connection in read_many.
WINDOW = 256

_local = threading.local()


class _Channel:
    """One thread's connection to one mount's side channel and its staging memory."""

    def __init__(self, client, root=None):
        self.client = client
        self.root = root  # the mount root, for READ_PATH's relative paths
        self.staging = None
        self.pinned = None  # [(Buffer, host tensor)] * 2, for CUDA targets
        self.no_gpu_direct = None  # why the rdma-gpu rung is not taken here; None: not known

    def staging_of(self, length):
        if self.staging is None or len(self.staging) < length:
            size = 1 << 20
            while size < length:
                size *= 2
            if self.staging is not None:
                self.client.release_buffer(self.staging)
                self.staging = None
            self.staging = self.client.register_memfd(min(size, STAGING_MAX))
        return self.staging


def _state():
    if not hasattr(_local, "channels"):
        _local.channels = {}    # socket path -> _Channel
        _local.sockets = {}     # directory -> socket path or None
        _local.pid = os.getpid()
    elif _local.pid != os.getpid():
        # A forked child (a DataLoader worker) must not talk on its parent's socket: it closes
        # its copies of the fds and connects afresh.
        for ch in _local.channels.values():
            ch.client.close()
            if ch.staging is not None:
                ch.staging._drop()
        _local.channels = {}
        _local.pid = os.getpid()
    return _local


def _channel_for(path):
    """This thread's channel to the side channel of the mount of ``path``; None without one."""
    st = _state()
    d = os.path.dirname(os.path.abspath(os.fsdecode(path)))
    if d not in st.sockets:
        try:
            st.sockets[d] = sc.socket_path_for(d)
        except sc.SideChannelUnavailable:
            st.sockets[d] = None
    sock = st.sockets[d]
    if sock is None:
        return None
    ch = st.channels.get(sock)
    if ch is None:
        root, _ = sc.mount_info(d)
        ch = st.channels[sock] = _Channel(sc.Client.connect(sock, max_in_flight=WINDOW), root)
    return ch


def _below_root(ch, path):
    """``path`` relative to the channel's mount root when the daemon answers READ_PATH, else
    None (then the file is opened through the mount and passed by fd)."""
    if ch.root is None or not ch.client.server_capabilities & sc.CAP_OPEN_PATH:
        return None
    rel = os.path.relpath(os.path.realpath(os.fsdecode(path)), ch.root)
    return None if rel == "." or rel.startswith("..") else rel


def _drop_channel(ch):
    """Forgets a channel whose connection failed, so the next call connects afresh."""
    st = _state()
    for k, v in list(st.channels.items()):
        if v is ch:
            del st.channels[k]
    ch.client.close()


def _torch_tensor(out):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(out, torch.Tensor)


def _host_view(out):
    """A writable, contiguous byte memoryview of ``out``."""
    if _torch_tensor(out):
        if not out.is_contiguous():
            raise ValueError("reelfs.gpu: out must be a contiguous tensor")
        n = out.numel() * out.element_size()
        return memoryview((ctypes.c_char * n).from_address(out.data_ptr())).cast("B") if n else \
            memoryview(bytearray())
    mv = memoryview(out)
    if mv.readonly:
        raise ValueError("reelfs.gpu: out is read-only")
    if not mv.c_contiguous:
        raise ValueError("reelfs.gpu: out must be C-contiguous")
    return mv.cast("B") if mv.format != "B" or mv.ndim != 1 else mv


def _drain(client, tags):
    """Waits for every tag in ``tags``; returns {tag: (result, path)}."""
    return {tag: client.wait_for(tag) for tag in tags}


def _pread(fd, dst, offset):
    done = 0
    while done < len(dst):
        n = os.preadv(fd, [dst[done:]], offset + done)
        if n == 0:
            break
        done += n
    return done


def _read_pieces(client, fid, offset, length, buffer, buffer_offset, name):
    """READs of at most CHUNK covering ``length`` bytes, in flight together; the bytes read
    contiguously from the start (short at end of file). Raises the first error after all have
    completed, so nothing of this call is left in flight."""
    tags = {}
    at = 0
    while at < length:
        n = min(CHUNK, length - at)
        tags[client.submit_read(fid, offset + at, n, buffer, buffer_offset + at)] = (at, n)
        at += n
    got = _drain(client, tags)
    total = 0
    for tag, (at, n) in sorted(tags.items(), key=lambda kv: kv[1][0]):
        result, _ = got[tag]
        if result < 0:
            raise OSError(-result, os.strerror(-result), name)
        if at == total:
            total += result
    return total


def _host_read(ch, fid, offset, out, dst, want, name):
    client = ch.client
    done = 0
    if isinstance(out, sc.Buffer) and out.client is client:
        # The caller's memfd is registered on this connection: no staging, no copy.
        return _read_pieces(client, fid, offset, want, out, 0, name)
    while done < want:
        staging = ch.staging_of(min(want - done, STAGING_MAX))
        n = min(want - done, len(staging))
        got = _read_pieces(client, fid, offset + done, n, staging, 0, name)
        dst[done:done + got] = memoryview(staging)[:got]
        done += got
        if got < n:
            break
    return done


def _pinned_pair(ch, torch, chunk, pin):
    """Two registered memfds of ``chunk`` bytes as host tensors, page-locked for CUDA when
    ``pin``; and whether pinning worked (cudaHostRegister, in torch.cuda.cudart())."""
    if ch.pinned is not None and len(ch.pinned[0][0][0]) >= chunk:
        return ch.pinned
    if ch.pinned is not None:
        _unpin(ch, torch)
    pair, pinned = [], pin
    for _ in range(2):
        buf = ch.client.register_memfd(chunk)
        host = torch.frombuffer(buf, dtype=torch.uint8)
        if pin:
            try:
                rc = torch.cuda.cudart().cudaHostRegister(host.data_ptr(), len(buf), 0)
                pinned = pinned and int(rc) == 0
            except (AttributeError, RuntimeError):
                pinned = False
        pair.append((buf, host))
    ch.pinned = (pair, pinned)
    return ch.pinned


def _unpin(ch, torch):
    pair, pinned = ch.pinned
    ch.pinned = None
    for buf, host in pair:
        if pinned:
            torch.cuda.cudart().cudaHostUnregister(host.data_ptr())
        ch.client.release_buffer(buf)


class _CudaCopies:
    """Asynchronous copies on a side stream, an event per staging buffer."""

    def __init__(self, torch, device):
        self.torch = torch
        self.stream = torch.cuda.Stream(device=device)
        # Whatever the caller queued on `out` (its allocation, a kernel) comes before our copies.
        self.stream.wait_stream(torch.cuda.current_stream(device))
        self.events = [None, None]

    def copy(self, s, dst, src):
        with self.torch.cuda.stream(self.stream):
            dst.copy_(src, non_blocking=True)
            self.events[s] = self.torch.cuda.Event()
            self.events[s].record(self.stream)

    def reusable(self, s):
        if self.events[s] is not None:
            self.events[s].synchronize()  # the copy out of staging buffer s has finished

    def finish(self):
        self.stream.synchronize()


class _HostCopies:
    """The same steps, synchronous, for a CPU target (tests of the double buffering)."""

    def copy(self, s, dst, src):
        dst.copy_(src)

    def reusable(self, s):
        pass

    def finish(self):
        pass


def _staged(ch, torch, fid, offset, dst, want, name, chunk=CHUNK):
    """Double buffering: READ chunk k+1 into one registered memfd while chunk k's copy to the
    GPU runs from the other; a CUDA event says when a memfd may be written again."""
    client = ch.client
    cuda = dst.is_cuda
    copies = _CudaCopies(torch, dst.device) if cuda else _HostCopies()
    pair, pinned = _pinned_pair(ch, torch, chunk, pin=cuda)
    starts = list(range(0, want, chunk))

    def submit(k):
        copies.reusable(k % 2)
        n = min(chunk, want - starts[k])
        return client.submit_read(fid, offset + starts[k], n, pair[k % 2][0], 0), n

    done = 0
    pending = {}
    try:
        if starts:
            pending[0] = submit(0)
        for k in range(len(starts)):
            if k + 1 < len(starts):
                pending[k + 1] = submit(k + 1)
            tag, n = pending.pop(k)
            result, _ = client.wait_for(tag)
            if result < 0:
                raise OSError(-result, os.strerror(-result), name)
            if result:
                copies.copy(k % 2, dst[starts[k]:starts[k] + result], pair[k % 2][1][:result])
            done += result
            if result < n:
                break
    finally:
        for tag, _ in pending.values():
            client.wait_for(tag)  # nothing of ours stays in flight
        copies.finish()
    return done, "pinned-staging" if pinned else "host"


_CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD = 1
_CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX = 0
_CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER = 100
_libcuda = None


def _driver():
    """The CUDA driver library (the one torch already loaded), or an OSError."""
    global _libcuda
    if _libcuda is None:
        lib = ctypes.CDLL("libcuda.so.1")
        lib.cuMemGetHandleForAddressRange.argtypes = [
            ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t, ctypes.c_int, ctypes.c_ulonglong]
        lib.cuFlushGPUDirectRDMAWrites.argtypes = [ctypes.c_int, ctypes.c_int]
        lib.cuMemGetAddressRange_v2.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint64]
        lib.cuIpcGetMemHandle.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
        _libcuda = lib
    return _libcuda


def _dmabuf_of(lib, ptr, want):
    """A dma-buf of the host pages holding ``[ptr, ptr + want)`` of device memory:
    ``(rc, fd, base, length)``; ``rc`` is the CUDA error (0: ``fd`` is the caller's)."""
    page = mmap.PAGESIZE
    base, end = ptr - ptr % page, -(-(ptr + want) // page) * page
    fd = ctypes.c_int(-1)
    rc = lib.cuMemGetHandleForAddressRange(ctypes.byref(fd), base, end - base,
                                           _CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0)
    return rc, fd.value, base, end - base


def _ipc_handle_of(lib, ptr, want):
    """A CUDA IPC handle of the allocation holding ``ptr``: ``(rc, handle, base, length)``, the
    length covering ``[ptr, ptr + want)`` in whole pages within the allocation."""
    start, size = ctypes.c_uint64(0), ctypes.c_size_t(0)
    handle = (ctypes.c_char * 64)()
    rc = lib.cuMemGetAddressRange_v2(ctypes.byref(start), ctypes.byref(size), ptr)
    if rc == 0:
        rc = lib.cuIpcGetMemHandle(handle, start.value)
    page = mmap.PAGESIZE
    length = min(-(-(ptr + want - start.value) // page) * page, size.value)
    return rc, bytes(handle), start.value, length


def _export(lib, client, ptr, want):
    """``dst``'s memory registered with the daemon: ``(buffer, buffer_offset, close)``, or a
    reason string. A dma-buf of the tensor's pages first; where the driver cannot export one (the
    proprietary kernel module) and the daemon offers ``cuda_ipc``, a CUDA IPC handle of the
    allocation holding them (the daemon opens it; nvidia-peermem then reaches it)."""
    rc, fd, base, length = _dmabuf_of(lib, ptr, want)
    if rc == 0:
        try:
            return client.register_dmabuf(fd, length), ptr - base, fd
        except OSError as err:
            os.close(fd)
            if err.errno != errno.EOPNOTSUPP:
                raise
            return ("the daemon cannot land in this GPU's dma-buf (its NIC cannot import it: "
                    "the mount's log says why)")
    why = f"cuMemGetHandleForAddressRange(DMA_BUF_FD): CUDA error {rc}"
    if not client.server_capabilities & sc.CAP_CUDA_IPC:
        return why + "; the daemon does not offer cuda_ipc"
    rc, handle, base, length = _ipc_handle_of(lib, ptr, want)
    if rc != 0:
        return why + f"; cuIpcGetMemHandle: CUDA error {rc}"
    try:
        return client.register_cuda_ipc(handle, length), ptr - base, None
    except OSError as err:
        if err.errno != errno.EOPNOTSUPP:
            raise
        return why + "; the daemon cannot land in CUDA IPC memory (the mount's log says why)"


def _gpu_direct(ch, torch, fid, offset, dst, want, name):
    """The rdma-gpu rung: ``dst``'s memory registered with the daemon (its NIC registers it),
    READs straight into it. None, with the reason kept on the channel, when the rung is not
    available; the caller takes the next one."""
    client = ch.client
    need = sc.CAP_RDMA | sc.CAP_DMABUF
    if client.server_capabilities & need != need:
        ch.no_gpu_direct = "the mount has no --rdma (the gateway cannot write GPU memory)"
    if ch.no_gpu_direct is not None or want == 0:
        return None
    # The caller's queued work on `dst` completes before the NIC writes it; this also makes the
    # device's context current on this thread for the driver calls.
    torch.cuda.synchronize(dst.device)
    try:
        lib = _driver()
    except (OSError, AttributeError) as err:
        ch.no_gpu_direct = f"no CUDA driver entry points: {err}"
        return None
    exported = _export(lib, client, dst.data_ptr(), want)
    if isinstance(exported, str):
        ch.no_gpu_direct = exported
        return None
    buf, at, fd = exported
    try:
        done = _read_pieces(client, fid, offset, want, buf, at, name)
    except OSError as err:
        if err.errno != errno.EOPNOTSUPP:
            raise
        return None  # a READ fell back to HTTP, which cannot land in GPU memory
    finally:
        client.release_buffer(buf)
        if fd is not None:
            os.close(fd)
    # GPUDirect RDMA writes become visible to the GPU's own work in order only after a flush
    # where the device's write ordering asks for one; where it does not, the flush is a no-op.
    lib.cuFlushGPUDirectRDMAWrites(_CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX,
                                   _CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER)
    return done


def gpu_direct_reason(path):
    """Why :func:`read_into` does not take the ``rdma-gpu`` rung on this thread's connection to
    the mount of ``path``; None when it does, or has not tried yet."""
    ch = _channel_for(path)
    return "the mount has no side channel" if ch is None else ch.no_gpu_direct


def _cuda_pread(torch, fd, offset, dst, want):
    st = _state()
    pinned = getattr(st, "pinned_pread", None)
    if pinned is None or pinned.numel() < want:
        pinned = st.pinned_pread = torch.empty(max(want, 1 << 20), dtype=torch.uint8,
                                               pin_memory=True)
    n = _pread(fd, _host_view(pinned)[:want], offset)
    dst[:n].copy_(pinned[:n])
    return n


def memfd_buffer(path, length):
    """A sealed memfd of at least ``length`` bytes registered on this thread's connection to the
    side channel of the mount of ``path``: :func:`read_into` fills it with no staging copy.
    Raises :class:`reelfs.side_channel.SideChannelUnavailable` on a mount without one."""
    ch = _channel_for(path)
    if ch is None:
        sc.socket_path_for(path)  # raises, saying why
    return ch.client.register_memfd(length)


def _file_size(fd):
    return os.fstat(fd).st_size


def read_into(path, out, offset=0):
    """Reads the bytes of ``path`` from ``offset`` into ``out`` (as many as fit, fewer at end of
    file). Returns ``(nbytes, tier)``, tier one of :data:`TIERS`.

    ``out``: any writable C-contiguous buffer, a numpy array, or a contiguous torch tensor on the
    CPU or a CUDA device (filled as raw bytes whatever its dtype).
    """
    name = os.fsdecode(path)
    cuda = _torch_tensor(out) and out.is_cuda
    if cuda:
        import torch
        if not out.is_contiguous():
            raise ValueError("reelfs.gpu: out must be a contiguous tensor")
        dst = out.reshape(-1).view(torch.uint8)
        capacity = dst.numel()
    else:
        dst = _host_view(out)
        capacity = len(dst)
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        want = max(0, min(capacity, _file_size(fd) - offset))
        ch = _channel_for(path)
        if ch is not None and want == 0:
            return 0, "pinned-staging" if cuda else "host"  # nothing to ask the daemon for
        if ch is None:
            if cuda:
                return _cuda_pread(torch, fd, offset, dst, want), "pread"
            return _pread(fd, dst[:want], offset), "pread"
        try:
            fid = ch.client.open_file(fd, name=name)
            try:
                if cuda:
                    direct = _gpu_direct(ch, torch, fid, offset, dst, want, name)
                    if direct is not None:
                        return direct, "rdma-gpu"
                    return _staged(ch, torch, fid, offset, dst, want, name)
                return _host_read(ch, fid, offset, out, dst, want, name), "host"
            finally:
                ch.client.close_file(fid, wait=False)
        except (ConnectionError, sc.ProtocolError):
            _drop_channel(ch)
            raise
    finally:
        os.close(fd)


def read_many(requests, window=WINDOW):
    """Reads a batch of ``(path, out)`` or ``(path, out, offset)``; returns ``[(nbytes, tier)]`` in
    the order given.

    Host targets on a mount with a side channel are pipelined on this thread's connection: one
    READ_PATH per file (open by path, read, close in one request, no FUSE request; where the
    daemon offers it), else the OPEN_FILEs of ``window`` files at a time sent together, then
    their READs; either way into slices of one staging memfd, up to ``window`` requests in
    flight, each copied out (and its file closed) as it completes while the next ones are sent.
    Other requests (CUDA tensors, targets over 64 MiB, mounts without a side channel) go through
    :func:`read_into` one by one. A failed file does
    not stop the others; once all have been read, the error of the first failed request (in the
    order given) is raised as ``OSError`` naming its path. A broken connection raises at once.
    """
    results = [None] * len(requests)
    errors = []  # (index, OSError)
    run, run_ch = [], None  # consecutive requests pipelined on one channel: (i, name, dst, offset)

    def flush():
        nonlocal run
        items, run = run, []
        if items:
            try:
                _pipelined(run_ch, items, results, window, errors)
            except (ConnectionError, sc.ProtocolError):
                _drop_channel(run_ch)
                raise

    def alone(i, path, out, offset):
        flush()
        try:
            results[i] = read_into(path, out, offset)
        except (ConnectionError, sc.ProtocolError):
            raise
        except OSError as err:
            errors.append((i, err))

    for i, req in enumerate(requests):
        path, out = req[0], req[1]
        offset = req[2] if len(req) > 2 else 0
        if _torch_tensor(out) and out.is_cuda:
            alone(i, path, out, offset)
            continue
        dst = _host_view(out)
        ch = _channel_for(path)
        if ch is None or len(dst) > STAGING_MAX:
            alone(i, path, out, offset)
            continue
        if ch is not run_ch:
            flush()
            run_ch = ch
        run.append((i, os.fsdecode(path), dst, offset, _below_root(ch, path)))
    flush()
    if errors:
        raise min(errors, key=lambda e: e[0])[1]
    return results


# read_many's staging memfd when its targets are small: enough for a full window of large files.
RING_TARGET = 16 << 20


class _Ring:
    """Slices of the staging memfd handed out in submission order and returned in any order: a
    slice's space is reused once every slice handed out before it has come back too."""

    def __init__(self, size):
        self.size = size
        self.head = 0
        self.live = collections.deque()  # [start, length, returned], oldest first
        self.by_start = {}

    def alloc(self, n):
        if not self.live:
            start = 0
        else:
            tail = self.live[0][0]
            if self.head > tail:  # used: [tail, head); free: [head, size) and [0, tail)
                start = self.head if self.size - self.head >= n else 0 if tail >= n else None
            else:  # wrapped: used [tail, size) and [0, head); free: [head, tail)
                start = self.head if tail - self.head >= n else None
            if start is None:
                return None
        entry = [start, n, False]
        self.live.append(entry)
        self.by_start[start] = entry
        self.head = start + n
        return start

    def free(self, start):
        self.by_start.pop(start)[2] = True
        while self.live and self.live[0][2]:
            self.live.popleft()


def _pipelined(ch, items, results, window, errors):
    """read_many's requests on one connection (see there); a failed file's (index, OSError) goes
    to ``errors``."""
    client = ch.client
    longest = max(len(item[2]) for item in items)
    wanted = sum(len(item[2]) for item in items)
    staging = ch.staging_of(max(1, min(STAGING_MAX, max(longest, min(wanted, RING_TARGET)))))
    view = memoryview(staging)
    ring = _Ring(len(staging))
    inflight = {}  # tag -> (i, name, dst, at, fid); fid None for READ_PATH (nothing to close)

    def complete_one():
        tag, result, _ = client.wait()
        i, name, dst, at, fid = inflight.pop(tag)
        ring.free(at)
        if fid is not None:
            client.close_file(fid, wait=False)
        if result < 0:
            errors.append((i, OSError(-result, os.strerror(-result), name)))
        else:
            dst[:result] = view[at:at + result]
            results[i] = (result, "host")

    def slot(want):
        while True:
            at = ring.alloc(want) if len(inflight) < window else None
            if at is not None:
                return at
            if not inflight:
                raise RuntimeError("reelfs.gpu: staging ring cannot hold one request")
            complete_one()

    by_path = [item for item in items if item[4] is not None]
    items = [item for item in items if item[4] is None]
    try:
        for i, name, dst, offset, rel in by_path:
            if len(dst) == 0:
                results[i] = (0, "host")
                continue
            at = slot(len(dst))
            inflight[client.submit_read_path(rel, offset, len(dst), staging, at)] = (
                i, name, dst, at, None)
    finally:
        while inflight:
            complete_one()
    try:
        for g in range(0, len(items), window):
            group = items[g:g + window]
            fds, wants, ok = [], [], []
            try:
                for item in group:
                    _, name, dst, offset, _ = item
                    try:
                        fd = os.open(name, os.O_RDONLY | os.O_CLOEXEC)
                    except OSError as err:  # ENOENT, EACCES, ...: that file only
                        errors.append((item[0], err))
                        continue
                    fds.append(fd)
                    wants.append(max(0, min(len(dst), _file_size(fd) - offset)))
                    ok.append(item)
                # The daemon keeps its own copy of each fd: ours close once it has answered.
                opened = client.open_files(fds, [item[1] for item in ok])
            finally:
                for fd in fds:
                    os.close(fd)
            for (i, name, dst, offset, _), want, fid in zip(ok, wants, opened):
                if isinstance(fid, OSError):
                    errors.append((i, fid))
                    continue
                if want == 0:
                    results[i] = (0, "host")
                    client.close_file(fid, wait=False)
                    continue
                at = slot(want)
                inflight[client.submit_read(fid, offset, want, staging, at)] = (
                    i, name, dst, at, fid)
    finally:
        while inflight:
            complete_one()
