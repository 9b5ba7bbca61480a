# Sourced after lib.sh by the tape e2e scripts (issue 5): reelfs-gateway with an archive and the
# simulated tape library on a fast clock (docs/gateway.md "Archive", gateway/tape/config.h), the
# archive writer, the admin endpoints (docs/protocols/admin.md) and the gateway's catalog.
#
#   source "$(dirname "$0")/lib.sh"
#   source "$(dirname "$0")/tape_lib.sh"
#   e2e_init NAME 500
#   gen_objects BUCKET COUNT SIZE        # $ROOT/BUCKET/d/NNNNN.bin, checksums in $WORK/BUCKET.sums
#   tape_config versitygw                # writes $TAPE_CONFIG (see the TAPE_* knobs below)
#   archive_offline BUCKET 20 striped    # `reelfs-gateway archive --release` (gateway stopped)
#   start_tape_gateway                   # start_gateway with --config $TAPE_CONFIG
#   archive_bucket BUCKET 20 striped     # ... or the admin endpoint on the running gateway
#   tape_metrics | python3 -c ...        # GET /_reelfs/admin/metrics (JSON)
#   tape_mounts                          # "TOTAL MAX_PER_CARTRIDGE" from the metrics
#   catalog_states BUCKET                # "key<TAB>online|premigrated|offline|staging" per object
#
# Knobs (environment, read by tape_config): TAPE_HINTS (false), TAPE_DRIVES (4), TAPE_SPEEDUP
# (2000: simulated seconds per real second), TAPE_BLOCK_BYTES (4096), TAPE_POLICY (batch),
# TAPE_EXTRA_YAML (lines appended to the `tape:` section), ARCHIVE_EXTRA_YAML (to `archive:`).
# Requires curl with --aws-sigv4 (skips otherwise).

command -v curl >/dev/null || skip "curl not installed"
curl --help all 2>/dev/null | grep -q -- --aws-sigv4 || skip "curl has no --aws-sigv4"

# tape_config PERSONALITY [FILE]: writes the gateway config (archive: and tape:) and sets
# TAPE_CONFIG. PERSONALITY is plain, versitygw or aws.
tape_config() {
  local personality=$1 file=${2:-$WORK/gateway-tape.yaml}
  {
    echo "archive:"
    echo "  personality: $personality"
    echo "  hints: ${TAPE_HINTS:-false}"
    [[ -n "${ARCHIVE_EXTRA_YAML:-}" ]] && printf '%s\n' "$ARCHIVE_EXTRA_YAML" | sed 's/^/  /'
    echo "tape:"
    echo "  preset: lto9"
    echo "  drives: ${TAPE_DRIVES:-4}"
    echo "  block_bytes: ${TAPE_BLOCK_BYTES:-4096}"
    echo "  scheduler:"
    echo "    policy: ${TAPE_POLICY:-batch}"
    echo "  mode: scaled"
    echo "  speedup: ${TAPE_SPEEDUP:-2000}"
    [[ -n "${TAPE_EXTRA_YAML:-}" ]] && printf '%s\n' "$TAPE_EXTRA_YAML" | sed 's/^/  /'
    true
  } >"$file"
  TAPE_CONFIG=$file
  TAPE_PERSONALITY=$personality
}

# start_tape_gateway [PORT]: start_gateway (lib.sh) with --config $TAPE_CONFIG (tape_config first).
start_tape_gateway() {
  [[ -n "${TAPE_CONFIG:-}" ]] || fail "start_tape_gateway: call tape_config first"
  GATEWAY_EXTRA_ARGS="--config $TAPE_CONFIG" start_gateway "${1:-0}"
}

# stop_tape_gateway: SIGTERM, waits for exit 0 (the root's lock is released).
stop_tape_gateway() {
  [[ -n "$GW_PID" ]] || return 0
  kill -TERM "$GW_PID" 2>/dev/null || true
  local rc=0
  wait "$GW_PID" || rc=$?
  GW_PID=""
  [[ $rc -eq 0 ]] || fail "gateway exited with $rc after SIGTERM: $(tail -n 5 "$WORK/gateway.err")
$(gateway_crash_report "$rc")"
}

# archive_offline BUCKET CARTRIDGES [ORDER] [PREFIX]: `reelfs-gateway archive --release` on the
# stopped gateway's root (the command refuses a root a running gateway holds). ORDER: key
# (contiguous key ranges, about total/N bytes each) or striped (object i on cartridge i mod N).
archive_offline() {
  local bucket=$1 n=$2 order=${3:-key} prefix=${4:-}
  [[ -n "${TAPE_CONFIG:-}" ]] || fail "archive_offline: call tape_config first"
  "$REELFS_GATEWAY_BIN" archive --root "$ROOT" --config "$TAPE_CONFIG" --bucket "$bucket" \
    ${prefix:+--prefix "$prefix"} --cartridges "$n" --order "$order" --release \
    >"$WORK/archive.out" 2>&1 || fail "reelfs-gateway archive: $(tail -n 5 "$WORK/archive.out")"
}

# gw_admin METHOD PATH_AND_QUERY [curl args...]: a SigV4-signed admin request; prints the body,
# fails on a non-2xx answer. The body is empty, so x-amz-content-sha256 is the empty string's
# hash (curl 7.88 does not send the header, and the gateway requires it).
gw_admin() {
  local method=$1 path=$2; shift 2
  local empty=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 out code
  out="$WORK/admin.$$.$RANDOM"
  code=$(curl -sS --aws-sigv4 "aws:amz:us-east-1:s3" --user "$GW_ACCESS_KEY:$GW_SECRET_KEY" \
    -H "x-amz-content-sha256: $empty" -X "$method" -o "$out" -w '%{http_code}' "$@" \
    "$ENDPOINT/_reelfs/admin/$path") || { rm -f "$out"; fail "admin $method $path: curl failed"; }
  if [[ $code != 2* ]]; then
    local body; body=$(cat "$out"); rm -f "$out"
    fail "admin $method $path: HTTP $code: $body"
  fi
  cat "$out"; rm -f "$out"
}

# archive_bucket BUCKET CARTRIDGES [ORDER] [PREFIX]: the archive writer on the running gateway,
# with release; prints its JSON report and fails if the report lists errors.
archive_bucket() {
  local bucket=$1 n=$2 order=${3:-key} prefix=${4:-} report
  report=$(gw_admin POST "archive?bucket=$bucket&cartridges=$n&order=$order&release=true${prefix:+&prefix=$prefix}")
  "$PY" -c 'import json,sys; r=json.loads(sys.argv[1]); sys.exit(1 if r.get("errors") else 0)' \
    "$report" || fail "archive reported errors: $report"
  echo "$report"
}

# release_bucket BUCKET [PREFIX]: every premigrated (restored) object offline again.
release_bucket() {
  gw_admin POST "release?bucket=$1${2:+&prefix=$2}"
}

# tape_metrics: GET /_reelfs/admin/metrics (JSON on stdout).
tape_metrics() { gw_admin GET metrics; }

# tape_mounts: "TOTAL MAX_PER_CARTRIDGE CARTRIDGES_MOUNTED" from the tape metrics.
tape_mounts() {
  tape_metrics | "$PY" -c '
import json, sys
m = json.load(sys.stdin)["tape"]["mounts"]
per = m.get("per_cartridge", {})
print(m["total"], max(per.values(), default=0), len(per))'
}

# catalog_states BUCKET: "key<TAB>state" for every object of BUCKET in the gateway's catalog, in
# key order. state: online (never archived), premigrated (archived, disk copy present), staging
# (offline, recall running), offline. Read-only SQLite access; safe while the gateway runs (WAL).
catalog_states() {
  "$PY" - "$ROOT/.reelfs-gateway/catalog.db" "$1" <<'PY'
import sqlite3, sys
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True, timeout=10)
rows = db.execute(
    "SELECT o.key, a.state, a.staging FROM objects o LEFT JOIN archive_objects a "
    "ON a.bucket = o.bucket AND a.key = o.key WHERE o.bucket = ? ORDER BY o.key", (sys.argv[2],))
names = {0: "online", 1: "premigrated", 2: "offline"}
for key, state, staging in rows:
    if state is None:
        s = "online"
    elif state == 2 and staging:
        s = "staging"
    else:
        s = names.get(state, "state%d" % state)
    print("%s\t%s" % (key, s))
PY
}

# gen_objects BUCKET COUNT SIZE [PREFIX]: COUNT objects of SIZE bytes (each different, seeded)
# named PREFIX/NNNNN.bin (PREFIX default "d"); "sha256  key" lines go to $WORK/BUCKET.sums.
gen_objects() {
  "$PY" - "$ROOT/$1" "$2" "$3" "${4:-d}" "$WORK/$1.sums" <<'PY'
import hashlib, os, random, sys
root, count, size, prefix, sums = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
os.makedirs(os.path.join(root, prefix), exist_ok=True)
rng = random.Random(5)
base = rng.randbytes(size)
with open(sums, "w") as out:
    for i in range(count):
        key = "%s/%05d.bin" % (prefix, i)
        data = (i.to_bytes(8, "little") + base[8:])[:size] if size >= 8 else base
        with open(os.path.join(root, key), "wb") as f:
            f.write(data)
        out.write("%s  %s\n" % (hashlib.sha256(data).hexdigest(), key))
PY
}
