#!/usr/bin/env bash
# e2e: random access. Proves: 1 000 preads at random offsets and lengths (1 B .. 2 MiB, some
# crossing part boundaries, some at or past EOF) return exactly the source's bytes, so the
# prefetcher's cancellation on random jumps and its seek tolerance never serve stale or misplaced
# data; O_DIRECT preads at aligned random offsets into an aligned buffer do too; and a sequential
# read after all that is still correct.
source "$(dirname "$0")/lib.sh"
e2e_init randread 200
SIZE=$((256 * 1024 * 1024 + 4321))

step "generating a $SIZE-byte file"
mkdir -p "$ROOT/rand"
want=$(gen_file "$ROOT/rand/data.bin" "$SIZE" 11)
start_gateway
mount_bucket rand
MAIN_PID=$MOUNT_PID

step "1 000 random-offset preads compared byte for byte (buffered)"
"$PY" - "$ROOT/rand/data.bin" "$MNT/data.bin" <<'PY' || fail "random preads"
import os, random, sys
src, mnt = sys.argv[1:]
size = os.path.getsize(src)
assert os.path.getsize(mnt) == size
rng = random.Random(1000)
a, b = os.open(src, os.O_RDONLY), os.open(mnt, os.O_RDONLY)
part = 8 << 20
for i in range(1000):
    kind = i % 5
    if kind == 0:   # straddle a part boundary
        off = max(0, rng.randrange(1, size // part + 1) * part - rng.randrange(1, 4096))
    elif kind == 1:  # near or past EOF
        off = size - rng.randrange(0, 70000) + rng.randrange(0, 2) * rng.randrange(0, 5000)
    else:
        off = rng.randrange(0, size)
    n = rng.choice([1, 17, 4096, 65536, 131072 + 3, 1 << 20, 2 << 20])
    x, y = os.pread(a, n, off), os.pread(b, n, off)
    if x != y:
        sys.exit(f"read {i}: offset {off} length {n}: source {len(x)} bytes, mount {len(y)} bytes, differ")
    # a short forward skip sometimes, so seek tolerance is exercised as well as cancellation
    if rng.random() < 0.2:
        off2 = off + len(y) + rng.randrange(0, 1 << 20)
        if os.pread(a, 65536, off2) != os.pread(b, 65536, off2):
            sys.exit(f"read {i}: forward skip to {off2} differs")
print("  1000 reads identical")
PY

step "O_DIRECT preads at aligned random offsets (aligned mmap buffer)"
"$PY" - "$ROOT/rand/data.bin" "$MNT/data.bin" <<'PY' || fail "O_DIRECT preads"
import mmap, os, random, sys
src, mnt = sys.argv[1:]
size = os.path.getsize(src)
try:
    fd = os.open(mnt, os.O_RDONLY | os.O_DIRECT)
except OSError as e:
    sys.exit(f"open O_DIRECT on the mount: {e}")
a = os.open(src, os.O_RDONLY)
rng = random.Random(7)
buf = mmap.mmap(-1, 4 << 20)  # page aligned
for i in range(200):
    n = rng.choice([4096, 65536, 1 << 20, 4 << 20])
    off = rng.randrange(0, size // 4096) * 4096
    got = os.preadv(fd, [memoryview(buf)[:n]], off)
    want = os.pread(a, n, off)
    if got != len(want) or buf[:got] != want:
        sys.exit(f"O_DIRECT read {i}: offset {off} length {n}: got {got} bytes, want {len(want)}")
print("  200 O_DIRECT reads identical")
PY

step "sequential read afterwards: sha256 of the whole file (buffered, then dd iflag=direct)"
[[ "$(sha256sum <"$MNT/data.bin" | cut -d' ' -f1)" == "$want" ]] || fail "sequential sha256"
[[ "$(dd if="$MNT/data.bin" iflag=direct bs=4M status=none | sha256sum | cut -d' ' -f1)" == "$want" ]] ||
  fail "O_DIRECT sequential sha256"

unmount_and_wait "$MNT" "$MAIN_PID"
echo "PASS"
