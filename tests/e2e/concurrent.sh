#!/usr/bin/env bash
# e2e: 8 concurrent readers. Proves: 8 processes reading 8 different files at once, 8 processes
# reading the same file at once (buffered and O_DIRECT, so the page cache cannot hide a wrong
# answer), and 8 threads sharing one file handle with interleaved preads all get the source's
# bytes: per-handle prefetchers, the shared memory budget and the async reply path under load.
source "$(dirname "$0")/lib.sh"
e2e_init concurrent 200
declare -A want

# Against Ceph RGW (E2E_SERVER=rgw) every byte is first uploaded by the AWS CLI into a memstore
# OSD on the same 2 CPUs (about 80 MiB/s): the files shrink to 16 and 64 MiB, still several
# 8 MiB parts each, so every check below keeps its meaning.
many_mib=40 shared_mib=128
[[ ${E2E_SERVER:-gateway} == rgw ]] && many_mib=16 shared_mib=64
step "generating 8 x $many_mib MiB files and one $shared_mib MiB file"
mkdir -p "$ROOT/conc/many"
for i in $(seq 0 7); do want[f$i]=$(gen_file "$ROOT/conc/many/file-$i.bin" $((many_mib * 1048576 + i * 777)) $((100 + i))); done
want[shared]=$(gen_file "$ROOT/conc/shared.bin" $((shared_mib * 1048576 + 99)) 200)
start_gateway
mount_bucket conc
MAIN_PID=$MOUNT_PID

check_jobs() {  # check_jobs WHAT: every "$WORK/out.N" must equal its want
  local what=$1 i
  for i in $(seq 0 7); do
    [[ "$(cat "$WORK/out.$i")" == "$(cat "$WORK/want.$i")" ]] ||
      fail "$what: reader $i got $(cat "$WORK/out.$i"), want $(cat "$WORK/want.$i")"
  done
}

step "8 readers, 8 different files"
pids=()
for i in $(seq 0 7); do
  echo "${want[f$i]}" >"$WORK/want.$i"
  (sha256sum <"$MNT/many/file-$i.bin" | cut -d' ' -f1 >"$WORK/out.$i") & pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "a reader failed"; done
check_jobs "different files"

step "8 readers, the same file, O_DIRECT (dd iflag=direct, different block sizes)"
pids=()
for i in $(seq 0 7); do
  echo "${want[shared]}" >"$WORK/want.$i"
  bs=$(( (1 + i % 4) * 262144 ))
  (dd if="$MNT/shared.bin" iflag=direct bs=$bs status=none | sha256sum | cut -d' ' -f1 >"$WORK/out.$i") & pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "a reader failed"; done
check_jobs "same file, O_DIRECT"

step "8 readers, the same file, buffered"
pids=()
for i in $(seq 0 7); do
  (sha256sum <"$MNT/shared.bin" | cut -d' ' -f1 >"$WORK/out.$i") & pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "a reader failed"; done
check_jobs "same file, buffered"

step "8 threads, one O_DIRECT handle, interleaved 1 MiB preads"
"$PY" - "$ROOT/conc/shared.bin" "$MNT/shared.bin" <<'PY' || fail "threads on one handle"
import mmap, os, sys, threading
src, mnt = sys.argv[1:]
size = os.path.getsize(src)
fd = os.open(mnt, os.O_RDONLY | os.O_DIRECT)
a = os.open(src, os.O_RDONLY)
errors = []
def worker(t):
    buf = mmap.mmap(-1, 1 << 20)
    for k in range(t, (size + (1 << 20) - 1) >> 20, 8):
        off = k << 20
        n = os.preadv(fd, [buf], off)
        if buf[:n] != os.pread(a, 1 << 20, off):
            errors.append(f"thread {t}: block {k} differs ({n} bytes)")
            return
ts = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
[t.start() for t in ts]; [t.join() for t in ts]
if errors: sys.exit("; ".join(errors))
print("  8 threads x 16 blocks identical")
PY

unmount_and_wait "$MNT" "$MAIN_PID"
echo "PASS"
