"""Imported by the Python that tape_more.sh (probe_read) and tape_modes.sh (the 50 readers) run:
a whole-file read through a page-aligned buffer, which an O_DIRECT descriptor needs (a buffered
one reads the same way). Stateless; safe from any thread.
"""
import mmap
import os


def hash_aligned(fd, h):
    """Reads fd to its end in 1 MiB readv requests into an anonymous (page-aligned) mmap, feeding
    every byte to h."""
    buf = mmap.mmap(-1, 1 << 20)
    while True:
        n = os.readv(fd, [buf])
        if n == 0:
            return
        h.update(buf[:n])
