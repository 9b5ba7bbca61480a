#!/usr/bin/env bash
# gpu_probe_tool.sh PROBE: runs reelfs-gpu-probe on this machine. With a GPU it must print JSON
# that says usable and exit 0; without one it must exit 2 with exactly one line on stderr naming
# why (on a machine without the NVIDIA driver: the no-driver line) and, with --json, the same
# reason as JSON. A crash (a signal, any other code) fails.
set -uo pipefail

probe=${1:?usage: gpu_probe_tool.sh PATH-TO-reelfs-gpu-probe}
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
fail() {
  echo "FAIL: $*"
  echo "--- stdout"; cat "$out"; echo "--- stderr"; cat "$err"
  exit 1
}

"$probe" >"$out" 2>"$err"
rc=$?
case $rc in
  0)
    grep -q '"usable":true' "$out" || fail "exit 0 without \"usable\":true"
    grep -q '"devices":\[{' "$out" || fail "exit 0 without a device"
    echo "PASS: a usable GPU: $(cat "$out")"
    exit 0
    ;;
  2) ;;
  *) fail "exit $rc (want 0 with a GPU, 2 without)" ;;
esac

[[ -s "$out" ]] && fail "no GPU, yet something on stdout"
[[ $(wc -l <"$err") -eq 1 ]] || fail "want exactly one line on stderr"
grep -q '^reelfs-gpu-probe: .*GPU landing is off' "$err" || fail "the line does not say why"
if [[ ! -e /proc/driver/nvidia/version ]]; then
  grep -Eq 'no NVIDIA driver \(cudaErrorInsufficientDriver, 35\)|cudaErrorStubLibrary, 34' "$err" ||
    fail "no NVIDIA kernel module here, but not the no-driver line"
fi
line=$(cat "$err")

"$probe" --json >"$out" 2>"$err"
rc=$?
[[ $rc -eq 2 ]] || fail "--json: exit $rc, want 2"
grep -q '"usable":false' "$out" || fail "--json: no \"usable\":false"
grep -q '"error_code":' "$out" || fail "--json: no error_code"
[[ -s "$err" ]] && fail "--json: something on stderr"

"$probe" --bogus >"$out" 2>"$err"
rc=$?
[[ $rc -eq 1 ]] || fail "unknown argument: exit $rc, want 1"

echo "PASS: no usable GPU, one line: $line"
