#!/usr/bin/env bash
# reelfs mount vs s3fs-fuse vs rclone mount vs raw HTTP (curl): one script, one run, one
# reelfs-gateway, one dataset. See bench/fuse/README.md for what each number means.
#
#   bench/fuse/run.sh                 # reduced sizes (see below), ~15-20 min on 2 cores
#   FULL=1 bench/fuse/run.sh          # the issue's sizes: 4 GiB, 10 000 x 64 KiB, 100 000 entries
#   TOOLS="s3fs curl" CASES="seq1 ls" LARGE_MIB=256 bench/fuse/run.sh   # a quick subset
#   SERVER=ceph bench/fuse/run.sh     # the same table against Ceph RGW (tests/ceph/cluster.sh)
#
# Environment (all optional):
#   SERVER=gateway|ceph    reelfs-gateway over the dataset's directory (default), or a one-host
#                          Ceph cluster with radosgw started here, the dataset uploaded with the
#                          AWS CLI (smaller defaults: 2 500 small files, 10 000 entries)
#   BUILD_DIR=build        where reelfs-gateway (gateway/) and reelfs (cli/) are
#   FULL=0|1               defaults for the sizes below (0: reduced, 1: the issue's)
#   LARGE_MIB              size of large.bin                  (FULL: 4096,   else 1024)
#   SMALL_FILES, SMALL_KIB small files and their size         (FULL: 10000,  else 5000; 64)
#   DIR_ENTRIES            entries of the ls -l directory     (FULL: 100000, else 100000)
#   SEQ_SECONDS=15         cap on each sequential fio job (it stops at the end of its range or here)
#   RAND_SECONDS=10        random 256 KiB reads run this long (fio); RAND_CURL_COUNT=1000 for curl
#   SMALL_SECONDS=300      cap on the small-files pass (files not reached count as a failure)
#   LS_TIMEOUT             cap on each ls -l (FULL: 300, else 120); the cell then reads "> N s"
#   ROUNDS=1               repeat every case; cells are medians
#   TOOLS="reelfs s3fs rclone curl"   CASES="seq1 seq4 seq1d seq4d rand small ls ttfb"
#                          TOOLS may add hp: the FUSE ceiling, libfuse 3.17's passthrough_hp
#                          (scripts/libfuse317.sh) over a tmpfs copy of large.bin, with splice and
#                          copying (--nosplice), in the seq1 and seq4 cases (a table of its own)
#   HOG=1                  a one-CPU busy loop runs beside every case (a GPU host's CPUs are busy
#                          feeding the GPU); compare a HOG=1 run's ratios with a quiet run's
#   MAX_MEMORY=1GiB        reelfs --max-memory (and the RSS target)
#   REELFS_OPTS, S3FS_OPTS, RCLONE_OPTS   extra mount options (appended)
#   RESULT_FILE            where the markdown goes (default /tmp/reelfs-fuse-bench-DATE.md)
#   BENCH_TMP=/tmp         parent of the work directory; KEEP_WORK=1 keeps it
#
# Every case gets a fresh mount (no page cache, metadata or prefetch state carried over), each
# tool's failure lands in its cell as "failed: reason", and the EXIT trap unmounts everything
# (fusermount3 -u, then -uz) and stops the gateway and the daemons it started.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
here=bench/fuse
# shellcheck source=bench/fuse/lib.sh
. "$here/lib.sh"

FULL=${FULL:-0}
SERVER=${SERVER:-gateway}
if [ "$FULL" = 1 ]; then d_large=4096; d_small=10000; d_dir=100000; d_ls=300; else d_large=1024; d_small=5000; d_dir=100000; d_ls=120; fi
# Every object goes through the AWS CLI into RGW: keep the counts to what uploads in minutes.
if [ "$SERVER" = ceph ] && [ "$FULL" != 1 ]; then d_small=2500; d_dir=10000; fi
LARGE_MIB=${LARGE_MIB:-$d_large}
SMALL_FILES=${SMALL_FILES:-$d_small}
SMALL_KIB=${SMALL_KIB:-64}
DIR_ENTRIES=${DIR_ENTRIES:-$d_dir}
SEQ_SECONDS=${SEQ_SECONDS:-15}
RAND_SECONDS=${RAND_SECONDS:-10}
RAND_CURL_COUNT=${RAND_CURL_COUNT:-1000}
SMALL_SECONDS=${SMALL_SECONDS:-300}
LS_TIMEOUT=${LS_TIMEOUT:-$d_ls}
ROUNDS=${ROUNDS:-1}
TOOLS=${TOOLS:-"reelfs s3fs rclone curl"}
CASES=${CASES:-"seq1 seq4 seq1d seq4d rand small ls ttfb"}
BUILD_DIR=${BUILD_DIR:-build}
MAX_MEMORY=${MAX_MEMORY:-1GiB}
REELFS_OPTS=${REELFS_OPTS:-}
S3FS_OPTS=${S3FS_OPTS:-}
RCLONE_OPTS=${RCLONE_OPTS:-}
stamp=$(date -u +%Y%m%d-%H%M%S)
RESULT_FILE=${RESULT_FILE:-/tmp/reelfs-fuse-bench-$stamp.md}
BENCH_TMP=${BENCH_TMP:-${TMPDIR:-/tmp}}

gw=$BUILD_DIR/gateway/reelfs-gateway
reelfs=$BUILD_DIR/cli/reelfs
# a plain interpreter: a pyenv shim costs seconds per call on a loaded machine
PYTHON=${PYTHON:-$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || command -v python3 )}
py() { "$PYTHON" "$here/bench.py" "$@"; }
log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }

# ---------------------------------------------------------------------------------- preflight
declare -A unavailable   # tool -> reason (its whole column says "failed: reason")
missing=()
for c in python3 fio curl fusermount3 timeout; do command -v "$c" >/dev/null || missing+=("$c"); done
[ -x "$gw" ] || missing+=("$gw (cmake --build $BUILD_DIR --target reelfs-gateway)")
[ -c /dev/fuse ] || missing+=("/dev/fuse")
if [ ${#missing[@]} -gt 0 ]; then
  echo "preflight: missing: ${missing[*]}" >&2
  echo "  (scripts/setup.sh installs fio, s3fs, rclone, fuse3; BUILD_DIR=$BUILD_DIR)" >&2
  exit 1
fi
for t in $TOOLS; do
  case $t in
    reelfs)
      if [ ! -x "$reelfs" ]; then unavailable[reelfs]="$reelfs not built"
      # Captured first: `| grep -q` under pipefail fails when grep's early exit SIGPIPEs reelfs.
      elif [[ "$("$reelfs" mount --help 2>&1)" != *--max-memory* ]]; then
        unavailable[reelfs]="$reelfs has no mount subcommand"
      fi ;;
    s3fs) command -v s3fs >/dev/null || unavailable[s3fs]="s3fs not installed (apt-get install s3fs)" ;;
    rclone) command -v rclone >/dev/null || unavailable[rclone]="rclone not installed (apt-get install rclone)" ;;
    curl) ;;
    hp) why=$(bench_hp_check) || unavailable[hp]=$why
        bench_hp_check >/dev/null ;;
    *) echo "unknown tool $t (reelfs s3fs rclone curl hp)" >&2; exit 1 ;;
  esac
  [ -n "${unavailable[$t]:-}" ] && echo "preflight: $t: ${unavailable[$t]} (its cells will say so)" >&2
done
for c in $CASES; do
  case $c in seq1|seq4|seq1d|seq4d|rand|small|ls|ttfb) ;; *) echo "unknown case $c" >&2; exit 1 ;; esac
done

# ------------------------------------------------------------------------- work dir, cleanup
work=$(mktemp -d "$BENCH_TMP/reelfs-fuse-bench.XXXXXX")
mkdir -p "$work/logs" "$work/mnt"
gw_pid=""
hog_pid=""
hp_src=""
declare -A daemon_pid     # mountpoint -> daemon pid
is_mounted() { grep -qs " $1 fuse" /proc/mounts; }   # never stat a possibly hung mount
unmount() {
  local m=$1 pid=${daemon_pid[$1]:-} i
  for i in 1 2 3 4 5; do
    is_mounted "$m" || break
    fusermount3 -u "$m" 2>/dev/null && break
    sleep 1
  done
  if is_mounted "$m"; then log "unmount $m: busy, detaching lazily"; fusermount3 -uz "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; fi
  if [ -n "$pid" ]; then
    for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    if kill -0 "$pid" 2>/dev/null; then log "daemon $pid did not exit after unmount: SIGTERM"; kill "$pid" 2>/dev/null; sleep 2; fi
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null
  fi
  unset "daemon_pid[$m]"
}
cleanup() {
  local m
  for m in "$work"/mnt/*; do is_mounted "$m" && unmount "$m"; done
  for m in "${!daemon_pid[@]}"; do unmount "$m"; done
  if [ -n "$hog_pid" ]; then kill "$hog_pid" 2>/dev/null; wait "$hog_pid" 2>/dev/null; fi
  if [ -n "$gw_pid" ]; then kill "$gw_pid" 2>/dev/null; wait "$gw_pid" 2>/dev/null; fi
  bench_hp_pipe_restore
  [ -n "$hp_src" ] && rm -rf "$hp_src"
  if [ "$SERVER" = ceph ]; then tests/ceph/cluster.sh down "$work/ceph" >/dev/null 2>&1; fi
  if [ "${KEEP_WORK:-0}" = 1 ]; then log "work directory kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# -------------------------------------------------------------------------- dataset, gateway
bench_credentials
bucket=bench
log "dataset: large.bin ${LARGE_MIB} MiB, ${SMALL_FILES} x ${SMALL_KIB} KiB, dir/ with ${DIR_ENTRIES} entries -> $work/root/$bucket"
t0=$(date +%s)
py gen "$work/root/$bucket" --large-mib "$LARGE_MIB" --small-files "$SMALL_FILES" \
  --small-kib "$SMALL_KIB" --dir-entries "$DIR_ENTRIES" || { echo "dataset generation failed" >&2; exit 1; }
manifest=$work/root/small.manifest
if [ "$SERVER" = ceph ]; then
  log "dataset written in $(( $(date +%s) - t0 )) s; starting a Ceph cluster (tests/ceph/cluster.sh)"
  tests/ceph/cluster.sh up "$work/ceph" >"$work/logs/ceph.log" 2>&1 ||
    { cat "$work/logs/ceph.log" >&2; echo "the Ceph cluster did not come up" >&2; exit 1; }
  # shellcheck disable=SC1091
  . "$work/ceph/cluster.env"
  export AWS_ACCESS_KEY_ID=$CEPH_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$CEPH_SECRET_KEY
  endpoint=${RGW_ENDPOINTS%% *}
  printf '[default]\ns3 =\n    max_concurrent_requests = 32\n' >"$work/aws-config"
  AWS_CONFIG_FILE=$work/aws-config aws --endpoint-url "$endpoint" s3 mb "s3://$bucket" >/dev/null &&
    AWS_CONFIG_FILE=$work/aws-config aws --endpoint-url "$endpoint" s3 cp --recursive --quiet \
      --no-progress "$work/root/$bucket" "s3://$bucket/" ||
    { echo "uploading the dataset to RGW failed" >&2; exit 1; }
  log "Ceph RGW on $endpoint, dataset uploaded by the AWS CLI after $(( $(date +%s) - t0 )) s"
else
  log "dataset written in $(( $(date +%s) - t0 )) s; starting the gateway (it indexes the root first)"
  bench_start_gateway "$gw" "$work/root" "$work" "$work/logs/gateway.log" || exit 1
  log "gateway on $endpoint after $(( $(date +%s) - t0 )) s"
fi
large_bytes=$((LARGE_MIB * 1048576))
large_url=$(py urls "$endpoint" "$bucket" large.bin)
curl -sS -f -o /dev/null "$large_url" || { echo "gateway does not serve large.bin" >&2; exit 1; }

# ttfb: five small files spread over the set, none touched before in that mount
ttfb_keys=()
for i in 0 1 2 3 4; do ttfb_keys+=("small/$(printf 'f%06d' $(( i * SMALL_FILES / 5 )))"); done

# -------------------------------------------------------------------------------- the mounts
bench_peer_configs "$work" "$endpoint"
# s3fs and rclone need ListObjectsV2 (the gateway answers v1 with 501 NotImplemented); rclone
# must not see AWS_CA_BUNDLE (it cannot load a custom CA into its transport and refuses to start).
s3fs_opts="url=$endpoint,use_path_request_style,passwd_file=$work/s3fs.passwd,sigv4,endpoint=us-east-1,listobjectsv2,ro,complement_stat,tmpdir=$work/s3fs-tmp,dbglevel=warn"
rclone_args=(--read-only --vfs-cache-mode off --cache-dir "$work/rclone-cache")
reelfs_args=(--max-memory "$MAX_MEMORY")
mkdir -p "$work/s3fs-tmp"

mount_seq=0
# mount_fs TOOL -> sets mnt (the mountpoint); on failure sets mnt to "failed: reason", returns 1
# (no subshell: daemon_pid must survive)
mount_fs() {
  local tool=$1 m rc=0 i pid p
  mount_seq=$((mount_seq + 1))
  m=$work/mnt/$tool.$mount_seq
  mkdir -p "$m"
  local mlog=$work/logs/$tool.$mount_seq.log
  case $tool in
    reelfs) # shellcheck disable=SC2086
      AWS_ENDPOINT_URL=$endpoint timeout 120 "$reelfs" mount "$bucket" "$m" "${reelfs_args[@]}" --log-file "$work/logs/reelfs.$mount_seq.daemon.log" $REELFS_OPTS >"$mlog" 2>&1 || rc=$? ;;
    s3fs)
      timeout 120 s3fs "$bucket" "$m" -o "$s3fs_opts${S3FS_OPTS:+,$S3FS_OPTS}" >"$mlog" 2>&1 || rc=$? ;;
    rclone) # shellcheck disable=SC2086
      env -u AWS_CA_BUNDLE timeout 120 rclone --config "$work/rclone.conf" mount "gw:$bucket" "$m" \
        "${rclone_args[@]}" --daemon --log-file "$mlog" --log-level NOTICE $RCLONE_OPTS >>"$mlog" 2>&1 || rc=$? ;;
  esac
  for i in $(seq 300); do is_mounted "$m" && break; sleep 0.1; done
  # the daemon: the process whose argv names this (unique) mountpoint
  pid=""
  for p in $(pgrep -f -- "$m"); do
    case $(cat "/proc/$p/comm" 2>/dev/null) in reelfs*|s3fs|rclone) pid=$p; break ;; esac
  done
  [ -n "$pid" ] && daemon_pid[$m]=$pid
  if ! is_mounted "$m"; then
    local why
    why=$(grep -v '^\s*$' "$mlog" 2>/dev/null | tail -1 | cut -c1-100)
    [ -n "$pid" ] && unmount "$m"
    mnt="failed: mount (rc $rc) ${why:-no output}"
    return 1
  fi
  mnt=$m
}
hwm_kib() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }

# ------------------------------------------------------------------------------------ cases
declare -A vals      # "case/tool" -> space-separated values (one per round) or a failure
declare -A rss_max rss_case
add() { vals[$1/$2]+="$3"$'\n'; }
clean_reason() { tr -d '|\n' | cut -c1-90; }

fio_seq() {  # FILE JOBS DIRECT TAG -> MiB/s or failed: ...
  local f=$1 jobs=$2 direct=$3 tag=$4 per out
  per=$((LARGE_MIB / jobs))
  out=$work/logs/fio.$tag.json
  timeout $((SEQ_SECONDS + 120)) fio --name="$tag" --filename="$f" --readonly --rw=read --bs=1M \
    --ioengine=psync --numjobs="$jobs" --size="${per}M" --offset_increment="${per}M" \
    --runtime="$SEQ_SECONDS" --direct="$direct" --invalidate=1 --group_reporting \
    --output-format=json --output="$out" >"$work/logs/fio.$tag.err" 2>&1
  local rc=$?
  [ $rc = 124 ] && { echo "failed: fio timed out"; return; }
  if [ $rc != 0 ] && ! [ -s "$out" ]; then echo "failed: fio rc $rc $(tail -1 "$work/logs/fio.$tag.err" | clean_reason)"; return; fi
  py fio "$out"
}
fio_rand() {
  local f=$1 tag=$2 out=$work/logs/fio.$2.json
  timeout $((RAND_SECONDS + 120)) fio --name="$tag" --filename="$f" --readonly --rw=randread --bs=256k \
    --ioengine=psync --numjobs=1 --size="${LARGE_MIB}M" --time_based --runtime="$RAND_SECONDS" \
    --randrepeat=1 --norandommap --invalidate=1 --output-format=json --output="$out" \
    >"$work/logs/fio.$tag.err" 2>&1
  local rc=$?
  [ $rc = 124 ] && { echo "failed: fio timed out"; return; }
  if [ $rc != 0 ] && ! [ -s "$out" ]; then echo "failed: fio rc $rc $(tail -1 "$work/logs/fio.$tag.err" | clean_reason)"; return; fi
  py fio "$out"
}
small_fs() {  # MNT -> files/s (all verified) or failed: ...
  local j
  j=$(timeout $((SMALL_SECONDS + 120)) "$PYTHON" "$here/bench.py" smallfiles "$1" "$manifest" --threads 8 \
      --timeout "$SMALL_SECONDS" 2>&1 | tail -1)
  echo "$j" >>"$work/logs/small.jsonl"
  "$PYTHON" - "$j" <<'EOF'
import json, sys
try:
    j = json.loads(sys.argv[1])
except ValueError:
    print("failed: " + sys.argv[1][:80].replace("|", " ")); sys.exit()
if j["errors"]:
    print(f"failed: {j['errors']} of {j['files']} files bad ({j['first_error'][:60]})")
elif j["skipped"]:
    print(f"failed: only {j['ok']} of {j['files']} files in the time cap")
else:
    print(j["files_per_s"])
EOF
}
ls_fs() {  # DIR -> seconds (entries checked) or failed: ...
  local t0 t1 n rc
  t0=$(date +%s.%N)
  timeout "$LS_TIMEOUT" ls -l --color=never "$1" >"$work/logs/ls.out" 2>"$work/logs/ls.err"; rc=$?
  t1=$(date +%s.%N)
  [ $rc = 124 ] && { echo "> ${LS_TIMEOUT} s"; return; }
  n=$(grep -vc '^total' "$work/logs/ls.out")
  [ $rc != 0 ] && { echo "failed: ls rc $rc $(head -1 "$work/logs/ls.err" | clean_reason)"; return; }
  [ "$n" != "$DIR_ENTRIES" ] && { echo "failed: $n of $DIR_ENTRIES entries"; return; }
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'
}
ttfb_fs() {
  local paths=() k j
  for k in "${ttfb_keys[@]}"; do paths+=("$1/$k"); done
  j=$(timeout 120 "$PYTHON" "$here/bench.py" ttfb "${paths[@]}" 2>&1 | tail -1)
  echo "$j" >>"$work/logs/ttfb.jsonl"
  "$PYTHON" -c 'import json,sys
try: j=json.loads(sys.argv[1])
except ValueError: print("failed: "+sys.argv[1][:80]); sys.exit()
print(j["median_ms"] if "median_ms" in j else "failed: "+j["error"][:80])' "$j"
}

run_fs_case() {  # TOOL CASE ROUND
  local tool=$1 c=$2 r=$3 m v
  if ! mount_fs "$tool"; then
    m=$mnt
    case $c in ls) add lscold "$tool" "$m"; add lswarm "$tool" "$m" ;; *) add "$c" "$tool" "$m" ;; esac
    return
  fi
  m=$mnt
  case $c in
    seq1) v=$(fio_seq "$m/large.bin" 1 0 "$tool.$c.$r") ;;
    seq4) v=$(fio_seq "$m/large.bin" 4 0 "$tool.$c.$r") ;;
    seq1d) v=$(fio_seq "$m/large.bin" 1 1 "$tool.$c.$r") ;;
    seq4d) v=$(fio_seq "$m/large.bin" 4 1 "$tool.$c.$r") ;;
    rand) v=$(fio_rand "$m/large.bin" "$tool.$c.$r") ;;
    small) v=$(small_fs "$m") ;;
    ttfb) v=$(ttfb_fs "$m") ;;
    ls) v=$(ls_fs "$m/dir"); add lscold "$tool" "$v"
        case $v in '>'*) v="n/a (cold run over the cap)" ;; *) v=$(ls_fs "$m/dir") ;; esac
        c=lswarm ;;
  esac
  add "$c" "$tool" "$v"
  local pid=${daemon_pid[$m]:-} h
  if [ -n "$pid" ]; then
    h=$(hwm_kib "$pid")
    if [ -n "$h" ] && [ "$h" -gt "${rss_max[$tool]:-0}" ]; then rss_max[$tool]=$h; rss_case[$tool]=$c; fi
    echo "$tool $c round $r: VmHWM ${h:-?} KiB" >>"$work/logs/rss.txt"
  fi
  unmount "$m"
}

curl_seq() {  # STREAMS -> MiB/s: STREAMS ranged GETs over the first LARGE_MIB (capped at SEQ_SECONDS)
  local n=$1 i t0 t1 bytes=0 b part
  part=$((large_bytes / n))
  t0=$(date +%s.%N)
  for i in $(seq 0 $((n - 1))); do
    curl -sS -o /dev/null --max-time "$SEQ_SECONDS" -w '%{size_download}\n' \
      --range "$((i * part))-$((i * part + part - 1))" "$large_url" >"$work/logs/curl.$i" 2>&1 &
  done
  wait
  t1=$(date +%s.%N)
  for i in $(seq 0 $((n - 1))); do b=$(grep -E '^[0-9]+$' "$work/logs/curl.$i" | tail -1); bytes=$((bytes + ${b:-0})); done
  [ "$bytes" -gt 0 ] || { echo "failed: curl $(head -1 "$work/logs/curl.0" | clean_reason)"; return; }
  awk -v b="$bytes" -v a="$t0" -v c="$t1" 'BEGIN { printf "%.1f", b / 1048576 / (c - a) }'
}
curl_rand() {
  local cfg=$work/curl.rand.cfg t0 t1 ok
  py curlcfg-rand "$large_url" "$large_bytes" --count "$RAND_CURL_COUNT" --seed 1 >"$cfg"
  t0=$(date +%s.%N)
  curl -sS -K "$cfg" >"$work/logs/curl.rand" 2>"$work/logs/curl.rand.err"
  t1=$(date +%s.%N)
  ok=$(grep -c '^206 262144$' "$work/logs/curl.rand")
  [ "$ok" = "$RAND_CURL_COUNT" ] || { echo "failed: $ok of $RAND_CURL_COUNT ranges"; return; }
  awk -v n="$ok" -v a="$t0" -v c="$t1" 'BEGIN { printf "%.1f", n * 0.25 / (c - a) }'
}
curl_small() {
  local cfg=$work/curl.small.cfg t0 t1 ok
  py curlcfg-small "$endpoint" "$bucket" "$manifest" --seed 1 >"$cfg"
  t0=$(date +%s.%N)
  timeout $((SMALL_SECONDS + 60)) curl -sS --parallel --parallel-max 8 -K "$cfg" \
    -w '%{http_code} %{size_download}\n' >"$work/logs/curl.small" 2>"$work/logs/curl.small.err"
  t1=$(date +%s.%N)
  ok=$(grep -c "^200 $((SMALL_KIB * 1024))\$" "$work/logs/curl.small")
  [ "$ok" = "$SMALL_FILES" ] || { echo "failed: $ok of $SMALL_FILES files"; return; }
  awk -v n="$ok" -v a="$t0" -v c="$t1" 'BEGIN { printf "%.1f", n / (c - a) }'
}
curl_list() {
  local j
  j=$(timeout "$LS_TIMEOUT" "$PYTHON" "$here/bench.py" rawlist "$endpoint" "$bucket" dir/ 2>&1 | tail -1)
  "$PYTHON" -c 'import json,sys
try: j=json.loads(sys.argv[1])
except ValueError: print("failed: "+sys.argv[1][:80]); sys.exit()
if "error" in j: print("failed: "+j["error"][:80])
elif j["entries"]!=int(sys.argv[2]): print("failed: %d entries" % j["entries"])
else: print(j["seconds"])' "$j" "$DIR_ENTRIES"
}
curl_ttfb() {
  local k v=() t
  for k in $(py urls "$endpoint" "$bucket" "${ttfb_keys[@]}"); do
    t=$(curl -sS -o /dev/null --range 0-4095 -w '%{time_starttransfer}' "$k") || { echo "failed: curl"; return; }
    v+=("$(awk -v t="$t" 'BEGIN { printf "%.2f", t * 1000 }')")
  done
  bench_median "${v[@]}"
}
run_curl_case() {
  local c=$1
  case $c in
    seq1) add seq1 curl "$(curl_seq 1)" ;;
    seq4) add seq4 curl "$(curl_seq 4)" ;;
    seq1d|seq4d) add "$c" curl "n/a" ;;
    rand) add rand curl "$(curl_rand)" ;;
    small) add small curl "$(curl_small)" ;;
    ls) add lscold curl "$(curl_list)"; add lswarm curl "$(curl_list)"
        ls_fs "$work/root/$bucket/dir" >/dev/null   # what ls -l itself costs: local disk, warm
        add lslocal curl "$(ls_fs "$work/root/$bucket/dir")" ;;
    ttfb) add ttfb curl "$(curl_ttfb)" ;;
  esac
}

# the FUSE ceiling reads a tmpfs copy of the same bytes (passthrough_hp serves a directory)
if [[ " $TOOLS " == *" hp "* ]] && [ -z "${unavailable[hp]:-}" ]; then
  if hp_src=$(mktemp -d /dev/shm/reelfs-hp.XXXXXX) && cp "$work/root/$bucket/large.bin" "$hp_src/"; then
    bench_hp_pipe_raise
    log "passthrough_hp over $hp_src ($hp_pipe_note)"
  else
    unavailable[hp]="no room for a tmpfs copy of large.bin in /dev/shm"
  fi
fi
run_hp_case() {  # CASE ROUND: the ceiling rows (sequential buffered reads only)
  local c=$1 r=$2 mode m v
  case $c in seq1|seq4) ;; *) return ;; esac
  for mode in splice copy; do
    mount_seq=$((mount_seq + 1))
    m=$work/mnt/hp-$mode.$mount_seq
    mkdir -p "$m"
    if ! bench_hp_start "$mode" "$hp_src" "$m" "$work/logs/hp-$mode.$mount_seq.log"; then
      add "$c" "hp-$mode" "failed: passthrough_hp $(tail -n 1 "$work/logs/hp-$mode.$mount_seq.log" | clean_reason)"
      continue
    fi
    daemon_pid[$m]=$hp_pid
    case $c in
      seq1) v=$(fio_seq "$m/large.bin" 1 0 "hp-$mode.$c.$r") ;;
      seq4) v=$(fio_seq "$m/large.bin" 4 0 "hp-$mode.$c.$r") ;;
    esac
    add "$c" "hp-$mode" "$v"
    unmount "$m"
  done
}

if [ "${HOG:-0}" = 1 ]; then
  ( while :; do :; done ) &
  hog_pid=$!
  log "a one-CPU busy loop (pid $hog_pid) runs beside every case"
fi
started=$(date +%s)
curl -sS -o /dev/null "$large_url"   # warm the gateway's page cache for every tool alike
for c in $CASES; do
  for r in $(seq "$ROUNDS"); do
    for t in $TOOLS; do
      if [ -n "${unavailable[$t]:-}" ]; then
        [ "$t" = hp ] && { add "$c" hp-splice "failed: ${unavailable[$t]}"; continue; }
        case $c in ls) add lscold "$t" "failed: ${unavailable[$t]}"; add lswarm "$t" "failed: ${unavailable[$t]}" ;;
                   *) add "$c" "$t" "failed: ${unavailable[$t]}" ;; esac
        continue
      fi
      log "$c round $r: $t"
      if [ "$t" = curl ]; then run_curl_case "$c"
      elif [ "$t" = hp ]; then run_hp_case "$c" "$r"; [[ $c == seq1 || $c == seq4 ]] || continue
      else run_fs_case "$t" "$c" "$r"; fi
      if [ "$SERVER" = gateway ] && ! kill -0 "$gw_pid" 2>/dev/null; then
        wait "$gw_pid"; log "the gateway died (exit $?) during $c/$t: stopping; cells after it stay empty"
        gw_pid=""; break 3
      fi
      [ "$t" = hp ] && { log "  -> splice $(echo "${vals[$c/hp-splice]}" | tail -2 | head -1), copy $(echo "${vals[$c/hp-copy]}" | tail -2 | head -1)"; continue; }
      log "  -> $(case $c in ls) printf 'cold %s warm %s' "$(echo "${vals[lscold/$t]}" | tail -2 | head -1)" "$(echo "${vals[lswarm/$t]}" | tail -2 | head -1)";; *) echo "${vals[$c/$t]}" | tail -2 | head -1;; esac)"
    done
  done
done
elapsed=$(( $(date +%s) - started ))

# ------------------------------------------------------------------------------------ table
cell() {  # CASE TOOL -> median of the numeric values, or the first failure, or empty
  local raw=${vals[$1/$2]:-} nums
  [ -z "$raw" ] && return
  nums=$(echo "$raw" | grep -E '^[0-9.]+$' | tr '\n' ' ')
  # shellcheck disable=SC2086
  if [ -n "$nums" ]; then bench_median $nums; else echo "$raw" | grep -v '^$' | head -1; fi
}
num() { [[ $1 =~ ^[0-9.]+$ ]] && echo "$1"; }
ratio() { [ -n "$(num "$1")" ] && [ -n "$(num "$2")" ] && awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b }'; }
budget_mib=$("$PYTHON" -c 'import re,sys
m=re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMGT]?)(i?B)?", sys.argv[1].strip(), re.I)
f={"":1/1048576,"K":1/1024,"M":1,"G":1024,"T":1048576}[m.group(2).upper()] if m else 0
print(int(float(m.group(1))*f) if m else 0)' "$MAX_MEMORY")

rows="seq1 seq4 seq1d seq4d rand small lscold lswarm ttfb rss"
label() {
  case $1 in
    seq1) echo "sequential read, 1 job, buffered (MiB/s)" ;;
    seq4) echo "sequential read, 4 jobs, buffered (MiB/s)" ;;
    seq1d) echo "sequential read, 1 job, O_DIRECT (MiB/s)" ;;
    seq4d) echo "sequential read, 4 jobs, O_DIRECT (MiB/s)" ;;
    rand) echo "random 256 KiB reads, 1 job (MiB/s)" ;;
    small) echo "$SMALL_FILES × $SMALL_KIB KiB files, random order, 8 threads (files/s)" ;;
    lscold) echo "ls -l of $DIR_ENTRIES entries, cold (s)" ;;
    lswarm) echo "ls -l of $DIR_ENTRIES entries, warm (s)" ;;
    ttfb) echo "time to first 4 KiB of an untouched file (ms, median of 5)" ;;
    rss) echo "peak RSS of the daemon, max over its mounts (MiB)" ;;
  esac
}
higher_better() { case $1 in lscold|lswarm|ttfb|rss) return 1 ;; *) return 0 ;; esac; }
declare -A C
for t in reelfs s3fs rclone curl; do
  for r in $rows; do
    if [ "$r" = rss ]; then
      if [ "$t" = curl ]; then C[$r/$t]="n/a"
      elif [ -n "${rss_max[$t]:-}" ]; then C[$r/$t]=$(awk -v k="${rss_max[$t]}" 'BEGIN { printf "%.0f", k / 1024 }')
      else C[$r/$t]=""; fi
    else
      C[$r/$t]=$(cell "$r" "$t")
    fi
  done
done
present() { echo " $TOOLS " | grep -q " $1 "; }
{
  echo "| case | reelfs | s3fs | rclone | raw HTTP (curl) | reelfs ÷ raw HTTP | reelfs vs s3fs |"
  echo "|---|---|---|---|---|---|---|"
  for r in $rows; do
    a=${C[$r/reelfs]:-}; s=${C[$r/s3fs]:-}; rc=${C[$r/rclone]:-}; h=${C[$r/curl]:-}
    present reelfs || a="—"; present s3fs || s="—"; present rclone || rc="—"; present curl || h="—"
    if higher_better "$r"; then vh=$(ratio "$a" "$h"); vs=$(ratio "$a" "$s"); [ -n "$vs" ] && vs="${vs}×"
    else vh=""; [ "$r" != rss ] && vh=$(ratio "$a" "$h"); vs=$(ratio "$s" "$a"); [ -n "$vs" ] && vs="${vs}× faster"; [ "$r" = rss ] && vs=""
      [[ $s =~ ^\>\ ([0-9.]+)\ s$ ]] && [ -n "$(num "$a")" ] && vs="> $(ratio "${BASH_REMATCH[1]}" "$a")× faster"; fi
    [ "$r" = rss ] && [ -n "$(num "$a")" ] && vh="budget ${budget_mib} MiB" && [ -n "${rss_case[reelfs]:-}" ] && a="$a (in $(echo "${rss_case[reelfs]}"))"
    [ "$r" = rss ] && [ -n "${rss_case[s3fs]:-}" ] && s="$s (in ${rss_case[s3fs]})"
    [ "$r" = rss ] && [ -n "${rss_case[rclone]:-}" ] && rc="$rc (in ${rss_case[rclone]})"
    printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$(label "$r")" "${a:-—}" "${s:-—}" "${rc:-—}" "${h:-—}" "${vh:-}" "${vs:-}"
  done
  echo
  echo "| design target | measured | met |"
  echo "|---|---|---|"
  target() {  # NAME VALUE-TEXT OK(1/0/empty)
    local m="?"; [ "$3" = 1 ] && m="yes"; [ "$3" = 0 ] && m="**no**"; [ -z "$3" ] && m="not measured"
    printf '| %s | %s | %s |\n' "$1" "$2" "$m"
  }
  x=$(ratio "${C[seq1/reelfs]}" "${C[seq1/curl]}")
  target "sequential single stream ≥ 90 % of raw HTTP" "${x:-—} (buffered; O_DIRECT $(ratio "${C[seq1d/reelfs]}" "${C[seq1/curl]}"))" "$([ -n "$x" ] && awk -v x="$x" 'BEGIN { print (x >= 0.9) }')"
  x=$(ratio "${C[seq1/reelfs]}" "${C[seq1/curl]}")
  target "sequential single stream, buffered, ≥ 0.8× raw HTTP (issue 19)" "${x:-—}" "$([ -n "$x" ] && awk -v x="$x" 'BEGIN { print (x >= 0.8) }')"
  for r in seq1 seq4; do
    x=$(ratio "${C[$r/reelfs]}" "$(cell "$r" hp-splice)")
    target "$(label "$r" | sed 's/ (MiB\/s)//') ≥ 0.8× the FUSE ceiling (passthrough_hp, splice)" "${x:-—}" "$([ -n "$x" ] && awk -v x="$x" 'BEGIN { print (x >= 0.8) }')"
  done
  x=$(ratio "${C[seq1/reelfs]}" "${C[seq1/s3fs]}")
  target "sequential single stream ≥ 3× s3fs" "${x:-—}×" "$([ -n "$x" ] && awk -v x="$x" 'BEGIN { print (x >= 3) }')"
  x=$(ratio "${C[small/reelfs]}" "${C[small/s3fs]}")
  target "small files ≥ 5× s3fs" "${x:-—}×" "$([ -n "$x" ] && awk -v x="$x" 'BEGIN { print (x >= 5) }')"
  x=$(num "${C[lswarm/reelfs]}"); l=$(num "$(cell lslocal curl)"); note=""
  [ -n "$l" ] && note=" (the same ls -l of the local copy of dir/ on the gateway host: $l s)"
  target "ls -l of $DIR_ENTRIES entries < 2 s warm" "${x:-—} s$note" "$([ -n "$x" ] && awk -v x="$x" 'BEGIN { print (x < 2) }')"
  x=${rss_max[reelfs]:-}
  target "peak RSS within --max-memory $MAX_MEMORY" "$([ -n "$x" ] && awk -v k="$x" 'BEGIN { printf "%.0f MiB", k / 1024 }')" "$([ -n "$x" ] && [ "$budget_mib" -gt 0 ] && awk -v k="$x" -v b="$budget_mib" 'BEGIN { print (k / 1024 <= b) }')"
} >"$work/table.md"
if [[ " $TOOLS " == *" hp "* ]]; then
  {
    echo
    echo "FUSE ceiling: the same bytes (a tmpfs copy of large.bin) through libfuse 3.17's passthrough_hp example, fio as above; read_ahead_kb 4096 on its mount as on reelfs's; ${hp_pipe_note:-}."
    echo
    echo "| case | passthrough_hp, splice | passthrough_hp, copy (--nosplice) | reelfs | reelfs ÷ splice | reelfs ÷ copy |"
    echo "|---|---|---|---|---|---|"
    for r in seq1 seq4; do
      case " $CASES " in *" $r "*) ;; *) continue ;; esac
      sp=$(cell "$r" hp-splice); cp_=$(cell "$r" hp-copy); a=${C[$r/reelfs]:-}
      printf '| %s | %s | %s | %s | %s | %s |\n' "$(label "$r")" "${sp:-—}" "${cp_:-—}" "${a:-—}" "$(ratio "$a" "$sp")" "$(ratio "$a" "$cp_")"
    done
  } >>"$work/table.md"
fi

{
  echo "## bench/fuse/run.sh — $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "Command: \`$(for v in SERVER FULL HOG LARGE_MIB SMALL_FILES SMALL_KIB DIR_ENTRIES SEQ_SECONDS RAND_SECONDS RAND_CURL_COUNT SMALL_SECONDS LS_TIMEOUT ROUNDS TOOLS CASES BUILD_DIR MAX_MEMORY REELFS_OPTS S3FS_OPTS RCLONE_OPTS; do [ -n "$(printenv $v)" ] && printf '%s=%q ' "$v" "$(printenv $v)"; done)bench/fuse/run.sh\`  "
  echo "Machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) RAM, Linux $(uname -r); shared with other jobs, so compare ratios within a run.  "
  [ -n "$hog_pid" ] && echo "**HOG=1: a one-CPU busy loop (a shell \`while :\`) ran beside every case.**  "
  echo "Sizes: large.bin $LARGE_MIB MiB; $SMALL_FILES × $SMALL_KIB KiB; $DIR_ENTRIES entries. Sequential jobs stop at the end of their range or after ${SEQ_SECONDS} s; random reads run ${RAND_SECONDS} s (curl: $RAND_CURL_COUNT ranges); $ROUNDS round(s), medians. Cases took ${elapsed} s.  "
  [ "$SERVER" = ceph ] && echo "Server: Ceph RGW $(radosgw --version 2>/dev/null | awk '{ print $3 }') (one mon, one mgr, one memstore OSD, radosgw beast; tests/ceph/cluster.sh) on the same 2 CPUs, objects uploaded by the AWS CLI.  "
  echo "Versions: reelfs $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet -- fuse cli 2>/dev/null || echo '+dirty'), $(s3fs --version 2>/dev/null | head -1 | sed -E 's/.*V([0-9.]+).*/s3fs \1/'), $(rclone version 2>/dev/null | head -1), $(fio --version), $(curl --version | head -1 | cut -d' ' -f1,2)."
  echo
  cat "$work/table.md"
  echo
  echo "Mount options: reelfs \`mount $bucket MNT ${reelfs_args[*]} $REELFS_OPTS\`; s3fs \`-o url=…,use_path_request_style,sigv4,endpoint=us-east-1,listobjectsv2,ro,complement_stat${S3FS_OPTS:+,$S3FS_OPTS}\` (defaults otherwise: parallel_count 5, multipart_size 10, no use_cache); rclone \`mount --read-only --vfs-cache-mode off $RCLONE_OPTS\` (list_version 2, defaults otherwise: vfs-read-chunk-size 128M, buffer-size 16M). Raw HTTP: curl on presigned URLs (ranged GETs; small files with \`--parallel --parallel-max 8\`), LIST with python http.client on one keep-alive connection."
} >"$work/result.md"
cp "$work/result.md" "$RESULT_FILE"
cat "$work/result.md"
echo
echo "written to $RESULT_FILE" >&2
