#!/usr/bin/env bash
# A one-host Ceph cluster in a directory, with no systemd: one mon, one mgr, one OSD (memstore:
# objects live in the OSD's memory, so nothing needs a block device), and two radosgw processes
# (beast frontend) over the one cluster, each on its own loopback port, plus an S3 user created
# with radosgw-admin and a storage class COLD besides STANDARD. Everything binds 127.0.0.1. cephx is on, with one keyring holding every
# daemon's key (as vstart.sh does): radosgw in this release cannot talk to a mon with auth none.
#
#   tests/ceph/cluster.sh up DIR      # prints nothing but progress; writes DIR/cluster.env (see below)
#   tests/ceph/cluster.sh down DIR    # stops every daemon it started, by pid file; idempotent
#   tests/ceph/cluster.sh status DIR  # `ceph -s`
#   tests/ceph/cluster.sh rgw-kill DIR N    # SIGKILL radosgw N (1 or 2): a front end that dies
#   tests/ceph/cluster.sh rgw-start DIR N   # start it again on its port; waits until it answers
#
# DIR/cluster.env (sourced by the suites): CEPH_CONF, RGW_ENDPOINTS (two URLs, space separated),
# RGW_PORTS, CEPH_ACCESS_KEY, CEPH_SECRET_KEY.
#
# Exit status of `up`: 0 up; 77 when the packages are missing (the caller decides whether that is a
# skip or a failure, docs/testing.md); 1 when a daemon did not come up (its log tail is printed).
# Sizing for a 2-CPU, 24 GiB machine: memstore capped at CEPH_MEMSTORE_BYTES (default 8 GiB),
# 8 placement groups per pool, no pg autoscaler, small RGW thread pools.
set -euo pipefail

cmd=${1:-}
DIR=${2:-}
[[ -n "$cmd" && -n "$DIR" ]] || { echo "usage: $0 up|down|status|rgw-kill|rgw-start DIR [N]" >&2; exit 2; }

log() { printf 'ceph: %s\n' "$*"; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_for SECONDS DESCRIPTION COMMAND...: polls every 0.25 s.
wait_for() {
  local secs=$1 what=$2 i
  shift 2
  for ((i = 0; i < secs * 4; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.25
  done
  log "$what: not ready after ${secs}s"
  return 1
}

tail_logs() {
  local f
  for f in "$DIR"/log/*.log; do
    [[ -s "$f" ]] || continue
    echo "--- last lines of $f" >&2
    tail -n 25 "$f" >&2
  done
}

# start_rgw N PORT: radosgw N (it daemonizes; its pid file is run/rgw.N.pid).
start_rgw() {
  radosgw -c "$DIR/ceph.conf" -n "client.rgw.$1" --rgw-frontends "beast endpoint=127.0.0.1:$2" \
    --pid-file "$DIR/run/rgw.$1.pid" --log-file "$DIR/log/rgw.$1.log"
}

rgw_port() {  # rgw_port N: from cluster.env
  local RGW_PORTS
  RGW_PORTS=$(sed -n 's/^RGW_PORTS="\(.*\)"$/\1/p' "$DIR/cluster.env")
  awk -v n="$1" '{ print $n }' <<<"$RGW_PORTS"
}

rgw_kill() {  # rgw_kill N [SIGNAL]: KILL by default (a front end that dies)
  local f=$DIR/run/rgw.$1.pid pid i
  [[ -s "$f" ]] || { log "radosgw $1 is not running"; return 1; }
  pid=$(cat "$f")
  kill "-${2:-KILL}" "$pid"
  for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  rm -f "$f"
}

rgw_stop() { rgw_kill "$1" TERM; }

rgw_start() {
  local port
  port=$(rgw_port "$1")
  [[ -n "$port" ]] || { log "no port for radosgw $1 in $DIR/cluster.env"; return 1; }
  start_rgw "$1" "$port"
  wait_for 60 "radosgw $1 on $port" curl -sf -o /dev/null "http://127.0.0.1:$port/" ||
    { tail_logs; return 1; }
}

down() {
  local f pid i
  [[ -d "$DIR/run" ]] || return 0
  # radosgw first (they are clients of the cluster), then osd, mgr, mon.
  for f in "$DIR"/run/rgw.*.pid "$DIR"/run/osd.*.pid "$DIR"/run/mgr.*.pid "$DIR"/run/mon.*.pid; do
    [[ -s "$f" ]] || continue
    pid=$(cat "$f")
    kill -TERM "$pid" 2>/dev/null || { rm -f "$f"; continue; }
    for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    rm -f "$f"
  done
}

up() {
  local bin
  for bin in ceph ceph-mon ceph-mgr ceph-osd radosgw radosgw-admin monmaptool; do
    command -v "$bin" >/dev/null || { log "$bin not installed (Debian packages ceph-mon ceph-mgr ceph-osd radosgw ceph-common)"; exit 77; }
  done
  mkdir -p "$DIR"/{log,run,mon.a,mgr.x,osd.0,crash}
  local fsid mon_port rgw1 rgw2
  fsid=$(cat /proc/sys/kernel/random/uuid)
  mon_port=$(free_port)
  rgw1=$(free_port)
  rgw2=$(free_port)
  CEPH_CONF="$DIR/ceph.conf"
  cat >"$CEPH_CONF" <<EOF
[global]
fsid = $fsid
mon host = v2:127.0.0.1:$mon_port
public addr = 127.0.0.1
ms bind ipv6 = false
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
auth allow insecure global id reclaim = false
run dir = $DIR/run
pid file = $DIR/run/\$type.\$id.pid
admin socket = $DIR/run/\$name.asok
log file = $DIR/log/\$name.log
crash dir = $DIR/crash
keyring = $DIR/keyring
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
mon max pg per osd = 1000
osd crush chooseleaf type = 0
mon data avail warn = 1
mon data avail crit = 0

[mon]
mon data = $DIR/mon.\$id
mon cluster log file = $DIR/log/cluster.log

[mgr]
mgr data = $DIR/mgr.\$id
mgr initial modules = status
mgr disabled modules = dashboard prometheus restful

[osd]
osd data = $DIR/osd.\$id
osd objectstore = memstore
memstore device bytes = ${CEPH_MEMSTORE_BYTES:-8589934592}
osd op num shards = 1
osd op num threads per shard = 2
osd memory target = 1073741824

[client]
rgw thread pool size = 32
rgw dns name = 127.0.0.1
rgw enable usage log = false
rgw max chunk size = 4194304
# Deleted objects' data goes to RGW's garbage collector, by default 2 h later; the suites delete
# every bucket between scripts and memstore keeps everything in memory: collect within seconds.
rgw gc obj min wait = 5
rgw gc processor period = 10
EOF
  export CEPH_CONF
  local t0=$SECONDS

  # One keyring for every entity, imported by the mon at mkfs.
  local ent caps
  ceph-authtool --create-keyring "$DIR/keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
  for ent in client.admin osd.0 mgr.x client.rgw.1 client.rgw.2; do
    caps=(--cap mon 'allow *' --cap osd 'allow *' --cap mgr 'allow *')
    [[ $ent == client.admin ]] && caps+=(--cap mds 'allow *')
    ceph-authtool "$DIR/keyring" --gen-key -n "$ent" "${caps[@]}" >/dev/null
  done
  monmaptool --create --clobber --fsid "$fsid" --addv a "[v2:127.0.0.1:$mon_port]" \
    "$DIR/monmap" >/dev/null
  ceph-mon --mkfs -i a --monmap "$DIR/monmap" --keyring "$DIR/keyring" -c "$CEPH_CONF" 2>"$DIR/log/mkfs-mon.err" ||
    { cat "$DIR/log/mkfs-mon.err" >&2; exit 1; }
  ceph-mon -i a -c "$CEPH_CONF"
  wait_for 60 "mon" ceph -c "$CEPH_CONF" --connect-timeout 5 mon stat || { tail_logs; exit 1; }
  log "mon up on 127.0.0.1:$mon_port ($((SECONDS - t0)) s)"

  ceph-mgr -i x -c "$CEPH_CONF"

  local id
  id=$(ceph -c "$CEPH_CONF" osd create)
  [[ "$id" == 0 ]] || { log "expected osd id 0, got $id"; exit 1; }
  ceph-osd -i 0 --mkfs -c "$CEPH_CONF" 2>"$DIR/log/mkfs-osd.err" >/dev/null ||
    { cat "$DIR/log/mkfs-osd.err" >&2; exit 1; }
  ceph-osd -i 0 -c "$CEPH_CONF" 2>>"$DIR/log/osd.0.err"
  wait_for 90 "osd.0" bash -c "ceph -c '$CEPH_CONF' osd dump | grep -q '^osd.0 up'" ||
    { tail_logs; exit 1; }
  log "osd.0 up (memstore) ($((SECONDS - t0)) s)"

  # A storage class of RGW's own (a placement target with its own pool) besides STANDARD: the
  # tape suite shows it as RGW names it. The zone exists once a radosgw has started, and radosgw
  # reads it only at start: one radosgw creates it, the class is added, then both start.
  start_rgw 1 "$rgw1"
  wait_for 120 "radosgw on $rgw1" curl -sf -o /dev/null "http://127.0.0.1:$rgw1/" ||
    { tail_logs; exit 1; }
  radosgw-admin -c "$CEPH_CONF" zonegroup placement add --rgw-zonegroup default \
    --placement-id default-placement --storage-class COLD >/dev/null 2>"$DIR/log/placement.err" &&
    radosgw-admin -c "$CEPH_CONF" zone placement add --rgw-zone default \
      --placement-id default-placement --storage-class COLD \
      --data-pool default.rgw.cold.data >/dev/null 2>>"$DIR/log/placement.err" ||
    { cat "$DIR/log/placement.err" >&2; exit 1; }
  # The S3 user too, while the radosgw that watches the metadata is alive: radosgw-admin notifies
  # every watcher, and a dead one costs it a 30 s timeout per object.
  local ak=REELFSCEPHACCESSKEY01 sk=reelfs/ceph/secret+key/0123456789abcdef
  radosgw-admin -c "$CEPH_CONF" user create --uid reelfs --display-name "reelfs tests" \
    --access-key "$ak" --secret-key "$sk" >/dev/null 2>"$DIR/log/user.err" ||
    { cat "$DIR/log/user.err" >&2; exit 1; }
  rgw_stop 1  # SIGTERM: it unregisters its watches, so the next notify does not wait for it

  local port n=0 endpoints=()
  for port in "$rgw1" "$rgw2"; do
    n=$((n + 1))
    start_rgw "$n" "$port"
    endpoints+=("http://127.0.0.1:$port")
  done
  for port in "$rgw1" "$rgw2"; do
    wait_for 120 "radosgw on $port" curl -sf -o /dev/null "http://127.0.0.1:$port/" ||
      { tail_logs; exit 1; }
  done
  log "radosgw up on ${endpoints[*]} ($((SECONDS - t0)) s)"

  cat >"$DIR/cluster.env" <<EOF
CEPH_CONF=$CEPH_CONF
RGW_ENDPOINTS="${endpoints[*]}"
RGW_PORTS="$rgw1 $rgw2"
CEPH_ACCESS_KEY=$ak
CEPH_SECRET_KEY=$sk
EOF
  log "cluster ready in $((SECONDS - t0)) s"
}

case "$cmd" in
  up) up ;;
  down) down ;;
  status) ceph -c "$DIR/ceph.conf" -s ;;
  rgw-kill) rgw_kill "${3:?which radosgw: 1 or 2}" ;;
  rgw-start) rgw_start "${3:?which radosgw: 1 or 2}" ;;
  *) echo "usage: $0 up|down|status|rgw-kill|rgw-start DIR [N]" >&2; exit 2 ;;
esac
