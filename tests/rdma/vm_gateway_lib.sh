# Sourced (POSIX sh) by in_vm_gateway.sh and in_vm_mount.sh inside the Soft-RoCE VM: start and stop
# a reelfs-gateway on an ephemeral loopback port. Expects $gw (the binary), $root, $work and
# $AWS_ACCESS_KEY_ID / $AWS_SECRET_ACCESS_KEY; uses $fail (set to 1 when a start fails).
gw_pid=

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
    --log-level warn "$@" >>"$work/gateway.log" 2>&1 &
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
