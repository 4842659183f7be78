#!/usr/bin/env bash
# The GPU suite, on a machine with an NVIDIA GPU, CUDA toolkit, NCCL and MPI:
#   1. builds the CUDA backend (build dir build-cuda, or $BUILD_DIR), for this GPU's
#      architecture only unless CMAKE_CUDA_ARCHITECTURES is set (half the compile time);
#   2. runs the GPU tests: every CUDA kernel against the CPU kernel, the device allocator,
#      event timing, NCCL on one rank; fails if any of them was skipped, since on a GPU
#      machine a skip means something is wrong with the device, not that it is absent;
#   3. runs the 2-rank NCCL check under mpirun (skipped with fewer than 2 GPUs);
#   4. runs the kernel benchmarks: achieved TFLOP/s (GEMM, attention) and GB/s
#      (memory-bound kernels) with peak_pct against the GPU's catalog peak.
# Usage: ./scripts/gpu_suite.sh [--prebuilt] [extra benchmark flags, e.g. --benchmark_filter=Gemm]
#   --prebuilt: skip step 1 and run the binaries already in $BUILD_DIR (default build),
#   for a GPU machine that has the driver, cuBLAS and NCCL but not the build's
#   dependencies (yaml-cpp, Boost, MPI headers...): build here with TWINSIM_CUDA on, copy
#   the three binaries and the shared libraries the GPU machine lacks (LD_LIBRARY_PATH).
set -euo pipefail
cd "$(dirname "$0")/.."
PREBUILT=0
if [[ "${1:-}" == "--prebuilt" ]]; then PREBUILT=1; shift; fi
BUILD=${BUILD_DIR:-$([[ $PREBUILT == 1 ]] && echo build || echo build-cuda)}
JOBS=${TWINSIM_JOBS:-$(nproc)}

if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L; then
  echo "gpu_suite: no NVIDIA GPU found (nvidia-smi failed); run it on a GPU machine" >&2
  exit 1
fi

arch_flag=()
if [[ -z "${CMAKE_CUDA_ARCHITECTURES:-}" ]]; then
  cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
  [[ -n "$cap" ]] && arch_flag=(-DCMAKE_CUDA_ARCHITECTURES="$cap")
else
  arch_flag=(-DCMAKE_CUDA_ARCHITECTURES="$CMAKE_CUDA_ARCHITECTURES")
fi

if [[ $PREBUILT == 1 ]]; then
  echo "== prebuilt binaries in $BUILD (no build step)"
  for bin in tests/test_cuda tests/test_cuda_nccl_mpi bench/bench_cuda_kernels; do
    [[ -x "$BUILD/$bin" ]] || { echo "gpu_suite: --prebuilt but $BUILD/$bin is missing" >&2; exit 1; }
  done
else
  echo "== build ($BUILD, ${arch_flag[*]:-default architectures})"
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release "${arch_flag[@]}"
  if ! grep -Eq '^CMAKE_CUDA_COMPILER:[A-Z]+=/' "$BUILD/CMakeCache.txt"; then
    echo "gpu_suite: CMake found no nvcc (install the CUDA toolkit or set CUDACXX)" >&2
    exit 1
  fi
  cmake --build "$BUILD" --target test_cuda test_cuda_nccl_mpi bench_cuda_kernels -j"$JOBS"
fi

echo "== GPU tests (CUDA kernels vs CPU kernels, allocator, timing, NCCL 1 rank)"
log=$(mktemp)
"$BUILD/tests/test_cuda" --gtest_color=no | tee "$log"
if grep -q '^\[  SKIPPED \]' "$log"; then
  echo "gpu_suite: GPU tests were skipped on a GPU machine (see the reasons above)" >&2
  exit 1
fi

echo "== NCCL across 2 ranks"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
gpus=$(nvidia-smi -L | grep -c '^GPU')
if [[ $PREBUILT == 0 ]]; then
  ctest --test-dir "$BUILD" -R '^cuda\.nccl_mpi' --output-on-failure
elif (( gpus < 2 )); then
  echo "skipped: $gpus GPU on this machine, the check needs 2"
elif ! command -v mpirun >/dev/null; then
  echo "gpu_suite: $gpus GPUs but no mpirun on this machine" >&2
  exit 1
else
  mpirun -np 2 --oversubscribe "$BUILD/tests/test_cuda_nccl_mpi"
fi

echo "== kernel benchmarks (peak_pct = achieved / catalog peak)"
"$BUILD/bench/bench_cuda_kernels" --benchmark_counters_tabular=true "$@"
