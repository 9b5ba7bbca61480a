# shellcheck shell=bash
# Sourced by the bench scripts (bench/fuse/*.sh, bench/s3/get_throughput.sh,
# bench/gateway/small_get.sh): the credentials they all sign with, the one median they report
# (bench_median), one way to start reelfs-gateway on a loopback port, the
# preconditions and EXIT trap of the one-mount scripts (cpu_per_byte.sh, cpu_per_file.sh), and
# libfuse's passthrough_hp as the FUSE ceiling (run.sh, cache.sh). Owns no state besides the
# variables named below (gw, reelfs, gw_pid, endpoint, hp_*; work is the caller's).

# The benchmark credentials, and no user AWS configuration or credentials file.
bench_credentials() {
  export AWS_ACCESS_KEY_ID=benchkey AWS_SECRET_ACCESS_KEY=benchsecret AWS_REGION=us-east-1
  export AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null
}

# bench_require_single BUILD_DIR CMD...: sets gw and reelfs (the two binaries in BUILD_DIR) and
# exits 77, with what is missing on stderr, without either, one of the CMDs, or /dev/fuse.
bench_require_single() {
  local build=$1 b c
  shift
  gw=${GATEWAY_BIN:-$build/gateway/reelfs-gateway}  # GATEWAY_BIN: another build of it
  reelfs=$build/cli/reelfs
  for b in "$gw" "$reelfs"; do [ -x "$b" ] || { echo "missing $b" >&2; exit 77; }; done
  for c in "$@"; do command -v "$c" >/dev/null || { echo "missing $c" >&2; exit 77; }; done
  [ -e /dev/fuse ] || { echo "no /dev/fuse" >&2; exit 77; }
}

# bench_start_gateway GATEWAY ROOT WORK LOG: starts GATEWAY serving ROOT on 127.0.0.1 (a free
# port, written to WORK/port) and waits until it listens (it indexes ROOT first: up to 10 min).
# GATEWAY_OPTS are appended to its flags (e.g. --max-connection-rate 100MiB, bench/fuse/capped.sh).
# Sets gw_pid (the gateway itself: the subshell execs it) and endpoint. Returns 1, with the
# log on stderr, when it exits or never listens. Then flushes ROOT's file system: a dataset just
# written is otherwise written back during the first rounds (the kernel's dirty_expire is 30 s),
# which then measure the disk's writeback, not the read path.
bench_start_gateway() {
  local gw=$1 root=$2 work=$3 log=$4 role=--create
  # BENCH_FRONT_END=1: a --front-end over a root another gateway owns (docs/gateway.md).
  [ "${BENCH_FRONT_END:-0}" = 1 ] && role=--front-end
  # shellcheck disable=SC2086  # GATEWAY_OPTS: several words
  ( exec "$gw" --root "$root" "$role" --listen 127.0.0.1:0 --port-file "$work/port" \
    --access-key "$AWS_ACCESS_KEY_ID" --secret-key "$AWS_SECRET_ACCESS_KEY" --log-level warn \
    ${GATEWAY_OPTS:-} >"$log" 2>&1 ) &
  gw_pid=$!
  local _
  for _ in $(seq 6000); do
    [ -s "$work/port" ] && break
    kill -0 "$gw_pid" 2>/dev/null || break
    sleep 0.1
  done
  if ! [ -s "$work/port" ]; then
    echo "gateway did not start:" >&2
    cat "$log" >&2
    return 1
  fi
  # shellcheck disable=SC2034  # read by the caller
  endpoint="http://127.0.0.1:$(cat "$work/port")"
  sync -f "$root"
}

# bench_single_file NAME SIZE_MIB: the setup of the one-file, one-mount scripts (cpu_per_byte.sh,
# rounds.sh): a work directory /dev/shm/NAME.* (removed at exit: bench_cleanup_single), the
# benchmark credentials, SIZE_MIB random bytes as bucket "bench", key "large.bin", and a gateway
# over them (bench_start_gateway). Sets work (with work/mnt made), gw_pid and endpoint; needs gw.
bench_single_file() {
  work=$(mktemp -d "/dev/shm/$1.XXXXXX")
  gw_pid=""
  trap bench_cleanup_single EXIT
  bench_credentials
  mkdir -p "$work/root/bench" "$work/mnt"
  head -c $(($2 * 1048576)) /dev/urandom >"$work/root/bench/large.bin"
  bench_start_gateway "$gw" "$work/root" "$work" "$work/gateway.log"
}

# Counters of a live process from /proc, for the CPU-cost scripts: user + system CPU in clock
# ticks (getconf CLK_TCK a second), minor page faults, and the context switches (voluntary and
# not) of its threads now alive, summed.
# bench_median V...: the median of the numeric arguments (others ignored; none: prints nothing),
# "%.3f" below 10 and "%.1f" above, the one median every bench script reports.
bench_median() {
  printf '%s\n' "$@" | grep -E '^[0-9.]+$' | sort -g | awk '{ a[NR] = $1 } END {
    if (NR) { m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
              printf (m < 10 ? "%.3f\n" : "%.1f\n"), m } }'
}

bench_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
bench_minflt() { awk '{print $10}' "/proc/$1/stat"; }
bench_ctxsw() {
  local t n=0 v
  for t in "/proc/$1/task"/*; do
    v=$(awk '/ctxt_switches/ { n += $2 } END { print n + 0 }' "$t/status" 2>/dev/null)
    n=$((n + ${v:-0}))
  done
  echo $n
}

# bench_peer_configs WORK ENDPOINT: the peers' credentials for that gateway: WORK/s3fs.passwd
# (mode 0600) and WORK/rclone.conf (remote "gw"; ListObjectsV2, path style).
bench_peer_configs() {
  local work=$1 endpoint=$2
  echo "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" >"$work/s3fs.passwd"
  chmod 600 "$work/s3fs.passwd"
  cat >"$work/rclone.conf" <<RC
[gw]
type = s3
provider = Other
endpoint = $endpoint
access_key_id = $AWS_ACCESS_KEY_ID
secret_access_key = $AWS_SECRET_ACCESS_KEY
region = us-east-1
force_path_style = true
list_version = 2
RC
}

# EXIT trap of the scripts with one mountpoint ($work/mnt) and one gateway ($gw_pid): unmounts,
# stops the gateway, waits for the children and removes $work.
bench_cleanup_single() {
  grep -qs " $work/mnt fuse" /proc/mounts && fusermount3 -u "$work/mnt" 2>/dev/null
  [ -n "${gw_pid:-}" ] && kill "$gw_pid" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$work"
}

# libfuse 3.17's passthrough_hp example (built by scripts/libfuse317.sh, never installed): the FUSE
# ceiling rows of run.sh and cache.sh. bench_hp_check sets hp_bin and hp_lib, or returns 1 with
# the reason on stdout.
bench_hp_check() {
  local prefix=${LIBFUSE_PREFIX:-.cache/libfuse317/prefix}
  hp_bin=$prefix/bin/passthrough_hp
  [ -x "$hp_bin" ] || { echo "no $hp_bin (scripts/libfuse317.sh builds it)"; return 1; }
  hp_lib=$(dirname "$(find "$prefix" -name 'libfuse3.so*' | head -n1)")
}

# bench_hp_pipe_raise: libfuse 3.17 splices a READ reply only through a pipe of max_write +
# one page (4 MiB + 4 KiB with passthrough_hp's max_write); above /proc/sys/fs/pipe-max-size
# (1 MiB by default) F_SETPIPE_SZ fails with EPERM without CAP_SYS_RESOURCE (a container's root
# lacks it) and libfuse falls back, silently, to a copy through a buffer it mmaps and munmaps per
# request: the "splice" row then measures that fallback (200-400 MiB/s here). Raised to 8 MiB
# for the run when root may write the sysctl; bench_hp_pipe_restore puts it back. Sets
# hp_pipe_note (what the table should say).
# shellcheck disable=SC2034  # hp_pipe_note is read by the caller
bench_hp_pipe_raise() {
  hp_pipe_old=$(cat /proc/sys/fs/pipe-max-size 2>/dev/null)
  if [ -n "$hp_pipe_old" ] && [ "$hp_pipe_old" -lt 8388608 ] &&
    echo 8388608 >/proc/sys/fs/pipe-max-size 2>/dev/null; then
    hp_pipe_note="pipe-max-size raised from $hp_pipe_old to 8388608 for passthrough_hp's splice"
  else
    hp_pipe_note="pipe-max-size $(cat /proc/sys/fs/pipe-max-size 2>/dev/null) (unchanged)"
    hp_pipe_old=""
  fi
}
bench_hp_pipe_restore() {
  [ -n "${hp_pipe_old:-}" ] && echo "$hp_pipe_old" >/proc/sys/fs/pipe-max-size 2>/dev/null
  hp_pipe_old=""
}

# bench_hp_start MODE SRC MNT LOG: passthrough_hp over directory SRC at MNT, MODE passthrough
# (kernel passthrough), splice (--nopassthrough) or copy (--nopassthrough --nosplice); waits for
# the mount and, as root, gives it the read_ahead_kb reelfs sets on its own mounts (4096: the
# kernel's 128 KiB default halves the ceiling). Sets hp_pid. Returns 1 when it does not mount.
# shellcheck disable=SC2034  # hp_pid is read by the caller
bench_hp_start() {
  local mode=$1 src=$2 m=$3 log=$4 args=() dev
  case $mode in
    passthrough) ;;
    splice) args=(--nopassthrough) ;;
    copy) args=(--nopassthrough --nosplice) ;;
  esac
  LD_LIBRARY_PATH=$hp_lib "$hp_bin" "${args[@]}" "$src" "$m" >"$log" 2>&1 &
  hp_pid=$!
  for _ in $(seq 100); do grep -qs " $m fuse" /proc/mounts && break; sleep 0.1; done
  grep -qs " $m fuse" /proc/mounts || return 1
  dev=$(awk -v m="$m" '$5 == m { print $3 }' /proc/self/mountinfo)
  [ "$(id -u)" = 0 ] && [ -n "$dev" ] && echo 4096 >"/sys/class/bdi/$dev/read_ahead_kb" 2>/dev/null
  return 0
}
