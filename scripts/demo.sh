#!/usr/bin/env bash
# The main job on the embedded default: set up, start reelfs-gateway on a generated sample dataset,
# read it back through the reelfs client (and, for comparison, the AWS CLI), verify every byte,
# print throughput, and clean up, even on Ctrl-C.
#
#   scripts/demo.sh [--keep]      # --keep leaves the gateway running until Enter is pressed
#
# The FUSE mount arrives with its issue; this demo already exercises the whole S3 path it will use.
set -euo pipefail
cd "$(dirname "$0")/.."
keep=0
[ "${1:-}" = "--keep" ] && keep=1

scripts/setup.sh >/dev/null
gw=build/gateway/reelfs-gateway
reelfs=build/cli/reelfs

work=$(mktemp -d /tmp/reelfs-demo.XXXXXX)
gw_pid=""
cleanup() {
  if [ -n "$gw_pid" ]; then kill "$gw_pid" 2>/dev/null || true; wait "$gw_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'echo; echo "demo: interrupted, cleaning up"; exit 130' INT TERM

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

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
export AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1
export AWS_CONFIG_FILE="$work/aws-config" AWS_SHARED_CREDENTIALS_FILE=/dev/null
printf '[default]\ns3 =\n    addressing_style = path\n' >"$AWS_CONFIG_FILE"
"$gw" --root "$work/root" --listen 127.0.0.1:0 --port-file "$work/port" \
  --access-key "$AWS_ACCESS_KEY_ID" --secret-key "$AWS_SECRET_ACCESS_KEY" \
  --log-level warn >"$work/gateway.log" 2>&1 &
gw_pid=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || { echo "gateway did not start:"; cat "$work/gateway.log"; exit 1; }
export AWS_ENDPOINT_URL="http://127.0.0.1:$(cat "$work/port")"
echo "gateway at $AWS_ENDPOINT_URL (pid $gw_pid)"

say "reelfs ls s3://dataset/ (the bucket's top level)"
"$reelfs" ls s3://dataset/
say "reelfs ls s3://dataset/models/"
"$reelfs" ls s3://dataset/models/
say "reelfs stat s3://dataset/models/checkpoint-a.pt"
"$reelfs" stat s3://dataset/models/checkpoint-a.pt
if command -v aws >/dev/null; then
  say "The same bucket seen by the AWS CLI (a client no one here wrote)"
  aws s3 ls --recursive --summarize s3://dataset/ | tail -2
fi

say "Copying every object out with the reelfs client and verifying checksums"
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

say "Large-object read throughput: reelfs client (8 MiB ranged GETs) vs curl, same object"
url=$(build/bench/reelfs-s3-bench presign --endpoint "$AWS_ENDPOINT_URL" --bucket dataset \
  --key models/checkpoint-a.pt)
curl -sS -f -o /dev/null -w 'curl, 1 stream:           %{speed_download} B/s\n' "$url" |
  awk '{ printf "%s %.1f MiB/s\n", $1" "$2" "$3, $4/1048576 }'
for c in 1 8; do
  build/bench/reelfs-s3-bench get --endpoint "$AWS_ENDPOINT_URL" --bucket dataset \
    --key models/checkpoint-a.pt --concurrency "$c" |
    sed -E 's/.*"concurrency":([0-9]+).*"mib_per_s":([0-9.]+).*/reelfs, \1 in flight:       \2 MiB\/s/'
done

say "Done"
if [ "$keep" = 1 ]; then
  echo "gateway still running at $AWS_ENDPOINT_URL; press Enter to stop and clean up"
  read -r _
fi
