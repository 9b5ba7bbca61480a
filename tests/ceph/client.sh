#!/usr/bin/env bash
# ceph (issue 20): the S3 client's third-party-server cases (tests/interop/client_s3rver_test.cc,
# the ones s3rver runs) against Ceph RGW: buckets, put/head/get and ranged GET, user metadata and
# content type, listing with a delimiter and across pages, copy, delete, DeleteObjects, multipart
# upload (and abort), counters. The same binary, pointed at RGW by REELFS_S3_ENDPOINT.
# Run by tests/ceph/run.sh (E2E_SERVER=rgw).
source "$(dirname "$0")/../e2e/lib.sh"
e2e_init ceph-client 150
[[ -n "${REELFS_CLIENT_TEST:-}" && -x "$REELFS_CLIENT_TEST" ]] ||
  skip "REELFS_CLIENT_TEST not set (build target client_s3rver_test)"
# nothing under $ROOT: the test's own bucket made fresh (client_s3rver_test creates it)
RGW_BUCKETS=reelfs-interop start_gateway
REELFS_S3_ENDPOINT=$ENDPOINT "$REELFS_CLIENT_TEST" || fail "client_s3rver_test against RGW"
echo "PASS"
