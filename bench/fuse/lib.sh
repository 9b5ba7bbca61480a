# shellcheck shell=bash
# Sourced by the bench/fuse scripts (run.sh, ab.sh, cpu_per_byte.sh, cpu_per_file.sh): the
# credentials they all sign with, one way to start reelfs-gateway on a loopback port, and the
# preconditions and EXIT trap of the one-mount scripts (cpu_per_byte.sh, cpu_per_file.sh).
# Owns no state besides the variables named below (gw, reelfs, gw_pid, endpoint; work is the
# caller's).

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
# Sets gw_pid (the gateway itself: the subshell execs it) and endpoint. Returns 1, with the
# log on stderr, when it exits or never listens.
bench_start_gateway() {
  local gw=$1 root=$2 work=$3 log=$4
  # SIGPIPE ignored: reelfs-gateway does not ignore it itself, and a client that closes a
  # connection in the middle of a sendfile'd body (every mount does at close) kills it (exit 141).
  ( trap '' PIPE; exec "$gw" --root "$root" --create --listen 127.0.0.1:0 --port-file "$work/port" \
    --access-key "$AWS_ACCESS_KEY_ID" --secret-key "$AWS_SECRET_ACCESS_KEY" --log-level warn \
    >"$log" 2>&1 ) &
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
