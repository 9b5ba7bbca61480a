#!/usr/bin/env bash
# e2e: the side channel (docs/protocols/side-channel.md) from Python (reelfs.side_channel,
# reelfs.gpu, reelfs.torch) on a real mount; side_channel_check.py does the checking against the
# source tree. Proves: read_into a registered memfd (and a bytearray) is byte-exact at 1 000
# random ranges of a 96 MiB object (1 MiB and larger READs as direct GETs); 10 000 small files in
# one pipelined read_many batch (one READ_PATH each), every byte checked; OPEN_PATH and READ_PATH
# by hand with the errno of each bad path; an fd opened outside the mount is refused with EPERM;
# a memfd or a file passed as a dma-buf is EINVAL, a CUDA IPC handle EOPNOTSUPP, the connection
# unharmed; numpy and CPU torch targets; GpuFileDataset / GpuFileIterable in DataLoaders; a client SIGKILLed mid-batch while another
# keeps reading byte-exact, and nothing written into the dead client's memfd once the daemon's
# user.reelfs.metrics shows it disconnected. Skips (77) when the mount announces no side channel
# or runs no server for it (no side_channel counters in user.reelfs.metrics); a server that runs
# and does not answer fails. The numpy and torch parts skip alone without them.
source "$(dirname "$0")/lib.sh"
e2e_init side_channel 330
HERE=$(cd "$(dirname "$0")" && pwd)
export PYTHONPATH="$HERE/../../python${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1
CHECK="$HERE/side_channel_check.py"
# The numpy/torch parts need a python that has them (Debian's python3-torch is /usr/bin/python3).
NPY=$(find_python numpy) || NPY=""
TPY=$(find_python torch numpy) || TPY=""

step "generating a 96 MiB object and 10 000 files of 1-4 KiB"
mkdir -p "$ROOT/sidech/small"
gen_big_file "$ROOT/sidech/big.bin" $((96 * 1024 * 1024 + 4321)) >/dev/null
"$PY" - "$ROOT/sidech/small" <<'PY'
import os, random, sys
root = sys.argv[1]
rng = random.Random(13)
for i in range(10000):
    d = os.path.join(root, f"d{i % 20:02d}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"f{i:05d}"), "wb") as f:
        f.write(rng.randbytes(rng.randrange(1024, 4097)))
PY
echo "not in the mount" >"$WORK/outside.txt"
start_gateway
mount_bucket sidech
MAIN_PID=$MOUNT_PID

step "the mount announces a side channel that answers HELLO"
rc=0; "$PY" "$CHECK" probe "$MNT" || rc=$?
[[ $rc -eq 77 ]] && exit 77
[[ $rc -eq 0 ]] || fail "probe ($rc)"

step "1 000 random ranges of big.bin with read_into"
"$PY" "$CHECK" ranges "$ROOT/sidech/big.bin" "$MNT/big.bin" || fail "ranges"

step "10 000 small files in one read_many batch"
"$PY" "$CHECK" small "$ROOT/sidech/small" "$MNT/small" || fail "read_many"

step "OPEN_PATH and READ_PATH: files by path, and bad paths refused"
"$PY" "$CHECK" paths "$ROOT/sidech/small" "$MNT/small" || fail "paths"

step "a file opened outside the mount is refused"
"$PY" "$CHECK" eperm "$MNT" "$WORK/outside.txt" || fail "EPERM"

step "buffers that are not what they claim are refused, and cost only their request"
"$PY" "$CHECK" buffers "$MNT" "$MNT/big.bin" || fail "buffers"
# The client sees EOPNOTSUPP; the mount's log says why (no usable GPU, or built without CUDA).
line=$(grep -m1 "CUDA IPC buffer.*answering EOPNOTSUPP" "$WORK/mount.log") ||
  fail "no log line with the reason the CUDA IPC buffer was refused"
echo "  mount log: ${line#*side channel: }"

step "numpy and CPU torch targets"
if [[ -n "$NPY" ]]; then
  "${TPY:-$NPY}" "$CHECK" arrays "$ROOT/sidech/big.bin" "$MNT/big.bin" || fail "arrays"
else
  echo "  (skipped: no python3 with numpy)"
fi

step "GpuFileDataset and GpuFileIterable in DataLoaders"
if [[ -n "$TPY" ]]; then
  "$TPY" "$CHECK" dataset "$ROOT/sidech/small" "$MNT/small" || fail "dataset"
else
  echo "  (skipped: no python3 with torch and numpy)"
fi

step "a client SIGKILLed mid-batch while another keeps reading"
"$PY" "$CHECK" kill "$ROOT/sidech/small" "$MNT/small" || fail "kill"

unmount_and_wait "$MNT" "$MAIN_PID"
echo "PASS"
