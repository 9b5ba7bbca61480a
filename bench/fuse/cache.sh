#!/usr/bin/env bash
# Epoch 1 and epoch 2 through each tool's local cache (issue 19, docs/cache.md): a large file and
# a set of small files served by one reelfs-gateway from tmpfs, read once through a fresh mount
# with an empty cache (epoch 1: from the gateway, filling the cache), then again through a new
# mount on the same cache (epoch 2: what a second training epoch costs). Beside them, the local
# read of the same files (the limit), and the FUSE ceiling: libfuse 3.17's passthrough_hp example
# over the same tmpfs directory, kernel passthrough, splice, and copying (--nosplice), for the
# large file and the small files (each small file costs any FUSE daemon a LOOKUP, an OPEN and a
# RELEASE, passthrough or not: that row is what FUSE itself allows per file).
#
#   bench/fuse/cache.sh                      # 4 GiB + 5 000 x 64 KiB, one round (~10 min)
#   LARGE_MIB=1024 ROUNDS=3 bench/fuse/cache.sh
#
# Environment (all optional):
#   LARGE_MIB=4096 SMALL_FILES=5000 SMALL_KIB=64   the dataset
#   ROUNDS=1            epoch 2 (and the local and ceiling reads) repeated; cells are medians
#   TOOLS="local reelfs-pt reelfs-splice reelfs s3fs rclone hp"
#                       reelfs-pt: reelfs --cache with FUSE passthrough (PT_BUILD_DIR's binary,
#                       built by scripts/passthrough.sh against libfuse 3.17); reelfs-splice:
#                       --no-passthrough, the daemon answers READs with the cache's file for
#                       libfuse to splice (pipe-max-size raised to 8 MiB for its mounts, as for
#                       the hp rows); reelfs: --no-passthrough --no-splice-reads, the daemon
#                       copies the cache's blocks (what a host with a 1 MiB pipe-max-size gets);
#                       s3fs -o use_cache; rclone mount --vfs-cache-mode full; hp: passthrough_hp
#   BUILD_DIR=build PT_BUILD_DIR=build-passthrough   LIBFUSE_PREFIX (scripts/libfuse317.sh's)
#   BENCH_TMP=/dev/shm  where the gateway root and the caches live (tmpfs: the limit is memory)
#   RESULT_FILE         the markdown table (default /tmp/reelfs-cache-bench-DATE.md)
# Runs as root (drop_caches between reads; passthrough needs CAP_SYS_ADMIN).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
here=bench/fuse
# shellcheck source=bench/fuse/lib.sh
. "$here/lib.sh"

LARGE_MIB=${LARGE_MIB:-4096}
SMALL_FILES=${SMALL_FILES:-5000}
SMALL_KIB=${SMALL_KIB:-64}
ROUNDS=${ROUNDS:-1}
TOOLS=${TOOLS:-"local reelfs-pt reelfs-splice reelfs s3fs rclone hp"}
BUILD_DIR=${BUILD_DIR:-build}
PT_BUILD_DIR=${PT_BUILD_DIR:-build-passthrough}
BENCH_TMP=${BENCH_TMP:-/dev/shm}
RESULT_FILE=${RESULT_FILE:-/tmp/reelfs-cache-bench-$(date +%Y%m%d-%H%M%S).md}
PYTHON=${PYTHON:-python3}
log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }

bench_require_single "$BUILD_DIR" dd fusermount3 timeout
[ "$(id -u)" -eq 0 ] || { echo "run as root (drop_caches, passthrough)" >&2; exit 77; }
declare -A skip_reason
for t in $TOOLS; do
  case $t in
    reelfs-pt) [ -x "$PT_BUILD_DIR/cli/reelfs" ] ||
                 skip_reason[$t]="no $PT_BUILD_DIR/cli/reelfs (scripts/passthrough.sh builds it)" ;;
    s3fs) command -v s3fs >/dev/null || skip_reason[$t]="s3fs not installed" ;;
    rclone) command -v rclone >/dev/null || skip_reason[$t]="rclone not installed" ;;
    hp) why=$(bench_hp_check) || skip_reason[$t]=$why
        bench_hp_check >/dev/null ;;
  esac
done

work=$(mktemp -d "$BENCH_TMP/reelfs-cache-bench.XXXXXX")
mkdir -p "$work/logs" "$work/mnt"
gw_pid=""
mounts=()
is_mounted() { grep -qs " $1 fuse" /proc/mounts; }
unmount() {
  local m=$1 i
  for i in 1 2 3 4 5 6 7 8 9 10; do
    is_mounted "$m" || return 0
    fusermount3 -u "$m" 2>/dev/null && break
    sleep 0.5
  done
  is_mounted "$m" && { fusermount3 -uz "$m" 2>/dev/null || umount -l "$m"; }
  # the daemon writes its cache index at exit: give it a moment
  for i in $(seq 50); do pgrep -f -- "$m" >/dev/null || break; sleep 0.1; done
}
cleanup() {
  local m
  for m in "${mounts[@]}"; do unmount "$m"; done
  bench_hp_pipe_restore
  [ -n "$gw_pid" ] && { kill "$gw_pid" 2>/dev/null; wait "$gw_pid" 2>/dev/null; }
  [ "${KEEP_WORK:-0}" = 1 ] || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bench_credentials
bucket=bench
data=$work/root/$bucket
log "dataset: large.bin $LARGE_MIB MiB, $SMALL_FILES x $SMALL_KIB KiB in $data"
"$PYTHON" "$here/bench.py" gen "$data" --large-mib "$LARGE_MIB" --small-files "$SMALL_FILES" \
  --small-kib "$SMALL_KIB" --dir-entries 0 || exit 1
manifest=$work/root/small.manifest
large_sum=$(sha256sum "$data/large.bin" | cut -d' ' -f1)
bench_start_gateway "$gw" "$work/root" "$work" "$work/logs/gateway.log" || exit 1
log "gateway on $endpoint"

bench_peer_configs "$work" "$endpoint"

drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
# large_read FILE -> MiB/s
large_read() {
  local t0 t1
  drop
  t0=$(date +%s.%N)
  dd if="$1" of=/dev/null bs=1M status=none || { echo "failed"; return; }
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" -v m="$LARGE_MIB" 'BEGIN { printf "%.0f", m / (b - a) }'
}
small_read() {  # DIR -> files/s, every file verified (crc32 from the manifest)
  local j
  drop
  j=$("$PYTHON" "$here/bench.py" smallfiles "$1" "$manifest" --threads 8 --timeout 600 | tail -1)
  "$PYTHON" -c 'import json,sys; j=json.loads(sys.argv[1])
print("failed: %d bad" % j["errors"] if j["errors"] or j["skipped"] else j["files_per_s"])' "$j"
}

seq=0
# mount_tool TOOL CACHE_DIR -> sets mnt; 1 on failure (reason on stderr)
mount_tool() {
  local tool=$1 cache=$2 m i
  seq=$((seq + 1))
  m=$work/mnt/$tool.$seq
  mkdir -p "$m"
  mounts+=("$m")
  local mlog=$work/logs/$tool.$seq.log
  case $tool in
    reelfs|reelfs-pt|reelfs-splice)
      local bin=$BUILD_DIR/cli/reelfs extra=(--no-passthrough --no-splice-reads)
      [ "$tool" = reelfs-pt ] && { bin=$PT_BUILD_DIR/cli/reelfs; extra=(); }
      [ "$tool" = reelfs-splice ] && extra=(--no-passthrough)
      AWS_ENDPOINT_URL=$endpoint timeout 120 "$bin" mount "$bucket" "$m" --read-only \
        --cache "$cache" "${extra[@]}" --log-file "$mlog" >"$mlog.out" 2>&1 ;;
    s3fs)
      timeout 120 s3fs "$bucket" "$m" -o "url=$endpoint,use_path_request_style,passwd_file=$work/s3fs.passwd,sigv4,endpoint=us-east-1,listobjectsv2,ro,complement_stat,use_cache=$cache,dbglevel=warn" \
        >"$mlog" 2>&1 ;;
    rclone)
      env -u AWS_CA_BUNDLE timeout 120 rclone --config "$work/rclone.conf" mount "gw:$bucket" "$m" \
        --read-only --vfs-cache-mode full --cache-dir "$cache" --daemon --log-file "$mlog" \
        --log-level NOTICE >>"$mlog" 2>&1 ;;
  esac
  for i in $(seq 300); do is_mounted "$m" && break; sleep 0.1; done
  is_mounted "$m" || { echo "$tool mount failed: $(tail -n 2 "$mlog"* 2>/dev/null)" >&2; return 1; }
  mnt=$m
}

declare -A cell  # "tool/column" -> value
for tool in $TOOLS; do
  if [ -n "${skip_reason[$tool]:-}" ]; then log "$tool: skipped: ${skip_reason[$tool]}"; continue; fi
  case $tool in
    local)
      l=(); s=()
      for r in $(seq "$ROUNDS"); do l+=("$(large_read "$data/large.bin")"); s+=("$(small_read "$data")"); done
      cell[$tool/e2l]=$(bench_median "${l[@]}"); cell[$tool/e2s]=$(bench_median "${s[@]}")
      log "local: large ${cell[$tool/e2l]} MiB/s, small ${cell[$tool/e2s]} files/s" ;;
    hp)
      bench_hp_pipe_raise
      for mode in passthrough splice copy; do
        seq=$((seq + 1)); m=$work/mnt/hp.$seq; mkdir -p "$m"; mounts+=("$m")
        if ! bench_hp_start "$mode" "$data" "$m" "$work/logs/hp.$seq.log"; then
          log "passthrough_hp $mode failed: $(tail -n 1 "$work/logs/hp.$seq.log")"; continue
        fi
        l=(); s=()
        for r in $(seq "$ROUNDS"); do l+=("$(large_read "$m/large.bin")"); s+=("$(small_read "$m")"); done
        cell[hp-$mode/e2l]=$(bench_median "${l[@]}"); cell[hp-$mode/e2s]=$(bench_median "${s[@]}")
        log "passthrough_hp ($mode): large ${cell[hp-$mode/e2l]} MiB/s, small ${cell[hp-$mode/e2s]} files/s"
        unmount "$m"
      done
      bench_hp_pipe_restore ;;
    *)
      [ "$tool" = reelfs-splice ] && bench_hp_pipe_raise
      cache=$work/cache-$tool
      rm -rf "$cache"; mkdir -p "$cache"
      mount_tool "$tool" "$cache" || continue
      log "$tool: epoch 1"
      cell[$tool/e1l]=$(large_read "$mnt/large.bin")
      cell[$tool/e1s]=$(small_read "$mnt")
      unmount "$mnt"
      l=(); s=(); c=(); ok=1
      for r in $(seq "$ROUNDS"); do
        mount_tool "$tool" "$cache" || { ok=0; break; }
        if [ "$r" = 1 ]; then
          # epoch 2's bytes checked once (sha256), then a fresh mount for the timed reads
          [ "$(sha256sum "$mnt/large.bin" | cut -d' ' -f1)" = "$large_sum" ] ||
            { log "$tool: epoch 2 large.bin differs"; ok=0; }
          unmount "$mnt"; mount_tool "$tool" "$cache" || { ok=0; break; }
        fi
        # the daemon's CPU over the large read (reelfs only): what each way of serving costs it
        dpid=""; [[ $tool == reelfs* ]] && dpid=$(pgrep -n -f "reelfs mount $bucket $mnt ")
        [ -n "$dpid" ] && c0=$(bench_ticks "$dpid")
        l+=("$(large_read "$mnt/large.bin")")
        [ -n "$dpid" ] && c+=("$(awk -v t=$(($(bench_ticks "$dpid") - c0)) -v hz="$(getconf CLK_TCK)" \
          -v m="$LARGE_MIB" 'BEGIN { printf "%.3f", t / hz / (m / 1024) }')")
        s+=("$(small_read "$mnt")")
        if [ "$tool" = reelfs-pt ] && ! grep -q 'passthrough: on' "$work/logs/$tool.$seq.log"; then
          log "$tool: WARNING: no passthrough: $(grep -o 'passthrough: .*' "$work/logs/$tool.$seq.log")"
        fi
        if [ "$tool" = reelfs-splice ] && ! grep -q 'cached files are spliced' "$work/logs/$tool.$seq.log"; then
          log "$tool: WARNING: cached files not spliced: $(grep -o 'cached files .*' "$work/logs/$tool.$seq.log")"
        fi
        unmount "$mnt"
      done
      if [ $ok = 1 ]; then
        cell[$tool/e2l]=$(bench_median "${l[@]}"); cell[$tool/e2s]=$(bench_median "${s[@]}")
        cell[$tool/cpu]=$(bench_median "${c[@]}")
      else
        cell[$tool/e2l]="failed"
      fi
      log "$tool: epoch 1 ${cell[$tool/e1l]} MiB/s ${cell[$tool/e1s]} files/s; epoch 2 ${cell[$tool/e2l]:-} MiB/s ${cell[$tool/e2s]:-} files/s"
      rm -rf "$cache"
      [ "$tool" = reelfs-splice ] && bench_hp_pipe_restore ;;
  esac
done

ratio() { [[ ${1:-} =~ ^[0-9.]+$ && ${2:-} =~ ^[0-9.]+$ ]] && awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b }'; }
{
  echo "bench/fuse/cache.sh: large.bin $LARGE_MIB MiB, $SMALL_FILES x $SMALL_KIB KiB, rounds $ROUNDS," \
    "gateway root and caches on $(df --output=fstype "$BENCH_TMP" | tail -1) ($BENCH_TMP), $(nproc) CPUs, $(uname -r)"
  echo
  echo "| tool | epoch 1 large MiB/s | epoch 2 large MiB/s | e2 / local | epoch 1 small files/s | epoch 2 small files/s | e2 / local | daemon CPU s/GiB, e2 large |"
  echo "|---|---|---|---|---|---|---|---|"
  for tool in $TOOLS; do
    [ "$tool" = hp ] && continue
    [ -n "${skip_reason[$tool]:-}" ] && { echo "| $tool | skipped: ${skip_reason[$tool]} |||||||"; continue; }
    echo "| $tool | ${cell[$tool/e1l]:--} | ${cell[$tool/e2l]:--} | $(ratio "${cell[$tool/e2l]:-}" "${cell[local/e2l]:-}") | ${cell[$tool/e1s]:--} | ${cell[$tool/e2s]:--} | $(ratio "${cell[$tool/e2s]:-}" "${cell[local/e2s]:-}") | ${cell[$tool/cpu]:--} |"
  done
  if [[ " $TOOLS " == *" hp "* ]]; then
    echo
    echo "FUSE ceiling: the same files through libfuse 3.17's passthrough_hp over the same tmpfs" \
      "directory (read_ahead_kb 4096 as reelfs; ${hp_pipe_note:-})"
    echo
    echo "| passthrough_hp | large MiB/s | / local | small files/s | / local |"
    echo "|---|---|---|---|---|"
    for mode in passthrough splice copy; do
      echo "| $mode | ${cell[hp-$mode/e2l]:--} | $(ratio "${cell[hp-$mode/e2l]:-}" "${cell[local/e2l]:-}")" \
        "| ${cell[hp-$mode/e2s]:--} | $(ratio "${cell[hp-$mode/e2s]:-}" "${cell[local/e2s]:-}") |"
    done
  fi
} | tee "$RESULT_FILE"
log "table in $RESULT_FILE"
