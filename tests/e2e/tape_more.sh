# Sourced after lib.sh and tape_lib.sh by tape_modes.sh, tape_tools.sh, tape_sampler.sh and
# bench/tape/run.sh: what those need beyond tape_lib.sh.
#
#   tape_count_requests              # appends a `faults:` section to $TAPE_CONFIG that counts
#                                    # every RestoreObject and GetObject (rules that never fire)
#   metric archive.recalls_submitted # one number from GET /_reelfs/admin/metrics
#   restore_requests                 # RestoreObject requests the gateway has seen (counting rule)
#   mount_tape SPEC DIR MODE [opts]  # reelfs mount ... --offline=MODE with fast restore polling
#   probe_read PATH [direct|nonblock] # prints OK <sha256> or the errno name (EAGAIN, EACCES, ...)
#   wait_catalog BUCKET KEY STATE... # until the gateway's catalog shows KEY in one of STATEs
#   gen_train_set DIR SUMS SEED      # 200 files of 16 KiB: train/online/ (every 5th), train/tape/

# Where direct_read.py is (the aligned whole-file read probe_read and tape_modes.sh share).
TAPE_MORE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# tape_count_requests: counting rules on a never-reached nth (docs/gateway.md "Fault scenarios":
# `matched` counts every request of the operation, `fired` stays 0). Call after tape_config.
tape_count_requests() {
  cat >>"$TAPE_CONFIG" <<'YAML'
faults:
  http:
    - op: RestoreObject
      nth: 1000000000000
      error: SlowDown
    - op: GetObject
      nth: 1000000000000
      error: SlowDown
YAML
  [[ -n "${TAPE_FAULTS_EXTRA_YAML:-}" ]] && printf '%s\n' "$TAPE_FAULTS_EXTRA_YAML" >>"$TAPE_CONFIG"
  true
}

# metric DOTTED.PATH: a value of the admin metrics JSON (tape.*, archive.*); `http.OP` is the
# `matched` count of the first counting rule for OP.
metric() {
  tape_metrics | "$PY" -c '
import json, sys
m = json.load(sys.stdin)
path = sys.argv[1]
if path.startswith("http."):
    op = path[5:]
    print(next((r["matched"] for r in m.get("http_faults", []) if r["op"] == op), 0))
else:
    for part in path.split("."):
        m = m[part]
    print(m)' "$1"
}

restore_requests() { metric http.RestoreObject; }

# mount_tape SPEC DIR MODE [extra reelfs mount options...]: a mount with --offline=MODE, restores
# polled after 20 ms, doubling to 200 ms (TAPE_RESTORE_POLL, TAPE_RESTORE_POLL_MAX: the simulated
# library runs thousands of times faster than real time) and an in-memory ledger (each mount its
# own).
mount_tape() {
  local spec=$1 dir=$2 mode=$3; shift 3
  MOUNT_DIR=$dir MOUNT_LOG="$WORK/mount-$(basename "$dir").log" mount_bucket "$spec" \
    --offline="$mode" --offline-timeout "${TAPE_OFFLINE_TIMEOUT:-90s}" \
    --restore-poll "${TAPE_RESTORE_POLL:-20ms}" \
    --restore-poll-max "${TAPE_RESTORE_POLL_MAX:-200ms}" --ledger none "$@"
}

# probe_read PATH [direct|nonblock|buffered]: reads the whole file and prints "OK <sha256>", or the
# errno's name when open or read fails (EAGAIN, EACCES, ETIMEDOUT, ...). direct: O_DIRECT (every
# read is a FUSE request of its own; the page cache is bypassed). A reader still blocked after
# PROBE_LIMIT seconds (default 60) is SIGKILLed (a buffered read waiting on a page lock can only
# be killed) and HUNG is printed.
# sc_read FILE [fd|path]: reads FILE whole through the mount's side channel (reelfs.gpu.read_into
# with an fd: OPEN_FILE; or read_many: READ_PATH) and prints "OK <sha256>" or the errno's name, as
# probe_read does; "NOSC" when the mount has no side channel.
sc_read() {
  local out rc=0
  out=$(PYTHONPATH="$TAPE_MORE_DIR/../../python${PYTHONPATH:+:$PYTHONPATH}" \
    timeout -s KILL "${PROBE_LIMIT:-60}" "$PY" - "$1" "${2:-fd}" <<'PY'
import errno, hashlib, os, sys
from reelfs import gpu, side_channel
path, how = sys.argv[1], sys.argv[2]
try:
    side_channel.socket_path_for(path)
except side_channel.SideChannelUnavailable:
    print("NOSC")
    sys.exit(0)
out = bytearray(os.stat(path).st_size)
try:
    if how == "path":
        (n, tier), = gpu.read_many([(path, out)])
    else:
        n, tier = gpu.read_into(path, out)
except OSError as e:
    print(errno.errorcode.get(e.errno, str(e.errno)))
    sys.exit(0)
print("OK", hashlib.sha256(out[:n]).hexdigest())
PY
  ) || rc=$?
  if [[ $rc -ne 0 || -z $out ]]; then echo "HUNG"; else echo "$out"; fi
}

probe_read() {
  local out rc=0
  out=$(PYTHONPATH="$TAPE_MORE_DIR${PYTHONPATH:+:$PYTHONPATH}" \
    timeout -s KILL "${PROBE_LIMIT:-60}" "$PY" - "$1" "${2:-buffered}" <<'PY'
import errno, hashlib, os, sys
from direct_read import hash_aligned
path, how = sys.argv[1], sys.argv[2]
flags = os.O_RDONLY | {"direct": os.O_DIRECT, "nonblock": os.O_NONBLOCK}.get(how, 0)
h = hashlib.sha256()
try:
    fd = os.open(path, flags)
    try:
        if how == "direct":
            hash_aligned(fd, h)
        else:
            while True:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    break
                h.update(chunk)
    finally:
        os.close(fd)
except OSError as e:
    print(errno.errorcode.get(e.errno, str(e.errno)))
    sys.exit(0)
print("OK", h.hexdigest())
PY
  ) || rc=$?
  if [[ $rc -ne 0 || -z $out ]]; then echo "HUNG"; else echo "$out"; fi
}

# sum_of BUCKET KEY: the source checksum recorded by gen_objects.
sum_of() { awk -v k="$2" '$2 == k { print $1 }' "$WORK/$1.sums"; }

# wait_catalog BUCKET KEY STATE...: polls the gateway's catalog every 10 ms (one process, read-only
# SQLite, as catalog_states) until KEY is in one of the states; fails after WAIT_LIMIT seconds
# (default 60).
wait_catalog() {
  local bucket=$1 key=$2 got; shift 2
  got=$("$PY" - "$ROOT/.reelfs-gateway/catalog.db" "$bucket" "$key" "${WAIT_LIMIT:-60}" "$@" <<'PY'
import sqlite3, sys, time
db_path, bucket, key, limit, want = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5:]
db = sqlite3.connect("file:%s?mode=ro" % db_path, uri=True, timeout=10)
names = {0: "online", 1: "premigrated", 2: "offline"}
deadline = time.monotonic() + limit
while True:
    row = db.execute("SELECT a.state, a.staging FROM objects o LEFT JOIN archive_objects a ON "
                     "a.bucket = o.bucket AND a.key = o.key WHERE o.bucket = ? AND o.key = ?",
                     (bucket, key)).fetchone()
    s = "missing" if row is None else "online" if row[0] is None else \
        "staging" if row[0] == 2 and row[1] else names.get(row[0], "state%d" % row[0])
    if s in want or time.monotonic() > deadline:
        print(s)
        break
    time.sleep(0.01)
PY
)
  for want in "$@"; do [[ $got == "$want" ]] && return 0; done
  fail "$bucket/$key is '$got' in the gateway's catalog, not one of: $*"
}

# catalog_count BUCKET STATE: how many objects of BUCKET the catalog has in STATE.
catalog_count() { catalog_states "$1" | awk -F'\t' -v s="$2" '$2 == s { n++ } END { print n + 0 }'; }

# gen_train_set DIR SUMS SEED: the training set of tape_sampler.sh and tape_ddp.sh: 200 files of
# 16 KiB (seeded), every 5th under train/online/ (never archived), the rest under train/tape/;
# "sha256  key" lines in SUMS.
gen_train_set() {
  "$PY" - "$1" "$2" "$3" <<'PY'
import hashlib, os, random, sys
root, sums, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = random.Random(seed)
with open(sums, "w") as out:
    for i in range(200):
        key = f"train/online/{i:05d}.bin" if i % 5 == 0 else f"train/tape/{i:05d}.bin"
        data = rng.randbytes(16384)
        os.makedirs(os.path.dirname(os.path.join(root, key)), exist_ok=True)
        with open(os.path.join(root, key), "wb") as f:
            f.write(data)
        out.write(f"{hashlib.sha256(data).hexdigest()}  {key}\n")
PY
}
