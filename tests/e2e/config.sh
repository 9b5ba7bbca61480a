#!/usr/bin/env bash
# e2e (issue 16): the client's config file (cli/client_config.h, docs/configuration.md).
# Proves: a profile in $XDG_CONFIG_HOME/reelfs/config.yaml gives `reelfs ls` its endpoint with
# no flag and no AWS_ENDPOINT_URL; a mount takes its options from the profile's mount: section
# (file and directory modes seen by stat) and a flag on the command line wins over the profile;
# REELFS_PROFILE and --config-profile choose a profile; an unknown key, a wrong type and a
# missing profile exit 2 naming the file and line; every profile of every example under
# configs/ (reelfs*.yaml) is accepted by `reelfs config`. Bytes read are checked.
source "$(dirname "$0")/lib.sh"
e2e_init config 150
CONFIGS=$(cd "$(dirname "$0")/../../configs" && pwd)

mkdir -p "$ROOT/cfg/d"
echo "configured" >"$ROOT/cfg/d/hello.txt"
start_gateway
unset AWS_ENDPOINT_URL
export XDG_CONFIG_HOME=$WORK/xdg
mkdir -p "$XDG_CONFIG_HOME/reelfs"
cat >"$XDG_CONFIG_HOME/reelfs/config.yaml" <<YAML
default_profile: lab
profiles:
  lab:
    endpoint: $ENDPOINT
    mount:
      file_mode: "0600"
      dir_mode: "0700"
      metadata_ttl: 5s
  other:
    endpoint: http://127.0.0.1:1
YAML

step "ls with the endpoint from the default profile (no --endpoint, no AWS_ENDPOINT_URL)"
out=$("$REELFS_BIN" ls -r s3://cfg/) || fail "reelfs ls with the config: $out"
[[ $out == *d/hello.txt* ]] || fail "listing: $out"
"$REELFS_BIN" config | tee "$WORK/config.out" | sed 's/^/  /'
grep -q "^endpoint: $ENDPOINT  # $XDG_CONFIG_HOME/reelfs/config.yaml:4" "$WORK/config.out" ||
  fail "reelfs config does not show the endpoint with its line"

step "REELFS_PROFILE and --config-profile choose another profile"
rc=0; REELFS_PROFILE=other "$REELFS_BIN" ls s3://cfg/ >/dev/null 2>&1 || rc=$?
[[ $rc != 0 ]] || fail "profile 'other' (an unreachable endpoint) listed the bucket"
rc=0; "$REELFS_BIN" --config-profile other ls s3://cfg/ >/dev/null 2>&1 || rc=$?
[[ $rc != 0 ]] || fail "--config-profile other listed the bucket"
"$REELFS_BIN" --config-profile other ls s3://cfg/ --endpoint "$ENDPOINT" >/dev/null ||
  fail "--endpoint did not override the profile's"
echo "  ok"

step "a mount takes the profile's mount: options; a flag wins over them"
mount_bucket cfg
[[ $(cat "$MNT/d/hello.txt") == configured ]] || fail "read through the configured mount"
modes="$(stat -c %a "$MNT/d/hello.txt") $(stat -c %a "$MNT/d")"
[[ $modes == "600 700" ]] || fail "file and dir modes from the profile: $modes"
unmount_and_wait "$MNT" "$MOUNT_PID"; MOUNT_PID=""
mount_bucket cfg --file-mode 0640
modes="$(stat -c %a "$MNT/d/hello.txt") $(stat -c %a "$MNT/d")"
[[ $modes == "640 700" ]] || fail "--file-mode 0640 over the profile's 0600: $modes"
unmount_and_wait "$MNT" "$MOUNT_PID"; MOUNT_PID=""
echo "  ok (600/700 from the profile, 640 from the flag)"

step "mistakes exit 2 naming the file and line"
expect_config_error() {  # expect_config_error FILE-CONTENT EXPECTED-SUBSTRING
  printf '%s\n' "$1" >"$WORK/bad.yaml"
  local rc=0 out
  out=$("$REELFS_BIN" --config "$WORK/bad.yaml" ls s3://cfg/ 2>&1) || rc=$?
  [[ $rc == 2 && $out == *"$2"* ]] || fail "expected exit 2 with '$2', got $rc: $out"
  echo "  $out"
}
expect_config_error $'profiles:\n  default:\n    endpint: http://x' \
  "bad.yaml:3: unknown key 'endpint'"
expect_config_error $'profiles:\n  default:\n    mount:\n      max_threads: lots' \
  "bad.yaml:4: max_threads must be an integer"
expect_config_error $'profiles:\n  default:\n    mount:\n      allow_other: sometimes' \
  "bad.yaml:4: allow_other must be true or false"
expect_config_error $'profiles:\n  default:\n    region:\n      - a' \
  "bad.yaml:4: profile 'default': region must be a single value"
# endpoint takes a list (several front ends); each item must be a URL.
expect_config_error $'profiles:\n  default:\n    endpoint:\n      - a' \
  "endpoint 'a' lacks a scheme"
rc=0; out=$("$REELFS_BIN" --config-profile nosuch ls s3://cfg/ 2>&1) || rc=$?
[[ $rc == 2 && $out == *"no profile 'nosuch'"*"(profiles: lab, other)"* ]] ||
  fail "a missing profile: $rc: $out"
echo "  $out"
rc=0; out=$("$REELFS_BIN" --config "$WORK/none.yaml" ls s3://cfg/ 2>&1) || rc=$?
[[ $rc == 2 && $out == *"cannot read config file"* ]] || fail "a missing --config file: $rc: $out"

step "every profile of every example config is accepted"
n=0
for f in "$CONFIGS"/reelfs*.yaml; do
  # The profiles: the keys indented by two spaces (the examples' layout, under profiles:).
  names=$(sed -n 's/^  \([A-Za-z0-9_.-]*\):.*$/\1/p' "$f")
  [[ -n $names ]] || fail "no profiles found in $f"
  for p in $names; do
    "$REELFS_BIN" --config "$f" --config-profile "$p" config >"$WORK/example.out" 2>&1 ||
      fail "$f profile $p: $(cat "$WORK/example.out")"
    n=$((n + 1))
  done
done
(( n >= 3 )) || fail "only $n example profiles checked"
echo "  $n profiles"
echo "PASS"
