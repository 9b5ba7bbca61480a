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

# rgw_empty_cluster: removes every bucket (a script's buckets are its own; memstore keeps objects
# in the OSD's memory, so the last script's objects go before the next one's arrive). On the
# server side with radosgw-admin, past the garbage collector: thousands of keys go in a second,
# where `aws s3 rb --force` sends a DELETE per key.
rgw_empty_cluster() {
  local b
  for b in $(rgw_aws s3api list-buckets --query 'Buckets[].Name' --output text); do
    [[ "$b" == None ]] && continue
    radosgw-admin -c "$CEPH_CONF" bucket rm --bucket="$b" --purge-objects --bypass-gc \
      >/dev/null 2>"$WORK/bucket-rm.err" ||
      fail "could not remove bucket $b from RGW: $(tail -3 "$WORK/bucket-rm.err")"
  done
}

start_gateway() {
  local d b
  GW_ACCESS_KEY=$CEPH_ACCESS_KEY
  GW_SECRET_KEY=$CEPH_SECRET_KEY
  export AWS_ACCESS_KEY_ID=$CEPH_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$CEPH_SECRET_KEY
  # More parallel PUTs than the CLI's default 10: thousands of small files upload in seconds.
  printf '[default]\ns3 =\n    max_concurrent_requests = 32\n' >"$WORK/aws-config"
  export AWS_CONFIG_FILE="$WORK/aws-config"
  rgw_empty_cluster
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
