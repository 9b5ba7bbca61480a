# Sourced by every tests/e2e/*.sh script (libfuse's test/cases conventions): a private
# work directory, reelfs-gateway on 127.0.0.1:0 over a dataset generated into it, `reelfs mount -f`
# in the background, a watchdog that aborts the mount before CTest's timeout, and a teardown that
# always unmounts (fusermount3 -u, then -uz), stops the daemon and the gateway and removes the work
# directory. A missing precondition prints the reason and exits 77 (CTest: skipped).
#
#   source "$(dirname "$0")/lib.sh"
#   e2e_init NAME [WATCHDOG_SECONDS]      # checks preconditions, makes $WORK, $ROOT, $MNT
#   ... generate files under "$ROOT/BUCKET" ...
#   start_gateway                          # picks up what is under $ROOT (catalog reconciled)
#   mount_bucket BUCKET[/PREFIX] [reelfs mount options...]
#   ... assertions ...; `fail MSG` on a mismatch
#
# Environment: REELFS_GATEWAY_BIN, REELFS_BIN (set by CTest), KEEP_WORK=1 keeps the work directory.
set -euo pipefail

skip() { echo "SKIP: $*"; exit 77; }
fail() {
  echo "FAIL: $*" >&2
  if [[ -n "${WORK:-}" && -s "$WORK/mount.log" ]]; then
    echo "--- last lines of the mount log ($WORK/mount.log)" >&2
    tail -n 30 "$WORK/mount.log" >&2 || true
  fi
  exit 1
}
# A step's line carries the seconds since the script started, so a slow step shows in CI logs.
step() { printf '== %s (%d s)\n' "$*" "$SECONDS"; }
# expect WHAT GOT WANT: fails naming WHAT unless GOT equals WANT; prints the value otherwise.
expect() {
  [[ $2 == "$3" ]] || fail "$1: got '$2', want '$3'"
  echo "   ok: $1 -> $2"
}

# A Python 3 that can import every module given (Debian's python3-torch lives in /usr/bin/python3,
# which need not be the python3 first on PATH).
find_python() {
  local py
  for py in python3 /usr/bin/python3; do
    command -v "$py" >/dev/null 2>&1 || continue
    if "$py" -c "import ${1:-os}${2:+, $2}${3:+, $3}" >/dev/null 2>&1; then echo "$py"; return 0; fi
  done
  return 1
}

# Children we started, killed by pid in teardown.
GW_PID=""
MOUNT_PID=""
WATCHDOG_PID=""
EXTRA_PIDS=()  # more children a script started (several gateways), killed in teardown
EXIT_HOOKS=()  # commands teardown runs last (a host setting a script changed, put back)
MOUNTED_DIRS=()

_mounted() { awk -v m="$1" '$2 == m { found = 1 } END { exit !found }' /proc/mounts; }

# unmount_dir DIR: fusermount3 -u, retried, then lazy (-uz) if still busy. A mount that is not
# FUSE (a test's small tmpfs) is unmounted lazily.
unmount_dir() {
  local dir=$1 i
  _mounted "$dir" || return 0
  if awk -v m="$dir" '$2 == m && $3 !~ /^fuse/ { found = 1 } END { exit !found }' /proc/mounts; then
    umount -l "$dir" 2>/dev/null || true
    return 0
  fi
  for i in 1 2 3 4 5; do
    fusermount3 -u "$dir" 2>/dev/null && return 0
    _mounted "$dir" || return 0
    sleep 0.5
  done
  echo "teardown: $dir busy, lazy unmount" >&2
  fusermount3 -uz "$dir" 2>/dev/null || true
}

# Pids of reelfs daemons serving DIR, found by their command line (daemon mode forks, so its pid
# is not $!).
daemon_pids_for() {
  local dir=$1 f p
  for f in $(grep -lzxF -- "$dir" /proc/[0-9]*/cmdline 2>/dev/null); do
    p=${f#/proc/}; p=${p%/cmdline}
    # `reelfs mount ... DIR`, or the mount helper's `reelfs SOURCE DIR -o ...` (fstab.sh)
    [[ "$(tr '\0' '\n' <"$f" 2>/dev/null | sed -n 2p)" == mount ||
       "$(tr '\0' '\n' <"$f" 2>/dev/null | sed -n 1p)" == "$REELFS_BIN" ]] && echo "$p"
  done
  return 0
}

_kill_wait() {  # _kill_wait PID: TERM, up to 5 s, then KILL
  local pid=$1 i
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

e2e_teardown() {
  local rc=$? d p h
  trap - EXIT
  trap "" INT TERM  # a second signal must not cut the teardown short
  [[ -n "$WATCHDOG_PID" ]] && { kill -TERM "$WATCHDOG_PID" 2>/dev/null || true; wait "$WATCHDOG_PID" 2>/dev/null || true; }
  for d in "${MOUNTED_DIRS[@]}"; do
    unmount_dir "$d"
    for p in $(daemon_pids_for "$d"); do _kill_wait "$p"; done
  done
  [[ -n "$MOUNT_PID" ]] && _kill_wait "$MOUNT_PID"
  [[ -n "$GW_PID" ]] && _kill_wait "$GW_PID"
  for p in "${EXTRA_PIDS[@]}"; do _kill_wait "$p"; done
  for d in "${MOUNTED_DIRS[@]}"; do
    if _mounted "$d"; then echo "teardown: $d still mounted, keeping $WORK" >&2; KEEP_WORK=1; fi
  done
  if [[ -n "${WORK:-}" && -d "$WORK" ]]; then
    if [[ "${KEEP_WORK:-0}" == 1 ]]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
  fi
  for h in "${EXIT_HOOKS[@]}"; do eval "$h" || echo "teardown: '$h' failed" >&2; done
  exit "$rc"
}

# The watchdog (libfuse: every test has a timeout): after SECONDS it kills the reelfs daemons (which
# aborts the FUSE connection, so a read stuck in the kernel returns ENOTCONN) and then TERMs the
# test, whose EXIT trap tears everything down. It runs below CTest's TIMEOUT, because CTest's own
# timeout kills without running traps.
_start_watchdog() {
  local secs=$1 main=$$
  (
    sleep "$secs" </dev/null >/dev/null 2>&1 &
    spid=$!
    trap 'kill $spid 2>/dev/null; exit 0' TERM
    wait "$spid"
    echo "TIMEOUT: no result after ${secs}s; aborting the mount" >&2
    if [[ -s "$WORK/mounts" ]]; then
      while read -r d; do
        for p in $(daemon_pids_for "$d"); do kill -KILL "$p" 2>/dev/null || true; done
      done <"$WORK/mounts"
    fi
    kill -TERM "$main" 2>/dev/null || true
  ) &
  WATCHDOG_PID=$!
}

e2e_init() {
  local name=$1 secs=${2:-240}
  [[ -n "${REELFS_GATEWAY_BIN:-}" && -x "${REELFS_GATEWAY_BIN}" ]] ||
    skip "REELFS_GATEWAY_BIN not set or not executable (build target reelfs-gateway)"
  [[ -n "${REELFS_BIN:-}" && -x "${REELFS_BIN}" ]] ||
    skip "REELFS_BIN not set or not executable (build target reelfs)"
  command -v fusermount3 >/dev/null || skip "fusermount3 not installed (Debian package fuse3)"
  [[ -e /dev/fuse ]] || skip "/dev/fuse does not exist"
  { exec 9<>/dev/fuse; } 2>/dev/null || skip "/dev/fuse cannot be opened (no permission, or no FUSE in this container)"
  exec 9<&-
  PY=$(find_python os) || skip "python3 not found"

  WORK=$(mktemp -d "${TMPDIR:-/tmp}/reelfs-e2e-$name.XXXXXX")
  ROOT="$WORK/root"
  MNT="$WORK/mnt"
  mkdir -p "$ROOT" "$MNT"
  : >"$WORK/mounts"
  trap e2e_teardown EXIT
  trap 'echo "terminated" >&2; exit 143' TERM
  trap 'echo "interrupted" >&2; exit 130' INT
  _start_watchdog "$secs"

  export GW_ACCESS_KEY="AKIDREELFSE2E"
  export GW_SECRET_KEY="e2e/secret+key/0123456789abcdef"
  export AWS_ACCESS_KEY_ID=$GW_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$GW_SECRET_KEY
  export AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1
  export AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null
  unset AWS_PROFILE AWS_SESSION_TOKEN
  echo "work dir: $WORK"
}

# start_gateway [PORT] [ARGS...]: tests/lib/gateway.sh, shared with the interop tests.
source "$(dirname "${BASH_SOURCE[0]}")/../lib/gateway.sh"
# E2E_SERVER=rgw (tests/ceph/run.sh): the same scripts against Ceph RGW; start_gateway uploads
# $ROOT with the AWS CLI instead of starting reelfs-gateway.
if [[ "${E2E_SERVER:-gateway}" == rgw ]]; then
  source "$(dirname "${BASH_SOURCE[0]}")/../ceph/rgw_server.sh"
fi

# gateway_crash_report RC: for a gateway that died of a signal (RC > 128), the backtrace of its
# core file when there is one and gdb is installed (kernel.core_pattern "core": the test's
# working directory), else a line saying why there is none.
gateway_crash_report() {
  local rc=$1 core
  (( rc > 128 )) || return 0
  core=$(ls -t core core.* 2>/dev/null | head -1)
  if [[ -z "$core" ]] || ! command -v gdb >/dev/null; then
    echo "(no backtrace: core file '${core:-none}' in $PWD, core_pattern '$(cat /proc/sys/kernel/core_pattern 2>/dev/null)', gdb $(command -v gdb || echo missing))"
    return 0
  fi
  gdb -batch -q -ex 'thread apply all bt 20' "$REELFS_GATEWAY_BIN" "$core" 2>&1 | grep -E '^(Thread|#)' | head -80
}

kill_gateway_hard() {  # SIGKILL, no goodbye
  kill -KILL "$GW_PID" 2>/dev/null || true
  wait "$GW_PID" 2>/dev/null || true
  GW_PID=""
}

# wait_mounted DIR [PID]: until DIR is in /proc/mounts (deadline 30 s); fails early if PID died.
wait_mounted() {
  local dir=$1 pid=${2:-} i
  for i in $(seq 300); do
    _mounted "$dir" && return 0
    if [[ -n "$pid" ]] && ! kill -0 "$pid" 2>/dev/null; then
      local rc=0; wait "$pid" 2>/dev/null || rc=$?
      fail "reelfs mount exited with $rc before $dir was mounted"
    fi
    sleep 0.1
  done
  fail "$dir not mounted after 30 s"
}

# mount_bucket SPEC [options...]: `reelfs mount SPEC $MNT -f` in the background; sets MOUNT_PID.
# MOUNT_DIR=... overrides the mount point, MOUNT_LOG=... the log file.
mount_bucket() {
  local spec=$1; shift
  local dir=${MOUNT_DIR:-$MNT} log=${MOUNT_LOG:-$WORK/mount.log}
  mkdir -p "$dir"
  echo "$dir" >>"$WORK/mounts"
  MOUNTED_DIRS+=("$dir")
  # A background job of a non-interactive shell starts with SIGINT ignored; give the daemon the
  # default disposition, as a terminal's Ctrl-C would find it.
  env --default-signal=INT "$REELFS_BIN" mount "$spec" "$dir" --endpoint "$ENDPOINT" -f --log-file "$log" "$@" \
    </dev/null >>"$log.out" 2>&1 &
  MOUNT_PID=$!
  wait_mounted "$dir" "$MOUNT_PID"
}

# metrics_of PYTHON_EXPR(m) [MOUNT]: a value of MOUNT's user.reelfs.metrics (default $MNT), the
# parsed JSON bound to m (e.g. 'm["fs"]["bytes_read"]').
metrics_of() {
  getfattr --absolute-names --only-values -n user.reelfs.metrics "${2:-$MNT}" |
    "$PY" -c 'import json,sys; m=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"
}

# unmount_and_wait DIR PID: fusermount3 -u, then the -f daemon must exit 0 within 10 s.
unmount_and_wait() {
  local dir=$1 pid=$2 i rc=0
  fusermount3 -u "$dir" || fail "fusermount3 -u $dir failed"
  for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && fail "reelfs daemon $pid still running 10 s after fusermount3 -u"
  wait "$pid" || rc=$?
  [[ $rc -eq 0 ]] || fail "reelfs daemon exited with $rc after fusermount3 -u"
  _mounted "$dir" && fail "$dir still in /proc/mounts after fusermount3 -u"
  return 0
}

# Deterministic content generators (python, seeded): fast enough for hundreds of MiB on 2 cores.
# gen_file PATH SIZE SEED: pseudo-random bytes; prints the sha256.
gen_file() {
  "$PY" - "$@" <<'PY'
import hashlib, random, sys
path, size, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
block = rng.randbytes(min(size, 1 << 24)) if size else b""
h = hashlib.sha256()
with open(path, "wb") as f:
    left = size
    i = 0
    while left:
        # every 16 MiB block differs (a counter prefix), so misplaced blocks are caught
        chunk = (i.to_bytes(8, "little") + block[8:])[:left]
        f.write(chunk); h.update(chunk)
        left -= len(chunk); i += 1
print(h.hexdigest())
PY
}

# gen_big_file PATH SIZE: AES-CTR keystream (openssl, ~1 GB/s) or gen_file; prints the sha256.
gen_big_file() {
  local path=$1 size=$2
  if command -v openssl >/dev/null; then
    { openssl enc -aes-128-ctr -pass pass:reelfs-e2e -nosalt -pbkdf2 </dev/zero 2>/dev/null || true; } |
      head -c "$size" | tee "$path" | sha256sum | cut -d' ' -f1
  else
    gen_file "$path" "$size" 7
  fi
}

# sums DIR: "sha256  ./relative/path" for every file under DIR, sorted, NUL-safe.
sums() { (cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum); }
