#!/usr/bin/env bash
# Interop (issue 16): the credential chain, each provider against local test doubles of the AWS
# credential services (tests/lib/fake_aws_creds.py on 127.0.0.1; it verifies AssumeRole's SigV4
# in full) and the credentials then used against a real reelfs-gateway. Proves, for reelfs and,
# as a check on the test double, for the AWS CLI (botocore) on the same configuration:
#   - STS AssumeRoleWithWebIdentity from AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN and from a
#     profile's web_identity_token_file; a wrong token is refused naming InvalidIdentityToken;
#   - STS AssumeRole for a profile's role_arn with source_profile (signed with the source's keys);
#     a wrong source secret is refused naming SignatureDoesNotMatch;
#   - container credentials (FULL_URI + AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE); a wrong token
#     is refused with the HTTP status;
#   - EC2 instance metadata, IMDSv2 (session token first), at AWS_EC2_METADATA_SERVICE_ENDPOINT;
#   - on a mount: credentials that expire are refreshed before they do, without a remount, reads
#     stay byte-exact; a refresh that fails keeps the credentials in hand and is retried; a mount
#     whose STS refuses the token is refused;
#   - no secret, token or session token reaches a log at debug level.
source "$(dirname "$0")/gateway_lib.sh"
[[ -n "${REELFS_BIN:-}" && -x "$REELFS_BIN" ]] || skip "REELFS_BIN not set (build target reelfs)"
command -v python3 >/dev/null || skip "python3 not installed"
FAKE_PY="$(cd "$(dirname "$0")/../lib" && pwd)/fake_aws_creds.py"
HAVE_AWS=0; command -v aws >/dev/null && HAVE_AWS=1

# The double checks itself first (its SigV4 against AWS's published example, every endpoint).
python3 "$FAKE_PY" --self-test || fail "fake_aws_creds.py --self-test"

start_gateway 0
mkdir -p "$ROOT/creds"
head -c $((3 * 1024 * 1024 + 7)) /dev/urandom >"$WORK/obj"
head -c 777777 /dev/urandom >"$WORK/obj2"
AWS_ACCESS_KEY_ID=$GW_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$GW_SECRET_KEY AWS_CONFIG_FILE=/dev/null \
  AWS_SHARED_CREDENTIALS_FILE=/dev/null "$REELFS_BIN" cp --endpoint "$ENDPOINT" "$WORK/obj" \
  s3://creds/obj >/dev/null || fail "upload obj"
AWS_ACCESS_KEY_ID=$GW_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$GW_SECRET_KEY AWS_CONFIG_FILE=/dev/null \
  AWS_SHARED_CREDENTIALS_FILE=/dev/null "$REELFS_BIN" cp --endpoint "$ENDPOINT" "$WORK/obj2" \
  s3://creds/obj2 >/dev/null || fail "upload obj2"

FAKE_PIDS=()
# start_fake NAME [ARGS...]: a test double on its own port; sets FAKE_URL.
start_fake() {
  local name=$1; shift
  rm -f "$WORK/$name.port"
  python3 "$FAKE_PY" --port-file "$WORK/$name.port" --access-key "$GW_ACCESS_KEY" \
    --secret "$GW_SECRET_KEY" --source-access-key AKIDSOURCEPROFILE \
    --source-secret "source/secret/for-assume-role" --log "$WORK/$name.log" "$@" &
  FAKE_PIDS+=($!)
  for _ in $(seq 100); do [[ -s "$WORK/$name.port" ]] && break; sleep 0.1; done
  [[ -s "$WORK/$name.port" ]] || fail "fake_aws_creds $name did not start: $(cat "$WORK/$name.log")"
  FAKE_URL="http://127.0.0.1:$(cat "$WORK/$name.port")"
}
stop_fakes() { for p in "${FAKE_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; }
unmount_all() { fusermount3 -u "$WORK/mnt" 2>/dev/null || true; }
trap 'unmount_all; stop_fakes; cleanup' EXIT
stat_of() {  # stat_of URL COUNTER
  python3 -c 'import json,sys,urllib.request; print(json.load(urllib.request.urlopen(sys.argv[1] + "/stats"))[sys.argv[2]])' "$1" "$2"
}

start_fake main
MAIN=$FAKE_URL
echo "  test doubles on $MAIN"

# A clean AWS environment for every case: nothing from the caller, instance metadata off unless a
# case turns it on (and then only on loopback).
mkdir -p "$WORK/home/.aws"
: >"$WORK/home/.aws/credentials"
export HOME=$WORK/home AWS_CONFIG_FILE=$WORK/home/.aws/config
export AWS_SHARED_CREDENTIALS_FILE=$WORK/home/.aws/credentials AWS_EC2_METADATA_DISABLED=true
export AWS_DEFAULT_REGION=us-east-1
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_PROFILE AWS_ROLE_ARN \
  AWS_WEB_IDENTITY_TOKEN_FILE AWS_CONTAINER_CREDENTIALS_FULL_URI \
  AWS_CONTAINER_CREDENTIALS_RELATIVE_URI AWS_CONTAINER_AUTHORIZATION_TOKEN \
  AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE AWS_EC2_METADATA_SERVICE_ENDPOINT AWS_ENDPOINT_URL_STS
: >"$AWS_CONFIG_FILE"
echo -n web-token-1 >"$WORK/web.token"
echo -n wrong-token >"$WORK/wrong.token"
echo -n container-token-1 >"$WORK/container.token"
ROLE=arn:aws:iam::123456789012:role/reelfs-test

# expect_read WHAT [ENV...]: reelfs (and the AWS CLI) read obj byte-exact with that environment.
expect_read() {
  local what=$1; shift
  env "$@" "$REELFS_BIN" cat --endpoint "$ENDPOINT" --log-level debug s3://creds/obj \
    >"$WORK/got" 2>"$WORK/cat.err" || fail "$what: reelfs cat failed: $(cat "$WORK/cat.err")"
  cmp -s "$WORK/obj" "$WORK/got" || fail "$what: reelfs read differs"
  cat "$WORK/cat.err" >>"$WORK/all-debug.log"
  if [[ $HAVE_AWS == 1 ]]; then
    env "$@" aws --endpoint-url "$ENDPOINT" s3 cp --only-show-errors s3://creds/obj \
      "$WORK/aws.got" 2>"$WORK/aws.err" || fail "$what: the AWS CLI failed: $(cat "$WORK/aws.err")"
    cmp -s "$WORK/obj" "$WORK/aws.got" || fail "$what: AWS CLI read differs"
  fi
  echo "  ok: $what"
}
# expect_refused WHAT NEEDLE [ENV...]: reelfs exits non-zero and says NEEDLE.
expect_refused() {
  local what=$1 needle=$2; shift 2
  local rc=0
  env "$@" "$REELFS_BIN" cat --endpoint "$ENDPOINT" s3://creds/obj >/dev/null \
    2>"$WORK/refused.err" || rc=$?
  [[ $rc != 0 ]] || fail "$what: was not refused"
  grep -q -- "$needle" "$WORK/refused.err" || fail "$what: no '$needle' in: $(cat "$WORK/refused.err")"
  echo "  ok: $what refused: $(head -c 200 "$WORK/refused.err" | head -1)"
}

echo "== STS AssumeRoleWithWebIdentity from the environment"
expect_read "web identity (environment)" AWS_WEB_IDENTITY_TOKEN_FILE="$WORK/web.token" \
  AWS_ROLE_ARN=$ROLE AWS_ENDPOINT_URL_STS="$MAIN"
(( $(stat_of "$MAIN" web_identity) >= 1 )) || fail "no AssumeRoleWithWebIdentity reached STS"
expect_refused "a wrong web identity token" InvalidIdentityToken \
  AWS_WEB_IDENTITY_TOKEN_FILE="$WORK/wrong.token" AWS_ROLE_ARN=$ROLE AWS_ENDPOINT_URL_STS="$MAIN"
expect_refused "another role" AccessDenied AWS_WEB_IDENTITY_TOKEN_FILE="$WORK/web.token" \
  AWS_ROLE_ARN=arn:aws:iam::123456789012:role/other AWS_ENDPOINT_URL_STS="$MAIN"

echo "== profiles: role_arn + source_profile (AssumeRole, SigV4 checked), web_identity_token_file"
cat >"$AWS_CONFIG_FILE" <<INI
[profile src]
aws_access_key_id = AKIDSOURCEPROFILE
aws_secret_access_key = source/secret/for-assume-role
[profile role]
role_arn = $ROLE
source_profile = src
role_session_name = reelfs-interop
[profile badsrc]
aws_access_key_id = AKIDSOURCEPROFILE
aws_secret_access_key = not-the-secret
[profile badrole]
role_arn = $ROLE
source_profile = badsrc
[profile web]
role_arn = $ROLE
web_identity_token_file = $WORK/web.token
INI
before=$(stat_of "$MAIN" assume_role)
expect_read "role_arn + source_profile" AWS_PROFILE=role AWS_ENDPOINT_URL_STS="$MAIN"
(( $(stat_of "$MAIN" assume_role) > before )) || fail "no AssumeRole reached STS"
expect_refused "AssumeRole signed with a wrong secret" SignatureDoesNotMatch AWS_PROFILE=badrole \
  AWS_ENDPOINT_URL_STS="$MAIN"
expect_read "profile web_identity_token_file" AWS_PROFILE=web AWS_ENDPOINT_URL_STS="$MAIN"
: >"$AWS_CONFIG_FILE"

echo "== container credentials (FULL_URI + authorization token file)"
expect_read "container credentials" AWS_CONTAINER_CREDENTIALS_FULL_URI="$MAIN/container/creds" \
  AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE="$WORK/container.token"
(( $(stat_of "$MAIN" container) >= 1 )) || fail "the container endpoint was not asked"
expect_refused "a wrong container token" "HTTP 401" \
  AWS_CONTAINER_CREDENTIALS_FULL_URI="$MAIN/container/creds" \
  AWS_CONTAINER_AUTHORIZATION_TOKEN=not-it

echo "== EC2 instance metadata (IMDSv2), last in the chain"
expect_read "instance metadata" AWS_EC2_METADATA_DISABLED=false \
  AWS_EC2_METADATA_SERVICE_ENDPOINT="$MAIN"
(( $(stat_of "$MAIN" imds_token) >= 1 && $(stat_of "$MAIN" imds_creds) >= 1 )) ||
  fail "IMDSv2 was not used (token, then credentials)"
# Disabled: nothing asked, the request goes unsigned and the gateway refuses it.
before=$(stat_of "$MAIN" imds_token)
rc=0; "$REELFS_BIN" cat --endpoint "$ENDPOINT" s3://creds/obj >/dev/null 2>&1 || rc=$?
[[ $rc != 0 ]] || fail "an anonymous read was served"
[[ $(stat_of "$MAIN" imds_token) == "$before" ]] || fail "IMDS asked although disabled"

if [[ -c /dev/fuse ]] && command -v fusermount3 >/dev/null; then
  echo "== a mount refreshes expiring credentials before they expire, without a remount"
  # Credentials that live 5 min 2 s: due for refresh at once, refreshed every 10 s (the floor).
  start_fake short --expires-in 302
  SHORT=$FAKE_URL
  mkdir -p "$WORK/mnt"
  export AWS_WEB_IDENTITY_TOKEN_FILE="$WORK/web.token" AWS_ROLE_ARN=$ROLE AWS_ENDPOINT_URL_STS=$SHORT
  "$REELFS_BIN" mount creds "$WORK/mnt" --endpoint "$ENDPOINT" --log-level debug \
    --log-file "$WORK/mount.log" </dev/null >"$WORK/mount.out" 2>&1 ||
    fail "mount: $(cat "$WORK/mount.out")"
  cmp -s "$WORK/obj" "$WORK/mnt/obj" || fail "first read through the mount differs"
  for _ in $(seq 120); do (( $(stat_of "$SHORT" web_identity) >= 3 )) && break; sleep 0.5; done
  (( $(stat_of "$SHORT" web_identity) >= 3 )) || fail "credentials were not refreshed"
  cmp -s "$WORK/obj2" "$WORK/mnt/obj2" || fail "read after refreshes differs"
  echo "  ok: $(stat_of "$SHORT" web_identity) AssumeRoleWithWebIdentity calls, reads byte-exact"
  # STS fails twice: the mount keeps its still-valid credentials, says so once, retries.
  curl -s -X POST -d '{"kind": "web_identity", "count": 2}' "$SHORT/control/fail" >/dev/null ||
    fail "control/fail"
  for _ in $(seq 160); do
    (( $(stat_of "$SHORT" failed_on_purpose) >= 2 )) && grep -q "refreshed again" "$WORK/mount.log" && break
    sleep 0.5
  done
  grep -q "refreshing credentials from STS AssumeRoleWithWebIdentity.*failed" "$WORK/mount.log" ||
    fail "no warning for the failed refresh: $(tail -5 "$WORK/mount.log")"
  grep -q "refreshed again" "$WORK/mount.log" || fail "no recovery after the failed refreshes"
  cmp -s "$WORK/obj" "$WORK/mnt/obj" || fail "read during/after failed refreshes differs"
  fusermount3 -u "$WORK/mnt" || fail "unmount"
  echo "  ok: failed refreshes kept the credentials, the mount recovered"
  cat "$WORK/mount.log" >>"$WORK/all-debug.log"

  echo "== a mount whose STS refuses the token is refused"
  rc=0
  AWS_WEB_IDENTITY_TOKEN_FILE="$WORK/wrong.token" "$REELFS_BIN" mount creds "$WORK/mnt" \
    --endpoint "$ENDPOINT" </dev/null >"$WORK/refused.out" 2>&1 || rc=$?
  [[ $rc != 0 ]] && grep -q InvalidIdentityToken "$WORK/refused.out" ||
    fail "mount with a refused token: exit $rc: $(cat "$WORK/refused.out")"
  ! mountpoint -q "$WORK/mnt" || fail "mounted anyway"
  echo "  ok"
  unset AWS_WEB_IDENTITY_TOKEN_FILE AWS_ROLE_ARN AWS_ENDPOINT_URL_STS
else
  echo "  (no /dev/fuse or fusermount3: the mount part is not run)"
fi

echo "== no secret reaches a log"
for secret in "$GW_SECRET_KEY" web-token-1 container-token-1 source/secret/for-assume-role; do
  ! grep -qF -- "$secret" "$WORK/all-debug.log" "$WORK"/*.log ||
    fail "a secret is in a log: $(grep -lF -- "$secret" "$WORK/all-debug.log" "$WORK"/*.log)"
done
echo "PASS"
