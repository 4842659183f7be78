#!/usr/bin/env bash
# Builds with AddressSanitizer + UndefinedBehaviorSanitizer and runs tests under them.
#   scripts/sanitize.sh            the whole suite (MPI tests included); a while on 2 cores
#   scripts/sanitize.sh REGEX      the ctest entries matching REGEX
#   scripts/sanitize.sh --sample   the sampled subset scripts/test.sh runs in CI: the
#                                  scenario loader with its table of rejected inputs, the
#                                  fuzzer's regression inputs, overflow checks and the memory
#                                  model (what takes input from outside), built alone
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 TWINSIM_POISON_UNINITIALIZED=1
# Open MPI's own allocations are not ours to fix (detect_leaks=0); a refused allocation
# returns null as it does without ASan, so the allocator's error path is what is tested
export ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
sanitize_build() {  # folder, then extra configure arguments
  cmake -S . -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTWINSIM_SANITIZE=ON -DTWINSIM_BENCH=OFF \
    -DTWINSIM_CUDA=OFF "${@:2}" >/dev/null
}
if [ "${1:-}" = "--sample" ]; then
  # The sample's test folders (tests/unit/<area>, run as test_<area>). Its own folder builds
  # only the library sources their tests reach (cmake/SanitizeSample.cmake), with line
  # tables (-g1: ASan's reports keep file:line) instead of full debug information, and the
  # test files compiled in groups (cmake/UnityBuild.cmake).
  areas=(scenario reliability memory)
  sanitize_build build-asan-sample "-DTWINSIM_SANITIZE_SAMPLE=$(IFS=';'; echo "${areas[*]}")" -DCMAKE_CXX_FLAGS_DEBUG=-g1 \
    -DTWINSIM_UNITY=ON
  sample=("${areas[@]/#/test_}")
  cmake --build build-asan-sample -j"$(nproc)" --target "${sample[@]}"
  for t in "${sample[@]}"; do
    echo "sanitized: $t"
    ./build-asan-sample/tests/"$t" --gtest_brief=1
  done
  exit 0
fi
sanitize_build build-asan -DTWINSIM_SANITIZE_SAMPLE=
cmake --build build-asan -j"$(nproc)"
# python_pytest is left out: CPython would have to preload the ASan runtime to import the
# sanitized extension module (it segfaults on import otherwise); the module's C++ code is
# the same libraries the other tests exercise.
ctest --test-dir build-asan --output-on-failure -j"$(nproc)" -E '^python_pytest$' ${1:+-R "$1"}
