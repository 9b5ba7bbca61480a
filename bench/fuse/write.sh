#!/usr/bin/env bash
# bench/fuse/write.sh: writes through the mount against s3fs and raw HTTP (curl PUT of the same
# bytes), one gateway, one run. Cases, every tool on a fresh mount:
#   large1  one file of LARGE_MIB written with dd bs=1M (the time includes the close, which
#           completes the upload)
#   large4  4 writers at once, each a different file of LARGE_MIB/4 (dd bs=1M skip=...)
#   small   SMALL_FILES files of SMALL_KIB written with cp -r of a local directory
# curl: one PUT of the large file, 4 concurrent PUTs of the quarters, the small files with
# `curl --parallel --parallel-max 8`, all on presigned URLs. Every object is then compared with
# its source byte for byte in the gateway's root (a file the gateway wrote, read by cmp). Peak RSS
# is the daemon's VmHWM before unmount. Prints a markdown table (MiB/s; small: files/s).
#
#   bench/fuse/write.sh                                   # 1 GiB, 1000 x 1 MiB
#   LARGE_MIB=4096 TOOLS="reelfs s3fs curl" bench/fuse/write.sh
# rclone mount --vfs-cache-mode writes is not a column: its close returns once the file is in
# its local cache and the upload happens later, so its times would not be comparable.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
BUILD_DIR=${BUILD_DIR:-$here/../../build}
LARGE_MIB=${LARGE_MIB:-1024}
SMALL_FILES=${SMALL_FILES:-1000}
SMALL_KIB=${SMALL_KIB:-1024}
MAX_MEMORY=${MAX_MEMORY:-1GiB}
TOOLS=${TOOLS:-"reelfs s3fs curl"}
bench_credentials
bench_require_single "$BUILD_DIR" curl python3 dd cmp
work=$(mktemp -d "${TMPDIR:-/tmp}/reelfs-bench-write.XXXXXX")
cleanup() {
  for m in "$work"/mnt/*; do
    grep -qs " $m fuse" /proc/mounts && { fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m"; }
  done
  [ -n "${gw_pid:-}" ] && kill "$gw_pid" 2>/dev/null
  wait 2>/dev/null || true
  [ "${KEEP_WORK:-0}" = 1 ] && echo "kept $work" || rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/root/bench" "$work/mnt" "$work/logs" "$work/small"
head -c $((LARGE_MIB << 20)) /dev/urandom >"$work/large.src"
q=$((LARGE_MIB / 4))
for i in 0 1 2 3; do dd if="$work/large.src" of="$work/q$i.src" bs=1M skip=$((i * q)) count=$q status=none; done
for i in $(seq -f %05g 1 "$SMALL_FILES"); do head -c $((SMALL_KIB << 10)) /dev/urandom >"$work/small/f$i"; done
bench_start_gateway "$gw" "$work/root" "$work" "$work/logs/gateway.log"
echo "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" >"$work/s3fs.passwd"; chmod 600 "$work/s3fs.passwd"
mkdir -p "$work/s3fs-tmp"
s3fs_opts="url=$endpoint,use_path_request_style,passwd_file=$work/s3fs.passwd,sigv4,endpoint=us-east-1,listobjectsv2,tmpdir=$work/s3fs-tmp,dbglevel=warn"

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
seq_n=0
mount_tool() {  # mount_tool TOOL -> mnt, pid
  seq_n=$((seq_n + 1))
  mnt=$work/mnt/$1.$seq_n
  mkdir -p "$mnt"
  case $1 in
    reelfs) AWS_ENDPOINT_URL=$endpoint "$reelfs" mount bench "$mnt" --max-memory "$MAX_MEMORY" \
              --log-file "$work/logs/reelfs.$seq_n.log" >"$work/logs/mount.$seq_n.out" 2>&1 ;;
    s3fs) s3fs bench "$mnt" -o "$s3fs_opts" >"$work/logs/mount.$seq_n.out" 2>&1 ;;
  esac
  for _ in $(seq 300); do grep -qs " $mnt fuse" /proc/mounts && break; sleep 0.1; done
  grep -qs " $mnt fuse" /proc/mounts || { echo "$1 did not mount" >&2; cat "$work/logs/mount.$seq_n.out" >&2; exit 1; }
  pid=$(pgrep -f -- "$mnt" | head -1)
}
unmount_tool() {  # prints the daemon's VmHWM in MiB
  local hwm
  hwm=$(awk '/^VmHWM:/ { printf "%.0f", $2 / 1024 }' "/proc/$pid/status" 2>/dev/null || echo "?")
  fusermount3 -u "$mnt"
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  echo "$hwm"
}
declare -A cell rss
for tool in $TOOLS; do
  for c in large1 large4 small; do
    if [ "$tool" = curl ]; then
      t0=$(now)
      case $c in
        large1) curl -sf -o /dev/null -T "$work/large.src" "$(presign curl/large.bin)" ;;
        large4) pids=()
                for i in 0 1 2 3; do curl -sf -o /dev/null -T "$work/q$i.src" "$(presign "curl/q$i.bin")" & pids+=($!); done
                wait "${pids[@]}" ;;
        small)
          python3 - "$here" "$endpoint" "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY" "$work" >"$work/curl.cfg" <<'PY'
import os, sys
sys.path.insert(0, sys.argv[1])
from s3sign import presign
endpoint, key, secret, work = sys.argv[2:6]
for name in sorted(os.listdir(work + "/small")):
    url = presign(endpoint, key, secret, "us-east-1", "PUT", "/bench/curl/small/" + name)
    print(f'upload-file = "{work}/small/{name}"\nurl = "{url}"\noutput = /dev/null')
PY
          t0=$(now)  # the signing above is not the upload
          curl -sf --no-progress-meter --parallel --parallel-max 8 -K "$work/curl.cfg" ;;
      esac
      secs=$(since "$t0")
      rss[$tool]="—"
    else
      mount_tool "$tool"
      mkdir -p "$mnt/$tool"
      t0=$(now)
      case $c in
        large1) dd if="$work/large.src" of="$mnt/$tool/large.bin" bs=1M status=none ;;
        large4) pids=()  # not a bare wait: the gateway is a child too
                for i in 0 1 2 3; do dd if="$work/large.src" of="$mnt/$tool/q$i.bin" bs=1M skip=$((i * q)) count=$q status=none & pids+=($!); done
                wait "${pids[@]}" ;;
        small) cp -r "$work/small" "$mnt/$tool/small" ;;
      esac
      secs=$(since "$t0")
      h=$(unmount_tool)
      if [[ $h =~ ^[0-9]+$ ]] && (( h > ${rss[$tool]:-0} )); then rss[$tool]=$h; fi
    fi
    case $c in
      large1) verify "$work/large.src" "$tool/large.bin"; cell[$c/$tool]=$(mibs $((LARGE_MIB << 20)) "$secs") ;;
      large4) for i in 0 1 2 3; do verify "$work/q$i.src" "$tool/q$i.bin"; done
              cell[$c/$tool]=$(mibs $((4 * q << 20)) "$secs") ;;
      small) for f in "$work"/small/*; do verify "$f" "$tool/small/$(basename "$f")"; done
             cell[$c/$tool]=$(awk -v n="$SMALL_FILES" -v s="$secs" 'BEGIN { printf "%.0f", n / s }') ;;
    esac
    echo "$tool $c: ${cell[$c/$tool]} (${secs} s)" >&2
  done
done
{
  printf '| case |'; for t in $TOOLS; do printf ' %s |' "$t"; done; echo
  printf '|---|'; for t in $TOOLS; do printf -- '---|'; done; echo
  printf '| %s MiB, dd bs=1M, 1 writer (MiB/s) |' "$LARGE_MIB"; for t in $TOOLS; do printf ' %s |' "${cell[large1/$t]}"; done; echo
  printf '| 4 writers x %s MiB (MiB/s, all) |' "$q"; for t in $TOOLS; do printf ' %s |' "${cell[large4/$t]}"; done; echo
  printf '| %s x %s KiB, cp -r (files/s) |' "$SMALL_FILES" "$SMALL_KIB"; for t in $TOOLS; do printf ' %s |' "${cell[small/$t]}"; done; echo
  printf '| daemon peak RSS (MiB) |'; for t in $TOOLS; do printf ' %s |' "${rss[$t]:-—}"; done; echo
}
