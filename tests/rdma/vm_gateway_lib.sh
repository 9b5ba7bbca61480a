# Sourced (POSIX sh) by in_vm_gateway.sh, in_vm_put_gateway.sh and in_vm_mount.sh inside the
# Soft-RoCE VM: the scripts' common setup (vm_setup), start and stop a reelfs-gateway on an
# ephemeral loopback port, and upload a file through reelfs-rdma-get (put_object). Expects $gw (the
# binary), $root, $work and $AWS_ACCESS_KEY_ID / $AWS_SECRET_ACCESS_KEY (vm_setup sets them all);
# uses $fail (set to 1 when a start or a check fails) and $me (the prefix of put_object's lines).
gw_pid=
# The gateway's --log-level for start_gateway; a case that checks an info line sets info.
gw_log_level=warn

# vm_setup NAME: $gw, $get, $dev from the environment (REELFS_GATEWAY, REELFS_RDMA_GET,
# REELFS_RDMA_DEVICE, default rxe0), a fresh $work (/tmp/NAME.XXXXXX) with $root/bkt, the test
# credentials exported, $fail cleared.
vm_setup() {
  gw=$REELFS_GATEWAY
  get=${REELFS_RDMA_GET:-}
  dev=${REELFS_RDMA_DEVICE:-rxe0}
  work=$(mktemp -d "/tmp/$1.XXXXXX")
  root=$work/root
  mkdir -p "$root/bkt"
  export AWS_ACCESS_KEY_ID=rdmatestkey AWS_SECRET_ACCESS_KEY=rdmatestsecret
  fail=0
}

stop_gateway() {
  if [ -n "$gw_pid" ]; then
    kill "$gw_pid" 2>/dev/null
    wait "$gw_pid" 2>/dev/null
    gw_pid=
  fi
}

# start_gateway ARGS...: a gateway on an ephemeral loopback port; sets $endpoint.
start_gateway() {
  stop_gateway
  rm -f "$work/port"
  "$gw" --root "$root" --listen 127.0.0.1:0 --port-file "$work/port" \
    --access-key "$AWS_ACCESS_KEY_ID" --secret-key "$AWS_SECRET_ACCESS_KEY" \
    --log-level "$gw_log_level" "$@" >>"$work/gateway.log" 2>&1 &
  gw_pid=$!
  i=0
  while [ ! -s "$work/port" ] && [ $i -lt 600 ]; do
    kill -0 "$gw_pid" 2>/dev/null || break
    sleep 0.1
    i=$((i + 1))
  done
  if [ ! -s "$work/port" ]; then
    echo "${0##*/}: gateway $* did not start"
    tail -5 "$work/gateway.log"
    gw_pid=
    fail=1
    return 1
  fi
  endpoint=http://127.0.0.1:$(cat "$work/port")
}

# put_object NAME EXPECT KEY [rdma-get args...]: uploads $work/up as bkt/KEY through the channel
# (the tool reads it back over HTTP and checks the path the bytes took against EXPECT), then
# compares the stored file with $work/up byte for byte.
put_object() {
  name=$1 expect=$2 key=$3
  shift 3
  "$get" --endpoint "$endpoint" --bucket bkt --key "$key" --put "$work/up" \
    --device "$dev" --expect "$expect" "$@"
  rc=$?
  if [ "$rc" -eq 0 ] && ! cmp -s "$work/up" "$root/bkt/$key"; then
    echo "${me:-${0##*/}}: $name: stored object differs ($(wc -c <"$root/bkt/$key") bytes)"
    rc=1
  fi
  echo "${me:-${0##*/}}: $name: exit $rc (uptime $(cut -d" " -f1 /proc/uptime) s)"
  [ "$rc" -eq 0 ] || fail=1
}
