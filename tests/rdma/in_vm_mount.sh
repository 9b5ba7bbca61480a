#!/bin/sh
# `reelfs mount --rdma` end to end, inside the Soft-RoCE VM (run by in_vm.sh in the same boot,
# after in_vm_gateway.sh): a real FUSE mount whose prefetcher reads through the hipobj-rc-v2
# channel. For each case the files are read through the mount with cmp against their source
# (every byte), then the root's user.reelfs.metrics and the unmount log say which path the bytes
# took:
#
#   rdma        gateway --rdma, mount --rdma=DEV (--rdma-transport=auto): every byte over RDMA
#               (RC), none over HTTP; and a side-channel client's memfd written by the gateway
#               over RDMA, with nothing copied by the daemon, then reelfs.gpu's read_into and
#               read_many of every file, byte-exact (side_channel_rdma); a client's
#               vgem dma-buf refused by rxe0 with the ladder's EOPNOTSUPP line and filled over
#               the next rung, byte-exact (side_channel_dmabuf, vgem_dmabuf_check.py);
#   dc-on-rxe   the same with --rdma-transport=dc: Soft-RoCE cannot do DC, so the mount warns once
#               with the reason (terminal and log) and every byte still comes over RDMA-RC;
#   vgwrdma     gateway --rdma --rdma-emulate vgwrdma (data GETs declined with 500): correct,
#               fallbacks counted and bytes over HTTP (a new session's READY transfer is not a
#               data GET and still comes over RDMA);
#   no-rdma-gw  gateway without --rdma: correct, all HTTP;
#   plain       mount without --rdma: correct, no data path counters at all;
#   spread      a --front-end gateway of the same root beside it, a mount over both endpoints:
#               every byte over RDMA, from both gateways.
#
# and for writes (the mount's upload parts through RcChannel::Put, docs/protocols/rdma-put.md
# "The mount"): a 40 MiB file (five 8 MiB parts, a multipart upload) and a 3000 B file (one PUT)
# are copied into the mount, each read back over plain HTTP with boto3 (an independent S3
# client) and its sha256 compared with the source's, and the stored file in the gateway's root
# compared byte for byte:
#
#   rdma        (the same mount as above) every payload read by the gateway over RDMA:
#               fs.rdma_put_bytes = both sizes, fs.http_put_bytes = 0, the channel's
#               rdma_put_bytes the same;
#   put-qp-error  gateway --rdma --rdma-fault qp-error (every RDMA transfer fails, 500): each
#               payload falls back to HTTP inside the channel, the objects intact,
#               fs.http_put_bytes = both sizes, fs.rdma_put_bytes = 0, fallbacks counted.
#
# and `reelfs cp --rdma -r` of the same two files (the mount's part code outside the mount): in
# the rdma case its closing line counts every byte over RDMA PUT and none over HTTP, in the
# put-qp-error case every payload falls back; the objects are read back over HTTP with the AWS
# SDK (boto3) and the gateway's stored files compared byte for byte.
#
# Needs /dev/fuse (rxe_vm.sh loads the fuse module). Exit 0 when every case holds.
set -u
reelfs=$REELFS_CLI
if [ ! -c /dev/fuse ]; then
  echo "in_vm_mount: FAIL: no /dev/fuse in the VM (fuse module not loaded?)"
  exit 1
fi
me=in_vm_mount
# shellcheck source=vm_gateway_lib.sh
. "$(dirname "$0")/vm_gateway_lib.sh"
vm_setup rdma-mount
mnt=$work/mnt
mkdir -p "$root/bkt/dir" "$mnt"
# 9 MiB + 123 B spans two 8 MiB parts (the second one short and odd-sized); 3000 B is fetched
# whole; the nested 1 MiB file goes through a directory lookup.
head -c $((9 * 1024 * 1024 + 123)) /dev/urandom >"$root/bkt/big"
head -c 3000 /dev/urandom >"$root/bkt/small"
head -c $((1024 * 1024)) /dev/urandom >"$root/bkt/dir/mid"
files="big small dir/mid"
total=$((9 * 1024 * 1024 + 123 + 3000 + 1024 * 1024))
export AWS_REGION=us-east-1
# The files written through the mount.
head -c $((40 * 1024 * 1024)) /dev/urandom >"$work/up-big"
head -c 3000 /dev/urandom >"$work/up-small"
wfiles="up-big up-small"
wtotal=$((40 * 1024 * 1024 + 3000))

# metric JSON PATH: a number in user.reelfs.metrics, PATH like fs.rdma_put_bytes or
# data_path.0.rdma_put_bytes (-1 when absent).
metric() {
  python3 -c '
import json, sys
v = json.loads(sys.argv[1])
for p in sys.argv[2].split("."):
    try:
        v = v[int(p)] if isinstance(v, list) else v[p]
    except (KeyError, IndexError, TypeError, ValueError):
        v = -1
        break
print(v if isinstance(v, int) else -1)' "$1" "$2"
}

# write_files NAME: copies $wfiles into the mount (cp: open, sequential writes, close, which
# completes each upload and reports its outcome).
write_files() {
  for w in $wfiles; do
    if ! cp "$work/$w" "$mnt/$w"; then
      echo "in_vm_mount: $1: writing $w through the mount failed"
      return 1
    fi
  done
}

# check_written NAME [PREFIX]: each written object (bkt/PREFIX/<name>, or bkt/<name> without
# PREFIX) read back over plain HTTP by boto3 (sha256 against the source) and the gateway's
# stored file compared byte for byte.
check_written() {
  local dir=$root/bkt${2:+/$2}
  for w in $wfiles; do
    if ! cmp "$work/$w" "$dir/$w"; then
      echo "in_vm_mount: $1: the gateway's stored $w differs from its source"
      return 1
    fi
  done
  python3 - "$endpoint" "$work" "${2:-}" $wfiles <<'PY'
import hashlib, os, sys
import boto3
from botocore.config import Config
endpoint, work, prefix, names = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                  config=Config(s3={"addressing_style": "path"}))
bad = 0
for name in names:
    key = f"{prefix}/{name}" if prefix else name
    want = hashlib.sha256(open(os.path.join(work, name), "rb").read()).hexdigest()
    got = hashlib.sha256(s3.get_object(Bucket="bkt", Key=key)["Body"].read()).hexdigest()
    print(f"in_vm_mount: {key}: sha256 over HTTP {got[:16]}, source {want[:16]}")
    bad += got != want
sys.exit(1 if bad else 0)
PY
}

# field JSON NAME: the number after "NAME": in the data_path part of user.reelfs.metrics (what
# precedes "side_channel", whose counters reuse some names; 0 when absent).
field() {
  v=$(printf '%s' "$1" | sed 's/"side_channel".*//' | sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p")
  echo "${v:-0}"
}

# run_case NAME EXPECT MOUNT-FLAGS...: mounts, reads every file through the mount, checks bytes,
# metrics and the unmount log. EXPECT: rdma | fallback | http | none (no data path).
run_case() {
  name=$1 expect=$2
  shift 2
  log=$work/mount-$name.log
  ok=1
  if ! "$reelfs" --endpoint "$endpoint" mount "$@" --log-file "$log" --ledger none \
    bkt "$mnt"; then
    echo "in_vm_mount: $name: mount failed"
    tail -20 "$log"
    fail=1
    return
  fi
  for f in $files; do
    if ! cmp "$root/bkt/$f" "$mnt/$f"; then
      echo "in_vm_mount: $name: $f differs from its source"
      ok=0
    fi
  done
  sums=$(cd "$mnt" && md5sum $files | md5sum | cut -c1-12)
  want=$(cd "$root/bkt" && md5sum $files | md5sum | cut -c1-12)
  [ "$sums" = "$want" ] || ok=0
  [ "$name" = rdma ] && { side_channel_rdma || ok=0; }
  # Before the counters below are taken: its short READ goes through the prefetcher (RDMA
  # bytes the unmount log's line must agree with); its big one is a direct GET (not the
  # channel's).
  [ "$name" = rdma ] && { side_channel_dmabuf || ok=0; }
  [ "$name" = rdma ] && { write_files "$name" || ok=0; }
  metrics=$(getfattr --absolute-names --only-values -n user.reelfs.metrics "$mnt" 2>&1)
  echo "in_vm_mount: $name: user.reelfs.metrics = $metrics"
  umount "$mnt" || fusermount3 -u "$mnt"
  # The daemon logs its counters as it exits.
  i=0
  while ! grep -q "unmounted" "$log" 2>/dev/null && [ $i -lt 300 ]; do
    sleep 0.1
    i=$((i + 1))
  done
  rdma_line=$(grep "rdma: endpoint=" "$log" | tail -1)
  echo "in_vm_mount: $name: unmount log: ${rdma_line:-<no rdma line>}"
  rdma_bytes=$(field "$metrics" rdma_bytes)
  http_bytes=$(field "$metrics" http_bytes)
  fallbacks=$(field "$metrics" fallbacks)
  case $expect in
    rdma)
      [ "$rdma_bytes" -ge "$total" ] && [ "$http_bytes" -eq 0 ] || ok=0
      case $rdma_line in *"rdma_bytes=$rdma_bytes "*) ;; *) ok=0 ;; esac
      if [ "$name" = rdma ]; then
        # Writes: every payload (5 parts and one PUT) read by the gateway over RDMA.
        if [ "$(metric "$metrics" fs.rdma_put_bytes)" -eq "$wtotal" ] &&
          [ "$(metric "$metrics" fs.http_put_bytes)" -eq 0 ] &&
          [ "$(metric "$metrics" fs.rdma_put_parts)" -eq 6 ] &&
          [ "$(metric "$metrics" data_path.0.rdma_put_bytes)" -eq "$wtotal" ] &&
          [ "$(metric "$metrics" data_path.0.http_put_bytes)" -eq 0 ] &&
          check_written "$name"; then
          echo "in_vm_mount: $name: writes OK: $wtotal bytes over RDMA PUT, none over HTTP"
        else
          echo "in_vm_mount: $name: writes FAILED (want rdma_put_bytes=$wtotal, http_put_bytes=0)"
          ok=0
        fi
      fi
      ;;
    fallback)
      # A new session's first transfer (READY) is not a data GET, so the emulation lets it through
      # over RDMA; the data GETs after it are declined and fall back.
      [ "$fallbacks" -gt 0 ] && [ "$http_bytes" -gt 0 ] &&
        [ $((rdma_bytes + http_bytes)) -ge "$total" ] || ok=0
      ;;
    http)
      [ "$rdma_bytes" -eq 0 ] && [ "$http_bytes" -ge "$total" ] || ok=0
      ;;
    none)
      case $metrics in *'"data_path":null,'*) ;; *) ok=0 ;; esac
      [ -z "$rdma_line" ] || ok=0
      ;;
  esac
  if [ "$ok" -eq 1 ]; then
    echo "in_vm_mount: $name: OK (expect $expect; $total bytes verified; md5 $sums)"
  else
    echo "in_vm_mount: $name: FAILED (expect $expect)"
    tail -20 "$log"
    fail=1
  fi
}

# write_case NAME MOUNT-FLAGS...: mounts, writes $wfiles, checks the objects and that every
# payload fell back to HTTP (the gateway's RDMA transfers fail).
write_case() {
  name=$1
  shift
  log=$work/mount-$name.log
  ok=1
  if ! "$reelfs" --endpoint "$endpoint" mount "$@" --log-file "$log" --ledger none \
    bkt "$mnt"; then
    echo "in_vm_mount: $name: mount failed"
    tail -20 "$log"
    fail=1
    return
  fi
  write_files "$name" || ok=0
  metrics=$(getfattr --absolute-names --only-values -n user.reelfs.metrics "$mnt" 2>&1)
  echo "in_vm_mount: $name: user.reelfs.metrics = $metrics"
  umount "$mnt" || fusermount3 -u "$mnt"
  i=0
  while ! grep -q "unmounted" "$log" 2>/dev/null && [ $i -lt 300 ]; do
    sleep 0.1
    i=$((i + 1))
  done
  echo "in_vm_mount: $name: unmount log: $(grep "rdma: endpoint=" "$log" | tail -1)"
  [ "$(metric "$metrics" fs.http_put_bytes)" -eq "$wtotal" ] &&
    [ "$(metric "$metrics" fs.rdma_put_bytes)" -eq 0 ] &&
    [ "$(metric "$metrics" fs.put_fallbacks)" -eq 6 ] &&
    [ "$(metric "$metrics" data_path.0.http_put_bytes)" -eq "$wtotal" ] &&
    [ "$(metric "$metrics" data_path.0.fallbacks)" -gt 0 ] || ok=0
  check_written "$name" || ok=0
  if [ "$ok" -eq 1 ]; then
    echo "in_vm_mount: $name: OK (every payload fell back to HTTP; $wtotal bytes verified)"
  else
    echo "in_vm_mount: $name: FAILED (want http_put_bytes=$wtotal, rdma_put_bytes=0)"
    tail -20 "$log"
    fail=1
  fi
  rm -f "$root/bkt/up-big" "$root/bkt/up-small"
}

# cp_case NAME EXPECT: `reelfs cp --rdma=DEV -r` of $wfiles to s3://bkt/cp-NAME/, then its
# closing counter line, the stored files and an HTTP read-back. EXPECT: rdma | fallback.
cp_case() {
  name=cp-$1 expect=$2
  ok=1
  src=$work/cpsrc
  mkdir -p "$src"
  for w in $wfiles; do ln -f "$work/$w" "$src/$w"; done
  if ! "$reelfs" --endpoint "$endpoint" cp -q --rdma="$dev" -r "$src" "s3://bkt/$name/" \
    2>"$work/$name.err"; then
    echo "in_vm_mount: $name: reelfs cp --rdma failed"
    ok=0
  fi
  line=$(grep "reelfs cp: over RDMA PUT" "$work/$name.err")
  echo "in_vm_mount: $name: ${line:-<no counter line>}"
  rdma=$(printf '%s' "$line" | sed -n 's/.*over RDMA PUT \([0-9]*\) bytes.*/\1/p')
  http=$(printf '%s' "$line" | sed -n 's/.*over HTTP \([0-9]*\) bytes.*/\1/p')
  falls=$(printf '%s' "$line" | sed -n 's/.* \([0-9]*\) fallbacks.*/\1/p')
  case $expect in
    rdma) [ "${rdma:-0}" -eq "$wtotal" ] && [ "${http:--1}" -eq 0 ] || ok=0 ;;
    fallback) [ "${http:-0}" -eq "$wtotal" ] && [ "${rdma:--1}" -eq 0 ] &&
      [ "${falls:-0}" -eq 6 ] || ok=0 ;;
  esac
  check_written "$name" "$name" || ok=0
  if [ "$ok" -eq 1 ]; then
    echo "in_vm_mount: $name: OK (expect $expect; $wtotal bytes verified)"
  else
    echo "in_vm_mount: $name: FAILED (expect $expect)"
    cat "$work/$name.err"
    fail=1
  fi
  rm -rf "$src" "$root/bkt/$name"
}

# side_channel_rdma: on the rdma mount, a client of the side channel (reelfs.side_channel)
# registers a sealed memfd, opens "big" by path and reads it whole in one READ: the daemon has
# registered the memfd with the data channel, so the gateway RDMA-writes the bytes straight into
# the client's memory. The DONE says rdma, the bytes equal the source, and the server's counters
# say every byte came over RDMA and none was copied by the daemon.
side_channel_rdma() {
  repo=$(cd "$(dirname "$reelfs")/../.." && pwd)
  if ! command -v python3 >/dev/null || [ ! -f "$repo/python/reelfs/side_channel.py" ]; then
    echo "in_vm_mount: side channel: FAILED: no python3 or no $repo/python in the VM"
    return 1
  fi
  PYTHONPATH="$repo/python" python3 - "$mnt" "$root/bkt/big" <<'PY'
import json, os, sys
from reelfs import side_channel as sc
mnt, src = sys.argv[1], sys.argv[2]
want = open(src, "rb").read()
with sc.Client.for_path(mnt) as c:
    buf = c.register_memfd(16 << 20)
    fid = c.open_path("big")
    n, path = c.read(fid, 0, len(want), buf)
    c.close_file(fid)
    got = bytes(buf[:n])
counters = json.loads(os.getxattr(mnt, "user.reelfs.metrics"))["side_channel"]
print(f"in_vm_mount: side channel: {n} bytes, path {path}, counters {counters}")
ok = (n == len(want) and got == want and path == "rdma" and
      counters["rdma_bytes"] >= len(want) and counters["bytes_copied"] == 0)
print("in_vm_mount: side channel: " + ("OK: the gateway wrote the client's memfd over RDMA, "
                                        "nothing copied by the daemon" if ok else "FAILED"))
# reelfs.gpu on the same mount, after the counters above: read_into a memfd registered on its
# connection, and read_many of every file into bytearrays, each byte checked.
from reelfs import gpu
big = os.path.join(mnt, "big")
buf = gpu.memfd_buffer(big, 16 << 20)
n, tier = gpu.read_into(big, buf)
good = n == len(want) and bytes(buf[:n]) == want and tier == "host"
names = ["big", "small", "dir/mid"]
outs = [bytearray(os.path.getsize(os.path.join(mnt, f))) for f in names]
got = gpu.read_many([(os.path.join(mnt, f), o) for f, o in zip(names, outs)])
src_dir = os.path.dirname(src)
for f, o, (k, t) in zip(names, outs, got):
    good = good and bytes(o[:k]) == open(os.path.join(src_dir, f), "rb").read()
print(f"in_vm_mount: reelfs.gpu: read_into {n} bytes (tier {tier}), read_many "
      f"{[k for k, _ in got]} bytes: " + ("OK, byte-exact" if good else "FAILED"))
sys.exit(0 if ok and good else 1)
PY
}

# side_channel_dmabuf: on the rdma mount, a side-channel client registers a vgem dma-buf;
# rxe0 refuses it (the EOPNOTSUPP ladder line) and "big" still lands in it, over the next rung
# (vgem_dmabuf_check.py says what is checked).
side_channel_dmabuf() {
  repo=$(cd "$(dirname "$reelfs")/../.." && pwd)
  PYTHONPATH="$repo/python" python3 "$(dirname "$0")/vgem_dmabuf_check.py" "$mnt" \
    "$root/bkt/big" "$log"
}

# dc_unavailable: the dc-on-rxe mount's log names why DC is unavailable, says RC is used, and
# its counters are RC's.
dc_unavailable() {
  log=$work/mount-dc-on-rxe.log
  if grep -q "cannot do DC: not an mlx5 (ConnectX) device.*; using RC" "$log" &&
    grep -q "transport=rdma-rc" "$log" && ! grep -q "transport=rdma-dc" "$log"; then
    echo "in_vm_mount: dc-on-rxe: OK: $(grep -o 'rdma-transport=dc: .*' "$log" | head -1)"
  else
    echo "in_vm_mount: dc-on-rxe: FAILED: no DC-unavailable warning, or not RC counters"
    tail -20 "$log"
    fail=1
  fi
}

# spread_case: a second gateway process, a --front-end of the same root with its own --rdma
# server, beside the one running; a mount over both endpoints: every byte of every file over RDMA,
# from both gateways (one control plane and one RC channel per endpoint, cli/rdma_data_path.cc).
spread_case() {
  name=spread
  rm -f "$work/fe-port"
  "$gw" --root "$root" --front-end --listen 127.0.0.1:0 --port-file "$work/fe-port" \
    --access-key "$AWS_ACCESS_KEY_ID" --secret-key "$AWS_SECRET_ACCESS_KEY" \
    --log-level "$gw_log_level" --rdma "$dev" >>"$work/frontend.log" 2>&1 &
  fe_pid=$!
  i=0
  while [ ! -s "$work/fe-port" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
  if [ ! -s "$work/fe-port" ]; then
    echo "in_vm_mount: $name: FAILED: the front end did not start"
    tail -5 "$work/frontend.log"
    fail=1
    return
  fi
  fe=http://127.0.0.1:$(cat "$work/fe-port")
  log=$work/mount-$name.log
  ok=1
  if ! "$reelfs" --endpoint "$endpoint,$fe" mount --rdma="$dev" --log-file "$log" --ledger none \
    bkt "$mnt"; then
    echo "in_vm_mount: $name: mount failed"
    tail -20 "$log"
    fail=1
    kill "$fe_pid"
    return
  fi
  for f in $files; do
    cmp "$root/bkt/$f" "$mnt/$f" || { echo "in_vm_mount: $name: $f differs"; ok=0; }
  done
  metrics=$(getfattr --absolute-names --only-values -n user.reelfs.metrics "$mnt" 2>&1)
  umount "$mnt" || fusermount3 -u "$mnt"
  kill "$fe_pid"
  wait "$fe_pid" 2>/dev/null
  if ! python3 - "$metrics" "$endpoint" "$fe" "$total" <<'PY'; then ok=0; fi
import json, sys
m, a, b, total = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
per = {e["endpoint"]: e for e in m["data_path"]}
print(f"in_vm_mount: spread: data path per endpoint: "
      f"{[(k, e['rdma_bytes'], e['http_bytes']) for k, e in per.items()]}")
ok = (set(per) == {a, b} and all(e["rdma_bytes"] > 0 and e["http_bytes"] == 0
                                  for e in per.values())
      and sum(e["rdma_bytes"] for e in per.values()) >= total)
sys.exit(0 if ok else 1)
PY
  if [ "$ok" -eq 1 ]; then
    echo "in_vm_mount: $name: OK: every byte over RDMA, sessions on both gateways"
  else
    echo "in_vm_mount: $name: FAILED"
    tail -20 "$log"
    fail=1
  fi
}

if start_gateway --rdma "$dev"; then
  run_case rdma rdma --rdma="$dev" --rdma-sessions 2
  spread_case
  run_case dc-on-rxe rdma --rdma="$dev" --rdma-transport=dc
  dc_unavailable
  run_case plain none
  cp_case rdma rdma
fi
# The rdma case wrote $wfiles; the qp-error case writes them again (no overwrite: remove them).
rm -f "$root/bkt/up-big" "$root/bkt/up-small"
if start_gateway --rdma "$dev" --rdma-fault qp-error; then
  write_case put-qp-error --rdma="$dev"
  cp_case put-qp-error fallback
fi
if start_gateway --rdma "$dev" --rdma-emulate vgwrdma; then
  run_case vgwrdma fallback --rdma="$dev"
fi
if start_gateway; then
  run_case no-rdma-gw http --rdma
fi
stop_gateway
if [ "$fail" -ne 0 ]; then
  echo "in_vm_mount: gateway log:"
  tail -40 "$work/gateway.log"
fi
rm -rf "$work"
exit "$fail"
