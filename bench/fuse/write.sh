#!/usr/bin/env bash
# bench/fuse/write.sh: writes through the mount against s3fs, rclone mount and the raw limit
# (`reelfs cp` uploading the same bytes with the client's own multipart code, and curl PUT), one
# gateway whose root is on tmpfs (/dev/shm: the disk is not the limit), one run. Cases:
#   large1  one file of LARGE_MIB (default 4096): mounts `dd bs=1M`, cp `reelfs cp FILE`, curl
#           one PUT. The time includes the close, which completes the upload.
#   large4  4 writers at once, each a different quarter (mounts: dd bs=1M skip=...; cp: 4
#           `reelfs cp` of quarter files; curl: 4 PUTs of them)
#   small   SMALL_FILES files of SMALL_KIB (default 1000 x 1 MiB), one at a time: mounts `cp -r`;
#           cp `reelfs cp -r --files-in-flight 1`; curl one PUT after the other
#   small8  the same files, 8 at a time: mounts 8 `cp` processes (xargs -P 8); cp `reelfs cp -r
#           --files-in-flight 8`; curl `--parallel --parallel-max 8`
# rclone runs with `--vfs-cache-mode writes --vfs-write-back 0s`: its close returns once the
# file is in its cache (on disk) and the upload follows, so its time runs until every object is
# in the gateway's root (polled), not until dd returns. Every object is then compared with its
# source byte for byte in the gateway's root (the files the gateway wrote, read by cmp), and
# removed before the next case so that tmpfs holds one case at a time. Peak RSS: a daemon's
# VmHWM before unmount; for `reelfs cp` GNU time's maximum RSS (the largest of its processes).
# Prints a markdown table (MiB/s; small: files/s), the ratios against the targets and the load.
#
#   bench/fuse/write.sh                                        # 4 GiB, 1000 x 1 MiB
#   LARGE_MIB=1024 TOOLS="reelfs cp" bench/fuse/write.sh
#   CASES=large1 TOOLS="cp reelfs" bench/fuse/write.sh           # one row, cp first
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
BUILD_DIR=${BUILD_DIR:-$here/../../build}
LARGE_MIB=${LARGE_MIB:-4096}
SMALL_FILES=${SMALL_FILES:-1000}
SMALL_KIB=${SMALL_KIB:-1024}
MAX_MEMORY=${MAX_MEMORY:-1GiB}
TOOLS=${TOOLS:-"reelfs s3fs rclone cp curl"}
CASES=${CASES:-"large1 large4 small small8"}  # a subset runs only those rows
# Each tool once: a second run would meet its first run's objects, which the cleanup below removes
# behind the gateway's back (its catalog still lists them), and its cells would replace the first.
twice=$(tr ' ' '\n' <<<"$TOOLS" | grep . | sort | uniq -d)
if [ -n "$twice" ]; then
  echo "TOOLS names $twice twice: run the script again to repeat a tool" >&2; exit 2
fi
SHM=${SHM:-/dev/shm}
bench_credentials
bench_require_single "$BUILD_DIR" curl python3 dd cmp /usr/bin/time
work=$(mktemp -d "$SHM/reelfs-bench-write.XXXXXX")       # sources and the gateway root: tmpfs
disk=$(mktemp -d "${TMPDIR:-/var/tmp}/reelfs-bench-write-disk.XXXXXX")  # s3fs/rclone caches
cleanup() {
  for m in "$work"/mnt/*; do
    grep -qs " $m fuse" /proc/mounts && { fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m"; }
  done
  [ -n "${gw_pid:-}" ] && kill "$gw_pid" 2>/dev/null
  wait 2>/dev/null || true
  if [ "${KEEP_WORK:-0}" = 1 ]; then echo "kept $work $disk"; else rm -rf "$work" "$disk"; fi
}
trap cleanup EXIT
mkdir -p "$work/root/bench" "$work/mnt" "$work/logs" "$work/small" "$disk/s3fs-tmp" "$disk/rclone"
head -c $((LARGE_MIB << 20)) /dev/urandom >"$work/large.src"
q=$((LARGE_MIB / 4))
for i in $(seq -f %05g 1 "$SMALL_FILES"); do head -c $((SMALL_KIB << 10)) /dev/urandom >"$work/small/f$i"; done
bench_start_gateway "$gw" "$work/root" "$work" "$work/logs/gateway.log"
bench_peer_configs "$work" "$endpoint"
s3fs_opts="url=$endpoint,use_path_request_style,passwd_file=$work/s3fs.passwd,sigv4,endpoint=us-east-1,listobjectsv2,tmpdir=$disk/s3fs-tmp,dbglevel=warn"

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { print b - a }'; }
mibs() { awk -v n="$1" -v s="$2" 'BEGIN { printf "%.0f", n / 1048576 / s }'; }
presign() {  # presign KEY: a PUT URL
  python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); from s3sign import presign
print(presign(sys.argv[2], sys.argv[3], sys.argv[4], "us-east-1", "PUT", "/bench/" + sys.argv[5]))' \
    "$here" "$endpoint" "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY" "$1"
}
verify() {  # verify SRC KEY: the gateway's copy is identical
  cmp -s "$1" "$work/root/bench/$2" || { echo "MISMATCH: $2" >&2; exit 1; }
}
# wait_objects DIR COUNT: until the gateway's root holds COUNT files below bench/DIR (a file
# appears there only once its PUT or CompleteMultipartUpload is done: the gateway renames it in).
wait_objects() {
  while [ "$(find "$work/root/bench/$1" -type f 2>/dev/null | wc -l)" -lt "$2" ]; do sleep 0.05; done
}
seq_n=0
mount_tool() {  # mount_tool TOOL -> mnt, pid
  seq_n=$((seq_n + 1))
  mnt=$work/mnt/$1.$seq_n
  mkdir -p "$mnt"
  case $1 in
    reelfs) AWS_ENDPOINT_URL=$endpoint "$reelfs" mount bench "$mnt" --max-memory "$MAX_MEMORY" \
              --log-file "$work/logs/reelfs.$seq_n.log" >"$work/logs/mount.$seq_n.out" 2>&1 ;;
    s3fs) s3fs bench "$mnt" -o "$s3fs_opts" >"$work/logs/mount.$seq_n.out" 2>&1 ;;
    # AWS_CA_BUNDLE (set on some machines) makes rclone's S3 SDK fail on a plain-http endpoint.
    rclone) env -u AWS_CA_BUNDLE rclone --config "$work/rclone.conf" mount gw:bench "$mnt" --vfs-cache-mode writes \
              --vfs-write-back 0s --cache-dir "$disk/rclone" --daemon \
              --log-file "$work/logs/rclone.$seq_n.log" --log-level NOTICE ;;
  esac
  for _ in $(seq 300); do grep -qs " $mnt fuse" /proc/mounts && break; sleep 0.1; done
  grep -qs " $mnt fuse" /proc/mounts || { echo "$1 did not mount" >&2; cat "$work/logs/mount.$seq_n.out" >&2; exit 1; }
  pid=""
  for p in $(pgrep -f -- "$mnt"); do
    case $(cat "/proc/$p/comm" 2>/dev/null) in reelfs*|s3fs|rclone) pid=$p; break ;; esac
  done
}
unmount_tool() {  # prints the daemon's VmHWM in MiB
  local hwm
  hwm=$(awk '/^VmHWM:/ { printf "%.0f", $2 / 1024 }' "/proc/$pid/status" 2>/dev/null || echo "?")
  fusermount3 -u "$mnt"
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  echo "$hwm"
}
# timed_cp OUT ARGS...: `reelfs cp ARGS` under GNU time; its max RSS (KiB) goes to OUT.
timed_cp() {
  local out=$1; shift
  AWS_ENDPOINT_URL=$endpoint /usr/bin/time -f %M -o "$out" "$reelfs" cp --quiet "$@"
}
split_quarters() {
  for i in 0 1 2 3; do dd if="$work/large.src" of="$work/q$i.src" bs=1M skip=$((i * q)) count=$q status=none; done
}
declare -A cell rss
# Warm-up, untimed: the first large write after the sources were made ran 20-40% slower whichever
# tool went first (fresh tmpfs pages; gateway CPU per GiB 1.5x), which would charge the first
# column (reelfs) for the machine. One multipart `reelfs cp` of the large file, then deleted.
AWS_ENDPOINT_URL=$endpoint "$reelfs" cp --quiet "$work/large.src" s3://bench/warmup.bin
curl -sf -X DELETE "$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); from s3sign import presign
print(presign(sys.argv[2], sys.argv[3], sys.argv[4], "us-east-1", "DELETE", "/bench/warmup.bin"))' \
  "$here" "$endpoint" "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY")"
[ ! -e "$work/root/bench/warmup.bin" ] || { echo "warm-up object not deleted" >&2; exit 1; }
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for tool in $TOOLS; do
  for c in $CASES; do
    [ "$c" = large4 ] && { [ "$tool" = cp ] || [ "$tool" = curl ]; } && split_quarters
    case $tool in
      curl|cp)
        if [ "$tool" = curl ] && [ "${c#small}" != "$c" ]; then
          python3 - "$here" "$endpoint" "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY" "$work" "$c" >"$work/curl.cfg" <<'PY'
import os, sys
sys.path.insert(0, sys.argv[1])
from s3sign import presign
endpoint, key, secret, work, case = sys.argv[2:7]
for name in sorted(os.listdir(work + "/small")):
    url = presign(endpoint, key, secret, "us-east-1", "PUT", f"/bench/curl/{case}/" + name)
    print(f'upload-file = "{work}/small/{name}"\nurl = "{url}"\noutput = /dev/null')
PY
        fi
        h=0
        t0=$(now)  # the signing above is not the upload
        case $tool/$c in
          curl/large1) curl -sf -o /dev/null -T "$work/large.src" "$(presign curl/large.bin)" ;;
          curl/large4) pids=()
                       for i in 0 1 2 3; do curl -sf -o /dev/null -T "$work/q$i.src" "$(presign "curl/q$i.bin")" & pids+=($!); done
                       wait "${pids[@]}" ;;
          curl/small) curl -sf --no-progress-meter -K "$work/curl.cfg" ;;
          curl/small8) curl -sf --no-progress-meter --parallel --parallel-max 8 -K "$work/curl.cfg" ;;
          cp/large1) timed_cp "$work/rss.0" "$work/large.src" s3://bench/cp/large.bin ;;
          cp/large4) pids=()
                     for i in 0 1 2 3; do timed_cp "$work/rss.$i" "$work/q$i.src" "s3://bench/cp/q$i.bin" & pids+=($!); done
                     wait "${pids[@]}" ;;
          cp/small) timed_cp "$work/rss.0" -r --files-in-flight 1 "$work/small" s3://bench/cp/small/ ;;
          cp/small8) timed_cp "$work/rss.0" -r --files-in-flight 8 "$work/small" s3://bench/cp/small8/ ;;
        esac
        secs=$(since "$t0")
        if [ "$tool" = cp ]; then
          for f in "$work"/rss.*; do h=$(awk -v a="$h" '{ m = $1 / 1024; print (m > a ? int(m + 0.5) : a) }' "$f"); done
          rm -f "$work"/rss.*
        fi
        ;;
      *)
        mount_tool "$tool"
        mkdir -p "$mnt/$tool"
        t0=$(now)
        case $c in
          large1) dd if="$work/large.src" of="$mnt/$tool/large.bin" bs=1M status=none
                  [ "$tool" = rclone ] && wait_objects "$tool" 1 ;;
          large4) pids=()  # not a bare wait: the gateway is a child too
                  for i in 0 1 2 3; do dd if="$work/large.src" of="$mnt/$tool/q$i.bin" bs=1M skip=$((i * q)) count=$q status=none & pids+=($!); done
                  wait "${pids[@]}"
                  [ "$tool" = rclone ] && wait_objects "$tool" 4 ;;
          small) cp -r "$work/small" "$mnt/$tool/small"
                 [ "$tool" = rclone ] && wait_objects "$tool/small" "$SMALL_FILES" ;;
          small8) mkdir -p "$mnt/$tool/small8"  # not small/: the gateway's catalog still lists it
                  # 8 cp processes of SMALL_FILES/8 files each (not a process per file: fork+exec
                  # would cost more than a 1 MiB write)
                  (cd "$work/small" && find . -type f -printf '%f\n' |
                     xargs -P 8 -n $(((SMALL_FILES + 7) / 8)) cp -t "$mnt/$tool/small8")
                  [ "$tool" = rclone ] && wait_objects "$tool/small8" "$SMALL_FILES" ;;
        esac
        secs=$(since "$t0")
        h=$(unmount_tool)
        ;;
    esac
    if [[ $h =~ ^[0-9]+$ ]] && (( h > ${rss[$tool]:-0} )); then rss[$tool]=$h; fi
    case $c in
      large1) verify "$work/large.src" "$tool/large.bin"; cell[$c/$tool]=$(mibs $((LARGE_MIB << 20)) "$secs") ;;
      large4) for i in 0 1 2 3; do dd if="$work/large.src" bs=1M skip=$((i * q)) count=$q status=none |
                cmp -s - "$work/root/bench/$tool/q$i.bin" || { echo "MISMATCH: $tool/q$i.bin" >&2; exit 1; }; done
              cell[$c/$tool]=$(mibs $((4 * q << 20)) "$secs") ;;
      small|small8) for f in "$work"/small/*; do verify "$f" "$tool/$c/$(basename "$f")"; done
             cell[$c/$tool]=$(awk -v n="$SMALL_FILES" -v s="$secs" 'BEGIN { printf "%.0f", n / s }') ;;
    esac
    echo "$tool $c: ${cell[$c/$tool]} (${secs} s) load $(cut -d' ' -f1 /proc/loadavg)" >&2
    rm -rf "$work/root/bench/$tool" "$work"/q?.src "$disk/rclone"/*  # tmpfs holds one case at a time
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "—"; else printf "%.2f×", a / b }'; }
{
  printf '| case |'; for t in $TOOLS; do printf ' %s |' "$t"; done; echo ' reelfs ÷ cp | reelfs ÷ s3fs |'
  printf '|---|'; for t in $TOOLS; do printf -- '---|'; done; echo '---|---|'
  for c in $CASES; do
    case $c in
      large1) printf '| %s MiB, dd bs=1M, 1 writer (MiB/s) |' "$LARGE_MIB" ;;
      large4) printf '| 4 writers x %s MiB (MiB/s, all) |' "$q" ;;
      small) printf '| %s x %s KiB, one at a time (files/s) |' "$SMALL_FILES" "$SMALL_KIB" ;;
      small8) printf '| %s x %s KiB, 8 at a time (files/s) |' "$SMALL_FILES" "$SMALL_KIB" ;;
    esac
    for t in $TOOLS; do printf ' %s |' "${cell[$c/$t]:-—}"; done
    printf ' %s | %s |\n' "$(ratio "${cell[$c/reelfs]:-}" "${cell[$c/cp]:-}")" "$(ratio "${cell[$c/reelfs]:-}" "${cell[$c/s3fs]:-}")"
  done
  printf '| peak RSS (MiB) |'; for t in $TOOLS; do printf ' %s |' "${rss[$t]:-—}"; done; echo ' | |'
  echo
  echo "Load average (1, 5, 15 min): $load_before before, $load_after after. --max-memory $MAX_MEMORY."
}
