#!/usr/bin/env bash
# self_contained.sh [SOURCE_DIR]: fails, printing each offending line, if a file tracked by git
# points outside the repository: a path into ../shared/, or the name of a note that only lives
# there (style.md, the reference notes, the old design.md). A user of the repository has none of
# them; cite docs/ or a public source by name instead (docs/conventions.md "Docs and comments").
#
# Exits 77 (CTest: skipped) without git or without a .git (a source tarball): there is then no
# list of tracked files to check. This script is excluded, since it names what it looks for.
set -euo pipefail

src=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
self=tests/lint/self_contained.sh
patterns=(
  '../shared/'
  'style.md'
  'design.md'
  'tape-archive.md'
  's3-rdma-protocol.md'
  'gpu-fuse-datapath.md'
  'gpu-landing.md'
  'fuse-s3-anchors.md'
  'fuse-passthrough.md'
  'aesthetics-anchors.md'
)

skip() {
  echo "SKIP: $*"
  exit 77
}

command -v git >/dev/null 2>&1 || skip "git is not installed"
[[ -e "$src/.git" ]] || skip "$src has no .git (a source tarball?): no tracked files to check"

# safe.directory: CTest may run as another user than the checkout's owner (CI as root).
if ! listing=$(git -c safe.directory="$src" -C "$src" ls-files -z 2>&1 | tr '\0' '\n'); then
  skip "git ls-files failed in $src: $listing"
fi

files=()
while IFS= read -r f; do
  # Tracked but deleted in the work tree, or not a regular file (a submodule): nothing to read.
  [[ "$f" == "$self" || ! -f "$src/$f" ]] && continue
  files+=("$f")
done <<<"$listing"
((${#files[@]} > 0)) || skip "git lists no files in $src"

args=()
for p in "${patterns[@]}"; do args+=(-e "$p"); done
# -F: the patterns are literal; -I: binary files cannot carry a citation worth reading. grep's
# own errors land in $found too, so an unreadable file fails the check instead of passing it.
cd "$src"
found=$(printf '%s\0' "${files[@]}" | xargs -0 grep -n -H -I -F "${args[@]}" -- 2>&1) || true

if [[ -n "$found" ]]; then
  echo "FAIL: tracked files point outside the repository (cite docs/ or a public source by name):"
  echo "$found"
  exit 1
fi
echo "ok: ${#files[@]} tracked files, none points outside the repository"
