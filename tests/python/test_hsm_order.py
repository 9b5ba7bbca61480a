#!/usr/bin/env python3
"""Unit tests of reelfs.hsm, reelfs.order and reelfs.shard (no torch, no mount).

Files on a local filesystem carry user.hsm.state; fake_mount.FakeArchive's thread plays the mount
(answers user.hsm.request) and the library (makes files online in a forced order). Exits 77 when
no filesystem here takes user extended attributes.
"""
import errno
import json
import os
import sys
import unittest
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_mount import FakeArchive, xattr_dir  # noqa: E402

import reelfs  # noqa: E402
from reelfs import hsm, shard  # noqa: E402
from reelfs.order import ReadyOrder, StagingFailed, StagingTimeout  # noqa: E402

FAST = dict(poll_min=0.005, poll_max=0.02)


class HsmTest(unittest.TestCase):
    def setUp(self):
        self.a = FakeArchive(6, online={0, 1})

    def tearDown(self):
        self.a.close()

    def test_state_and_states(self):
        self.assertEqual(hsm.state(self.a.paths[0]), "online")
        self.assertEqual(hsm.state(self.a.paths[2]), "offline")
        self.a.set_state(3, "restored")
        got = hsm.states(self.a.paths)
        self.assertEqual(list(got), self.a.paths)  # the order given
        self.assertEqual(list(got.values()),
                         ["online", "online", "offline", "restored", "offline", "offline"])
        self.assertTrue(hsm.is_readable("restored"))
        self.assertFalse(hsm.is_readable("staging"))

    def test_not_on_reelfs_is_a_clear_error(self):
        plain = os.path.join(self.a.root, "plain")
        open(plain, "wb").close()
        with self.assertRaises(hsm.NotOnReelfsError) as cm:
            hsm.state(plain)
        self.assertIn("not a file or directory under a reelfs mount", str(cm.exception))
        self.assertIn(plain, str(cm.exception))
        self.assertEqual(cm.exception.errno, errno.ENODATA)
        with self.assertRaises(FileNotFoundError):
            hsm.state(os.path.join(self.a.root, "missing"))
        got = hsm.states([plain, self.a.paths[0]], errors="unknown")
        self.assertEqual(list(got.values()), ["unknown", "online"])
        with self.assertRaises(hsm.NotOnReelfsError):
            hsm.states([plain])

    def test_unexpected_value(self):
        os.setxattr(self.a.paths[0], "user.hsm.state", b"frozen")
        with self.assertRaises(hsm.HsmError) as cm:
            hsm.state(self.a.paths[0])
        self.assertIn("frozen", str(cm.exception))

    def test_summary(self):
        doc = {"objects": {"online": 2, "offline": 4}, "bytes": {"online": 64, "offline": 128}}
        os.setxattr(self.a.data_dir, "user.hsm.summary", json.dumps(doc).encode())
        self.assertEqual(reelfs.summary(self.a.data_dir), doc)
        os.setxattr(self.a.data_dir, "user.hsm.summary", b"{not json")
        with self.assertRaises(hsm.HsmError) as cm:
            hsm.summary(self.a.data_dir)
        self.assertIn("not JSON", str(cm.exception))
        with self.assertRaises(hsm.NotOnReelfsError):
            hsm.summary(self.a.root)

    def test_request_stage_and_attributes(self):
        hsm.request_stage(self.a.paths[2])
        self.assertEqual(os.getxattr(self.a.paths[2], "user.hsm.request"), b"stage")
        os.setxattr(self.a.paths[2], "user.s3.etag", b'"abc"')
        attrs = hsm.attributes(self.a.paths[2])
        self.assertEqual(attrs["user.hsm.state"], "offline")
        self.assertEqual(attrs["user.s3.etag"], '"abc"')
        with self.assertRaises(FileNotFoundError):
            hsm.request_stage(os.path.join(self.a.root, "missing"))


class ReadyOrderTest(unittest.TestCase):
    def tearDown(self):
        if getattr(self, "a", None):
            self.a.close()

    def test_all_online_shuffled_reproducibly_and_nothing_requested(self):
        self.a = FakeArchive(40, online=range(40))
        first = list(ReadyOrder(self.a.paths, shuffle=True, seed=3))
        again = list(ReadyOrder(self.a.paths, shuffle=True, seed=3))
        other = list(ReadyOrder(self.a.paths, shuffle=True, seed=4))
        self.assertEqual(sorted(first), list(range(40)))
        self.assertEqual(first, again)
        self.assertNotEqual(first, other)
        self.assertNotEqual(first, sorted(first))
        self.assertEqual(list(ReadyOrder(self.a.paths)), list(range(40)))  # no shuffle: in order
        for p in self.a.paths:
            with self.assertRaises(OSError):
                os.getxattr(p, "user.hsm.request")

    def test_epochs_reshuffle(self):
        self.a = FakeArchive(30, online=range(30))
        order = ReadyOrder(self.a.paths, shuffle=True, seed=0)
        e0, e1 = list(order), list(order)
        self.assertEqual(sorted(e0), sorted(e1))
        self.assertNotEqual(e0, e1)
        order.set_epoch(0)
        self.assertEqual(list(order), e0)

    def _run_ordered(self, stage):
        online = {1, 4, 7, 10, 13}
        self.a = a = FakeArchive(40, online=online)
        rest = [i for i in range(40) if i not in online]
        flip = rest[::-1]  # the library's order: not the index order
        a.start(flip, batch=5)
        order = ReadyOrder(a.paths, stage=stage, shuffle=True, seed=1, **FAST)
        got = []
        released = 0
        not_readable_at_first_sample = None
        for i in order:
            self.assertIn(a.get_state(i), ("online", "restored"), "yielded before readable")
            got.append(i)
            if len(got) == 1:
                not_readable_at_first_sample = sum(s not in ("online", "restored")
                                                   for s in a.states())
            if len(got) == 5 * (released + 1):
                # The 5 online files, then each batch of 5, were all consumed: only now does the
                # library bring the next batch (a batch flips file by file, so a poll may see part
                # of one; never part of the next).
                released += 1
                a.release()
        self.assertEqual(sorted(got), list(range(40)), "every index exactly once")
        self.assertEqual(set(got[:5]), online, "readable files first")
        self.assertEqual(not_readable_at_first_sample, 35)
        for k in range(7):  # then the library's batches, in its order
            self.assertEqual(set(got[5 + 5 * k:10 + 5 * k]), set(flip[5 * k:5 * k + 5]))
        self.assertEqual(order.stats["initially_readable"], 5)
        self.assertEqual(order.stats["yielded"], 40)
        return a, order

    def test_files_staged_up_front_then_yielded_as_they_come(self):
        a, order = self._run_ordered("files")
        self.assertEqual(order.stats["staged"], 35)
        self.assertEqual(len(a.requests_seen), 35)
        self.assertFalse(set(a.requests_seen) & {a.paths[i] for i in (1, 4, 7, 10, 13)},
                         "online files must not be requested")

    def test_directory_staging_is_one_request(self):
        a, order = self._run_ordered("directory")
        self.assertEqual(order.stats["staged"], 1)
        self.assertEqual(a.requests_seen, [a.data_dir])

    def test_path_of_and_indices(self):
        self.a = a = FakeArchive(12, online=range(12))
        order = ReadyOrder(path_of=lambda i: a.paths[i], length=12, indices=range(1, 12, 3))
        self.assertEqual(len(order), 4)
        self.assertEqual(list(order), [1, 4, 7, 10])
        with self.assertRaises(ValueError):
            ReadyOrder(path_of=lambda i: a.paths[i])
        with self.assertRaises(ValueError):
            ReadyOrder(a.paths, stage="tape")

    def test_without_staging_only_waits(self):
        self.a = a = FakeArchive(10, online={0})
        a.start(range(1, 10), batch=9, auto=True)
        it = iter(ReadyOrder(a.paths, stage=False, **FAST))
        self.assertEqual(next(it), 0)
        self.assertEqual(a.requests_seen, [])
        for i in range(1, 10):  # someone else (here: the test) stages them
            os.setxattr(a.paths[i], "user.hsm.request", b"stage")
        self.assertEqual(sorted(it), list(range(1, 10)))

    def test_stage_failure_is_named_after_the_others(self):
        self.a = a = FakeArchive(10, online={0})
        a.stage_fail = {6}
        a.start(range(10), batch=10, auto=True)
        order = ReadyOrder(a.paths, max_rerequests=2, rerequest_interval=0.01, **FAST)
        got = []
        with self.assertRaises(StagingFailed) as cm:
            for i in order:
                got.append(i)
        self.assertEqual(sorted(got), [0, 1, 2, 3, 4, 5, 7, 8, 9])
        self.assertEqual(list(cm.exception.failed), [a.paths[6]])
        self.assertIn("still offline after 3 restore requests", str(cm.exception))
        # File 6 was asked for again exactly twice (the message says 3 requests); another file
        # may be asked for again too when this process is starved between a request and the
        # fake mount's next scan (it still reads offline 10 ms later), which is harmless: a
        # request for a staging file is a no-op. So at least 2, not exactly 2 (it flaked 5 in
        # 30 runs on a loaded machine).
        self.assertGreaterEqual(order.stats["rerequests"], 2)

        order = ReadyOrder(a.paths, max_rerequests=1, rerequest_interval=0.01,
                           on_error="skip", **FAST)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            self.assertEqual(sorted(order), [0, 1, 2, 3, 4, 5, 7, 8, 9])
        self.assertTrue(any("could not be staged" in str(x.message) for x in w))

    def test_timeout_names_the_pending_files(self):
        self.a = a = FakeArchive(6, online={0, 1})
        a.start([], auto=True)  # requests are answered (staging) but nothing ever comes online
        order = ReadyOrder(a.paths, timeout=0.2, **FAST)
        got = []
        with self.assertRaises(StagingTimeout) as cm:
            for i in order:
                got.append(i)
        self.assertEqual(sorted(got), [0, 1])
        self.assertEqual(sorted(cm.exception.pending), sorted(a.paths[2:]))
        self.assertIn("still not readable after 0.2 s", str(cm.exception))
        self.assertIsInstance(cm.exception, TimeoutError)

    def test_not_on_a_mount_fails_at_once(self):
        d = xattr_dir()
        try:
            p = os.path.join(d, "plain")
            open(p, "wb").close()
            with self.assertRaises(hsm.NotOnReelfsError):
                list(ReadyOrder([p]))
        finally:
            os.remove(p)
            os.rmdir(d)


class ShardTest(unittest.TestCase):
    """reelfs.shard.assign over many shapes: the invariants DDP needs, and tape locality."""

    @staticmethod
    def layout(n, tapes, untagged):
        # Cartridges of uneven sizes (key order: contiguous ranges), the last `untagged` indices
        # without a hint.
        cuts = sorted({(k * k * 7 + 3 * k) % max(1, n - untagged) for k in range(1, tapes)})
        def cart(i):
            if i >= n - untagged:
                return None
            return "T%03d" % sum(1 for c in cuts if i >= c)
        return cart

    def check(self, n, ranks, tapes, untagged, drop_last, shuffle, epoch=0):
        cart = self.layout(n, tapes, untagged)
        shares = [shard.assign(range(n), cart, ranks, r, drop_last=drop_last, shuffle=shuffle,
                               seed=11, epoch=epoch) for r in range(ranks)]
        what = f"n={n} ranks={ranks} tapes={tapes} drop_last={drop_last} shuffle={shuffle}"
        per = n // ranks if drop_last else -(-n // ranks)
        self.assertEqual([len(s) for s in shares], [per] * ranks, what)
        own = [i for s in shares for i in s.own]
        self.assertEqual(len(own), len(set(own)), f"{what}: an index on two ranks")
        dropped = shares[0].dropped
        self.assertTrue(all(s.dropped == dropped for s in shares), what)
        self.assertEqual(sorted(own + dropped), list(range(n)), what)
        if drop_last:
            self.assertLess(len(dropped), ranks, what)
            self.assertTrue(all(not s.padding for s in shares), what)
        else:
            self.assertEqual(dropped, [], what)
            for s in shares:
                if s.own:
                    self.assertLessEqual(set(s.padding), set(s.own), f"{what}: foreign padding")
        # Locality: each rank that fills up splits at most the cartridge it was filling.
        self.assertLessEqual(shares[0].split, ranks - 1, what)
        return shares

    def test_invariants_over_many_shapes(self):
        for n in (0, 1, 3, 4, 7, 64, 101, 1000):
            for ranks in (1, 2, 3, 4, 8):
                for tapes in (1, 3, 10):
                    for untagged in (0, n // 5):
                        for drop_last in (False, True):
                            for shuffle in (False, True):
                                self.check(n, ranks, tapes, untagged, drop_last, shuffle)

    def test_fewer_cartridges_touched_than_round_robin(self):
        n, ranks, tapes = 400, 4, 16
        cart = self.layout(n, tapes, 0)
        for by, limit in (("cartridge", tapes + ranks - 1), ("index", None)):
            touched = sum(len({cart(i) for i in shard.assign(range(n), cart, ranks, r,
                                                            by=by).own})
                          for r in range(ranks))
            if limit is not None:
                self.assertLessEqual(touched, limit, "cartridge shards")
                best = touched
            else:
                self.assertGreater(touched, best, "round-robin touches more cartridges")

    def test_deterministic_and_reshuffled_per_epoch(self):
        cart = self.layout(200, 8, 20)
        a = [shard.assign(range(200), cart, 4, r, shuffle=True, seed=5, epoch=1).own
             for r in range(4)]
        b = [shard.assign(range(200), cart, 4, r, shuffle=True, seed=5, epoch=1).own
             for r in range(4)]
        c = [shard.assign(range(200), cart, 4, r, shuffle=True, seed=5, epoch=2).own
             for r in range(4)]
        self.assertEqual(a, b)
        self.assertNotEqual(a, c)
        kw = dict(drop_last=False, shuffle=True, seed=5, by="cartridge")
        self.assertEqual(shard.digest(range(200), cart, 4, epoch=1, **kw),
                         shard.digest(range(200), cart, 4, epoch=1, **kw))
        self.assertNotEqual(shard.digest(range(200), cart, 4, epoch=1, **kw),
                            shard.digest(range(200), lambda i: "X", 4, epoch=1, **kw))

    def test_round_robin_is_distributed_samplers_deal(self):
        got = [shard.assign(range(10), None, 4, r, by="index") for r in range(4)]
        self.assertEqual([s.own for s in got], [[0, 4, 8], [1, 5, 9], [2, 6], [3, 7]])
        self.assertEqual([s.padding for s in got], [[], [], [0], [1]])
        got = [shard.assign(range(10), None, 4, r, by="index", drop_last=True) for r in range(4)]
        self.assertEqual([s.own for s in got], [[0, 4], [1, 5], [2, 6], [3, 7]])
        self.assertEqual(got[0].dropped, [8, 9])

    def test_bad_arguments(self):
        for ranks, rank in ((0, 0), (2, 2), (2, -1), ("2", 0)):
            with self.assertRaises(ValueError):
                shard.assign(range(4), None, ranks, rank)
        with self.assertRaises(ValueError):
            shard.assign(range(4), None, 2, 0, by="tape")

    def test_cartridge_hint(self):
        a = FakeArchive(3)
        try:
            os.setxattr(a.paths[0], "user.hsm.tape", b"RL0001L9")
            self.assertEqual(hsm.cartridge(a.paths[0]), "RL0001L9")
            self.assertIsNone(hsm.cartridge(a.paths[1]))
            with self.assertRaises(FileNotFoundError):
                hsm.cartridge(a.paths[2] + ".gone")
        finally:
            a.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
