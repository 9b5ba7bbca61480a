# Sourced (bash) by tests/e2e/lib.sh when E2E_SERVER=rgw: the e2e scripts then run unchanged
# against Ceph RGW instead of reelfs-gateway. start_gateway is replaced by one that uploads what the
# script generated under $ROOT (each top-level directory a bucket) with the AWS CLI, so that no
# object the mount reads was written by reelfs, and points ENDPOINT at the first radosgw.
#
# Expects E2E_RGW_ENV: the cluster.env written by tests/ceph/cluster.sh (CEPH_CONF,
# CEPH_ACCESS_KEY, CEPH_SECRET_KEY, RGW_ENDPOINTS). Only scripts that need nothing of the gateway but S3 run this
# way (tests/ceph/run.sh lists them).

[[ -n "${E2E_RGW_ENV:-}" && -r "$E2E_RGW_ENV" ]] ||
  skip "E2E_SERVER=rgw needs E2E_RGW_ENV (tests/ceph/cluster.sh writes DIR/cluster.env)"
# shellcheck disable=SC1090
source "$E2E_RGW_ENV"

# rgw_aws ARGS...: the AWS CLI against the first radosgw with the cluster's S3 user.
rgw_aws() { aws --endpoint-url "${RGW_ENDPOINTS%% *}" "$@"; }

# rgw_fresh_buckets NAME...: removes those buckets if they exist (what an earlier run of the same
# script left), so the script starts from empty ones. Only the script's own: tests/ceph/run.sh
# runs two scripts at once, and memstore (8 GiB, cluster.sh) holds every suite's objects. On the
# server side with radosgw-admin, past the garbage collector: thousands of keys go in a second,
# where `aws s3 rb --force` sends a DELETE per key.
rgw_fresh_buckets() {
  local b list names
  # radosgw-admin lists in 0.2 s what `aws s3api list-buckets` takes a Python start (1-2 s) for.
  list=$(radosgw-admin -c "$CEPH_CONF" bucket list 2>"$WORK/bucket-list.err") ||
    fail "radosgw-admin bucket list: $(tail -3 "$WORK/bucket-list.err")"
  names=" $(grep -o '"[^"]*"' <<<"$list" | tr -d '"' | tr '\n' ' ' || true) "  # [] on a new cluster
  for b in "$@"; do
    [[ $names == *" $b "* ]] || continue
    radosgw-admin -c "$CEPH_CONF" bucket rm --bucket="$b" --purge-objects --bypass-gc \
      >/dev/null 2>"$WORK/bucket-rm.err" ||
      fail "could not remove bucket $b from RGW: $(tail -3 "$WORK/bucket-rm.err")"
  done
}

# start_gateway: the buckets of the directories under $ROOT (and those named in RGW_BUCKETS, which
# a script creates itself) made fresh, and each directory uploaded by the AWS CLI.
start_gateway() {
  local d b
  GW_ACCESS_KEY=$CEPH_ACCESS_KEY
  GW_SECRET_KEY=$CEPH_SECRET_KEY
  export AWS_ACCESS_KEY_ID=$CEPH_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$CEPH_SECRET_KEY
  # 8 requests at once, not the CLI's default 10 nor more: on 2 CPUs shared with the OSD and
  # radosgw, 2 GiB uploads in 24 s with 8 and 35-45 s with 32, and 1 000 small files take the
  # same 7 s with 8, 16 or 32 (docs/testing.md "Ceph RGW", Cost).
  printf '[default]\ns3 =\n    max_concurrent_requests = 8\n' >"$WORK/aws-config"
  export AWS_CONFIG_FILE="$WORK/aws-config"
  # shellcheck disable=SC2206  # RGW_BUCKETS: names separated by spaces
  local own=(${RGW_BUCKETS:-})
  for d in "$ROOT"/*/; do [[ -d "$d" ]] && own+=("$(basename "$d")"); done
  rgw_fresh_buckets "${own[@]}"
  for d in "$ROOT"/*/; do
    [[ -d "$d" ]] || continue
    b=$(basename "$d")
    rgw_aws s3 mb "s3://$b" >/dev/null || fail "aws s3 mb s3://$b on RGW failed"
    rgw_aws s3 cp --recursive --quiet --no-progress "$d" "s3://$b/" ||
      fail "aws s3 cp --recursive $d to RGW failed"
  done
  GW_PID=""
  ENDPOINT=${RGW_ENDPOINTS%% *}
  export AWS_ENDPOINT_URL=$ENDPOINT
  echo "server: Ceph RGW at $ENDPOINT (objects uploaded by the AWS CLI)"
}
