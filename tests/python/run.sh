#!/usr/bin/env bash
# Runs one Python unit test of the reelfs package (python/) with python/ first on PYTHONPATH.
#
#   run.sh [--torch] TEST.py
#
# --torch: the test needs PyTorch; the first of python3, /usr/bin/python3 that can import torch
# runs it (Debian's python3-torch lives in /usr/bin/python3, which need not be first on PATH),
# and the test is skipped (77) when neither can. Otherwise plain python3 runs it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export PYTHONPATH="$here/../../python${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1
need=os
if [[ ${1:-} == --torch ]]; then need=torch; shift; fi
for py in python3 /usr/bin/python3; do
  command -v "$py" >/dev/null 2>&1 || continue
  if "$py" -c "import $need" >/dev/null 2>&1; then exec "$py" "$here/$1"; fi
done
echo "SKIP: no python3 can import $need (Debian: python3-torch)"
exit 77
