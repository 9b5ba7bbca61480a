#!/usr/bin/env bash
# e2e: `reelfs mount --direct-io` (docs/semantics.md "Direct I/O reads"). Proves: a buffered
# reader (no O_DIRECT of its own) gets every byte right (sha256 against the source); each of its
# read() calls reaches the daemon at its own size (64 KiB reads arrive as 64 KiB READs, not the
# kernel's 1 MiB readahead); a second read of the unchanged file reaches the daemon again (no page
# cache kept), where a mount without the flag serves it from the page cache; MAP_PRIVATE mmap reads
# the right bytes; MAP_SHARED mmap works where the init log says so and fails with ENODEV where it
# says it cannot (libfuse < 3.16 or Linux < 6.6), never with wrong bytes; a 1 MiB read into a
# buffer 16 bytes past a page is one READ or two as the init log says (one needs libfuse 3.17 and
# fs.fuse.max_pages_limit above 256, raised here for the test where root may), byte-exact either
# way; O_DIRECT opens and a small file read whole are right too. REELFS_REQUIRE_PASSTHROUGH=1 (the
# libfuse 3.17 configuration, scripts/passthrough.sh) requires the shared mapping to work and,
# where the limit could be raised, the one READ.
source "$(dirname "$0")/lib.sh"
e2e_init direct_io 150
command -v curl >/dev/null || skip "curl not installed"
SIZE=$((24 * 1024 * 1024 + 4321))

step "generating a $SIZE-byte file and a small one"
mkdir -p "$ROOT/dio"
want=$(gen_file "$ROOT/dio/big.bin" "$SIZE" 11)
want_small=$(gen_file "$ROOT/dio/small.bin" 70000 12)
start_gateway

read_requests() {  # the daemon's FUSE READs answered so far (its Prometheus exposition)
  curl -s "$METRICS_URL" | awk 'index($0, "reelfs_fuse_requests_total{op=\"read\"}") == 1 { s += $NF }
    END { printf "%d\n", s + 0 }'
}
read_in_64k() {  # sha256 of FILE read with 64 KiB read() calls, buffered (no O_DIRECT)
  "$PY" - "$1" <<'PY'
import hashlib, os, sys
h, fd = hashlib.sha256(), os.open(sys.argv[1], os.O_RDONLY)
while (b := os.read(fd, 65536)):
    h.update(b)
print(h.hexdigest())
PY
}

# More pages per request than 256, so a 1 MiB read into an unaligned buffer can be one READ
# (docs/semantics.md "Direct I/O reads"); put back at exit. Mounts of other tests meanwhile ask
# for 256 (their max_write), so they see no change.
limit_file=/proc/sys/fs/fuse/max_pages_limit
limit_raised=0
if [[ -w $limit_file ]] && old_limit=$(cat "$limit_file") && ((old_limit < 512)) &&
  echo 512 >"$limit_file" 2>/dev/null; then
  EXIT_HOOKS+=("echo $old_limit >$limit_file")
  limit_raised=1
fi

step "--direct-io: a buffered reader's 64 KiB reads reach the daemon as 64 KiB READs, byte-exact"
mount_bucket dio --direct-io --metrics-listen 127.0.0.1:0
METRICS_URL=$(grep -o 'http://127\.0\.0\.1:[0-9]*/metrics' "$WORK/mount.log" | head -1)
[[ -n $METRICS_URL ]] || fail "no metrics address in the log"
grep -q -- "--direct-io: reads skip the page cache" "$WORK/mount.log" ||
  fail "the init log does not say reads skip the page cache"
r0=$(read_requests)
b0=$(metrics_of 'm["fs"]["bytes_read"]')
[[ "$(read_in_64k "$MNT/big.bin")" == "$want" ]] || fail "64 KiB reads through --direct-io differ"
r1=$(read_requests)
b1=$(metrics_of 'm["fs"]["bytes_read"]')
echo "  $((r1 - r0)) READs for $((SIZE / 65536 + 1)) reads of 64 KiB; $((b1 - b0)) bytes served"
# Page-cache reads would come as the kernel's readahead: ~SIZE / 1 MiB READs, not one per read().
((r1 - r0 >= SIZE / 65536)) || fail "$((r1 - r0)) READs: the reads did not reach the daemon one by one"
((b1 - b0 >= SIZE)) || fail "the daemon served $((b1 - b0)) of $SIZE bytes"

step "the unchanged file read again: every byte comes from the daemon again (no page cache)"
got=$(sha256sum <"$MNT/big.bin" | cut -d' ' -f1)
[[ "$got" == "$want" ]] || fail "second read differs"
b2=$(metrics_of 'm["fs"]["bytes_read"]')
((b2 - b1 >= SIZE)) || fail "the second read reached the daemon for only $((b2 - b1)) of $SIZE bytes"

step "1 MiB reads into a buffer 16 bytes past a page: one READ each or two, as the init log says"
one_read=0
grep -q "not page-aligned is one READ" "$WORK/mount.log" && one_read=1
if [[ ${REELFS_REQUIRE_PASSTHROUGH:-0} == 1 ]] && ((limit_raised && !one_read)); then
  fail "libfuse 3.17 with fs.fuse.max_pages_limit 512: an unaligned 1 MiB read should be one READ"
fi
r0=$(read_requests)
"$PY" - "$MNT/big.bin" "$want" <<'PY' || fail "unaligned 1 MiB reads differ"
import hashlib, mmap, os, sys
buf = mmap.mmap(-1, 2 << 20)  # page-aligned; the reads land 16 bytes into it
view = memoryview(buf)[16:16 + (1 << 20)]
h = hashlib.sha256()
with open(sys.argv[1], "rb", buffering=0) as f:
    while (n := f.readinto(view)):
        h.update(view[:n])
if h.hexdigest() != sys.argv[2]: sys.exit("sha256 differs")
PY
r1=$(read_requests)
reads=$(((SIZE + (1 << 20) - 1) >> 20))
echo "  $((r1 - r0)) READs for $reads reads of 1 MiB (the log: $( ((one_read)) && echo one || echo two) each)"
if ((one_read)); then
  ((r1 - r0 <= reads + 2)) || fail "$((r1 - r0)) READs where each read should have been one"
else
  ((r1 - r0 >= 2 * reads - 2)) || fail "$((r1 - r0)) READs: the log said each read is two"
fi

step "mmap: MAP_PRIVATE byte-exact; MAP_SHARED as the init log says"
shared_ok=0
grep -q "MAP_SHARED mmap works" "$WORK/mount.log" && shared_ok=1
if [[ ${REELFS_REQUIRE_PASSTHROUGH:-0} == 1 ]] && ((shared_ok == 0)); then
  fail "libfuse 3.17 on this kernel: MAP_SHARED mmap of --direct-io files should be allowed"
fi
"$PY" - "$MNT/big.bin" "$ROOT/dio/big.bin" "$shared_ok" <<'PY' || fail "mmap check failed"
import errno, mmap, os, sys
path, src, shared_ok = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
want = open(src, "rb").read()
with open(path, "rb") as f:
    m = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ)
    if m[:] != want: sys.exit("MAP_PRIVATE bytes differ")
    m.close()
    try:
        m = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
    except OSError as e:
        if shared_ok or e.errno != errno.ENODEV: sys.exit(f"MAP_SHARED: {e}")
        print("  MAP_SHARED refused with ENODEV, as the log said")
    else:
        if not shared_ok: sys.exit("MAP_SHARED worked where the log said it would fail")
        if m[:] != want: sys.exit("MAP_SHARED bytes differ")
        print("  MAP_SHARED byte-exact")
PY

step "O_DIRECT and a small file read whole"
got=$(dd if="$MNT/big.bin" iflag=direct bs=1M status=none | sha256sum | cut -d' ' -f1)
[[ "$got" == "$want" ]] || fail "O_DIRECT read differs"
[[ "$(sha256sum <"$MNT/small.bin" | cut -d' ' -f1)" == "$want_small" ]] || fail "small file differs"
unmount_and_wait "$MNT" "$MOUNT_PID"

step "without --direct-io the same second read is the page cache's (the control)"
mount_bucket dio
sha256sum <"$MNT/big.bin" >/dev/null
c1=$(metrics_of 'm["fs"]["bytes_read"]')
[[ "$(sha256sum <"$MNT/big.bin" | cut -d' ' -f1)" == "$want" ]] || fail "control read differs"
c2=$(metrics_of 'm["fs"]["bytes_read"]')
echo "  second read without the flag: $((c2 - c1)) bytes from the daemon"
((c2 - c1 < SIZE / 2)) || fail "without --direct-io the second read still reached the daemon"
unmount_and_wait "$MNT" "$MOUNT_PID"
echo "PASS"
