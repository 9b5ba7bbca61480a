"""The reelfs side channel in pure Python: the wire format and a client.

The protocol is docs/protocols/side-channel.md. A process hands the mount's daemon its own buffer
(a sealed memfd) and an fd it opened through the mount, then pipelines READs on one Unix socket;
the daemon writes the object's bytes straight into the buffer. The codec here is byte-for-byte the
C++ one (api/protocol/codec.cc): the same layouts and the same refusals, so whatever decodes
re-encodes to the same bytes (tests/python/test_side_channel_protocol.py holds the golden bytes).

.. code-block:: python

    from reelfs.side_channel import Client

    with Client.for_path("/mnt/data/train/0001.bin") as c:
        fid = c.open_file("/mnt/data/train/0001.bin")
        buf = c.register_memfd(1 << 20)
        n, path = c.read(fid, 0, 1 << 20, buf)      # path: "http", "rdma" or "cache"
        data = memoryview(buf)[:n]

Errors: a READ answered with ``-errno`` raises ``OSError(errno, strerror, path)`` from the
convenience calls (``read``, ``open_file``, ...), so ``PermissionError`` for a file opened outside
the mount; an ERROR frame (the daemon's last word) raises :class:`ProtocolError`; a malformed
message is :class:`InvalidFrame` (a ``ValueError``); a mount without a side channel raises
:class:`SideChannelUnavailable` from :meth:`Client.for_path`.

Thread-safety: the codec is pure functions and value types. A :class:`Client` is used by one
thread at a time (reelfs.gpu keeps one per thread).
"""

import collections
import dataclasses
import errno
import fcntl
import json
import mmap
import os
import select
import socket
import struct

from . import hsm

__all__ = [
    "PROTOCOL_VERSION", "MAX_BODY_LENGTH", "MAX_READ_LENGTH", "MAX_ERROR_MESSAGE",
    "CAP_RDMA", "CAP_DMABUF", "CAP_CUDA_IPC", "KIND_MEMFD", "KIND_DMABUF", "KIND_CUDA_IPC",
    "Hello", "OpenFile", "CloseFile", "RegisterBuffer", "ReleaseBuffer", "Read", "Done", "Error",
    "Frame", "FrameHeader", "StreamStep", "InvalidFrame", "FramingError", "ProtocolError",
    "SideChannelUnavailable", "encode_frame", "decode_frame", "decode_next", "Buffer",
    "DeviceBuffer", "Client", "socket_path_for",
]

PROTOCOL_VERSION = 1
HEADER_SIZE = 16
MAX_BODY_LENGTH = 4096
MAX_READ_LENGTH = 64 << 20
CUDA_IPC_HANDLE_SIZE = 64
MAX_ERROR_MESSAGE = MAX_BODY_LENGTH - 6
MAX_OPEN_PATH = MAX_BODY_LENGTH - 2
MAX_READ_PATH = MAX_BODY_LENGTH - 34
KNOWN_FLAGS = 0
_U64 = (1 << 64) - 1

CAP_RDMA = 1 << 0
CAP_DMABUF = 1 << 1
CAP_CUDA_IPC = 1 << 2
CAP_OPEN_PATH = 1 << 3  # the daemon answers OPEN_PATH and READ_PATH

KIND_MEMFD = 1
KIND_DMABUF = 2
KIND_CUDA_IPC = 3

# DONE's path byte; a READ's completion reports the name.
PATH_NAMES = {0: "none", 1: "rdma", 2: "http", 3: "cache"}

MOUNT_XATTR = "user.reelfs.mount"

_HEADER = struct.Struct("<IHHQ")


class InvalidFrame(ValueError):
    """A message breaks a rule of the wire format (the text names it, as the C++ codec's does)."""


class FramingError(InvalidFrame):
    """The stream itself is broken (body length above 4 KiB, unknown type): it cannot go on."""


class ProtocolError(OSError):
    """The daemon sent ERROR (its last word before closing) or something the protocol forbids."""


class SideChannelUnavailable(OSError):
    """The mount announces no side channel (``reelfs mount --side-channel=off``, or an older
    reelfs), or the path is not under a reelfs mount."""


# --- messages (api/protocol/messages.h), in wire-type order -------------------------------------

@dataclasses.dataclass(frozen=True)
class Hello:
    version: int = PROTOCOL_VERSION
    capabilities: int = 0
    TYPE = 1


@dataclasses.dataclass(frozen=True)
class OpenFile:
    TYPE = 2


@dataclasses.dataclass(frozen=True)
class CloseFile:
    file_id: int = 0
    TYPE = 3


@dataclasses.dataclass(frozen=True)
class RegisterBuffer:
    kind: int = KIND_MEMFD
    length: int = 0
    # On the wire only for KIND_CUDA_IPC; must stay all zero otherwise (re-encodes the same).
    cuda_ipc_handle: bytes = bytes(CUDA_IPC_HANDLE_SIZE)
    TYPE = 4


@dataclasses.dataclass(frozen=True)
class ReleaseBuffer:
    buffer_id: int = 0
    TYPE = 5


@dataclasses.dataclass(frozen=True)
class Read:
    file_id: int = 0
    offset: int = 0
    length: int = 0
    buffer_id: int = 0
    buffer_offset: int = 0
    TYPE = 6


@dataclasses.dataclass(frozen=True)
class Done:
    result: int = 0  # bytes, an id, 0 or -errno
    path: int = 0    # PATH_NAMES
    TYPE = 7


@dataclasses.dataclass(frozen=True)
class Error:
    error: int = 0          # a positive errno
    message: bytes = b""    # for humans; str is taken as UTF-8
    TYPE = 8

    def __post_init__(self):
        if isinstance(self.message, str):
            object.__setattr__(self, "message", self.message.encode("utf-8"))


def _path_bytes(self):
    if isinstance(self.path, str):
        object.__setattr__(self, "path", os.fsencode(self.path))


@dataclasses.dataclass(frozen=True)
class OpenPath:
    path: bytes = b""  # below the mount root, no leading "/"; str is taken with os.fsencode
    TYPE = 9
    __post_init__ = _path_bytes


@dataclasses.dataclass(frozen=True)
class ReadPath:
    offset: int = 0
    length: int = 0
    buffer_id: int = 0
    buffer_offset: int = 0
    path: bytes = b""
    TYPE = 10
    __post_init__ = _path_bytes


_MESSAGES = (Hello, OpenFile, CloseFile, RegisterBuffer, ReleaseBuffer, Read, Done, Error,
             OpenPath, ReadPath)
_BY_TYPE = {m.TYPE: m for m in _MESSAGES}
_NAMES = {1: "HELLO", 2: "OPEN_FILE", 3: "CLOSE_FILE", 4: "REGISTER_BUFFER",
          5: "RELEASE_BUFFER", 6: "READ", 7: "DONE", 8: "ERROR", 9: "OPEN_PATH",
          10: "READ_PATH"}


@dataclasses.dataclass(frozen=True)
class Frame:
    tag: int
    message: object


@dataclasses.dataclass(frozen=True)
class FrameHeader:
    length: int
    type: int
    flags: int
    tag: int


@dataclasses.dataclass
class StreamStep:
    """What the front of a stream holds (C++ StreamStep)."""
    need_more: int = 0      # > 0: read at least this many more bytes and call again
    frame_size: int = 0     # > 0: a whole frame of this many bytes is at the front
    header: FrameHeader = None
    error: InvalidFrame = None  # the request is malformed, the stream stays in step
    frame: Frame = None


def _invalid(type_, what):
    return InvalidFrame(f"side channel: {_NAMES.get(type_, 'UNKNOWN')}: {what}")


def _check_uint(type_, name, value, bits):
    if not isinstance(value, int) or value < 0 or value >> bits:
        raise _invalid(type_, f"{name} {value!r} is not a u{bits}")


def _check_path(type_, path, limit):
    if not path:
        raise _invalid(type_, "empty path")
    if len(path) > limit:
        raise _invalid(type_, f"path of {len(path)} bytes is above {limit}")
    if b"\0" in path:
        raise _invalid(type_, "NUL byte in the path")


# The rules a message's values obey, shared by encoder and decoder (codec.cc CheckValues).
def _check_values(m):
    t = m.TYPE
    if isinstance(m, RegisterBuffer):
        if m.kind in (KIND_MEMFD, KIND_DMABUF):
            if any(m.cuda_ipc_handle):
                raise _invalid(t, "a handle is only for cuda_ipc")
        elif m.kind != KIND_CUDA_IPC:
            raise _invalid(t, f"unknown buffer kind {m.kind}")
    elif isinstance(m, (Read, ReadPath)):
        if m.length == 0:
            raise _invalid(t, "length is 0")
        if m.length > MAX_READ_LENGTH:
            raise _invalid(t, f"length {m.length} is above the cap of {MAX_READ_LENGTH}")
        if m.offset > _U64 - m.length:
            raise _invalid(t, "offset + length overflows u64")
        if m.buffer_offset > _U64 - m.length:
            raise _invalid(t, "buffer_offset + length overflows u64")
        if isinstance(m, ReadPath):
            _check_path(t, m.path, MAX_READ_PATH)
    elif isinstance(m, OpenPath):
        _check_path(t, m.path, MAX_OPEN_PATH)
    elif isinstance(m, Done):
        if m.path not in PATH_NAMES:
            raise _invalid(t, f"unknown path {m.path}")
    elif isinstance(m, Error):
        if len(m.message) > MAX_ERROR_MESSAGE:
            raise _invalid(t, f"message of {len(m.message)} bytes is above {MAX_ERROR_MESSAGE}")


def _body(m):
    t = m.TYPE
    if isinstance(m, Hello):
        _check_uint(t, "version", m.version, 32)
        _check_uint(t, "capabilities", m.capabilities, 32)
        return struct.pack("<II", m.version, m.capabilities)
    if isinstance(m, OpenFile):
        return b""
    if isinstance(m, CloseFile):
        _check_uint(t, "file_id", m.file_id, 64)
        return struct.pack("<Q", m.file_id)
    if isinstance(m, RegisterBuffer):
        _check_uint(t, "kind", m.kind, 8)
        _check_uint(t, "length", m.length, 64)
        if len(m.cuda_ipc_handle) != CUDA_IPC_HANDLE_SIZE:
            raise _invalid(t, f"a cuda_ipc handle is {CUDA_IPC_HANDLE_SIZE} bytes")
        body = struct.pack("<BQ", m.kind, m.length)
        return body + bytes(m.cuda_ipc_handle) if m.kind == KIND_CUDA_IPC else body
    if isinstance(m, ReleaseBuffer):
        _check_uint(t, "buffer_id", m.buffer_id, 64)
        return struct.pack("<Q", m.buffer_id)
    if isinstance(m, Read):
        fields = ("file_id", "offset", "length", "buffer_id", "buffer_offset")
        for name in fields:
            _check_uint(t, name, getattr(m, name), 64)
        return struct.pack("<5Q", *(getattr(m, name) for name in fields))
    if isinstance(m, Done):
        if not isinstance(m.result, int) or not -(1 << 63) <= m.result < (1 << 63):
            raise _invalid(t, f"result {m.result!r} is not an i64")
        _check_uint(t, "path", m.path, 8)
        return struct.pack("<qB", m.result, m.path)
    if isinstance(m, Error):
        _check_uint(t, "errno", m.error, 32)
        _check_values(m)  # the length must fit its u16 before it is packed
        return struct.pack("<IH", m.error, len(m.message)) + bytes(m.message)
    if isinstance(m, OpenPath):
        _check_values(m)  # the length must fit its u16 before it is packed
        return struct.pack("<H", len(m.path)) + bytes(m.path)
    if isinstance(m, ReadPath):
        fields = ("offset", "length", "buffer_id", "buffer_offset")
        for name in fields:
            _check_uint(t, name, getattr(m, name), 64)
        _check_values(m)
        return (struct.pack("<4QH", *(getattr(m, name) for name in fields), len(m.path)) +
                bytes(m.path))
    raise TypeError(f"not a side channel message: {m!r}")


def encode_frame(frame):
    """Header and body of ``frame`` as bytes; :class:`InvalidFrame` where a value breaks a rule."""
    m = frame.message
    if type(m) not in _BY_TYPE.values():
        raise TypeError(f"not a side channel message: {m!r}")
    _check_uint(m.TYPE, "tag", frame.tag, 64)
    body = _body(m)
    _check_values(m)
    return _HEADER.pack(len(body), m.TYPE, 0, frame.tag) + body


def _decode_header(data):
    length, type_, flags, tag = _HEADER.unpack_from(data, 0)
    if length > MAX_BODY_LENGTH:
        raise FramingError(
            f"side channel: body length {length} is above the limit of {MAX_BODY_LENGTH} bytes")
    if type_ not in _BY_TYPE:
        raise FramingError(f"side channel: unknown message type {type_}")
    return FrameHeader(length, type_, flags, tag)


def _decode_body(header, body):
    t = header.type
    if header.flags & ~KNOWN_FLAGS:
        raise _invalid(t, f"unknown flag bits {header.flags:#06x}")
    n = len(body)

    def fixed(size):
        if n < size:
            raise _invalid(t, f"body of {n} bytes is truncated")
        if n > size:
            raise _invalid(t, f"{n - size} trailing bytes after the body's fields")

    if t == Hello.TYPE:
        fixed(8)
        m = Hello(*struct.unpack("<II", body))
    elif t == OpenFile.TYPE:
        fixed(0)
        m = OpenFile()
    elif t == CloseFile.TYPE:
        fixed(8)
        m = CloseFile(*struct.unpack("<Q", body))
    elif t == RegisterBuffer.TYPE:
        # The kind decides the layout: read it first, as the C++ reader does.
        kind = body[0] if n >= 1 else 0
        fixed(9 + CUDA_IPC_HANDLE_SIZE if kind == KIND_CUDA_IPC else 9)
        kind, length = struct.unpack_from("<BQ", body)
        handle = bytes(body[9:]) if kind == KIND_CUDA_IPC else bytes(CUDA_IPC_HANDLE_SIZE)
        m = RegisterBuffer(kind, length, handle)
    elif t == ReleaseBuffer.TYPE:
        fixed(8)
        m = ReleaseBuffer(*struct.unpack("<Q", body))
    elif t == Read.TYPE:
        fixed(40)
        m = Read(*struct.unpack("<5Q", body))
    elif t == Done.TYPE:
        fixed(9)
        m = Done(*struct.unpack("<qB", body))
    elif t == OpenPath.TYPE:
        if n < 2:
            raise _invalid(t, f"body of {n} bytes is truncated")
        (path_length,) = struct.unpack_from("<H", body)
        fixed(2 + path_length)
        m = OpenPath(bytes(body[2:]))
    elif t == ReadPath.TYPE:
        if n < 34:
            raise _invalid(t, f"body of {n} bytes is truncated")
        offset, length, buffer_id, buffer_offset, path_length = struct.unpack_from("<4QH", body)
        fixed(34 + path_length)
        m = ReadPath(offset, length, buffer_id, buffer_offset, bytes(body[34:]))
    else:  # ERROR
        if n < 6:
            raise _invalid(t, f"body of {n} bytes is truncated")
        error, text_length = struct.unpack_from("<IH", body)
        fixed(6 + text_length)
        m = Error(error, bytes(body[6:]))
    _check_values(m)
    return Frame(header.tag, m)


def decode_next(data):
    """Looks at the front of ``data`` (bytes-like; the rest may hold further frames).

    Returns a :class:`StreamStep`: ``need_more`` > 0 until a whole frame is in; then
    ``frame_size`` and ``header``, with ``frame`` or, for a malformed request, ``error`` (skip
    ``frame_size`` bytes and go on). Raises :class:`FramingError` when the header breaks the
    framing (the stream cannot be resynchronised).
    """
    data = memoryview(data).cast("B")
    if len(data) < HEADER_SIZE:
        return StreamStep(need_more=HEADER_SIZE - len(data))
    header = _decode_header(data)
    total = HEADER_SIZE + header.length
    if len(data) < total:
        return StreamStep(need_more=total - len(data))
    step = StreamStep(frame_size=total, header=header)
    try:
        step.frame = _decode_body(header, data[HEADER_SIZE:total])
    except InvalidFrame as err:
        step.error = err
    return step


def decode_frame(data):
    """Exactly one frame, nothing after it; :class:`InvalidFrame` otherwise."""
    step = decode_next(data)
    if step.need_more:
        raise InvalidFrame(f"side channel: frame of {len(data)} bytes is truncated "
                           f"({step.need_more} more needed)")
    if step.error is not None:
        raise step.error
    if len(data) != step.frame_size:
        raise InvalidFrame(f"side channel: {len(data) - step.frame_size} trailing bytes after a "
                           f"{step.frame_size}-byte frame")
    return step.frame


# --- discovery ----------------------------------------------------------------------------------

def mount_info(path):
    """``(root, info)``: the reelfs mount root above ``path`` and its user.reelfs.mount JSON.

    Walks up from ``path`` (its directory for a file) while on the same device and takes the first
    directory that carries user.reelfs.mount (on a reelfs mount: its root). Raises
    :class:`reelfs.hsm.NotOnReelfsError` when none does.
    """
    p = os.path.realpath(os.fsdecode(path))
    if not os.path.isdir(p):
        p = os.path.dirname(p)
    dev = os.stat(p).st_dev
    start = p
    while True:
        try:
            raw = os.getxattr(p, MOUNT_XATTR)
        except OSError as err:
            if err.errno not in (errno.ENODATA, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EACCES,
                                 errno.EPERM):
                raise
        else:
            try:
                info = json.loads(raw)
            except ValueError as err:
                raise hsm.HsmError(errno.EPROTO, f"{p}: {MOUNT_XATTR} is not JSON ({err})",
                                   p) from None
            if not isinstance(info, dict):
                raise hsm.HsmError(errno.EPROTO, f"{p}: {MOUNT_XATTR} is not a JSON object", p)
            return p, info
        parent = os.path.dirname(p)
        if parent == p or os.stat(parent).st_dev != dev:
            raise hsm.NotOnReelfsError(errno.ENODATA, f"{start}: not under a reelfs mount (no "
                                       f"{MOUNT_XATTR} on the way up to {p})", start)
        p = parent


def socket_path_for(path):
    """The side channel socket of the mount above ``path``; :class:`SideChannelUnavailable` when
    it announces none or ``path`` is not under a reelfs mount."""
    try:
        root, info = mount_info(path)
    except hsm.NotOnReelfsError as err:
        raise SideChannelUnavailable(errno.ENOTSUP, str(err), os.fsdecode(path)) from None
    sock = info.get("side_channel")
    if not sock:
        raise SideChannelUnavailable(
            errno.ENOTSUP, f"the reelfs mount at {root} has no side channel (no \"side_channel\" "
            f"in {MOUNT_XATTR}: mounted with --side-channel=off, or by a reelfs without one)",
            root)
    if not isinstance(sock, str):
        raise hsm.HsmError(errno.EPROTO, f"{root}: side_channel in {MOUNT_XATTR} is not a string",
                           root)
    return sock


# --- the client ---------------------------------------------------------------------------------

class Buffer(mmap.mmap):
    """A registered memfd, mapped shared: usable wherever a writable buffer is (``memoryview(b)``,
    slicing, ``numpy.frombuffer``). ``buffer_id`` is the daemon's id; ``fd`` the memfd."""

    def __new__(cls, fd, length):
        self = super().__new__(cls, fd, length, flags=mmap.MAP_SHARED,
                               prot=mmap.PROT_READ | mmap.PROT_WRITE)
        self.fd = fd
        self.buffer_id = None
        self.client = None  # the Client it is registered with
        return self

    def _drop(self):
        try:
            self.close()
        except BufferError:
            pass  # a memoryview of it is still alive; the mapping goes with the last one
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class DeviceBuffer:
    """A registered dma-buf or CUDA IPC buffer: its ``buffer_id`` for READs. Nothing is mapped
    here; a dma-buf's fd stays the caller's."""

    def __init__(self, buffer_id, client, length):
        self.buffer_id = buffer_id
        self.client = client
        self.length = length

    def _drop(self):
        pass  # nothing mapped here, no fd of ours


def _page_round(n):
    page = mmap.PAGESIZE
    return max(page, (n + page - 1) // page * page)


def _memfd(length, name="reelfs-side-channel"):
    """A memfd of ``length`` bytes sealed against shrinking and growing (section 4)."""
    fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        os.ftruncate(fd, length)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW)
    except BaseException:
        os.close(fd)
        raise
    return fd


class Client:
    """One connection to a mount's side channel.

    ``submit_read`` returns a tag at once; ``wait`` / ``completions`` give ``(tag, result, path)``
    in completion order (``result`` a byte count or ``-errno``, ``path`` "http", "rdma", "cache"
    or "none"). ``max_in_flight`` bounds this client's READs in flight: ``submit_read`` waits for
    a completion first when the window is full (the completion is kept for ``wait``).
    """

    def __init__(self, sock, *, max_in_flight=256):
        self._sock = sock
        self._rx = bytearray()
        self._next_tag = 1
        self._answers = {}         # tag -> Done, for requests other than READ
        self._discard = set()      # tags of requests whose answers nobody waits for
        self._read_tags = {}       # tag -> file_id, READs in flight
        self._completed = collections.deque()
        self._files = {}           # file_id -> name, for error messages
        self._closed = False
        self.max_in_flight = max_in_flight
        self.server_version = None
        self.server_capabilities = 0
        self.capabilities = 0

    # -- connection --

    @classmethod
    def connect(cls, path, *, capabilities=0, max_in_flight=256):
        """Connects to the socket at ``path`` and exchanges HELLO."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        try:
            sock.connect(os.fsdecode(path))
            client = cls(sock, max_in_flight=max_in_flight)
            client._hello(capabilities)
        except BaseException:
            sock.close()
            raise
        return client

    @classmethod
    def for_path(cls, path, **kwargs):
        """Connects to the side channel of the reelfs mount above ``path``."""
        return cls.connect(socket_path_for(path), **kwargs)

    def _hello(self, capabilities):
        tag = self._tag()
        self._send(Frame(tag, Hello(PROTOCOL_VERSION, capabilities)))
        frame = self._receive_frame()
        if not isinstance(frame.message, Hello) or frame.tag != tag:
            self.close()
            raise ProtocolError(errno.EPROTO, f"side channel: expected HELLO answer, got "
                                f"{_NAMES[frame.message.TYPE]} (tag {frame.tag})")
        self.server_version = frame.message.version
        self.server_capabilities = frame.message.capabilities
        self.capabilities = capabilities & frame.message.capabilities

    def close(self):
        """Closes the socket; the daemon releases every file and buffer of this client."""
        if not self._closed:
            self._closed = True
            self._sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def fileno(self):
        return self._sock.fileno()

    @property
    def in_flight(self):
        """READs submitted whose completion has not been received yet."""
        return len(self._read_tags)

    # -- files and buffers --

    def open_file(self, file, name=None):
        """A file id for ``file``: an fd opened through the mount (kept open by the caller) or a
        path (opened read-only here and closed once the daemon holds its own copy)."""
        if isinstance(file, int):
            fd, own = file, False
        else:
            fd, own = os.open(file, os.O_RDONLY | os.O_CLOEXEC), True
            name = name or os.fsdecode(file)
        try:
            result = self._request(OpenFile(), fds=[fd])
        finally:
            if own:
                os.close(fd)
        name = name or f"fd {fd}"
        if result < 0:
            raise OSError(-result, os.strerror(-result), name)
        self._files[result] = name
        return result

    def open_files(self, fds, names=None):
        """File ids for many fds opened through the mount, the OPEN_FILEs pipelined (sent
        together, then their answers collected). A file the daemon refuses gets the OSError
        itself (``PermissionError`` for EPERM) in its place instead of an id."""
        names = list(names) if names is not None else [f"fd {fd}" for fd in fds]
        tags = []
        for fd in fds:
            tag = self._tag()
            self._send(Frame(tag, OpenFile()), [fd])
            tags.append(tag)
        out = []
        for tag, name in zip(tags, names):
            while tag not in self._answers:
                self._pump()
            result = self._answers.pop(tag).result
            if result < 0:
                out.append(OSError(-result, os.strerror(-result), name))
            else:
                self._files[result] = name
                out.append(result)
        return out

    def close_file(self, file_id, wait=True):
        """Releases ``file_id``. ``wait=False`` does not wait for the answer (a pipelined
        reader's close; an error there could only be EBADF for an id it no longer uses)."""
        name = self._files.pop(file_id, None)
        if wait:
            self._check(self._request(CloseFile(file_id)), name)
            return
        tag = self._tag()
        self._discard.add(tag)
        self._send(Frame(tag, CloseFile(file_id)))

    def register_memfd(self, length):
        """A registered :class:`Buffer` of at least ``length`` bytes (whole pages)."""
        length = _page_round(length)
        fd = _memfd(length)
        try:
            buf = Buffer(fd, length)
        except BaseException:
            os.close(fd)
            raise
        try:
            result = self._request(RegisterBuffer(KIND_MEMFD, length), fds=[fd])
            self._check(result, "memfd")
        except BaseException:
            buf._drop()
            raise
        buf.buffer_id = result
        buf.client = self
        return buf

    def register_dmabuf(self, fd, length):
        """Registers ``length`` bytes (whole pages) of the dma-buf ``fd`` (the caller keeps its fd;
        the daemon holds its own). Returns a :class:`DeviceBuffer` for ``submit_read``/``read`` and
        ``release_buffer``. ``OSError(EOPNOTSUPP)`` when the daemon can neither register the
        dma-buf with its NIC nor map it (a GPU's dma-buf on a mount without ``--rdma``): stage
        through host memory instead; ``OSError(EINVAL)`` when ``fd`` is not a dma-buf."""
        result = self._request(RegisterBuffer(KIND_DMABUF, length), fds=[fd])
        self._check(result, "dma-buf")
        return DeviceBuffer(result, self, length)

    def register_cuda_ipc(self, handle, length):
        """Registers the first ``length`` bytes of the GPU allocation named by ``handle`` (the 64
        bytes of ``cuIpcGetMemHandle``/``cudaIpcGetMemHandle`` of its base). Returns a
        :class:`DeviceBuffer`. ``OSError(EOPNOTSUPP)`` where the daemon cannot land in it (no
        usable GPU or no ``--rdma`` there; the mount's log says why), ``OSError(EINVAL)`` for a
        handle CUDA refuses or a length beyond the allocation."""
        result = self._request(RegisterBuffer(KIND_CUDA_IPC, length, bytes(handle)))
        self._check(result, "cuda_ipc")
        return DeviceBuffer(result, self, length)

    def release_buffer(self, buffer):
        """Deregisters ``buffer`` (the daemon waits for every READ into it), then unmaps it."""
        try:
            if not self._closed:
                self._check(self._request(ReleaseBuffer(buffer.buffer_id)), "buffer")
        finally:
            buffer._drop()

    # -- reads --

    def submit_read(self, file_id, offset, length, buffer, buffer_offset=0):
        """Queues READ of ``[offset, offset + length)`` into ``buffer`` at ``buffer_offset``;
        returns its tag."""
        buffer_id = buffer if isinstance(buffer, int) else buffer.buffer_id
        while len(self._read_tags) >= self.max_in_flight:
            self._pump()
        tag = self._tag()
        self._send(Frame(tag, Read(file_id, offset, length, buffer_id, buffer_offset)))
        self._read_tags[tag] = file_id
        return tag

    def open_path(self, path):
        """Opens ``path`` (below the mount root) with no fd and no FUSE request: the daemon checks
        this process's credentials against the mount's modes; returns the file id. Needs
        CAP_OPEN_PATH in :attr:`server_capabilities`."""
        result = self._request(OpenPath(path))
        self._check(result, os.fsdecode(path))
        self._files[result] = os.fsdecode(path)
        return result

    def submit_read_path(self, path, offset, length, buffer, buffer_offset=0):
        """Queues READ_PATH (open by path, read, close: one request for a small file) into
        ``buffer`` at ``buffer_offset``; returns its tag. Its completion comes from :meth:`wait`
        like a READ's."""
        buffer_id = buffer if isinstance(buffer, int) else buffer.buffer_id
        while len(self._read_tags) >= self.max_in_flight:
            self._pump()
        tag = self._tag()
        self._send(Frame(tag, ReadPath(offset, length, buffer_id, buffer_offset, path)))
        self._read_tags[tag] = os.fsdecode(path)
        return tag

    def wait(self):
        """The next completion ``(tag, result, path)``; raises when none is in flight."""
        while not self._completed:
            if not self._read_tags:
                raise RuntimeError("side channel: wait() with no READ in flight")
            self._pump()
        return self._completed.popleft()

    def completions(self):
        """Yields ``(tag, result, path)`` for every READ in flight, in completion order."""
        while self._completed or self._read_tags:
            yield self.wait()

    def wait_for(self, tag):
        """``(result, path)`` of READ ``tag``; other completions that arrive meanwhile are kept
        for :meth:`wait`."""
        while True:
            for i, c in enumerate(self._completed):
                if c[0] == tag:
                    del self._completed[i]
                    return c[1], c[2]
            if tag not in self._read_tags:
                raise RuntimeError(f"side channel: no READ with tag {tag} in flight")
            self._pump()

    def read(self, file_id, offset, length, buffer, buffer_offset=0):
        """One READ, waited for: ``(nbytes, path)``; ``-errno`` raises OSError naming the file."""
        tag = self.submit_read(file_id, offset, length, buffer, buffer_offset)
        result, path = self.wait_for(tag)
        self._check(result, self._files.get(file_id))
        return result, path

    # -- plumbing --

    def _tag(self):
        tag = self._next_tag
        self._next_tag += 1
        return tag

    def _check(self, result, name):
        if result < 0:
            raise OSError(-result, os.strerror(-result), *((name,) if name else ()))
        return result

    def _request(self, message, fds=()):
        """Sends a request that a DONE answers and returns its result."""
        tag = self._tag()
        self._send(Frame(tag, message), fds)
        while tag not in self._answers:
            self._pump()
        return self._answers.pop(tag).result

    def _send(self, frame, fds=()):
        """Writes the frame, reading answers while the socket is full so neither side can block
        the other (the daemon stops reading a client with too many requests in flight)."""
        if self._closed:
            raise ConnectionError(errno.ENOTCONN, "side channel: client is closed")
        data = memoryview(encode_frame(frame))
        fds = list(fds)
        while data:
            events = self._poll(select.POLLIN | select.POLLOUT, None)
            if events & select.POLLOUT:
                try:
                    if fds:
                        n = socket.send_fds(self._sock, [data], fds, socket.MSG_DONTWAIT)
                        fds = []
                    else:
                        n = self._sock.send(data, socket.MSG_DONTWAIT)
                except BlockingIOError:
                    n = 0
                data = data[n:]
            elif events & (select.POLLIN | select.POLLHUP | select.POLLERR):
                self._pump(block=False)

    def _pump(self, block=True):
        """Receives what has arrived (waiting for something when ``block``) and files each frame."""
        if self._closed:
            raise ConnectionError(errno.ENOTCONN, "side channel: client is closed")
        if not block:
            if not self._poll(select.POLLIN, 0):
                return
        chunk = self._sock.recv(65536)
        if not chunk:
            self._closed = True
            self._sock.close()
            raise ConnectionResetError(errno.ECONNRESET, "side channel: the daemon closed the "
                                       "connection")
        self._rx += chunk
        self._file_frames()

    def _poll(self, mask, timeout):
        """poll(2), not select(2): a process with many files has socket fds above 1024."""
        p = select.poll()
        p.register(self._sock, mask)
        got = p.poll(timeout)
        return got[0][1] if got else 0

    def _receive_frame(self):
        """The next frame, whatever it is (only for the HELLO exchange)."""
        while True:
            frame = self._take_frame()
            if frame is not None:
                return frame
            chunk = self._sock.recv(65536)
            if not chunk:
                raise ConnectionResetError(errno.ECONNRESET, "side channel: the daemon closed the "
                                           "connection during HELLO")
            self._rx += chunk

    def _take_frame(self):
        # Anything malformed from the daemon ends the connection: its answers cannot be trusted.
        try:
            step = decode_next(self._rx)
        except FramingError as err:
            self.close()
            raise ProtocolError(errno.EPROTO, f"the daemon sent a broken frame: {err}") from None
        if step.need_more:
            return None
        del self._rx[:step.frame_size]
        if step.error is not None:
            self.close()
            raise ProtocolError(errno.EPROTO, f"the daemon sent a malformed frame: {step.error}")
        if isinstance(step.frame.message, Error):
            err = step.frame.message
            self.close()
            raise ProtocolError(err.error or errno.EPROTO,
                                f"side channel: the daemon closed the connection: "
                                f"{err.message.decode('utf-8', 'replace')}")
        return step.frame

    def _file_frames(self):
        while True:
            frame = self._take_frame()
            if frame is None:
                return
            m = frame.message
            if not isinstance(m, Done):
                self.close()
                raise ProtocolError(errno.EPROTO, f"side channel: unexpected "
                                    f"{_NAMES[m.TYPE]} from the daemon (tag {frame.tag})")
            if self._read_tags.pop(frame.tag, None) is not None:
                self._completed.append((frame.tag, m.result, PATH_NAMES[m.path]))
            elif frame.tag in self._discard:
                self._discard.discard(frame.tag)
            else:
                self._answers[frame.tag] = m
