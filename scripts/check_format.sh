#!/usr/bin/env bash
# Checks that the C++ and CUDA lines a branch changes follow .clang-format: only the lines
# changed since BASE, so older code is not reformatted by a change that passes by.
#   scripts/check_format.sh [BASE]     BASE: default the merge base with main
# Fix what it reports with `git clang-format BASE` (then review the diff).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
base=${1:-$(git merge-base HEAD main 2>/dev/null || git rev-parse HEAD~1)}
diff=$(git clang-format --diff --extensions c,cc,cpp,h,hpp,cu,cuh "$base" 2>&1) || true
case "$diff" in
  "" | *"no modified files to format"* | *"did not modify any files"*)
    echo "format: the lines changed since ${base:0:12} follow .clang-format"
    ;;
  *)
    printf '%s\n' "$diff"
    echo "format: the lines above, changed since ${base:0:12}, differ from .clang-format; fix: git clang-format ${base:0:12}" >&2
    exit 1
    ;;
esac
