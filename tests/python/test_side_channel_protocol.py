#!/usr/bin/env python3
"""Conformance of reelfs.side_channel's codec with the C++ one (tests/unit/api/protocol_test.cc).

The golden bytes here are built field by field from docs/protocols/side-channel.md section 5, as
the C++ test builds them: the same messages, the same malformed frames and the same rule names
in the refusals, and a stream split at every byte boundary. No mount, no socket.
"""
import os
import struct
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

from reelfs import side_channel as sc  # noqa: E402
from reelfs.side_channel import (  # noqa: E402
    CloseFile, Done, Error, Frame, Hello, OpenFile, OpenPath, Read, ReadPath, RegisterBuffer,
    ReleaseBuffer)

U64 = (1 << 64) - 1
HANDLE = bytes(0xa0 + i for i in range(64))


def every_message():
    """protocol_test.cc EveryMessage(): values that use every byte of their fields."""
    return [
        Frame(1, Hello(1, sc.CAP_RDMA)),
        Frame(2, Hello(7, 0xffffffff)),
        Frame(3, OpenFile()),
        Frame(4, CloseFile(0x0102030405060708)),
        Frame(5, RegisterBuffer(sc.KIND_MEMFD, 1 << 30)),
        Frame(6, RegisterBuffer(sc.KIND_DMABUF, 4096)),
        Frame(7, RegisterBuffer(sc.KIND_CUDA_IPC, 8 << 20, HANDLE)),
        Frame(8, ReleaseBuffer(42)),
        Frame(9, Read(11, 0xfffffffff8000000, sc.MAX_READ_LENGTH, 12, 0xfffffffff8000000)),
        Frame(10, Read(1, 0, 1, 2, 0)),
        Frame(11, Done(1 << 20, 1)),
        Frame(12, Done(-5, 0)),
        Frame(13, Done(0, 2)),
        Frame(14, Done((1 << 63) - 1, 3)),
        Frame(15, Error(71, "frame longer than 4 KiB")),
        Frame(0, Error(22, "")),
        Frame(U64, Error(90, "x" * sc.MAX_ERROR_MESSAGE)),
        Frame(16, OpenPath("small/000123.bin")),
        Frame(17, OpenPath("p" * sc.MAX_OPEN_PATH)),
        Frame(18, ReadPath(0x0102030405060708, sc.MAX_READ_LENGTH, 3, 0x1000, "a/b.bin")),
        Frame(19, ReadPath(0, 1, 1, 0, "q" * sc.MAX_READ_PATH)),
    ]


def le(v, n):
    return (v & ((1 << (8 * n)) - 1)).to_bytes(n, "little")


def frame16(length, type_, flags, tag, body):
    return le(length, 4) + le(type_, 2) + le(flags, 2) + le(tag, 8) + bytes(body)


def with_body(type_, body, flags=0):
    return frame16(len(body), type_, flags, 77, body)


def read_body(offset, length, buffer_offset):
    return le(1, 8) + le(offset, 8) + le(length, 8) + le(2, 8) + le(buffer_offset, 8)


def golden(f):
    """The wire bytes of every_message()'s frames, written out from the spec's tables."""
    m = f.message
    if isinstance(m, Hello):
        body = le(m.version, 4) + le(m.capabilities, 4)
    elif isinstance(m, OpenFile):
        body = b""
    elif isinstance(m, CloseFile):
        body = le(m.file_id, 8)
    elif isinstance(m, RegisterBuffer):
        body = le(m.kind, 1) + le(m.length, 8) + (m.cuda_ipc_handle if m.kind == 3 else b"")
    elif isinstance(m, ReleaseBuffer):
        body = le(m.buffer_id, 8)
    elif isinstance(m, Read):
        body = b"".join(le(v, 8) for v in (m.file_id, m.offset, m.length, m.buffer_id,
                                           m.buffer_offset))
    elif isinstance(m, Done):
        body = le(m.result, 8) + le(m.path, 1)
    elif isinstance(m, OpenPath):
        body = le(len(m.path), 2) + m.path
    elif isinstance(m, ReadPath):
        body = (b"".join(le(v, 8) for v in (m.offset, m.length, m.buffer_id, m.buffer_offset)) +
                le(len(m.path), 2) + m.path)
    else:
        body = le(m.error, 4) + le(len(m.message), 2) + m.message
    return frame16(len(body), m.TYPE, 0, f.tag, body)


class RoundTrip(unittest.TestCase):
    def test_every_message_round_trips_with_the_documented_size(self):
        sizes = {1: 8, 2: 0, 3: 8, 4: 9, 5: 8, 6: 40, 7: 9}
        for f in every_message():
            with self.subTest(tag=f.tag):
                b = sc.encode_frame(f)
                m = f.message
                want = (6 + len(m.message) if isinstance(m, Error) else
                        2 + len(m.path) if isinstance(m, OpenPath) else
                        34 + len(m.path) if isinstance(m, ReadPath) else
                        73 if isinstance(m, RegisterBuffer) and m.kind == 3 else sizes[m.TYPE])
                self.assertEqual(len(b), 16 + want)
                self.assertEqual(b, golden(f))
                d = sc.decode_frame(b)
                self.assertEqual(d, f)
                self.assertEqual(sc.encode_frame(d), b)

    def test_the_cpp_tests_literal_layouts(self):
        # "the wire bytes are the documented little-endian layout" in protocol_test.cc.
        self.assertEqual(
            sc.encode_frame(Frame(0x1122334455667788, Read(1, 0x0a0b, 0x1000, 2, 0x20))),
            frame16(40, 6, 0, 0x1122334455667788, read_body(0x0a0b, 0x1000, 0x20)))
        self.assertEqual(sc.encode_frame(Frame(5, Done(-2, 3))),
                         frame16(9, 7, 0, 5, le(-2, 8) + b"\x03"))
        self.assertEqual(sc.encode_frame(Frame(1, Hello(1, sc.CAP_DMABUF | sc.CAP_CUDA_IPC))),
                         frame16(8, 1, 0, 1, le(1, 4) + le(6, 4)))
        self.assertEqual(sc.encode_frame(Frame(0, Error(71, "hi"))),
                         frame16(8, 8, 0, 0, le(71, 4) + le(2, 2) + b"hi"))
        self.assertEqual(sc.encode_frame(Frame(9, OpenPath("a/b"))),
                         frame16(5, 9, 0, 9, le(3, 2) + b"a/b"))
        self.assertEqual(
            sc.encode_frame(Frame(10, ReadPath(0x0a0b, 0x1000, 2, 0x20, "a/b"))),
            frame16(37, 10, 0, 10, le(0x0a0b, 8) + le(0x1000, 8) + le(2, 8) + le(0x20, 8) +
                    le(3, 2) + b"a/b"))
        # Spelled out once in hex, so a shared mistake in le() and frame16() cannot hide.
        self.assertEqual(sc.encode_frame(Frame(0x0102, CloseFile(0x0a))).hex(),
                         "08000000" "0300" "0000" "0201000000000000" "0a00000000000000")

    def test_the_limits_themselves_decode(self):
        f = sc.decode_frame(with_body(6, read_body(U64 - sc.MAX_READ_LENGTH, sc.MAX_READ_LENGTH,
                                                   U64 - sc.MAX_READ_LENGTH)))
        self.assertEqual(f.message.length, sc.MAX_READ_LENGTH)


class Refusals(unittest.TestCase):
    def test_framing_errors(self):
        for b in (frame16(sc.MAX_BODY_LENGTH + 1, 6, 0, 1, b""), frame16(U64 >> 32, 6, 0, 1, b"")):
            with self.assertRaisesRegex(sc.FramingError, "above the limit"):
                sc.decode_next(b)
            with self.assertRaisesRegex(sc.InvalidFrame, "above the limit"):
                sc.decode_frame(b)
        step = sc.decode_next(frame16(sc.MAX_BODY_LENGTH, 8, 0, 1, bytes(sc.MAX_BODY_LENGTH)))
        self.assertEqual(step.frame_size, 16 + sc.MAX_BODY_LENGTH)
        self.assertIsNotNone(step.error)  # frames, then fails as an ERROR of the wrong length
        for t in (0, 11, 0x100, 0xffff):
            with self.subTest(type=t), self.assertRaisesRegex(sc.FramingError,
                                                              "unknown message type"):
                sc.decode_next(frame16(0, t, 0, 1, b""))

    def test_request_errors_keep_the_stream_in_step_and_name_the_rule(self):
        handle_short = b"\x03" + le(4096, 8) + bytes(63)
        kind_unknown = b"\x04" + le(4096, 8)
        done_path = le(0, 8) + b"\x04"
        error_long = le(5, 4) + le(3, 2) + b"ab"
        error_short = error_long + b"cd"
        rows = [
            ("unknown flag bit 0", with_body(2, b"", 1), "unknown flag bits"),
            ("unknown flag bit 15", with_body(6, read_body(0, 1, 0), 0x8000), "unknown flag bits"),
            ("HELLO truncated", with_body(1, bytes(7)), "truncated"),
            ("HELLO trailing", with_body(1, bytes(9)), "trailing"),
            ("OPEN_FILE trailing", with_body(2, bytes(1)), "trailing"),
            ("CLOSE_FILE truncated", with_body(3, bytes(7)), "truncated"),
            ("CLOSE_FILE trailing", with_body(3, bytes(16)), "trailing"),
            ("REGISTER_BUFFER empty", with_body(4, b""), "truncated"),
            ("REGISTER_BUFFER truncated", with_body(4, b"\x01\x00\x00"), "truncated"),
            ("REGISTER_BUFFER memfd trailing", with_body(4, b"\x01" + bytes(9)), "trailing"),
            ("REGISTER_BUFFER cuda_ipc handle short", with_body(4, handle_short), "truncated"),
            ("REGISTER_BUFFER unknown kind", with_body(4, kind_unknown), "unknown buffer kind"),
            ("REGISTER_BUFFER kind 0", with_body(4, bytes(9)), "unknown buffer kind"),
            ("RELEASE_BUFFER truncated", with_body(5, bytes(4)), "truncated"),
            ("RELEASE_BUFFER trailing", with_body(5, bytes(9)), "trailing"),
            ("READ truncated", with_body(6, bytes(39)), "truncated"),
            ("READ trailing", with_body(6, b"\x01" * 41), "trailing"),
            ("READ length 0", with_body(6, read_body(0, 0, 0)), "length is 0"),
            ("READ length 64 MiB + 1", with_body(6, read_body(0, sc.MAX_READ_LENGTH + 1, 0)),
             "above the cap"),
            ("READ length u64 max", with_body(6, read_body(0, U64, 0)), "above the cap"),
            ("READ buffer_offset + length overflows", with_body(6, read_body(0, 2, U64 - 1)),
             "buffer_offset \\+ length overflows"),
            ("READ offset + length overflows", with_body(6, read_body(U64, 1, 0)),
             "offset \\+ length overflows"),
            ("DONE truncated", with_body(7, bytes(8)), "truncated"),
            ("DONE trailing", with_body(7, bytes(10)), "trailing"),
            ("DONE unknown path", with_body(7, done_path), "unknown path"),
            ("ERROR truncated header", with_body(8, bytes(5)), "truncated"),
            ("ERROR text shorter than stated", with_body(8, error_long), "truncated"),
            ("ERROR text longer than stated", with_body(8, error_short), "trailing"),
        ]
        for name, frame, needle in rows:
            with self.subTest(name):
                step = sc.decode_next(frame)
                self.assertEqual(step.need_more, 0)
                self.assertEqual(step.frame_size, len(frame))
                self.assertEqual(step.header.tag, 77)
                self.assertIsNone(step.frame)
                self.assertIsInstance(step.error, sc.InvalidFrame)
                self.assertNotIsInstance(step.error, sc.FramingError)
                self.assertRegex(str(step.error), needle)
                with self.assertRaisesRegex(sc.InvalidFrame, needle):
                    sc.decode_frame(frame)

    def test_path_rules(self):
        # protocol_test.cc "OPEN_PATH: empty, over-long or NUL-carrying paths" and "READ_PATH".
        for body, rule in ((le(0, 2), "empty path"), (le(3, 2) + b"a\0b", "NUL byte"),
                           (le(10, 2) + b"ab", "truncated"), (le(1, 2) + b"ab", "trailing")):
            with self.subTest(rule=rule), self.assertRaisesRegex(sc.InvalidFrame, rule):
                sc.decode_frame(with_body(9, body))
        for bad in (b"", b"a\0b", b"p" * (sc.MAX_OPEN_PATH + 1)):
            with self.assertRaises(sc.InvalidFrame):
                sc.encode_frame(Frame(1, OpenPath(bad)))

        def rp(offset, length, buffer_offset, path):
            return with_body(10, le(offset, 8) + le(length, 8) + le(1, 8) + le(buffer_offset, 8) +
                             le(len(path), 2) + path)
        self.assertIsNotNone(sc.decode_frame(rp(0, 10, 0, b"f")))
        for frame, rule in ((rp(0, 0, 0, b"f"), "length is 0"),
                            (rp(0, sc.MAX_READ_LENGTH + 1, 0, b"f"), "above the cap"),
                            (rp(U64, 2, 0, b"f"), "offset \\+ length overflows"),
                            (rp(0, 2, U64, b"f"), "buffer_offset \\+ length overflows"),
                            (rp(0, 2, 0, b""), "empty path"), (rp(0, 2, 0, b"a\0"), "NUL byte")):
            with self.subTest(rule=rule), self.assertRaisesRegex(sc.InvalidFrame, rule):
                sc.decode_frame(frame)
        with self.assertRaises(sc.InvalidFrame):
            sc.encode_frame(Frame(1, ReadPath(0, 1, 1, 0, b"x" * (sc.MAX_READ_PATH + 1))))

    def test_a_truncated_frame_or_bytes_after_it(self):
        b = sc.encode_frame(Frame(3, CloseFile(9)))
        for cut in range(len(b)):
            with self.subTest(cut=cut), self.assertRaisesRegex(sc.InvalidFrame, "truncated"):
                sc.decode_frame(b[:cut])
        with self.assertRaisesRegex(sc.InvalidFrame, "trailing bytes after"):
            sc.decode_frame(b + b"\x00")

    def test_the_encoder_refuses_what_the_decoder_refuses(self):
        bad = [
            Read(length=0),
            Read(length=sc.MAX_READ_LENGTH + 1),
            Read(length=2, buffer_offset=U64 - 1),
            Read(offset=U64, length=1),
            RegisterBuffer(kind=9),
            RegisterBuffer(kind=sc.KIND_MEMFD, cuda_ipc_handle=HANDLE),
            Done(path=4),
            Error(message="x" * (sc.MAX_ERROR_MESSAGE + 1)),
            # Values a C++ field could not hold at all.
            CloseFile(-1),
            CloseFile(1 << 64),
            Hello(capabilities=1 << 32),
            Done(result=1 << 63),
            Read(file_id=-1, length=1),
        ]
        for m in bad:
            with self.subTest(m=repr(m)[:60]), self.assertRaises(sc.InvalidFrame):
                sc.encode_frame(Frame(0, m))
        with self.assertRaises(sc.InvalidFrame):
            sc.encode_frame(Frame(-1, OpenFile()))


class Streams(unittest.TestCase):
    @staticmethod
    def feed_all(chunks):
        """A server's read loop: append what arrived, take whole frames off the front."""
        buf = bytearray()
        frames = []
        last_need = 0
        for chunk in chunks:
            buf += chunk
            while True:
                step = sc.decode_next(buf)
                if step.need_more:
                    assert step.frame_size == 0
                    last_need = step.need_more
                    break
                assert step.error is None, step.error
                frames.append(step.frame)
                del buf[:step.frame_size]
            yield frames, len(buf), last_need

    def test_split_at_every_byte_boundary(self):
        frames = every_message()
        stream = b"".join(sc.encode_frame(f) for f in frames)
        for split in range(len(stream) + 1):
            *_, (got, buffered, _) = self.feed_all([stream[:split], stream[split:]])
            if got != frames or buffered:
                self.fail(f"split at {split}: {len(got)} frames, {buffered} bytes left")

    def test_one_byte_at_a_time_need_more_counts_down(self):
        frames = every_message()
        encoded = [sc.encode_frame(f) for f in frames]
        ends = []
        total = 0
        for b in encoded:
            total += len(b)
            ends.append(total)
        stream = b"".join(encoded)
        start = 0
        nxt = 0
        steps = self.feed_all(stream[i:i + 1] for i in range(len(stream)))
        for i, (got, _, last_need) in enumerate(steps):
            if i + 1 == ends[nxt]:
                self.assertEqual(len(got), nxt + 1)
                start = ends[nxt]
                nxt += 1
                continue
            have = i + 1 - start
            want = 16 - have if have < 16 else ends[nxt] - (i + 1)
            self.assertEqual(last_need, want, f"byte {i}")
        self.assertEqual(got, frames)

    def test_a_bad_request_mid_stream_costs_only_itself(self):
        stream = (sc.encode_frame(Frame(1, CloseFile(1))) + with_body(6, read_body(0, 0, 0)) +
                  sc.encode_frame(Frame(2, ReleaseBuffer(3))))
        good, bad = [], []
        rest = memoryview(stream)
        while rest:
            step = sc.decode_next(rest)
            self.assertGreater(step.frame_size, 0)
            (good if step.error is None else bad).append(step.header.tag)
            rest = rest[step.frame_size:]
        self.assertEqual(good, [1, 2])
        self.assertEqual(bad, [77])

    def test_header_struct_is_16_bytes_little_endian(self):
        self.assertEqual(struct.calcsize("<IHHQ"), sc.HEADER_SIZE)


if __name__ == "__main__":
    unittest.main(verbosity=1)
