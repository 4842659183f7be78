#!/usr/bin/env bash
# Packs the GPU suite's binaries for a GPU machine that has the NVIDIA driver, cuBLAS and
# NCCL but none of the build's own dependencies (no compiler toolchain packages, no network):
#   DEST/tests/test_cuda, DEST/tests/test_cuda_nccl_mpi, DEST/bench/bench_cuda_kernels
#   DEST/lib/  the shared libraries they load that are neither the C/C++ runtime nor CUDA's
# There:  LD_LIBRARY_PATH=DEST/lib:<cuBLAS and NCCL folders> BUILD_DIR=DEST ./scripts/gpu_suite.sh --prebuilt
# Usage: ./scripts/gpu_bundle.sh [BUILD (default build)] [DEST (default .gpu)]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
DEST=${2:-.gpu}
BINARIES=(tests/test_cuda tests/test_cuda_nccl_mpi bench/bench_cuda_kernels)

cmake --build "$BUILD" --target test_cuda test_cuda_nccl_mpi bench_cuda_kernels
rm -rf "$DEST" && mkdir -p "$DEST/tests" "$DEST/bench" "$DEST/lib"
for bin in "${BINARIES[@]}"; do cp "$BUILD/$bin" "$DEST/$bin"; done

# The C/C++ runtime comes with every Linux; the CUDA libraries must be the GPU machine's own
# (they match its driver).
skip='^(linux-vdso|ld-linux|libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|libcublas|libcublasLt|libcudart|libnccl|libcuda)\.'
for bin in "${BINARIES[@]}"; do
  ldd "$BUILD/$bin" | awk '$3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ "$name" =~ $skip ]] || cp -L "$path" "$DEST/lib/$name"
done
echo "gpu_bundle: $(ls "$DEST/lib" | wc -l) libraries, $(du -sh "$DEST" | cut -f1) in $DEST"
