#!/usr/bin/env bash
# Packs the GPU suite's binaries for a GPU machine that has the NVIDIA driver, cuBLAS and
# NCCL but none of the build's own dependencies (no compiler toolchain packages, no network):
#   DEST/tests/test_cuda, DEST/tests/test_cuda_nccl_mpi, DEST/bench/bench_cuda_kernels
#   DEST/app/twinsim, DEST/app/twinsim-executor, DEST/app/twinsim-cuda  the CLI, the executable
#              its `run` hands over to, and the one `run --device cuda` hands over to (the CUDA
#              backend; scripts/gpu_validate.sh runs them; app/hand_over.hpp)
#   DEST/lib/  the shared libraries they load that are neither the C/C++ runtime nor CUDA's
#   DEST/mpi/  Open MPI's components (and PMIx's), for a one-rank `twinsim run` there: MPI_Init
#              as an isolated singleton finds them through OMPI_MCA_mca_base_component_path
# There:  LD_LIBRARY_PATH=DEST/lib:<cuBLAS and NCCL folders> BUILD_DIR=DEST ./scripts/gpu_suite.sh --prebuilt
# Usage: ./scripts/gpu_bundle.sh [BUILD (default build)] [DEST (default .gpu)]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
DEST=${2:-.gpu}
BINARIES=(tests/test_cuda tests/test_cuda_nccl_mpi bench/bench_cuda_kernels app/twinsim app/twinsim-executor
          app/twinsim-cuda)

cmake --build "$BUILD" --target test_cuda test_cuda_nccl_mpi bench_cuda_kernels twinsim twinsim-executor \
  twinsim-cuda
rm -rf "$DEST" && mkdir -p "$DEST/tests" "$DEST/bench" "$DEST/app" "$DEST/lib" "$DEST/mpi"
for bin in "${BINARIES[@]}"; do cp "$BUILD/$bin" "$DEST/$bin"; done

# The C/C++ runtime comes with every Linux; the CUDA libraries must be the GPU machine's own
# (they match its driver).
skip='^(linux-vdso|ld-linux|libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|libcublas|libcublasLt|libcudart|libnccl|libcuda)\.'
for bin in "${BINARIES[@]}"; do
  ldd "$BUILD/$bin" | awk '$3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ "$name" =~ $skip ]] || cp -L "$path" "$DEST/lib/$name"
done
# Open MPI's plugins and PMIx's (their own libraries come with ldd above; the plugins' too)
ompi_components=$(ompi_info --path pkglibdir --parsable 2>/dev/null | sed 's/.*://')
pmix_components=$(ls -d /usr/lib/*/pmix*/lib/pmix 2>/dev/null | head -1)
[[ -d "$ompi_components" ]] && cp -rL "$ompi_components" "$DEST/mpi/components"
[[ -n "$pmix_components" ]] && cp -rL "$pmix_components" "$DEST/mpi/pmix"
for plugin in "$DEST"/mpi/components/*.so "$DEST"/mpi/pmix/*.so; do
  if [[ -e "$plugin" ]]; then ldd "$plugin" | awk '$3 ~ /^\// {print $1, $3}'; fi
done | sort -u | while read -r name path; do
  [[ "$name" =~ $skip || -e "$DEST/lib/$name" ]] || cp -L "$path" "$DEST/lib/$name"
done
echo "gpu_bundle: $(ls "$DEST/lib" | wc -l) libraries, $(du -sh "$DEST" | cut -f1) in $DEST"
