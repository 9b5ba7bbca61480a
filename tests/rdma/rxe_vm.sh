#!/usr/bin/env bash
# rxe_vm.sh SCRIPT: runs SCRIPT as root inside a throw-away qemu VM that has a Soft-RoCE device,
# with this machine's root filesystem visible read-only, and exits with SCRIPT's exit code.
#
# Why a VM: the build machines' kernel has no RDMA and cannot load modules. qemu's software
# emulation (no KVM needed) boots Debian's own kernel, which ships rdma_rxe; the VM sees the host
# root over 9p, so binaries built here run inside unchanged. Adapted from the recipe in
# an earlier rxe-vm script; what differs: no package installs (scripts/setup.sh does that; a
# missing tool is a skip), a per-run shared folder and a locked cache so runs can overlap, the
# exit code travels in a file instead of being scraped from the console, and "could not boot"
# (skip, 77) is told apart from "SCRIPT hung" (failure, 1).
#
# Inside: rxe0 on dummy0 with 192.0.2.1/24 (TEST-NET-1; the VM has no NIC at all, -nic none, so
# nothing leaves it), 16 hugepages reserved, SCRIPT run with cwd = the caller's cwd, every
# REELFS_* variable of the caller exported, plus REELFS_RDMA_IP and REELFS_RDMA_DEVICE. /tmp and
# /run are tmpfs inside the VM (with the host's /tmp entries that the cwd, SCRIPT and REELFS_*
# paths live in bound back, read-only); $REELFS_VM_SHARED is a writable folder that survives the VM (for
# logs: the caller finds it under $REELFS_RXE_VM_CACHE/runs until the next run cleans it).
#
# Environment: REELFS_RXE_VM_CACHE (default /var/tmp/reelfs-rxe-vm: kernel and initrd),
# RXE_VM_TIMEOUT (seconds for the whole VM, default 480), RXE_VM_MEM (MiB, default 1536).
#
# Exit: SCRIPT's code; 77 with the reason when the VM cannot be had (no qemu, no busybox-static,
# no kernel image, no boot within the timeout); 1 when SCRIPT started but did not finish in time.
set -euo pipefail

skip() { echo "skip: rxe_vm: $*"; exit 77; }

[ $# -eq 1 ] && [ -f "$1" ] || { echo "usage: $0 SCRIPT" >&2; exit 2; }
script=$(readlink -f "$1")
self=$(readlink -f "$0")
cache=${REELFS_RXE_VM_CACHE:-/var/tmp/reelfs-rxe-vm}
timeout_s=${RXE_VM_TIMEOUT:-480}
vm_ip=192.0.2.1

# Tools on this side (the VM uses the host's own ip/rdma/ibverbs tools through the shared root).
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 not installed (qemu-system-x86)"
busybox=$(command -v busybox || true)
[ -n "$busybox" ] || skip "busybox not installed (busybox-static)"
# The initrd has no shared libraries: only a static busybox runs there.
if ldd "$busybox" >/dev/null 2>&1; then skip "$busybox is dynamically linked (install busybox-static)"; fi
for t in cpio modprobe depmod rdma ip; do
  command -v "$t" >/dev/null || skip "$t not installed (cpio, kmod, iproute2)"
done
[ "$(id -u)" -eq 0 ] || skip "needs root: the VM's 9p view of / must read every file"

mkdir -p "$cache/runs"
exec 9>"$cache/lock"

# --- Kernel: Debian's current linux-image, unpacked (never installed on this machine). --------
prepare_kernel() {
  [ -f "$cache/kernel/ok" ] && return 0
  local pkg
  pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
        awk '/Depends: linux-image-[0-9]/{print $2; exit}')
  [ -n "$pkg" ] || { echo "no linux-image-amd64 in the apt lists (run apt-get update)"; return 1; }
  rm -rf "$cache/kernel" && mkdir -p "$cache/kernel"
  # apt's sandbox user cannot write into a root-owned cache: download as ourselves, quietly.
  (cd "$cache/kernel" && apt-get download -o APT::Sandbox::User=root "$pkg" >/dev/null 2>&1) ||
    { echo "apt-get download $pkg failed (offline?)"; return 1; }
  dpkg-deb -x "$cache/kernel"/*.deb "$cache/kernel/root" && rm -f "$cache/kernel"/*.deb
  echo "$pkg" > "$cache/kernel/ok"
}

# --- initrd: static busybox, the modules rxe needs over 9p, and /init. Rebuilt when this script
# or the kernel changes. ---------------------------------------------------------------------
prepare_initrd() {
  local kver=$1 stamp
  stamp=$(cat "$self" "$cache/kernel/ok" | sha256sum | cut -c1-16)
  [ -f "$cache/initrd-$stamp.gz" ] && { echo "$cache/initrd-$stamp.gz"; return 0; }
  local dir
  dir=$(mktemp -d "$cache/initrd.XXXXXX")
  mkdir -p "$dir"/{bin,proc,sys,dev,host,mods}
  cp "$busybox" "$dir/bin/busybox"
  for a in sh mount insmod mkdir chroot cat echo poweroff sync; do ln -s busybox "$dir/bin/$a"; done
  depmod -b "$cache/kernel/root" "$kver"
  # virtio transport + 9p for the shared root; dummy for the netdev; crc32_generic for rxe's ICRC;
  # rdma_rxe; rdma_ucm and ib_uverbs for rdma_cm and verbs from user space; fuse for
  # `reelfs mount` (devtmpfs then makes /dev/fuse); vgem, the one dma-buf exporter the kernel has
  # without a GPU (vgem_dmabuf_check.py). --show-depends lists each module's dependencies first,
  # so insmod in this order works (built-ins are skipped).
  local n=0 m p
  for m in virtio_pci 9pnet_virtio 9p dummy crc32_generic rdma_rxe rdma_ucm ib_uverbs fuse vgem; do
    modprobe -d "$cache/kernel/root" -S "$kver" --show-depends "$m" | awk '$1=="insmod"{print $2}'
  done | awk '!seen[$0]++' | while read -r p; do
    n=$((n + 1))
    cp "$p" "$dir/mods/$(printf %02d "$n")_$(basename "$p")"
  done
  cat > "$dir/init" <<'INIT'
#!/bin/sh
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for f in /mods/*; do insmod "$f" || echo "rxe_vm: insmod $f failed"; done
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000 hostroot /host ||
  echo "rxe_vm: cannot mount the host root"
mount -t proc proc /host/proc; mount -t sysfs sys /host/sys; mount -t devtmpfs dev /host/dev
mount -t tmpfs tmp /host/tmp; mount -t tmpfs run /host/run
mkdir -p /host/tmp/vm-shared
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 shared /host/tmp/vm-shared
# The tmpfs hides the host's /tmp; a checkout or build there (a CI clone) comes back read-only at
# its own path, one top-level /tmp entry per line of tmp-binds.
mkdir -p /host/run/hosttmp
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000 hosttmp /host/run/hosttmp ||
  echo "rxe_vm: cannot mount the host /tmp"
while read -r d; do
  mkdir -p "/host/tmp/$d" && mount -o bind "/host/run/hosttmp/$d" "/host/tmp/$d" ||
    echo "rxe_vm: cannot bind /tmp/$d"
done < /host/tmp/vm-shared/tmp-binds
chroot /host /bin/sh -c '
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
export REELFS_VM_SHARED=/tmp/vm-shared
. /tmp/vm-shared/env.sh
echo started > /tmp/vm-shared/started
ip link set lo up && ip link add dummy0 type dummy 2>/dev/null; ip link set dummy0 up &&
  ip addr add "$REELFS_RDMA_IP/24" dev dummy0 &&
  rdma link add "$REELFS_RDMA_DEVICE" type rxe netdev dummy0 ||
  echo "rxe_vm: bringing up $REELFS_RDMA_DEVICE failed"
echo 16 > /proc/sys/vm/nr_hugepages
cd "$REELFS_VM_CWD" 2>/dev/null || cd /
sh /tmp/vm-shared/run.sh
echo $? > /tmp/vm-shared/exit-code'
sync
poweroff -f
INIT
  chmod +x "$dir/init"
  (cd "$dir" && find . | cpio -o -H newc 2>/dev/null | gzip -1 > "$cache/initrd-$stamp.gz.tmp")
  mv "$cache/initrd-$stamp.gz.tmp" "$cache/initrd-$stamp.gz"
  rm -rf "$dir"
  echo "$cache/initrd-$stamp.gz"
}

t0=$(date +%s)
flock 9
why=$(prepare_kernel) || skip "no kernel image: $why"
kver=$(ls "$cache/kernel/root/lib/modules" | head -1)
vmlinuz=$cache/kernel/root/boot/vmlinuz-$kver
[ -f "$vmlinuz" ] || skip "no kernel image at $vmlinuz"
initrd=$(prepare_initrd "$kver")
flock -u 9
t_prep=$(date +%s)

# Per-run shared folder: the script, its environment, and what comes back.
find "$cache/runs" -mindepth 1 -maxdepth 1 -mmin +120 -exec rm -rf {} + 2>/dev/null || true
shared=$(mktemp -d "$cache/runs/run.XXXXXX")
cp "$script" "$shared/run.sh"
{
  # awk, not grep: no REELFS_* variable at all is fine (grep's exit 1 would end the script).
  env | awk -F= '/^REELFS_[A-Za-z0-9_]*=/ && $1 !~ /^REELFS_(RDMA_IP|RDMA_DEVICE|VM_CWD)$/' |
    while IFS='=' read -r k v; do printf 'export %s=%q\n' "$k" "$v"; done
  printf 'export REELFS_RDMA_IP=%s REELFS_RDMA_DEVICE=rxe0 REELFS_VM_CWD=%q\n' "$vm_ip" "$PWD"
} > "$shared/env.sh"
# Top-level /tmp entries the run needs (the caller's cwd, the script, REELFS_* paths): the VM's
# /tmp is its own tmpfs, so these are bound in from the host's.
{
  printf '%s\n' "$PWD" "$script"
  env | awk -F= '/^REELFS_[A-Za-z0-9_]*=\//{print substr($0, index($0, "=") + 1)}'
} | awk -F/ '$2 == "tmp" && $3 != "" {print $3}' | sort -u > "$shared/tmp-binds"

echo "rxe_vm: kernel $kver, initrd $(basename "$initrd"), timeout ${timeout_s}s, run dir $shared"
set +e
timeout --kill-after=10 "$timeout_s" qemu-system-x86_64 -accel tcg,thread=multi -cpu max \
  -m "${RXE_VM_MEM:-1536}" -smp 2 -nographic -no-reboot -nic none -monitor none \
  -kernel "$vmlinuz" -initrd "$initrd" -append "console=ttyS0 quiet panic=-1" \
  -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
  -virtfs local,path="$shared",mount_tag=shared,security_model=none \
  -virtfs local,path=/tmp,mount_tag=hosttmp,security_model=none,readonly=on,multidevs=remap \
  </dev/null
qemu_rc=$?
set -e
t_end=$(date +%s)
echo "rxe_vm: prepare $((t_prep - t0)) s, VM $((t_end - t_prep)) s (qemu exit $qemu_rc)"

if [ -f "$shared/exit-code" ]; then
  rc=$(cat "$shared/exit-code")
  echo "rxe_vm: script exit $rc"
  exit "$rc"
fi
if [ ! -f "$shared/started" ]; then
  skip "the VM did not reach the script (qemu exit $qemu_rc; timeout ${timeout_s}s): cannot boot here"
fi
echo "rxe_vm: FAIL: the script started but did not finish within ${timeout_s}s (qemu exit $qemu_rc)"
exit 1
