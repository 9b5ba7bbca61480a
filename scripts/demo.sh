#!/usr/bin/env bash
# The main job on the embedded default: set up, start reelfs-gateway on a generated sample dataset,
# mount it with `reelfs mount`, show it with ls -l and du, copy it out of the mount with cp -r and
# verify every byte, run a small PyTorch DataLoader over the mount (when torch is installed); then
# the tape part: archive val/ onto the gateway's simulated tape library, show it offline (ls -ls,
# du, xattrs, `reelfs status`), restore it in one batch with `reelfs stage -r --wait` and verify
# it; print throughput (the mount next to the reelfs client and curl); then the same mount against
# Ceph RGW (a one-host cluster, when Ceph is installed; DEMO_CEPH=0 skips it); then unmount and
# clean up, even on Ctrl-C. Where FUSE is unusable (no /dev/fuse, no fusermount3) it says so and reads the dataset
# through the reelfs client instead.
#
#   scripts/demo.sh [--keep]      # --keep leaves the gateway and the mount up until Enter is pressed
set -euo pipefail
cd "$(dirname "$0")/.."
keep=0
[ "${1:-}" = "--keep" ] && keep=1

scripts/setup.sh >/dev/null
gw=build/gateway/reelfs-gateway
reelfs=build/cli/reelfs

work=$(mktemp -d /tmp/reelfs-demo.XXXXXX)
mnt="$work/mnt"
gw_pid=""
mount_pid=""
is_mounted() { awk -v m="$mnt" '$2 == m { f = 1 } END { exit !f }' /proc/mounts; }
cleanup() {
  trap "" INT TERM  # a second Ctrl-C must not cut the cleanup short
  if is_mounted; then fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -uz "$mnt" 2>/dev/null || true; fi
  if [ -n "$mount_pid" ]; then
    for _ in $(seq 50); do kill -0 "$mount_pid" 2>/dev/null || break; sleep 0.1; done
    kill "$mount_pid" 2>/dev/null || true; wait "$mount_pid" 2>/dev/null || true
  fi
  if [ -n "$gw_pid" ]; then kill "$gw_pid" 2>/dev/null || true; wait "$gw_pid" 2>/dev/null || true; fi
  if [ -n "${tls_pid:-}" ]; then kill "$tls_pid" 2>/dev/null || true; wait "$tls_pid" 2>/dev/null || true; fi
  if [ -n "${sts_pid:-}" ]; then kill "$sts_pid" 2>/dev/null || true; fi
  if [ -d "$work/ceph" ]; then tests/ceph/cluster.sh down "$work/ceph" || true; fi
  if is_mounted; then echo "demo: $mnt is still mounted; leaving $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'echo; echo "demo: interrupted, cleaning up"; exit 130' INT TERM

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
elapsed() { awk -v a="$1" -v e="$(date +%s.%N)" 'BEGIN { print e - a }'; }
rate() {  # rate BYTES SECONDS
  awk -v b="$1" -v s="$2" 'BEGIN { printf "%.1f MiB in %.2f s = %.1f MiB/s", b/1048576, s, b/1048576/s }'
}
# remount LOG [OPTIONS...]: unmounts $mnt (waiting for its daemon) and mounts the dataset there
# again in the foreground with OPTIONS, logging to $work/LOG; sets mount_pid; a failure ends the demo.
remount() {
  local log=$1
  shift
  fusermount3 -u "$mnt"; wait "$mount_pid" || true
  "$reelfs" mount dataset "$mnt" --endpoint "$AWS_ENDPOINT_URL" -f "$@" --log-file "$work/$log" \
    </dev/null >>"$work/mount2.out" 2>&1 &
  mount_pid=$!
  for _ in $(seq 300); do is_mounted && break; kill -0 "$mount_pid" 2>/dev/null || break; sleep 0.1; done
  is_mounted || { echo "remount failed:"; tail "$work/mount2.out" "$work/$log"; exit 1; }
}
# FUSE usable? (the e2e tests skip on the same conditions)
fuse_reason=""
if ! command -v fusermount3 >/dev/null; then fuse_reason="fusermount3 is not installed"
elif ! { exec 9<>/dev/fuse; } 2>/dev/null; then fuse_reason="/dev/fuse cannot be opened"
else exec 9<&-; fi

say "Generating a sample dataset in $work/root/dataset"
python3 - "$work/root/dataset" <<'PY'
import os, random, sys
root = sys.argv[1]
rng = random.Random(42)
n = 0
for split in ("train", "val"):
    for shard in range(4 if split == "train" else 1):
        d = os.path.join(root, split, f"shard-{shard:02d}")
        os.makedirs(d, exist_ok=True)
        for i in range(60):
            size = rng.choice([0, 1, 100, 4096, 65536, 300_000, 1_500_000])
            with open(os.path.join(d, f"sample-{i:04d}.bin"), "wb") as f:
                f.write(rng.randbytes(size))
            n += 1
os.makedirs(os.path.join(root, "models"), exist_ok=True)
for name, mib in (("checkpoint-a.pt", 192), ("checkpoint-b.pt", 64)):
    with open(os.path.join(root, "models", name), "wb") as f:
        for _ in range(mib):
            f.write(rng.randbytes(1 << 20))
    n += 1
with open(os.path.join(root, "README.txt"), "w") as f:
    f.write("reelfs demo dataset: nested shards of samples and two large checkpoints\n")
print(f"{n + 1} files")
PY

say "Starting reelfs-gateway (S3 over that directory, loopback only)"
export AWS_ACCESS_KEY_ID=demo-access-key AWS_SECRET_ACCESS_KEY=demo-secret-key-not-for-production
export AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
export AWS_CONFIG_FILE="$work/aws-config" AWS_SHARED_CREDENTIALS_FILE=/dev/null
printf '[default]\ns3 =\n    addressing_style = path\n' >"$AWS_CONFIG_FILE"
# The archive behind the gateway: versitygw's glacier mode over a simulated LTO-9 library (4 drives,
# one robot) on a clock running x1000. Nothing is on tape until the tape part below archives it.
cat >"$work/gateway.yaml" <<'YAML'
archive:
  personality: versitygw
  hints: true
  scan_interval: 500ms
  policy:                   # checkpoints unchanged for 2 s flow to tape on their own
    - {bucket: dataset, prefix: checkpoints/, after: 2s, cartridges: [RLK000L9]}
tape:
  preset: lto9
  drives: 4
  block_bytes: 65536
  scheduler:
    policy: batch
  mode: scaled
  speedup: 1000
YAML
"$gw" --root "$work/root" --listen 127.0.0.1:0 --port-file "$work/port" \
  --access-key "$AWS_ACCESS_KEY_ID" --secret-key "$AWS_SECRET_ACCESS_KEY" \
  --config "$work/gateway.yaml" --log-level warn >"$work/gateway.log" 2>&1 &
gw_pid=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || { echo "gateway did not start:"; cat "$work/gateway.log"; exit 1; }
export AWS_ENDPOINT_URL="http://127.0.0.1:$(cat "$work/port")"
echo "gateway at $AWS_ENDPOINT_URL (pid $gw_pid)"
"$reelfs" --version
"$gw" --version

say "A wrong secret is refused with what to fix (a mount would be refused the same way)"
AWS_SECRET_ACCESS_KEY=not-the-secret "$reelfs" ls s3://dataset/ || true

say "reelfs ls s3://dataset/ (the bucket's top level)"
"$reelfs" ls s3://dataset/
say "reelfs ls s3://dataset/models/"
"$reelfs" ls s3://dataset/models/
say "A second gateway process over the same root (--front-end; docs/gateway.md): one namespace"
"$gw" --root "$work/root" --front-end --listen 127.0.0.1:0 --port-file "$work/fe-port" \
  --access-key "$AWS_ACCESS_KEY_ID" --secret-key "$AWS_SECRET_ACCESS_KEY" \
  --config "$work/gateway.yaml" --log-level warn >"$work/frontend.log" 2>&1 &
fe_pid=$!
for _ in $(seq 100); do [ -s "$work/fe-port" ] && break; sleep 0.1; done
fe_url="http://127.0.0.1:$(cat "$work/fe-port")"
for url in "$AWS_ENDPOINT_URL" "$fe_url"; do
  echo "$url: $("$reelfs" stat s3://dataset/models/checkpoint-a.pt --endpoint "$url" | grep -i etag)"
done
say "Three endpoints, the first one dead (port 9): marked down, requests go to the two gateways"
"$reelfs" ls s3://dataset/models/ --endpoint "http://127.0.0.1:9,$AWS_ENDPOINT_URL,$fe_url" 2>&1 |
  sed 's/^[0-9T:.-]*Z //'
kill "$fe_pid"; wait "$fe_pid" 2>/dev/null || true
say "reelfs stat s3://dataset/models/checkpoint-a.pt"
"$reelfs" stat s3://dataset/models/checkpoint-a.pt
if command -v aws >/dev/null; then
  say "The same bucket seen by the AWS CLI (a client no one here wrote)"
  aws s3 ls --recursive --summarize s3://dataset/ | tail -2
fi

mount_read_line=""
if [ -z "$fuse_reason" ]; then
  say "reelfs mount dataset $mnt"
  mkdir -p "$mnt"
  "$reelfs" mount dataset "$mnt" --endpoint "$AWS_ENDPOINT_URL" -f \
    --log-file "$work/mount.log" --metrics-listen 127.0.0.1:0 </dev/null >"$work/mount.out" 2>&1 &
  mount_pid=$!
  for _ in $(seq 300); do is_mounted && break; kill -0 "$mount_pid" 2>/dev/null || break; sleep 0.1; done
  is_mounted || { echo "mount failed:"; cat "$work/mount.out" "$work/mount.log" 2>/dev/null | tail; exit 1; }
  echo "mounted (daemon pid $mount_pid); $(grep " $mnt " /proc/mounts | cut -d' ' -f3,4)"

  say "ls -l $mnt and $mnt/models"
  ls -l "$mnt"
  ls -l "$mnt/models"
  say "du -sh and du -ah | head (sizes as the mount reports them)"
  du -sh "$mnt"
  du -ah "$mnt" | sed -n 1,6p
  metrics_url=$(grep -o 'http://127\.0\.0\.1:[0-9]*/metrics' "$work/mount.log" | head -1)
  if command -v curl >/dev/null && [ -n "$metrics_url" ]; then
    say "The mount's own Prometheus metrics (--metrics-listen; $metrics_url), a few of them"
    curl -s "$metrics_url" | grep -E '^reelfs_(fuse_requests_total\{op="(lookup|readdirplus|getattr)"\}|fs_list_requests_total|s3_requests_total)' || true
  fi

  say "The side channel and the GPU tier (user.reelfs.mount), and a read_into a memfd-backed buffer"
  python3 -c 'import json, os, sys; m = json.loads(os.getxattr(sys.argv[1], "user.reelfs.mount")); print("side channel:", m.get("side_channel", "off")); print("gpu:", m.get("gpu", "?"))' "$mnt"
  PYTHONPATH=python python3 - "$mnt/models/checkpoint-b.pt" <<'PY'
import hashlib, sys
from reelfs import gpu
path = sys.argv[1]
out = bytearray(4 << 20)
n, tier = gpu.read_into(path, out)
with open(path, "rb") as f:
    same = hashlib.sha256(f.read(n)).digest() == hashlib.sha256(out[:n]).digest()
print(f"reelfs.gpu.read_into: {n} bytes via tier {tier}, identical to read(2): {same}")
# What the daemon takes: a CUDA tensor's pages go in as a dma-buf (tier rdma-gpu) only where it
# offers both rdma and dmabuf (docs/gpu.md); elsewhere the tensor is fed by pinned staging.
from reelfs import side_channel
with side_channel.Client.for_path(path) as c:
    offered = [name for bit, name in ((side_channel.CAP_RDMA, "rdma"),
                                      (side_channel.CAP_DMABUF, "dmabuf"),
                                      (side_channel.CAP_CUDA_IPC, "cuda_ipc"),
                                      (side_channel.CAP_OPEN_PATH, "open_path"))
               if c.server_capabilities & bit]
print(f"side channel offers: {', '.join(offered)}; a CUDA tensor's tier here: "
      f"{'rdma-gpu where the NIC imports dma-bufs' if {'rdma', 'dmabuf'} <= set(offered) else 'pinned-staging (the mount has no --rdma)'}")
# Small files by path: one READ_PATH each, no FUSE request (docs/protocols/side-channel.md).
import json, os
d = os.path.dirname(os.path.dirname(path))
files = [os.path.join(r, f) for r, _, fs in os.walk(d) for f in fs
         if "models" not in r][:200]  # the samples; the checkpoints stay cold for the timing below
outs = [bytearray(os.path.getsize(f)) for f in files]
results = gpu.read_many(list(zip(files, outs)))
ok = all(open(f, "rb").read() == bytes(o[:n]) for f, o, (n, _) in zip(files, outs, results))
sc = json.loads(os.getxattr(d, "user.reelfs.metrics"))["side_channel"]
print(f"reelfs.gpu.read_many: {len(files)} files, every byte as read(2): {ok}; daemon counters: "
      f"{sc['path_opens']} opened by path, {sc['direct_reads']} direct READs, "
      f"{sc['bytes_read']} bytes")
PY

  # Timed before anything else reads it, so it is a cold read through FUSE, not the page cache.
  big="$mnt/models/checkpoint-a.pt"
  size=$(stat -c %s "$big")
  start=$(date +%s.%N)
  cat "$big" >/dev/null
  mount_read_line="mount, cat (cold):        $(rate "$size" "$(elapsed "$start")")"

  say "cp -r out of the mount, then sha256 against the source"
  start=$(date +%s.%N)
  cp -r "$mnt" "$work/out"
  secs=$(elapsed "$start")
  (cd "$work/root/dataset" && find . -type f -print0 | sort -z | xargs -0 sha256sum) >"$work/src.sha"
  (cd "$work/out" && find . -type f -print0 | sort -z | xargs -0 sha256sum) >"$work/out.sha"
  count=$(wc -l <"$work/src.sha")
  bytes=$(du -sb "$work/out" | cut -f1)
  if cmp -s "$work/src.sha" "$work/out.sha"; then
    echo "OK: $count files identical to the source (sha256); cp -r: $(rate "$bytes" "$secs")"
  else
    echo "MISMATCH between source and copy:"; diff "$work/src.sha" "$work/out.sha" | head; exit 1
  fi
  if command -v curl >/dev/null && [ -n "$metrics_url" ]; then
    echo "prefetch parts of 1 MiB or more, received straight into their buffers (docs/s3-client.md \"Direct GETs\"):"
    curl -s "$metrics_url" | grep -E '^reelfs_s3_direct_(gets|fallbacks)_total' || true
  fi

  tpy=""
  for p in python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null && "$p" -c 'import torch' 2>/dev/null; then tpy=$p; break; fi
  done
  if [ -n "$tpy" ]; then
    say "PyTorch DataLoader over $mnt/train (num_workers=4, shuffle=True), checked against the source"
    "$tpy" - "$mnt/train" "$work/root/dataset/train" <<'PY'
import hashlib, os, sys, time, warnings
warnings.filterwarnings("ignore")
import torch
from torch.utils.data import DataLoader, Dataset
mnt, src = sys.argv[1:]
paths = sorted(os.path.relpath(os.path.join(d, f), mnt) for d, _, fs in os.walk(mnt) for f in fs)
class Files(Dataset):
    def __len__(self): return len(paths)
    def __getitem__(self, i):
        with open(os.path.join(mnt, paths[i]), "rb") as f:
            return i, torch.frombuffer(bytearray(f.read()) or bytearray(1), dtype=torch.uint8)
want = {}
for p in paths:
    with open(os.path.join(src, p), "rb") as f:
        want[p] = hashlib.sha256(f.read() or b"\0").hexdigest()
t0 = time.monotonic(); n = 0; nbytes = 0
for batch in DataLoader(Files(), batch_size=8, shuffle=True, num_workers=4, collate_fn=lambda b: b):
    for i, t in batch:
        if hashlib.sha256(t.numpy().tobytes()).hexdigest() != want[paths[i]]:
            sys.exit(f"MISMATCH: {paths[i]}")
        n += 1; nbytes += t.numel()
dt = time.monotonic() - t0
print(f"OK: {n} samples verified, {n / dt:.0f} samples/s, {nbytes / 1048576 / dt:.1f} MiB/s")
PY
  else
    say "PyTorch DataLoader: skipped (no python3 can import torch; Debian package python3-torch)"
  fi

  say "A checkpoint written back through the mount (a multipart upload, visible at close)"
  mkdir -p "$mnt/checkpoints"
  head -c $((40 * 1048576 + 123)) /dev/urandom >"$work/ckpt.bin"
  start=$(date +%s.%N)
  if [ -n "$tpy" ]; then
    "$tpy" -c 'import sys, torch; torch.save({"w": torch.frombuffer(bytearray(open(sys.argv[1], "rb").read()), dtype=torch.uint8)}, sys.argv[2])' \
      "$work/ckpt.bin" "$mnt/checkpoints/step-100.pt"
    what="torch.save"
  else
    cp "$work/ckpt.bin" "$mnt/checkpoints/step-100.pt"
    what="cp"
  fi
  secs=$(elapsed "$start")
  "$reelfs" cp s3://dataset/checkpoints/step-100.pt "$work/ckpt-back.pt"
  if cmp -s "$work/ckpt-back.pt" "$mnt/checkpoints/step-100.pt"; then
    echo "OK: $what wrote $(stat -c %s "$work/ckpt-back.pt") bytes in ${secs} s; the object read back with the reelfs client is identical"
  else
    echo "MISMATCH: the checkpoint read back differs"; exit 1
  fi
  rm -f "$work/ckpt.bin" "$work/ckpt-back.pt"

  say "The gateway's archive policy writes the checkpoint to tape (archive set checkpoints/, after: 2s)"
  python3 - "$work/root/.reelfs-gateway/catalog.db" <<'PY' || echo "the policy did not archive the checkpoint within 20 s"
import sqlite3, sys, time
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True, timeout=10)
q = ("SELECT cartridge, start_block, bytes FROM archive_objects WHERE bucket = 'dataset' "
     "AND key = 'checkpoints/step-100.pt'")
for _ in range(200):
    row = db.execute(q).fetchone()
    if row:
        print("OK: checkpoints/step-100.pt is on cartridge %s at block %d (%d bytes); its disk copy "
              "stays until released" % row)
        sys.exit(0)
    time.sleep(0.1)
sys.exit(1)
PY

  say "Write, then rename into place (rsync's and atomic checkpoint writers' pattern): a server-side copy"
  mkdir -p "$mnt/results"
  printf '{"epoch": 1, "loss": 0.25}\n' >"$mnt/results/.metrics.json.tmp"
  mv "$mnt/results/.metrics.json.tmp" "$mnt/results/metrics.json"
  "$reelfs" ls s3://dataset/results/
  "$reelfs" cp s3://dataset/results/metrics.json -

  say "reelfs cp uploads a local tree (the mount's multipart code, parts in flight; no mount needed)"
  mkdir -p "$work/logs/run-1"
  for i in 1 2 3; do head -c $((i * 3 * 1048576)) /dev/urandom >"$work/logs/run-1/rank-$i.log"; done
  "$reelfs" cp -r -q "$work/logs" s3://dataset/logs/
  "$reelfs" ls -r s3://dataset/logs/
  python3 - "$mnt" <<'PY'
import json, os, sys
fs = json.loads(os.getxattr(sys.argv[1], "user.reelfs.metrics"))["fs"]
print("mount's writes so far: %d parts / %d bytes over HTTP, %d over RDMA, %d renames" %
      (fs["http_put_parts"], fs["http_put_bytes"], fs["rdma_put_bytes"], fs["renames"]))
PY
else
  say "No FUSE here ($fuse_reason): reading the dataset through the reelfs client instead"
  echo "Copying every object out with the reelfs client and verifying checksums"
  mkdir -p "$work/out"
  count=0
  bytes=0
  start=$(date +%s.%N)
  while read -r _ _ size key; do
    mkdir -p "$work/out/$(dirname "$key")"
    "$reelfs" cp "s3://dataset/$key" "$work/out/$key"
    count=$((count + 1)); bytes=$((bytes + size))
  done < <("$reelfs" ls -r s3://dataset/)
  end=$(date +%s.%N)
  (cd "$work/root/dataset" && find . -type f -print0 | sort -z | xargs -0 sha256sum) >"$work/src.sha"
  (cd "$work/out" && find . -type f -print0 | sort -z | xargs -0 sha256sum) >"$work/out.sha"
  if cmp -s "$work/src.sha" "$work/out.sha"; then
    echo "OK: $count objects, $bytes bytes, identical to the source (sha256)"
  else
    echo "MISMATCH between source and copy:"; diff "$work/src.sha" "$work/out.sha" | head; exit 1
  fi
  awk -v b="$bytes" -v s="$(awk -v a="$start" -v e="$end" 'BEGIN{print e-a}')" \
    'BEGIN { printf "copy-out: %.1f MiB in %.2f s = %.1f MiB/s (one process per object)\n", b/1048576, s, b/1048576/s }'
fi

# ---- Tape: an archived part of the dataset, its state, one batched restore ----
admin() {  # admin METHOD PATH_AND_QUERY: a SigV4-signed call to the gateway's admin endpoint
  # botocore signs it (curl 7.88's --aws-sigv4 mis-encodes a '/' in a query value such as prefix).
  /usr/bin/python3 - "$1" "$AWS_ENDPOINT_URL/_reelfs/admin/$2" <<'PY'
import os, sys, urllib.request
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
method, url = sys.argv[1:]
req = AWSRequest(method=method, url=url, data=b"")
req.headers["x-amz-content-sha256"] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
SigV4Auth(Credentials(os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"]), "s3",
          "us-east-1").add_auth(req)
with urllib.request.urlopen(urllib.request.Request(url, method=method, data=b"",
                                                   headers=dict(req.headers))) as r:
    sys.stdout.write(r.read().decode())
PY
}
# The source's checksums first: releasing takes the gateway's disk copies away.
(cd "$work/root/dataset/val" && find . -type f -print0 | sort -z | xargs -0 sha256sum) >"$work/val-src.sha"
say "Tape: archive dataset/val/ onto 2 cartridges of the simulated library, release the disk copies"
admin POST "archive?bucket=dataset&prefix=val%2F&cartridges=2&order=key&release=true" |
  python3 -c 'import json, sys; r = json.load(sys.stdin); print("%d objects, %d bytes on %d cartridges, %d released (now offline)" % (r["archived"], r["bytes"], len(r["cartridges"]), r["released"]))'
export REELFS_LEDGER="$work/ledger.sqlite"  # this demo's restore requests, not your own ledger
if [ -z "$fuse_reason" ]; then
  # A new mount: the first one cached val/ as online for its metadata TTL.
  remount mount2.log --offline=wait --restore-poll 100ms --restore-poll-max 1s
  val="$mnt/val"
  say "ls -ls $val/shard-00 | head: offline files keep their size and mode, and occupy 1 block"
  ls -ls "$val/shard-00" | sed -n 1,5p
  echo "du -sh --apparent-size: $(du -sh --apparent-size "$val" | cut -f1); du -sh (resident): $(du -sh "$val" | cut -f1)"
  if command -v getfattr >/dev/null; then
    say "getfattr -d -m '^user\\.' one offline file (the tape state as extended attributes)"
    getfattr --absolute-names -d -m '^user\.' "$val/shard-00/sample-0002.bin"
  fi
  say "4 DDP ranks over $val: reelfs.shard deals whole cartridges (user.hsm.tape), equal counts"
  PYTHONPATH=python python3 - "$val" <<'PY'
import os, sys
from reelfs import hsm, shard
paths = sorted(os.path.join(d, f) for d, _, fs in os.walk(sys.argv[1]) for f in fs)
for by in ("cartridge", "index"):
    shares = [shard.assign(range(len(paths)), lambda i: hsm.cartridge(paths[i]), 4, r, by=by)
              for r in range(4)]
    print(f"by {by:9}: samples per rank {[len(s) for s in shares]}, cartridges per rank "
          f"{[len({hsm.cartridge(paths[i]) for i in s.own} - {None}) for s in shares]}")
PY
else
  val="s3://dataset/val/"
fi
say "reelfs status $val | tail -3"
"$reelfs" status -r "$val" | tail -3
say "reelfs stage -r --wait $val: every restore in one batch, in tape order"
start=$(date +%s.%N)
"$reelfs" stage -r --wait --poll 100ms --poll-max 1s "$val"
echo "staged in $(elapsed "$start") s of wall time"
admin GET metrics | python3 -c '
import json, sys
t = json.load(sys.stdin)["tape"]
d = t["drive_time_s"]
print("the library: %d cartridge mounts for %d recalls; the last recall done %.0f simulated s after "
      "its request; drive time loading %.0f s, locating %.1f s, reading %.1f s, rewinding %.0f s"
      % (t["mounts"]["total"], t["requests"]["completed"], t["completion_s"]["max"],
         d["loading"], d["locating"], d["reading"], d["rewinding"]))'
if [ -z "$fuse_reason" ]; then
  say "sha256 of $val after the restore against the source"
  (cd "$val" && find . -type f -print0 | sort -z | xargs -0 sha256sum) >"$work/val-out.sha"
  if cmp -s "$work/val-src.sha" "$work/val-out.sha"; then
    echo "OK: $(wc -l <"$work/val-src.sha") restored files identical to the source (sha256)"
  else
    echo "MISMATCH after the restore:"; diff "$work/val-src.sha" "$work/val-out.sha" | head; exit 1
  fi

  say "Epoch 2 over tape: a mount with --cache keeps what it read (docs/cache.md)"
  remount_cached() { remount mount-cache.log --offline=wait --cache "$work/cache"; }
  recalls() { admin GET metrics | python3 -c 'import json,sys; print(json.load(sys.stdin)["archive"]["recalls_submitted"])'; }
  remount_cached
  (cd "$val" && find . -type f -print0 | sort -z | xargs -0 cat) >/dev/null  # epoch 1 fills it
  admin POST "release?bucket=dataset&prefix=val%2F" >/dev/null
  before=$(recalls)
  remount_cached  # a new daemon: the cache is on disk
  (cd "$val" && find . -type f -print0 | sort -z | xargs -0 sha256sum) >"$work/val-out2.sha"
  cmp -s "$work/val-src.sha" "$work/val-out2.sha" || { echo "MISMATCH in epoch 2"; exit 1; }
  echo "the gateway released val/ again; epoch 2 read $(wc -l <"$work/val-out2.sha") files" \
    "byte-exact with $(($(recalls) - before)) recalls;" \
    "user.hsm.state: $(getfattr --absolute-names --only-values -n user.hsm.state "$val/shard-00/sample-0002.bin" 2>/dev/null)"
  getfattr --absolute-names --only-values -n user.reelfs.metrics "$mnt" | python3 -c '
import json, sys
m = json.load(sys.stdin); c = m["cache"]
print("cache %s: %d objects, %d bytes; served from it: %d bytes copied by the daemon, %d spliced from its files"
      % (c["dir"], c["objects"], c["bytes"], c["hit_bytes"], m["fs"]["cached_file_bytes"]))'
  # Where the kernel does not read the cache's files itself (no passthrough), whole cached files
  # are spliced from them if pipes hold a READ, else copied (docs/cache.md "Served by the daemon").
  grep -o -m1 'cached files .*' "$work/mount-cache.log" || echo 'cached files: no log line'
  # Side-channel READs fill the cache too (docs/cache.md "What fills the cache").
  PYTHONPATH=python python3 - "$mnt" models/checkpoint-b.pt "$work/root/dataset" <<'PY'
import json, os, sys
from reelfs import gpu
mnt, name, root = sys.argv[1:4]
path, src = os.path.join(mnt, name), os.path.join(root, name)
def cache():
    m = json.loads(os.getxattr(mnt, "user.reelfs.metrics"))
    return dict(m["cache"], hit_bytes=m["cache"]["hit_bytes"] + m["fs"]["cached_file_bytes"])
out, before = bytearray(os.path.getsize(path)), cache()
gpu.read_into(path, out)
filled = cache()
gpu.read_into(path, out)
served = cache()
print(f"side channel with --cache: the first read_into stored {filled['stored_bytes'] - before['stored_bytes']} bytes, "
      f"the second took {served['hit_bytes'] - filled['hit_bytes']} from the cache; identical to the source: {open(src, 'rb').read() == bytes(out)}")
PY

  # On by default where pipes hold 1 MiB READs (CAP_SYS_RESOURCE or fs.pipe-max-size >= 2 MiB);
  # --splice-reads turns them on anywhere over plain http.
  say "Spliced reads (--splice-reads): the GET's bytes go socket -> pipe -> kernel, no copy in the daemon"
  remount mount-splice.log --splice-reads
  start=$(date +%s.%N)
  if cmp -s "$big" "$work/root/dataset/models/checkpoint-a.pt"; then
    echo "OK: models/checkpoint-a.pt identical to the source, $(rate "$size" "$(elapsed "$start")") with the compare"
  else
    echo "MISMATCH through --splice-reads"; exit 1
  fi
  getfattr --absolute-names --only-values -n user.reelfs.metrics "$mnt" | python3 -c '
import json, sys
f = json.load(sys.stdin)["fs"]
print("spliced: %d reads, %d bytes, %d stream(s), %d handle(s) back on the ordinary path (%d slower than their reader), %d gap(s) dropped" % (f["spliced_reads"], f["spliced_bytes"], f["splice_streams"], f["splice_fallbacks"], f["splice_slow_streams"], f["splice_gaps_skipped"]))'

  # Off by default: small reads each cost a round trip (docs/semantics.md "Direct I/O reads").
  say "Direct I/O reads (--direct-io): no page cache, each read() goes to the daemon at its own size"
  remount mount-dio.log --direct-io
  start=$(date +%s.%N)
  if dd if="$big" bs=1M status=none | cmp -s - "$work/root/dataset/models/checkpoint-a.pt"; then
    echo "OK: models/checkpoint-a.pt read with 1 MiB reads, identical to the source, $(rate "$size" "$(elapsed "$start")") with the compare"
  else
    echo "MISMATCH through --direct-io"; exit 1
  fi
  grep -o -- '--direct-io: .*' "$work/mount-dio.log" | head -1
fi

if command -v curl >/dev/null; then
  say "The gateway's Prometheus metrics (an unsigned GET /metrics), a few of them"
  curl -s "$AWS_ENDPOINT_URL/metrics" |
    grep -E '^reelfs_gateway_(tape_recalls_total|tape_mounts_total|archive_recalls_submitted_total|http_requests_total\{method="GET",code="200"\})' || true
fi

say "A config profile instead of flags (docs/configuration.md): reelfs config, then ls with no --endpoint"
mkdir -p "$work/xdg/reelfs"
printf 'profiles:\n  default:\n    endpoint: %s\n    mount:\n      max_memory: 512MiB\n' \
  "$AWS_ENDPOINT_URL" >"$work/xdg/reelfs/config.yaml"
(unset AWS_ENDPOINT_URL; export XDG_CONFIG_HOME=$work/xdg
 "$reelfs" config && "$reelfs" ls s3://dataset/ | head -2)

if command -v openssl >/dev/null; then
  say "The gateway over TLS (--tls-cert): a CA made here, reelfs verifying it, and refusing without it"
  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=demo CA" -keyout "$work/ca.key" \
    -out "$work/ca.pem" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout "$work/tls.key" \
    -out "$work/tls.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1\n' >"$work/tls.ext"
  openssl x509 -req -in "$work/tls.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -CAcreateserial \
    -days 1 -extfile "$work/tls.ext" -out "$work/tls.pem" 2>/dev/null
  mkdir -p "$work/tls-root/secure" && echo "sealed in transit" >"$work/tls-root/secure/note.txt"
  "$gw" --root "$work/tls-root" --listen 127.0.0.1:0 --port-file "$work/tls-port" \
    --access-key "$AWS_ACCESS_KEY_ID" --secret-key "$AWS_SECRET_ACCESS_KEY" \
    --tls-cert "$work/tls.pem" --tls-key "$work/tls.key" --log-level warn >"$work/tls-gw.log" 2>&1 &
  tls_pid=$!
  for _ in $(seq 100); do [ -s "$work/tls-port" ] && break; sleep 0.1; done
  tls_url="https://127.0.0.1:$(cat "$work/tls-port")"
  "$reelfs" --endpoint "$tls_url" --ca-bundle "$work/ca.pem" cat s3://secure/note.txt
  "$reelfs" --endpoint "$tls_url" ls s3://secure/ 2>&1 | cut -c1-150 || true
  kill "$tls_pid"; wait "$tls_pid" 2>/dev/null || true; tls_pid=""
fi

say "Temporary credentials (docs/s3-client.md): a web identity token traded at STS, refreshed before expiry"
# tests/lib/fake_aws_creds.py stands in for STS on loopback (no cloud is reached); it hands out
# this gateway's keys with a session token that expires in 5 min 10 s, so reelfs refreshes at once.
python3 tests/lib/fake_aws_creds.py --port-file "$work/sts-port" --access-key "$AWS_ACCESS_KEY_ID" \
  --secret "$AWS_SECRET_ACCESS_KEY" --expires-in 310 --log "$work/sts.log" &
sts_pid=$!
for _ in $(seq 100); do [ -s "$work/sts-port" ] && break; sleep 0.1; done
echo -n web-token-1 >"$work/web-identity-token"
(unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
 export AWS_WEB_IDENTITY_TOKEN_FILE=$work/web-identity-token
 export AWS_ROLE_ARN=arn:aws:iam::123456789012:role/reelfs-test
 export AWS_ENDPOINT_URL_STS="http://127.0.0.1:$(cat "$work/sts-port")"
 "$reelfs" --log-level info ls s3://dataset/ 2>&1 | head -3)
kill "$sts_pid"; wait "$sts_pid" 2>/dev/null || true; sts_pid=""

say "Large-object read throughput, same object: the mount vs the reelfs client (8 MiB ranged GETs) vs curl"
[ -n "$mount_read_line" ] && echo "$mount_read_line"
url=$(build/bench/reelfs-s3-bench presign --endpoint "$AWS_ENDPOINT_URL" --bucket dataset \
  --key models/checkpoint-a.pt)
curl -sS -f -o /dev/null -w 'curl, 1 stream:           %{speed_download} B/s\n' "$url" |
  awk '{ printf "%s %.1f MiB/s\n", $1" "$2" "$3, $4/1048576 }'
for c in 1 8; do
  build/bench/reelfs-s3-bench get --endpoint "$AWS_ENDPOINT_URL" --bucket dataset \
    --key models/checkpoint-a.pt --concurrency "$c" |
    sed -E 's/.*"concurrency":([0-9]+).*"mib_per_s":([0-9.]+).*/reelfs, \1 in flight:       \2 MiB\/s/'
done

if [ "$keep" = 1 ]; then
  echo
  echo "gateway still running at $AWS_ENDPOINT_URL$(is_mounted && echo ", mounted at $mnt"); press Enter to stop and clean up"
  read -r _
fi
if is_mounted; then
  say "fusermount3 -u $mnt"
  fusermount3 -u "$mnt"
  if wait "$mount_pid"; then echo "unmounted; the daemon exited cleanly"; else echo "the daemon exited with $?"; fi
  mount_pid=""
fi
# ---- The same client against Ceph RGW, a real distributed S3 engine (docs/compatibility.md) ----
if [ -z "$fuse_reason" ] && [ "${DEMO_CEPH:-1}" = 1 ] && command -v radosgw >/dev/null; then
  say "Ceph RGW: a one-host cluster (mon, mgr, memstore OSD, two radosgw) started by tests/ceph/cluster.sh"
  tests/ceph/cluster.sh up "$work/ceph"
  . "$work/ceph/cluster.env"
  rgw=${RGW_ENDPOINTS%% *}
  say "aws s3 cp: train/shard-00 and checkpoint-b.pt into RGW; reelfs mount on $rgw"
  export AWS_ACCESS_KEY_ID=$CEPH_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$CEPH_SECRET_KEY
  aws --endpoint-url "$rgw" s3 mb s3://rgw-demo >/dev/null
  aws --endpoint-url "$rgw" s3 cp --recursive --quiet "$work/root/dataset/train/shard-00" s3://rgw-demo/shard-00/
  aws --endpoint-url "$rgw" s3 cp --quiet "$work/root/dataset/models/checkpoint-b.pt" s3://rgw-demo/
  "$reelfs" mount rgw-demo "$mnt" --endpoint "$rgw" --log-file "$work/rgw-mount.log"
  ls -l "$mnt" | head -4
  (cd "$work/root/dataset/train/shard-00" && sha256sum -- *) >"$work/rgw-src.sha"
  (cd "$mnt/shard-00" && sha256sum -c --quiet "$work/rgw-src.sha") &&
    cmp "$mnt/checkpoint-b.pt" "$work/root/dataset/models/checkpoint-b.pt" &&
    echo "OK: 61 files read through the mount from RGW, identical to the source (sha256, cmp)"
  echo "written through the mount into RGW" >"$mnt/hello-from-reelfs.txt"
  echo "aws s3 cp s3://rgw-demo/hello-from-reelfs.txt -: $(aws --endpoint-url "$rgw" s3 cp s3://rgw-demo/hello-from-reelfs.txt -)"
  fusermount3 -u "$mnt"
  tests/ceph/cluster.sh down "$work/ceph" && rm -rf "$work/ceph"
fi
say "Done"
