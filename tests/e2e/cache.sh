#!/usr/bin/env bash
# e2e (issue 19): the local object cache, `reelfs mount --cache DIR`, against reelfs-gateway's
# archive with the simulated tape library on a fast clock (tape_lib.sh). docs/cache.md.
#
#  - epoch 1: 40 objects of 200 000 bytes and one of 20 MiB, archived and released (offline), read
#    through a --offline=wait mount with --cache: byte-exact (sha256), one recall each;
#  - the gateway releases its copies again (admin release: offline, empty placeholders);
#  - epoch 2, after a remount on the same cache directory: every file byte-exact with zero
#    RestoreObject requests and zero recalls at the gateway (its metrics); user.hsm.state says
#    "cached", st_blocks counts the whole file. Where FUSE passthrough is on (libfuse >= 3.16:
#    scripts/passthrough.sh, which sets REELFS_REQUIRE_PASSTHROUGH=1), every open is answered
#    with the cache's file and no READ reaches the daemon (bytes_read 0);
#  - `reelfs status` calls such an object "cached"; `reelfs stage` leaves the cached objects out
#    (their plan is empty), `stage --force` plans them all;
#  - epoch 3 with --no-passthrough --no-splice-reads: the daemon copies every byte from the
#    cache's checked blocks (hit_bytes), O_DIRECT reads too, still zero recalls;
#  - epoch 3 again with --no-passthrough and 2 MiB pipes (pipe-max-size raised where root may):
#    every READ answered with the cache's file for libfuse to splice (fs.cached_file_*, no block
#    copied: hit_bytes 0), byte-exact, zero recalls;
#  - the side channel fills the cache too: a new cache filled by READ_PATH reads of the released
#    objects, released again, read again by the side channel with zero recalls;
#  - a second mount on the same cache directory is refused, naming the holder;
#  - hot/ (never archived): a cache file corrupted behind the daemon is detected, the read is
#    byte-exact (refetched from the gateway), the mount log says so;
#  - an object replaced at the server (aws s3 cp) reads as the new one through a mount with
#    --metadata-ttl 1s on the same cache (the cache is keyed by ETag);
#  - the daemon SIGKILLed while it fills the cache from a 128 MiB read: the next mount on the
#    same cache reads every file byte-exact;
#  - that file's cache file written behind the daemon while an O_DIRECT reader is half way
#    through it on a spliced-from-the-cache mount: the rest of the read goes the checked way
#    (cached_file_fallbacks 1, the entry dropped), every byte exact;
#  - --cache-size 2MiB with hot/ 3x that: every read byte-exact, the cache directory's data never
#    over the limit;
#  - a cache directory that is not writable refuses the mount with a clear message.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/tape_lib.sh"
source "$(dirname "$0")/tape_more.sh"
command -v aws >/dev/null || skip "aws (AWS CLI) not installed"
if [[ -z "${TMPDIR:-}" && -d /dev/shm && -w /dev/shm ]]; then export TMPDIR=/dev/shm; fi
PYDIR=$(cd "$(dirname "$0")/../../python" && pwd)
e2e_init cache 360
export LC_ALL=C

check_sums() {  # check_sums DIR SUMS_FILE: every file in SUMS_FILE read through DIR, sha256 equal
  (cd "$1" && sha256sum --quiet -c "$2") || fail "checksums differ under $1"
}
cache_data_bytes() { find "$1/data" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }

CACHE=$WORK/cache
N=40
SIZE=200000

step "gateway: $N objects + a 20 MiB one archived and released; hot/ never archived"
tape_config versitygw
tape_count_requests
gen_objects data $N $SIZE d
mkdir -p "$ROOT/data/big"
gen_big_file "$ROOT/data/big/model.bin" $((20 << 20)) >/dev/null
(cd "$ROOT/data" && sha256sum big/model.bin) >>"$WORK/data.sums"
archive_offline data 2 key
gen_objects hot 12 $((512 << 10)) h
start_tape_gateway
[[ $(catalog_states data | grep -c offline) == $((N + 1)) ]] || fail "not all offline: $(catalog_states data)"

step "epoch 1: read through a wait mount with --cache: one recall per object"
MNT1=$WORK/m1
mount_tape data "$MNT1" wait --cache "$CACHE"
P1=$MOUNT_PID
r0=$(restore_requests)
check_sums "$MNT1" "$WORK/data.sums"
recalls1=$(metric archive.recalls_submitted)
echo "   epoch 1: $(($(restore_requests) - r0)) RestoreObject, $recalls1 recalls"
[[ $recalls1 -ge 1 ]] || fail "epoch 1 recalled nothing: were the objects offline?"
state=$(getfattr --absolute-names --only-values -n user.hsm.state "$MNT1/d/00000.bin")
[[ $state == online || $state == restored ]] || fail "epoch 1 state: $state"

step "a second mount on the same cache directory is refused"
mkdir -p "$WORK/m-second"
out=$("$REELFS_BIN" mount data "$WORK/m-second" --endpoint "$ENDPOINT" -f --cache "$CACHE" 2>&1) &&
  fail "a second mount on $CACHE was accepted"
grep -q "in use by another reelfs process (pid $P1)" <<<"$out" || fail "unclear refusal: $out"
echo "   ok: $out"
unmount_and_wait "$MNT1" "$P1"

step "the gateway releases its copies again"
release_bucket data >/dev/null
[[ $(catalog_states data | grep -c offline) == $((N + 1)) ]] || fail "not all offline again"
r1=$(restore_requests)
s1=$(metric archive.recalls_submitted)

step "epoch 2 after a remount on the same cache: byte-exact, zero restores, zero recalls"
MNT2=$WORK/m2
mount_tape data "$MNT2" wait --cache "$CACHE"
P2=$MOUNT_PID
expect "user.hsm.state of an offline, cached object" \
  "$(getfattr --absolute-names --only-values -n user.hsm.state "$MNT2/d/00007.bin")" cached
expect "st_blocks of it" "$(stat -c %b "$MNT2/d/00007.bin")" $(((SIZE + 511) / 512))
check_sums "$MNT2" "$WORK/data.sums"
expect "RestoreObject requests in epoch 2" "$(($(restore_requests) - r1))" 0
expect "recalls in epoch 2" "$(($(metric archive.recalls_submitted) - s1))" 0
expect "complete objects in the cache" "$(metrics_of 'm["cache"]["complete_objects"]' "$MNT2")" $((N + 1))
if grep -q 'passthrough: on' "$WORK/mount-m2.log"; then
  # FUSE passthrough: the kernel read every file from the cache's copy; no READ reached us.
  expect "opens answered with a backing file" \
    "$(metrics_of 'm["fs"]["backing_opens"] >= '$((N + 1)) "$MNT2")" True
  expect "bytes the daemon served to READs" "$(metrics_of 'm["fs"]["bytes_read"]' "$MNT2")" 0
  echo "   (passthrough: on)"
else
  line=$(grep -o 'passthrough: off.*' "$WORK/mount-m2.log" | head -n1)
  [[ ${REELFS_REQUIRE_PASSTHROUGH:-0} != 1 ]] ||
    fail "passthrough required (REELFS_REQUIRE_PASSTHROUGH=1) but the mount said: ${line:-nothing}"
  echo "   ($line)"
fi

step "reelfs status and stage see what the mount's cache holds"
out=$("$REELFS_BIN" status "$MNT2/d/00003.bin")
[[ $out == cached$'\t'* ]] || fail "status of an offline object held whole by the cache: $out"
grep -q "^cached on this host: 1 whole objects" <<<"$out" || fail "status total: $out"
echo "   ok: status: ${out%%$'\n'*}"
out=$("$REELFS_BIN" stage --dry-run "$MNT2/d" 2>&1)
grep -q "^cached: $N objects" <<<"$out" || fail "stage does not leave the cached objects out: $out"
grep -q "^plan: 0 of 0 objects" <<<"$out" || fail "stage plans requests for cached objects: $out"
echo "   ok: stage: $(head -n 1 <<<"$out")"
out=$("$REELFS_BIN" stage --dry-run --force "$MNT2/d" 2>&1)
grep -q "^plan: $N of $N objects" <<<"$out" || fail "stage --force: $out"
echo "   ok: stage --force: $(grep '^plan' <<<"$out")"
unmount_and_wait "$MNT2" "$P2"

step "epoch 3 copied by the daemon (--no-passthrough --no-splice-reads): byte-exact, zero recalls"
MNT2B=$WORK/m2b
mount_tape data "$MNT2B" wait --cache "$CACHE" --no-passthrough --no-splice-reads
P2B=$MOUNT_PID
check_sums "$MNT2B" "$WORK/data.sums"
expect "O_DIRECT read of the 20 MiB file" "$(probe_read "$MNT2B/big/model.bin" direct)" \
  "OK $(grep ' big/model.bin$' "$WORK/data.sums" | cut -d' ' -f1)"
hit_bytes=$(metrics_of 'm["cache"]["hit_bytes"]' "$MNT2B")
[[ $hit_bytes -ge $((N * SIZE + (20 << 20))) ]] || fail "cache hit_bytes $hit_bytes too low"
echo "   ok: $hit_bytes bytes served from the cache by the daemon"
expect "backing files with --no-passthrough" "$(metrics_of 'm["fs"]["backing_opens"]' "$MNT2B")" 0
expect "recalls in epoch 3" "$(($(metric archive.recalls_submitted) - s1))" 0
unmount_and_wait "$MNT2B" "$P2B"

# Cached files spliced from the cache's file need pipes that hold a 1 MiB READ (2 MiB): raised
# for the rest of the test where root may write the sysctl (put back at exit).
pipe_max=$(cat /proc/sys/fs/pipe-max-size)
PIPES=0
if ((pipe_max >= 2097152)); then
  PIPES=1
elif echo 2097152 >/proc/sys/fs/pipe-max-size 2>/dev/null; then
  EXIT_HOOKS+=("echo $pipe_max >/proc/sys/fs/pipe-max-size")
  PIPES=1
fi
if ((PIPES)); then
  step "epoch 3 spliced from the cache's file (--no-passthrough, 2 MiB pipes): byte-exact, zero recalls"
  MNT2C=$WORK/m2c
  mount_tape data "$MNT2C" wait --cache "$CACHE" --no-passthrough
  P2C=$MOUNT_PID
  grep -q "cached files are spliced from the cache's file" "$WORK/mount-m2c.log" ||
    fail "the mount does not splice cached files: $(grep -o 'cached files .*' "$WORK/mount-m2c.log")"
  check_sums "$MNT2C" "$WORK/data.sums"
  expect "O_DIRECT read of the 20 MiB file" "$(probe_read "$MNT2C/big/model.bin" direct)" \
    "OK $(grep ' big/model.bin$' "$WORK/data.sums" | cut -d' ' -f1)"
  opens=$(metrics_of 'm["fs"]["cached_file_opens"]' "$MNT2C")
  ((opens >= N + 2)) || fail "cached_file_opens $opens: not every open read from the cache's file"
  bytes=$(metrics_of 'm["fs"]["cached_file_bytes"]' "$MNT2C")
  ((bytes >= N * SIZE + (40 << 20))) || fail "cached_file_bytes $bytes too low"
  expect "bytes the daemon copied from the cache's blocks" "$(metrics_of 'm["cache"]["hit_bytes"]' "$MNT2C")" 0
  expect "handles whose cache file changed" "$(metrics_of 'm["fs"]["cached_file_fallbacks"]' "$MNT2C")" 0
  expect "recalls in the spliced epoch 3" "$(($(metric archive.recalls_submitted) - s1))" 0
  echo "   ok: $opens opens, $bytes bytes spliced from the cache's files"
  unmount_and_wait "$MNT2C" "$P2C"
else
  echo "   (skipped: pipe-max-size $pipe_max and not writable: cached files are copied here)"
fi

# Reads the files of data.sums through the side channel (reelfs.gpu.read_many into bytearrays:
# READ_PATH, the 20 MiB file as one direct GET into a sink), each checked against its sha256.
side_channel_epoch() {  # side_channel_epoch MOUNT
  PYTHONPATH="$PYDIR${PYTHONPATH:+:$PYTHONPATH}" "$PY" - "$1" "$WORK/data.sums" <<'PY'
import hashlib, os, sys
from reelfs import gpu
mnt, sums = sys.argv[1], sys.argv[2]
want = dict(reversed(line.split()) for line in open(sums))
names = sorted(want)
reqs = [(os.path.join(mnt, p), bytearray(os.path.getsize(os.path.join(mnt, p)))) for p in names]
for p, (path, out), (n, tier) in zip(names, reqs, gpu.read_many(reqs)):
    if tier != "host" or n != len(out) or hashlib.sha256(out).hexdigest() != want[p]:
        sys.exit(f"{p}: {n} bytes of {len(out)}, tier {tier}, sha256 differs or short")
print(f"   {len(names)} files byte-exact through the side channel")
PY
}

step "the side channel fills the cache: epoch 1 by READ_PATH, released, epoch 2 with zero recalls"
release_bucket data >/dev/null
SCC=$WORK/cache-side-channel
MNT3=$WORK/m3
mount_tape data "$MNT3" wait --cache "$SCC"
[[ $(metrics_of 'm["side_channel"] is None' "$MNT3") == False ]] ||
  fail "the mount runs no side channel: $(grep -i 'side channel' "$WORK/mount-m3.log" | head -n 2)"
P3=$MOUNT_PID
side_channel_epoch "$MNT3" || fail "side channel, epoch 1"
expect "complete objects after epoch 1 by the side channel" \
  "$(metrics_of 'm["cache"]["complete_objects"]' "$MNT3")" $((N + 1))
unmount_and_wait "$MNT3" "$P3"
release_bucket data >/dev/null
r3=$(restore_requests)
s3=$(metric archive.recalls_submitted)
mount_tape data "$MNT3" wait --cache "$SCC" --no-passthrough
P3=$MOUNT_PID
side_channel_epoch "$MNT3" || fail "side channel, epoch 2"
expect "RestoreObject requests in the side channel's epoch 2" "$(($(restore_requests) - r3))" 0
expect "recalls in the side channel's epoch 2" "$(($(metric archive.recalls_submitted) - s3))" 0
unmount_and_wait "$MNT3" "$P3"

step "hot/: a cache file corrupted behind the daemon is refetched, never served"
HOT=$WORK/hot-cache
MNT3=$WORK/m3
(cd "$ROOT/hot" && sha256sum h/*) >"$WORK/hot.sums"
mount_tape hot "$MNT3" wait --cache "$HOT"
P3=$MOUNT_PID
check_sums "$MNT3" "$WORK/hot.sums"
unmount_and_wait "$MNT3" "$P3"
id=$(sqlite3 "$HOT/index.sqlite" "SELECT id FROM objects WHERE key = 'h/00003.bin'")
[[ -n $id && -f $HOT/data/$id ]] || fail "no cache file for h/00003.bin (id '$id')"
printf '\xff\xfe' | dd of="$HOT/data/$id" bs=1 seek=300000 conv=notrunc status=none
mount_tape hot "$MNT3" wait --cache "$HOT"
P3=$MOUNT_PID
check_sums "$MNT3" "$WORK/hot.sums"
expect "dropped cache entries" "$(metrics_of 'm["cache"]["dropped_objects"]' "$MNT3")" 1
unmount_and_wait "$MNT3" "$P3"
grep -q "dropping the cached copy of 'h/00003.bin'" "$WORK/mount-m3.log" ||
  fail "the mount log does not name the corrupt entry"

step "an object replaced at the server is read anew once the mount's metadata expires"
MNT5=$WORK/m5
mount_tape hot "$MNT5" wait --cache "$HOT" --metadata-ttl 1s
P5=$MOUNT_PID
cat "$MNT5/h/00005.bin" >/dev/null  # cached (it already was)
head -c 300000 /dev/urandom >"$WORK/new-00005.bin"
new_sum=$(sha256sum <"$WORK/new-00005.bin" | cut -d' ' -f1)
aws --endpoint-url "$ENDPOINT" s3 cp --only-show-errors "$WORK/new-00005.bin" s3://hot/h/00005.bin ||
  fail "aws s3 cp (replace h/00005.bin)"
sleep 2
expect "the replaced object, read through the cache's mount" \
  "$(sha256sum <"$MNT5/h/00005.bin" | cut -d' ' -f1)" "$new_sum"
unmount_and_wait "$MNT5" "$P5"
sed -i "s|^[0-9a-f]*  h/00005.bin$|$new_sum  h/00005.bin|" "$WORK/hot.sums"

step "the daemon SIGKILLed while it fills the cache: the next mount reads every byte right"
head -c $((128 << 20)) /dev/urandom >"$WORK/big-hot.bin"
aws --endpoint-url "$ENDPOINT" s3 cp --only-show-errors "$WORK/big-hot.bin" s3://hot/h/big.bin ||
  fail "aws s3 cp h/big.bin"
echo "$(sha256sum <"$WORK/big-hot.bin" | cut -d' ' -f1)  h/big.bin" >>"$WORK/hot.sums"
MNT6=$WORK/m6
mount_tape hot "$MNT6" wait --cache "$HOT"
P6=$MOUNT_PID
(dd if="$MNT6/h/big.bin" of=/dev/null bs=1M 2>/dev/null || true) &
reader=$!
sleep 0.15
kill -KILL "$P6"
wait "$P6" 2>/dev/null || true
fusermount3 -uz "$MNT6" 2>/dev/null || umount -l "$MNT6" 2>/dev/null || true
wait "$reader" 2>/dev/null || true
echo "   killed with $(du -sb --apparent-size "$HOT/data" | cut -f1) bytes in the cache's files"
mount_tape hot "$MNT6" wait --cache "$HOT"
P6=$MOUNT_PID
check_sums "$MNT6" "$WORK/hot.sums"
echo "   ok: every file byte-exact after the kill"
unmount_and_wait "$MNT6" "$P6"

if ((PIPES)); then
  step "a cache file written behind the daemon under an open spliced handle: the rest is checked"
  MNT7=$WORK/m7
  mount_tape hot "$MNT7" wait --cache "$HOT" --no-passthrough
  P7=$MOUNT_PID
  id=$(sqlite3 "$HOT/index.sqlite" "SELECT id FROM objects WHERE key = 'h/big.bin'")
  [[ -n $id && -f $HOT/data/$id ]] || fail "no cache file for h/big.bin (id '$id')"
  # O_DIRECT: every read() is a READ of its own, so the change lands between two of them.
  PYTHONPATH="$TAPE_MORE_DIR${PYTHONPATH:+:$PYTHONPATH}" "$PY" - "$MNT7/h/big.bin" \
    "$HOT/data/$id" "$(grep ' h/big.bin$' "$WORK/hot.sums" | cut -d' ' -f1)" <<'PY' ||
import hashlib, mmap, os, sys
path, cache_file, want = sys.argv[1:4]
buf = mmap.mmap(-1, 1 << 20)
h = hashlib.sha256()
fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
done = 0
while True:
    n = os.readv(fd, [buf])
    if n == 0:
        break
    h.update(buf[:n])
    done += n
    if done == 32 << 20:  # a quarter in: two bytes of the cache's copy at 96 MiB change
        with open(cache_file, "r+b") as f:
            f.seek(96 << 20)
            old = f.read(2)
            f.seek(96 << 20)
            f.write(bytes(b ^ 0xFF for b in old))
os.close(fd)
if h.hexdigest() != want:
    sys.exit(f"sha256 after the change differs ({done} bytes read)")
print(f"   ok: {done} bytes byte-exact with the cache's file changed a quarter in")
PY
    fail "reading through a changed cache file"
  expect "handles whose cache file changed" "$(metrics_of 'm["fs"]["cached_file_fallbacks"]' "$MNT7")" 1
  expect "dropped cache entries" "$(metrics_of 'm["cache"]["dropped_objects"]' "$MNT7")" 1
  unmount_and_wait "$MNT7" "$P7"
  grep -q "no longer the one verified at open" "$WORK/mount-m7.log" ||
    fail "the mount log does not say the cache's file changed"
fi

step "--cache-size 2MiB under a dataset 3x its size: byte-exact, the limit holds"
aws --endpoint-url "$ENDPOINT" s3 rm --only-show-errors s3://hot/h/big.bin || fail "aws s3 rm"
sed -i '/  h\/big.bin$/d' "$WORK/hot.sums"
SMALL=$WORK/small-cache
MNT4=$WORK/m4
mount_tape hot "$MNT4" wait --cache "$SMALL" --cache-size 2MiB
P4=$MOUNT_PID
check_sums "$MNT4" "$WORK/hot.sums"
check_sums "$MNT4" "$WORK/hot.sums"
used=$(cache_data_bytes "$SMALL")
[[ $used -le $((2 << 20)) ]] || fail "cache holds $used bytes over its 2 MiB limit"
echo "   ok: $used bytes in the cache after reading 6 MiB twice"
unmount_and_wait "$MNT4" "$P4"

step "a cache directory that is not writable refuses the mount"
if [[ $(id -u) -eq 0 ]]; then
  # root ignores modes: a read-only bind of the directory instead
  RO=$WORK/ro-cache
  mkdir -p "$RO"
  mount --bind -o ro "$RO" "$RO" 2>/dev/null && mount -o remount,bind,ro "$RO" 2>/dev/null ||
    { echo "   (no read-only bind mount here; step skipped)"; RO=""; }
else
  RO=$WORK/ro-cache
  mkdir -p "$RO" && chmod 0500 "$RO"
fi
if [[ -n $RO ]]; then
  mkdir -p "$WORK/m5"
  out=$("$REELFS_BIN" mount hot "$WORK/m5" --endpoint "$ENDPOINT" -f --cache "$RO" 2>&1) &&
    fail "a read-only cache directory was accepted"
  [[ $(id -u) -eq 0 ]] && umount "$RO"
  grep -q "not writable" <<<"$out" || fail "unclear refusal: $out"
  echo "   ok: $out"
fi
echo "PASS"
