#!/usr/bin/env bash
# The GPU checks of issue 13, as one script for a machine with an NVIDIA GPU (an H200 when one is
# lent), under 6 minutes. Everything it measures goes to stdout and to $OUT/gpu_check.txt (OUT
# defaults to build/gpu-check); where a GPU was available, that file goes into bench/RESULTS.md.
#
#   tests/gpu/gpu_check.sh                  # BUILD_DIR=build, PYTHON=python3 (the one with torch)
#
# 1. the probe (build/cuda/reelfs-gpu-probe --json: driver, per-device DMA_BUF_SUPPORTED,
#    GPU_DIRECT_RDMA_*, HOST_REGISTER_SUPPORTED, open vs proprietary module, nvidia_peermem);
# 2. cudaHostRegister cost for 1, 8 and 32 GiB, 4 KiB pages against MADV_HUGEPAGE;
# 3. pageable vs pinned vs registered-memfd H2D GB/s at 4, 64 and 256 MiB;
# 4. a dma-buf export of a cudaMalloc range (cuMemGetHandleForAddressRange);
# 5. with the reelfs binaries runnable and /dev/fuse: a loopback reelfs-gateway on tmpfs with 1 and
#    4 GiB objects, curl's rate, and reelfs.gpu.read_into a CUDA tensor through a real mount's side
#    channel, with a checksum computed on the GPU equal to the source's; then a CUDA tensor handed
#    to the daemon as a dma-buf and as a CUDA IPC handle, with what it answered and why.
# Exit 77 (skipped) without a CUDA device visible to torch; 1 when a byte read into GPU memory is
# wrong; 0 otherwise (a part that cannot run here says why and the rest go on).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
BUILD_DIR=${BUILD_DIR:-build}
PYTHON=${PYTHON:-python3}
OUT=${OUT:-$BUILD_DIR/gpu-check}
HERE=tests/gpu
mkdir -p "$OUT"
report=$OUT/gpu_check.txt
: >"$report"
say() { echo "$*" | tee -a "$report"; }
run() { "$@" 2>&1 | tee -a "$report"; return "${PIPESTATUS[0]}"; }

rc=0; "$PYTHON" "$HERE/gpu_check.py" available >"$OUT/available.txt" 2>&1 || rc=$?
if [[ $rc -ne 0 ]]; then
  cat "$OUT/available.txt"
  echo "gpu_check: no CUDA device visible to $PYTHON; skipped"
  exit 77
fi
say "# reelfs GPU check, $(date -u +%FT%TZ), $(hostname)"
say "## device"; run cat "$OUT/available.txt"
command -v nvidia-smi >/dev/null && run nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader

say "## 1. probe"
probe=$BUILD_DIR/cuda/reelfs-gpu-probe
if [[ -x $probe ]] && ! ldd "$probe" 2>/dev/null | grep -q "not found"; then
  run "$probe" --json || say "(reelfs-gpu-probe exit $?)"
else
  say "(reelfs-gpu-probe not built or missing libraries here: $(ldd "$probe" 2>&1 | grep 'not found' | head -3 | tr '\n' ' '))"
fi
grep -qs '^nvidia_peermem ' /proc/modules && say "nvidia_peermem: loaded" || say "nvidia_peermem: not loaded"
[[ -r /proc/driver/nvidia/version ]] && run head -1 /proc/driver/nvidia/version

say "## 2. cudaHostRegister, 4 KiB pages vs THP"
run timeout 150 "$PYTHON" "$HERE/gpu_check.py" host-register 1 8 32 || say "(host-register exit $?)"

say "## 3. H2D GB/s"
run timeout 60 "$PYTHON" "$HERE/gpu_check.py" h2d 4 64 256 || say "(h2d exit $?)"

say "## 4. dma-buf export"
run timeout 30 "$PYTHON" "$HERE/gpu_check.py" dmabuf 64 || say "(dmabuf exit $?)"

say "## 5. read_into a CUDA tensor through a real mount"
gw=$BUILD_DIR/gateway/reelfs-gateway
reelfs=$BUILD_DIR/cli/reelfs
why=""
for b in "$gw" "$reelfs"; do
  [[ -x $b ]] || why="$why $b is not built;"
  [[ -x $b ]] && ldd "$b" 2>/dev/null | grep -q "not found" &&
    why="$why $b lacks $(ldd "$b" | grep 'not found' | awk '{print $1}' | tr '\n' ' ');"
done
[[ -e /dev/fuse ]] || why="$why no /dev/fuse;"
command -v fusermount3 >/dev/null || why="$why no fusermount3;"
if [[ -n $why ]]; then
  say "(skipped:$why)"
  echo "gpu_check: done (part 5 skipped), report in $report"
  exit 0
fi
work=$(mktemp -d /dev/shm/reelfs-gpu-check.XXXXXX)
gw_pid=""
cleanup() {
  grep -qs " $work/mnt fuse" /proc/mounts && { fusermount3 -u "$work/mnt" || fusermount3 -uz "$work/mnt"; }
  [[ -n $gw_pid ]] && kill "$gw_pid" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
export AWS_ACCESS_KEY_ID=gpucheck AWS_SECRET_ACCESS_KEY=gpuchecksecret AWS_REGION=us-east-1
mkdir -p "$work/root/data" "$work/mnt"
for g in 1 4; do head -c $((g << 30)) /dev/urandom >"$work/root/data/obj-${g}g.bin"; done
( trap '' PIPE; exec "$gw" --root "$work/root" --listen 127.0.0.1:0 --port-file "$work/port" \
    --access-key "$AWS_ACCESS_KEY_ID" --secret-key "$AWS_SECRET_ACCESS_KEY" --log-level warn \
    >"$OUT/gateway.log" 2>&1 ) &
gw_pid=$!
for _ in $(seq 600); do [[ -s $work/port ]] && break; sleep 0.1; done
[[ -s $work/port ]] || { say "(gateway did not start: $(tail -3 "$OUT/gateway.log"))"; exit 0; }
endpoint="http://127.0.0.1:$(cat "$work/port")"
"$reelfs" mount data "$work/mnt" --endpoint "$endpoint" --verbose --log-file "$OUT/reelfs.log" \
  2>&1 | tee -a "$report" || { say "(mount failed)"; exit 0; }
bad=0
for g in 1 4; do
  url=$(PYTHONPATH=bench/fuse "$PYTHON" bench/fuse/bench.py urls "$endpoint" data "obj-${g}g.bin" 2>/dev/null)
  if [[ -n $url ]] && command -v curl >/dev/null; then
    t0=$(date +%s.%N); curl -sS -f -o /dev/null "$url"; t1=$(date +%s.%N)
    say "{\"check\": \"curl\", \"gib\": $g, \"gb_s\": $(awk -v a="$t0" -v b="$t1" -v n=$((g << 30)) 'BEGIN { printf "%.2f", n / (b - a) / 1e9 }')}"
  fi
  run timeout 120 "$PYTHON" "$HERE/gpu_check.py" read-into "$work/mnt/obj-${g}g.bin" \
    "$work/root/data/obj-${g}g.bin" || { bad=1; say "(read-into ${g} GiB: wrong bytes or failed)"; }
done
# GPU memory handed to the daemon as a dma-buf and as a CUDA IPC handle: the driver calls, the
# daemon's answer, and the reason its log gives (this mount has no --rdma).
run timeout 60 "$PYTHON" "$HERE/gpu_check.py" register "$work/mnt/obj-1g.bin" ||
  say "(register: exit $?)"
run grep -E "dma-buf of|CUDA IPC buffer" "$OUT/reelfs.log"
run "$PYTHON" -c "import os, sys; print(os.getxattr(sys.argv[1], 'user.reelfs.metrics').decode())" "$work/mnt"
echo
echo "gpu_check: done, report in $report"
exit "$bad"
