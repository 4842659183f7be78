#!/usr/bin/env bash
# The kernel tests again on the portable GEMM body (TWINSIM_GEMM=portable: the one a CPU
# without AVX2 and FMA runs), so both fp32 summation orders are tested on every machine.
# The same test binary: the body is chosen at run time (kernels/cpu/gemm.cpp), so no second
# build is needed. TWINSIM_BUILD_DIR names the build (default ./build). scripts/test.sh runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
tests="${TWINSIM_BUILD_DIR:-build}/tests/test_kernels"
backend=$(TWINSIM_GEMM=portable "$tests" --gtest_filter='Gemm.PortableBuildMatchesTooWhenTheCpuDispatchesToAvx2' \
            --gtest_output=json:/dev/stdout | grep -o '"gemm_backend": *"[^"]*"' | cut -d'"' -f4)
echo "portable GEMM: $tests with TWINSIM_GEMM=portable runs ${backend}"
[ "$backend" = eigen-portable ] || { echo "TWINSIM_GEMM=portable did not take the portable body" >&2; exit 1; }
TWINSIM_GEMM=portable TWINSIM_POISON_UNINITIALIZED=1 "$tests" --gtest_brief=1
