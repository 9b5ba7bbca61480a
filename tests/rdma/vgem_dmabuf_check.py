#!/usr/bin/env python3
"""A side-channel client's dma-buf on a `reelfs mount --rdma` (run by in_vm_mount.sh inside the
Soft-RoCE VM): the buffer ladder's daemon end (docs/gpu.md) with a real dma-buf.

The dma-buf is a dumb buffer of vgem (the kernel's virtual GEM driver, loaded by rxe_vm.sh),
exported with PRIME: the one exporter Debian 12's kernel has without a GPU. rxe0 cannot register
a dma-buf (ibv_reg_dmabuf_mr: EOPNOTSUPP), so the daemon must log that step down and land the
READ over the next rung, the dma-buf's CPU mapping. Checked: REGISTER_BUFFER succeeds; the
mount's log has the EOPNOTSUPP ladder line naming rxe0, once; the mapping's rung is taken as the
log says (the NIC registered the mapping and the DONE says rdma, or one more line says it could
not, vgem's mapping being PFN-mapped, and the DONE says http: the daemon copied); the READ's
bytes, and a short READ's copied over its first page, read back through our own mapping of the
dma-buf (DMA_BUF_IOCTL_SYNC around it), equal the source file's.

Usage: vgem_dmabuf_check.py MNT SRC_FILE MOUNT_LOG     (SRC_FILE is at the mount's root)
Exit 0: passed; 1: failed (the reason printed).
"""
import fcntl
import glob
import mmap
import os
import struct
import sys
import time

from reelfs import side_channel as sc

# <drm/drm.h>, <drm/drm_mode.h>, <linux/dma-buf.h>: _IOWR('d', 0xB2, struct drm_mode_create_dumb),
# _IOWR('d', 0x2d, struct drm_prime_handle), _IOW('b', 0, struct dma_buf_sync).
DRM_IOCTL_MODE_CREATE_DUMB = 0xC02064B2
DRM_IOCTL_PRIME_HANDLE_TO_FD = 0xC00C642D
DMA_BUF_IOCTL_SYNC = 0x40086200
DMA_BUF_SYNC_READ, DMA_BUF_SYNC_START, DMA_BUF_SYNC_END = 1, 0, 4


def vgem_card():
    for card in sorted(glob.glob("/dev/dri/card*")):
        name = os.path.basename(card)
        try:
            with open(f"/sys/class/drm/{name}/device/uevent") as f:
                if "vgem" in f.read():
                    return card
        except OSError:
            pass
        if os.path.realpath(f"/sys/class/drm/{name}/device/driver").endswith("/vgem"):
            return card
    return None


def export_dumb(card_fd, size):
    """A dumb buffer of `size` bytes (1024 x size/4096 at 32 bpp) as a read-write dma-buf fd."""
    arg = bytearray(struct.pack("<IIIIIIQ", size // 4096, 1024, 32, 0, 0, 0, 0))
    fcntl.ioctl(card_fd, DRM_IOCTL_MODE_CREATE_DUMB, arg)
    _, _, _, _, handle, _, got = struct.unpack("<IIIIIIQ", arg)
    prime = bytearray(struct.pack("<IIi", handle, os.O_CLOEXEC | os.O_RDWR, -1))
    fcntl.ioctl(card_fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, prime)
    return struct.unpack("<IIi", prime)[2], got


def main(mnt, src, log):
    card = vgem_card()
    if card is None:
        print("vgem_dmabuf: FAILED: no vgem card under /dev/dri (rxe_vm.sh loads vgem)")
        return 1
    want = open(src, "rb").read()
    card_fd = os.open(card, os.O_RDWR | os.O_CLOEXEC)
    dmabuf, size = export_dumb(card_fd, (len(want) + (1 << 20)) // (1 << 20) * (1 << 20))
    with open(f"/proc/self/fdinfo/{dmabuf}") as f:
        exporter = [l.split()[1] for l in f if l.startswith("exp_name:")]
    print(f"vgem_dmabuf: {card}: a {size}-byte dma-buf of {exporter}")
    with sc.Client.for_path(mnt) as c:
        if not c.server_capabilities & sc.CAP_DMABUF:
            print("vgem_dmabuf: FAILED: the daemon does not offer dmabuf")
            return 1
        buf = c.register_dmabuf(dmabuf, size)
        fid = c.open_path(os.path.basename(src))
        n, path = c.read(fid, 0, len(want), buf)
        # A short READ (under 1 MiB) goes through the prefetcher in chunks, each copied into
        # the mapping: into the first page, so the check below sees it and the big one's rest.
        tail = min(3000, len(want) - 5)
        n_small, _ = c.read(fid, 5, tail, buf, 0)
        c.close_file(fid)
        c.release_buffer(buf)
    view = mmap.mmap(dmabuf, size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
    sync = DMA_BUF_SYNC_READ
    fcntl.ioctl(dmabuf, DMA_BUF_IOCTL_SYNC, struct.pack("<Q", DMA_BUF_SYNC_START | sync))
    got = bytes(view[:n])
    fcntl.ioctl(dmabuf, DMA_BUF_IOCTL_SYNC, struct.pack("<Q", DMA_BUF_SYNC_END | sync))
    view.close()
    os.close(dmabuf)
    os.close(card_fd)
    print(f"vgem_dmabuf: READ of {n} bytes, path {path}")
    time.sleep(0.2)  # the log line is written before the DONE; let the file catch up
    lines = [l.rstrip() for l in open(log, errors="replace") if "dma-buf of" in l]
    for l in lines:
        print(f"vgem_dmabuf: log: {l}")
    ok = True
    if n != len(want) or n_small != tail or got != want[5:5 + tail] + want[tail:]:
        print("vgem_dmabuf: FAILED: the dma-buf's bytes differ from the source")
        ok = False
    down = [l for l in lines if "ibv_reg_dmabuf_mr on rxe0" in l and
            "stepping down to its CPU mapping" in l]
    if len(down) != 1:
        print("vgem_dmabuf: FAILED: want one ladder line for ibv_reg_dmabuf_mr on rxe0")
        ok = False
    copied = [l for l in lines if "CPU mapping with the data channel" in l and
              "its READs are copied by the daemon" in l]
    if (len(copied), path) not in ((1, "http"), (0, "rdma")):
        print(f"vgem_dmabuf: FAILED: the DONE says {path}, the log has {len(copied)} line(s) "
              "saying the mapping could not be registered (want 1 and http, or 0 and rdma)")
        ok = False
    if ok:
        print(f"vgem_dmabuf: OK: rxe0 refused the dma-buf, the READ landed over the CPU "
              f"mapping ({path}), byte-exact")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
