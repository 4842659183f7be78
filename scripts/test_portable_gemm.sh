#!/usr/bin/env bash
# The kernel tests built with the AVX2 GEMM path off (-DTWINSIM_GEMM_AVX2=OFF: the portable
# path, the only one a CPU without AVX2 gets), so both fp32 summation orders are tested on
# every machine, and in a build directory outside the source tree (default: under $TMPDIR,
# one per checkout; TWINSIM_PORTABLE_BUILD_DIR names another). scripts/test.sh runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
src="$(pwd)"
dir="${TWINSIM_PORTABLE_BUILD_DIR:-${TMPDIR:-/tmp}/twinsim-portable-gemm-$(printf '%s' "$src" | cksum | cut -d' ' -f1)}"
cmake -S "$src" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTWINSIM_GEMM_AVX2=OFF -DTWINSIM_BENCH=OFF \
  -DTWINSIM_CUDA=OFF >/dev/null
cmake --build "$dir" -j"${TWINSIM_JOBS:-$(nproc)}" --target test_kernels
echo "portable GEMM: $dir/tests/test_kernels"
TWINSIM_POISON_UNINITIALIZED=1 "$dir/tests/test_kernels" --gtest_brief=1
