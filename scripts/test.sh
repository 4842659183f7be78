#!/usr/bin/env bash
# Installs, builds, and runs every test (GoogleTest, MPI and CLI tests through ctest).
# TWINSIM_BUILD_DIR (default ./build) builds elsewhere, inside or outside the source tree.
set -euo pipefail
cd "$(dirname "$0")/.."
# CI (CI=true, as .ci/run sets it) builds with warnings as errors: the build stays warning-free;
# and, building cold, with precompiled headers for the tests and app/ (cmake/Precompiled.cmake)
# and the test programs' files compiled in groups (cmake/UnityBuild.cmake); both are off
# elsewhere: a developer's rebuilds live on ccache and on recompiling one file
if [ "${CI:-}" = true ]; then ./scripts/build.sh -DTWINSIM_WERROR=ON -DTWINSIM_PCH=ON -DTWINSIM_UNITY=ON; else ./scripts/build.sh; fi
# ... and the lines the change made follow .clang-format (git clang-format; older lines are left)
if [ "${CI:-}" = true ] && command -v git-clang-format >/dev/null && git rev-parse HEAD~1 >/dev/null 2>&1; then
  ./scripts/check_format.sh
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# the executor's uninitialized blocks (outputs its kernels write in full) read as NaN, so
# a kernel that leaves an element unwritten shows in the numerics tests
export TWINSIM_POISON_UNINITIALIZED=1
ctest --test-dir "${TWINSIM_BUILD_DIR:-build}" --output-on-failure -j"${TWINSIM_JOBS:-$(nproc)}"
# The paired loop's quick figure on this machine (calibrate --quick, validate --quick;
# 1-3 min): printed, not judged. TWINSIM_PAIRED_LOOP=0 skips it.
if [ "${TWINSIM_PAIRED_LOOP:-1}" != 0 ]; then ./scripts/paired_loop_quick.sh; fi
# The kernel tests again on the portable GEMM body (TWINSIM_GEMM=portable, a few seconds):
# it sums in another order, and CPUs without AVX2 get only it.
./scripts/test_portable_gemm.sh
# The inputs from outside (scenario loader, rejected-input table, fuzzer regressions,
# overflow checks, memory model) again under AddressSanitizer + UBSan, built alone (~3 min
# on 2 cores); the whole suite under them is scripts/sanitize.sh. TWINSIM_SANITIZE_SAMPLE=0 skips.
if [ "${TWINSIM_SANITIZE_SAMPLE:-1}" != 0 ]; then ./scripts/sanitize.sh --sample; fi
