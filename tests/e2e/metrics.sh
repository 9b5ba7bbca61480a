#!/usr/bin/env bash
# e2e (issue 16): the mount daemon's Prometheus exposition, `reelfs mount --metrics-listen`.
# Proves: GET /metrics on the address the log names answers what promtool (Prometheus's own
# linter, tests/tools/promtool) accepts with no lint; reading a file through the mount moves the
# FUSE request counters and latency histograms, the bytes read and the S3 client's bytes by the
# file's size, and its GET is counted as the direct receiver's; an error (a missing name) counts as a lookup error; a writable mount counts the
# bytes written; a port already in use refuses the mount with a clear message, as does an
# address that is not HOST:PORT. The file read is checked byte for byte.
source "$(dirname "$0")/lib.sh"
e2e_init metrics 150
PROMTOOL=${REELFS_PROMTOOL:-$(cd "$(dirname "$0")/.." && pwd)/tools/promtool}
[[ -x $PROMTOOL ]] || skip "promtool not found at $PROMTOOL (scripts/setup.sh extracts it)"
command -v curl >/dev/null || skip "curl not installed"

mkdir -p "$ROOT/met"
sha=$(gen_file "$ROOT/met/data.bin" $((3 * 1024 * 1024 + 17)) 7)
start_gateway

scrape() {  # scrape FILE: GET /metrics from the mount, checked by promtool
  local code
  code=$(curl -s -o "$1" -w '%{http_code}' "$METRICS_URL")
  [[ $code == 200 ]] || fail "GET $METRICS_URL: $code"
  "$PROMTOOL" check metrics <"$1" >"$1.lint" 2>&1 || fail "promtool: $(cat "$1.lint")"
}
value() {  # value FILE SAMPLE-PREFIX: the sum of the matching samples
  awk -v p="$2" 'index($0, p) == 1 { s += $NF } END { printf "%d\n", s + 0 }' "$1"
}

step "--metrics-listen 127.0.0.1:0: the log names the port; promtool accepts the exposition"
mount_bucket met --metrics-listen 127.0.0.1:0
METRICS_URL=$(grep -o 'http://127\.0\.0\.1:[0-9]*/metrics' "$WORK/mount.log" | head -1)
[[ -n $METRICS_URL ]] || fail "no 'metrics: serving' line in the log: $(tail -5 "$WORK/mount.log")"
scrape "$WORK/m0"
for family in reelfs_fuse_requests_total reelfs_fuse_request_duration_seconds \
    reelfs_fs_read_bytes_total reelfs_s3_requests_total reelfs_s3_received_bytes_total \
    reelfs_s3_direct_gets_total reelfs_s3_direct_fallbacks_total \
    reelfs_prefetch_memory_limit_bytes reelfs_restore_waiters reelfs_fuse_requests_in_flight; do
  grep -q "^# TYPE $family " "$WORK/m0" || fail "no family $family"
done
echo "  $METRICS_URL: $(grep -c '^# TYPE' "$WORK/m0") families, promtool: clean"

step "a read moves the FUSE, file system and S3 counters by the file's size"
got=$(sha256sum <"$MNT/data.bin" | cut -d' ' -f1)
[[ $got == "$sha" ]] || fail "data.bin read through the mount differs"
cat "$MNT/no-such-file" 2>/dev/null && fail "a missing file was read"
scrape "$WORK/m1"
size=$((3 * 1024 * 1024 + 17))
reads=$(value "$WORK/m1" 'reelfs_fuse_requests_total{op="read"}')
read_hist=$(value "$WORK/m1" 'reelfs_fuse_request_duration_seconds_count{op="read"}')
fs_bytes=$(value "$WORK/m1" reelfs_fs_read_bytes_total)
s3_bytes=$(value "$WORK/m1" reelfs_s3_received_bytes_total)
lookup_errors=$(value "$WORK/m1" 'reelfs_fuse_request_errors_total{op="lookup"}')
direct=$(value "$WORK/m1" reelfs_s3_direct_gets_total)
(( reads >= 1 && read_hist == reads )) || fail "read requests $reads, histogram count $read_hist"
(( fs_bytes >= size )) || fail "reelfs_fs_read_bytes_total $fs_bytes < $size"
(( s3_bytes >= size )) || fail "reelfs_s3_received_bytes_total $s3_bytes < $size"
(( lookup_errors >= 1 )) || fail "the missing name's lookup is not counted as an error"
# The file (3 MiB, one part) is one GET of more than 1 MiB over plain http: the direct receiver's.
(( direct >= 1 )) || fail "reelfs_s3_direct_gets_total $direct: the 3 MiB GET was not received directly"
echo "  reads $reads, fs bytes $fs_bytes, s3 bytes $s3_bytes (direct GETs $direct), lookup errors $lookup_errors"

step "a port in use refuses a second mount, with the address in the message"
port=${METRICS_URL#http://127.0.0.1:}; port=${port%/metrics}
mkdir -p "$WORK/mnt2"
rc=0
out=$(timeout 30 "$REELFS_BIN" mount met "$WORK/mnt2" --endpoint "$ENDPOINT" \
  --metrics-listen "127.0.0.1:$port" 2>&1) || rc=$?
[[ $rc != 0 && $rc != 124 ]] || fail "second mount on a busy metrics port: exit $rc"
[[ $out == *"cannot bind 127.0.0.1:$port"* ]] || fail "message: $out"
grep -q " $WORK/mnt2 " /proc/mounts && fail "the refused mount stayed mounted"
echo "  exit $rc: $out"
unmount_and_wait "$MNT" "$MOUNT_PID"; MOUNT_PID=""

rc=0
out=$("$REELFS_BIN" mount met "$WORK/mnt2" --endpoint "$ENDPOINT" --metrics-listen 9464 2>&1) || rc=$?
[[ $rc == 2 && $out == *"--metrics-listen"* ]] || fail "a bad address: exit $rc: $out"
echo "  a bad address: exit 2: $out"

step "a writable mount counts the bytes written"
mount_bucket met --metrics-listen 127.0.0.1:0 --allow-overwrite
METRICS_URL=$(grep -o 'http://127\.0\.0\.1:[0-9]*/metrics' "$WORK/mount.log" | tail -1)
head -c 100000 /dev/urandom >"$WORK/up.bin"
cp "$WORK/up.bin" "$MNT/up.bin" || fail "cp into the mount"
cmp -s "$WORK/up.bin" "$ROOT/met/up.bin" || fail "the written object differs"
scrape "$WORK/m2"
written=$(value "$WORK/m2" reelfs_fs_written_bytes_total)
files=$(value "$WORK/m2" reelfs_fs_files_written_total)
(( written == 100000 && files == 1 )) || fail "written bytes $written, files $files"
echo "  written $written bytes, $files file"
unmount_and_wait "$MNT" "$MOUNT_PID"; MOUNT_PID=""
echo "PASS"
