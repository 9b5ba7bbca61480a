#!/usr/bin/env bash
# Installs every build and test dependency from Debian's archive (and s3rver from npm), then
# configures and builds reelfs. Idempotent: a second run installs nothing and rebuilds only what
# changed.
#
#   scripts/setup.sh                 # release-ish build in build/
#   REELFS_BUILD_DIR=build-asan REELFS_SANITIZE=ON scripts/setup.sh
#   REELFS_CMAKE_ARGS="-DREELFS_BUILD_BENCH=OFF" scripts/setup.sh      # extra cmake -D options
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  # toolchain; clang (with its sanitizer and libFuzzer runtimes) for the TSan, thread-safety and
  # fuzzing passes (scripts/tsan.sh, scripts/fuzz.sh)
  build-essential cmake ninja-build pkg-config git clang libclang-rt-dev ccache
  # man pages generated from --help (packaging), systemd-analyze for the units' check,
  # debhelper and lintian for the .debs (packaging/build-debs.sh, tests/packaging/debs_test.sh)
  help2man systemd debhelper lintian
  # libraries
  libcurl4-openssl-dev zlib1g-dev libssl-dev libpugixml-dev libyaml-cpp-dev doctest-dev libcli11-dev
  libspdlog-dev libfmt-dev nlohmann-json3-dev libboost-dev libsqlite3-dev libfuse3-dev fuse3
  libxxhash-dev
  # tests and interop: real third-party clients and tools
  sqlite3 curl awscli python3 python3-boto3 xxd procps psmisc chromium
  # openssl(1): the TLS tests make a CA and a server certificate
  openssl
  # the mount's end-to-end tests and benchmark peers
  python3-torch python3-numpy fio s3fs rclone rsync attr
  # RDMA: rdma-core for rdmaio/verbs; qemu, a static busybox, cpio and kmod for the Soft-RoCE VM
  # (tests/rdma/rxe_vm.sh unpacks Debian's kernel image into its own cache, never installs it)
  libibverbs-dev librdmacm-dev rdma-core ibverbs-utils rdmacm-utils
  qemu-system-x86 busybox-static cpio kmod iproute2
  # Ceph (mon, mgr, osd, radosgw) for the tests against a real distributed S3 engine (tests/ceph/;
  # started in a temporary directory by the tests, never as system services)
  ceph-mon ceph-mgr ceph-osd radosgw ceph-common
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js with npm runs s3rver (an S3 server no one here wrote). Use the machine's node if it has
# one with npm; otherwise Debian's.
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

# s3rver for the interop tests, pinned by tests/interop/package-lock.json.
if [ ! -x tests/interop/node_modules/.bin/s3rver ]; then
  echo "setup: installing s3rver (npm)"
  (cd tests/interop && npm ci --no-audit --no-fund --loglevel=error)
fi

# promtool (Prometheus's metrics linter) for tests/interop/gateway_metrics.sh: only the one binary,
# taken from Debian's prometheus package without installing it (which would start a server).
if [ ! -x tests/tools/promtool ]; then
  echo "setup: extracting promtool from Debian's prometheus package"
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get download prometheus >/dev/null 2>&1 ||
     { $SUDO apt-get update -qq && apt-get download prometheus >/dev/null; })
  dpkg-deb -x "$tmp"/prometheus_*.deb "$tmp/x"
  mkdir -p tests/tools && cp "$tmp/x/usr/bin/promtool" tests/tools/promtool
  rm -rf "$tmp"
fi

# ccache for every build (this one, build-asan, scripts/tsan.sh, scripts/fuzz.sh): the four
# configurations are most of the test command's time on a small machine. Paths are hashed relative
# to the checkout, so a fresh clone elsewhere hits what an earlier one compiled.
# shellcheck source=scripts/ccache_env.sh
source scripts/ccache_env.sh

BUILD_DIR=${REELFS_BUILD_DIR:-build}
SANITIZE=${REELFS_SANITIZE:-OFF}
BUILD_TYPE=${REELFS_BUILD_TYPE:-RelWithDebInfo}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" \
  -DREELFS_SANITIZE="$SANITIZE" -DREELFS_WERROR=ON "${REELFS_LAUNCHER[@]}" \
  ${REELFS_CMAKE_ARGS:-} >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)"
echo "setup: built in $BUILD_DIR"
