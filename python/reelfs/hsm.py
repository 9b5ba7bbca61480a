"""Tape state of files under a reelfs mount, read and requested through extended attributes.

A reelfs mount (``reelfs mount``) publishes, for every file, the state of the S3 object behind it
(docs/tape.md, docs/semantics.md "Offline objects"):

=========  ================================================================
online     readable: not in an archive class
offline    on tape only: a read waits, fails with EAGAIN or EACCES (--offline)
staging    a restore is running (the server says so, or this host asked)
restored   an archived object with a readable restored copy
cached     not readable at the server (offline or staging), but the mount's local cache
           (``reelfs mount --cache``) holds every byte: readable here, no recall
unknown    not probed yet, or the server's answer could not be parsed
=========  ================================================================

This module is a thin, dependency-free layer over :func:`os.getxattr` / :func:`os.setxattr`:

>>> from reelfs import hsm
>>> hsm.state("/mnt/data/train/0001.jpg")            # doctest: +SKIP
'offline'
>>> hsm.request_stage("/mnt/data/train")             # recursive on a directory  # doctest: +SKIP
>>> hsm.summary("/mnt/data/train")["objects"]        # doctest: +SKIP
{'online': 120, 'staging': 1880}

Errors are :class:`OSError` subclasses that say what went wrong in words: a path that is not on
a reelfs mount raises :class:`NotOnReelfsError`, a missing file raises :class:`FileNotFoundError`
as :func:`open` would.

Thread-safety: stateless functions; safe from any thread or process.
"""

import errno
import json
import os

__all__ = [
    "STATES",
    "READABLE",
    "HsmError",
    "NotOnReelfsError",
    "cartridge",
    "is_readable",
    "state",
    "states",
    "summary",
    "request_stage",
    "attributes",
]

STATES = ("online", "offline", "staging", "restored", "cached", "unknown")
READABLE = frozenset(("online", "restored", "cached"))

STATE_XATTR = "user.hsm.state"
SUMMARY_XATTR = "user.hsm.summary"
REQUEST_XATTR = "user.hsm.request"
TAPE_XATTR = "user.hsm.tape"

# ENOTSUP and EOPNOTSUPP are the same number on Linux; both are listed for other platforms.
_NO_XATTR = {errno.ENODATA, errno.ENOTSUP, errno.EOPNOTSUPP}


class HsmError(OSError):
    """A tape-state attribute could not be read or written (the message says which and why)."""


class NotOnReelfsError(HsmError):
    """The path exists but carries no reelfs tape attributes: it is not under a reelfs mount."""


def is_readable(value):
    """True for the states whose bytes can be read without a recall (online, restored, cached)."""
    return value in READABLE


def _wrap(err, path, what):
    """Turns an OSError from the xattr calls into one whose message names the path and the cause."""
    path = os.fsdecode(path)
    if err.errno in _NO_XATTR:
        return NotOnReelfsError(
            err.errno,
            f"{path} has no {what} attribute: not a file or directory under a reelfs mount "
            f"({os.strerror(err.errno)})",
            path,
        )
    if err.errno == errno.ENOENT:
        return FileNotFoundError(err.errno, f"{path}: no such file or directory", path)
    return HsmError(err.errno, f"{path}: cannot access {what}: {os.strerror(err.errno)}", path)


def _get(path, name):
    try:
        return os.getxattr(path, name)
    except OSError as err:
        raise _wrap(err, path, name) from None


def state(path):
    """The tape state of the object behind ``path``: one of :data:`STATES`.

    Raises :class:`NotOnReelfsError` when ``path`` is not under a reelfs mount,
    :class:`FileNotFoundError` when it does not exist, :class:`HsmError` for anything else (an
    unexpected value included).
    """
    value = _get(path, STATE_XATTR).decode("utf-8", "replace").strip()
    if value not in STATES:
        raise HsmError(errno.EPROTO, f"{os.fsdecode(path)}: unexpected {STATE_XATTR} {value!r}",
                       os.fsdecode(path))
    return value


def cartridge(path):
    """The cartridge holding the object behind ``path`` (``user.hsm.tape``), or None.

    None when the object has no tape hint: never archived, or a gateway that gives no hints. Raises
    :class:`FileNotFoundError` for a missing path and :class:`HsmError` for other errors; a path
    outside a reelfs mount also answers None (no attribute), so check :func:`state` for that.
    """
    try:
        value = os.getxattr(path, TAPE_XATTR)
    except OSError as err:
        if err.errno in _NO_XATTR:
            return None
        raise _wrap(err, path, TAPE_XATTR) from None
    return value.decode("utf-8", "replace").strip() or None


def states(paths, errors="raise"):
    """``{path: state}`` for every path, in the order given.

    ``errors="raise"`` (default) raises the first error as :func:`state` does; ``errors="unknown"``
    reports a path whose state cannot be read as ``"unknown"`` instead (useful while polling a
    large set, where one vanished file should not stop the rest).
    """
    if errors not in ("raise", "unknown"):
        raise ValueError(f"errors must be 'raise' or 'unknown', not {errors!r}")
    out = {}
    for p in paths:
        try:
            out[p] = state(p)
        except OSError:
            if errors == "raise":
                raise
            out[p] = "unknown"
    return out


def summary(directory):
    """Objects and bytes per state for the subtree under ``directory`` (the mount computes it).

    Returns the parsed ``user.hsm.summary`` JSON, ``{"objects": {state: n}, "bytes": {state: n}}``.
    """
    raw = _get(directory, SUMMARY_XATTR)
    try:
        doc = json.loads(raw)
    except ValueError as err:
        raise HsmError(errno.EPROTO, f"{os.fsdecode(directory)}: {SUMMARY_XATTR} is not JSON "
                       f"({err})", os.fsdecode(directory)) from None
    if not isinstance(doc, dict) or "objects" not in doc:
        raise HsmError(errno.EPROTO, f"{os.fsdecode(directory)}: {SUMMARY_XATTR} lacks 'objects'",
                       os.fsdecode(directory))
    return doc


def request_stage(path):
    """Asks the mount to restore ``path`` (a file, or every offline file under a directory).

    Returns at once; the restore runs in the background (poll :func:`state`). Staging an object
    that is already online or staging is harmless.
    """
    try:
        os.setxattr(path, REQUEST_XATTR, b"stage")
    except OSError as err:
        raise _wrap(err, path, REQUEST_XATTR) from None


def attributes(path):
    """Every ``user.s3.*``, ``user.hsm.*`` and ``user.reelfs.*`` attribute of ``path`` as text."""
    try:
        names = os.listxattr(path)
    except OSError as err:
        raise _wrap(err, path, "extended") from None
    out = {}
    for name in names:
        if name.startswith(("user.s3.", "user.hsm.", "user.reelfs.")):
            try:
                out[name] = os.getxattr(path, name).decode("utf-8", "replace")
            except OSError:
                continue  # vanished between the list and the read, or write-only
    return out
