"""A stand-in for the daemon's side channel in the Python unit tests (no FUSE, no reelfs binary).

FakeSideChannel makes a private directory on a filesystem with user xattrs that plays a mount
root: it carries user.reelfs.mount with a "side_channel" member naming a Unix socket served by a
thread, speaking docs/protocols/side-channel.md with reelfs.side_channel's codec. OPEN_FILE takes
an fd of a regular file under that directory (else EPERM, as the daemon's fd check would);
REGISTER_BUFFER takes a memfd with F_SEAL_SHRINK and F_SEAL_GROW (else EINVAL); READ preads into
the mapped memfd. Answers to the READs of one received chunk are sent in reverse order, so a
client that assumes submission order fails; `hold_reads = N` holds READ answers across chunks
until N are due (then sends them reversed and resets to 0), so the reordering does not depend on
how the kernel splits the stream. `fail_reads` maps a file name to an errno its READs
get. The root's user.reelfs.metrics carries side_channel.clients_connected. `capabilities` is
what its HELLO offers; a dmabuf REGISTER_BUFFER is answered `dmabuf_answer` when set (an errno),
else its fd is mapped as a memfd's would be (the tests pass a memfd as the "dma-buf"), and
`dmabufs` counts those taken; a cuda_ipc one maps the fd that `ipc_exports` holds for its handle
(EINVAL for a handle not there).
"""

import fcntl
import json
import mmap
import os
import socket
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from reelfs import side_channel as sc  # noqa: E402

from fake_mount import xattr_dir  # noqa: E402

EPERM, EINVAL, EBADF = 1, 22, 9


class FakeSideChannel:
    def __init__(self, announce=True):
        self.root = xattr_dir()
        self.sock_path = os.path.join(self.root, ".sc.sock")
        info = {"version": 1, "bucket": "fake"}
        if announce:
            info["side_channel"] = self.sock_path
        os.setxattr(self.root, sc.MOUNT_XATTR, json.dumps(info).encode())
        self.fail_reads = {}
        self.hold_reads = 0
        self.capabilities = 0
        self.dmabuf_answer = None
        self.dmabufs = 0
        self.ipc_exports = {}  # 64-byte handle -> an fd to map for it
        self.reads = 0
        self.clients = 0
        self.connected = 0
        self._lock = threading.Lock()
        self._stop = False
        self._publish(0)
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(self.sock_path)
        self._listener.listen(16)
        self._threads = []
        t = threading.Thread(target=self._accept, daemon=True)
        t.start()
        self._threads.append(t)

    def _publish(self, delta):
        """user.reelfs.metrics's side_channel.clients_connected, as the daemon publishes it."""
        with self._lock:
            self.connected += delta
            doc = {"version": 1, "side_channel": {"clients_connected": self.connected}}
            if self._stop:
                return  # close() may have removed the root already
            os.setxattr(self.root, "user.reelfs.metrics", json.dumps(doc).encode())

    def close(self):
        with self._lock:
            self._stop = True
        with socket.socket(socket.AF_UNIX) as wake:
            try:
                wake.connect(self.sock_path)  # wakes accept()
            except OSError:
                pass
        self._listener.close()
        import shutil
        shutil.rmtree(self.root, ignore_errors=True)

    def file(self, name, data):
        p = os.path.join(self.root, name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)
        return p

    def _accept(self):
        while not self._stop:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            if self._stop:
                conn.close()
                return
            self.clients += 1
            self._publish(1)
            t = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            t.start()

    def _serve(self, conn):
        files, buffers, next_id = {}, {}, [100]
        rx = bytearray()
        fds_in = []
        reads = []
        hello = False

        def new_id():
            next_id[0] += 1
            return next_id[0]

        try:
            while True:
                msg, fds, _, _ = socket.recv_fds(conn, 65536, 8)
                fds_in.extend(fds)
                if not msg:
                    return
                rx += msg
                out = []
                while True:
                    try:
                        step = sc.decode_next(rx)
                    except sc.FramingError as err:
                        conn.sendall(sc.encode_frame(sc.Frame(0, sc.Error(71, str(err)))))
                        return
                    if step.need_more:
                        break
                    del rx[:step.frame_size]
                    tag = step.header.tag
                    if step.error is not None:
                        out.append(sc.Frame(tag, sc.Done(-EINVAL, 0)))
                        continue
                    m = step.frame.message
                    if not hello:
                        if not isinstance(m, sc.Hello):
                            conn.sendall(sc.encode_frame(sc.Frame(tag, sc.Error(71, "no HELLO"))))
                            return
                        hello = True
                        out.append(sc.Frame(tag, sc.Hello(1, self.capabilities)))
                    elif isinstance(m, sc.OpenFile):
                        fd = fds_in.pop(0)
                        target = os.readlink(f"/proc/self/fd/{fd}")
                        if not target.startswith(self.root + "/") or not os.path.isfile(target):
                            os.close(fd)
                            out.append(sc.Frame(tag, sc.Done(-EPERM, 0)))
                        else:
                            fid = new_id()
                            files[fid] = (fd, os.path.basename(target))
                            out.append(sc.Frame(tag, sc.Done(fid, 0)))
                    elif isinstance(m, sc.CloseFile):
                        f = files.pop(m.file_id, None)
                        if f:
                            os.close(f[0])
                        out.append(sc.Frame(tag, sc.Done(0 if f else -EBADF, 0)))
                    elif isinstance(m, sc.RegisterBuffer) and m.kind == sc.KIND_DMABUF:
                        fd = fds_in.pop(0)
                        if self.dmabuf_answer is not None:
                            os.close(fd)
                            out.append(sc.Frame(tag, sc.Done(-self.dmabuf_answer, 0)))
                        else:
                            self.dmabufs += 1
                            bid = new_id()
                            buffers[bid] = mmap.mmap(fd, m.length, flags=mmap.MAP_SHARED)
                            os.close(fd)
                            out.append(sc.Frame(tag, sc.Done(bid, 0)))
                    elif isinstance(m, sc.RegisterBuffer) and m.kind == sc.KIND_CUDA_IPC:
                        fd = self.ipc_exports.get(bytes(m.cuda_ipc_handle))
                        if fd is None:
                            out.append(sc.Frame(tag, sc.Done(-EINVAL, 0)))
                        else:
                            bid = new_id()
                            buffers[bid] = mmap.mmap(fd, m.length, flags=mmap.MAP_SHARED)
                            out.append(sc.Frame(tag, sc.Done(bid, 0)))
                    elif isinstance(m, sc.RegisterBuffer):
                        fd = fds_in.pop(0)
                        seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
                        need = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW
                        if (seals & need) != need or m.length % mmap.PAGESIZE or \
                                os.fstat(fd).st_size < m.length:
                            os.close(fd)
                            out.append(sc.Frame(tag, sc.Done(-EINVAL, 0)))
                        else:
                            bid = new_id()
                            buffers[bid] = mmap.mmap(fd, m.length, flags=mmap.MAP_SHARED)
                            os.close(fd)
                            out.append(sc.Frame(tag, sc.Done(bid, 0)))
                    elif isinstance(m, sc.ReleaseBuffer):
                        b = buffers.pop(m.buffer_id, None)
                        if b is not None:
                            b.close()
                        out.append(sc.Frame(tag, sc.Done(0 if b is not None else -EBADF, 0)))
                    elif isinstance(m, sc.Read):
                        reads.append(sc.Frame(tag, self._read(m, files, buffers)))
                    else:
                        out.append(sc.Frame(tag, sc.Done(-EINVAL, 0)))
                # Non-READ answers in order, READs' reversed: completion order is not submission
                # order.
                if len(reads) >= self.hold_reads:
                    out += reads[::-1]
                    reads = []
                    self.hold_reads = 0
                data = b"".join(sc.encode_frame(f) for f in out)
                if data:
                    conn.sendall(data)
        except (ConnectionError, OSError):
            return
        finally:
            for fd, _ in files.values():
                os.close(fd)
            for b in buffers.values():
                b.close()
            conn.close()
            self._publish(-1)

    def _read(self, m, files, buffers):
        f, b = files.get(m.file_id), buffers.get(m.buffer_id)
        if f is None or b is None:
            return sc.Done(-EBADF, 0)
        if m.buffer_offset + m.length > len(b):
            return sc.Done(-EINVAL, 0)
        if f[1] in self.fail_reads:
            return sc.Done(-self.fail_reads[f[1]], 0)
        data = os.pread(f[0], m.length, m.offset)
        b[m.buffer_offset:m.buffer_offset + len(data)] = data
        self.reads += 1
        return sc.Done(len(data), 2)
