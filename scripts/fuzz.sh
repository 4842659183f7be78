#!/usr/bin/env bash
# Fuzzes the scenario loader and --set parser with libFuzzer for a bounded time.
#   scripts/fuzz.sh [SECONDS]   (default 60)
# Seeds come from scenarios/ and the model/node catalogs. A crash leaves crash-* files in
# build-fuzz/; copy each into tests/fuzz/regressions/ so the test suite replays it.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TO_RUN="${1:-60}"
./scripts/bootstrap.sh
command -v clang++ >/dev/null || apt-get install -y -qq clang >/dev/null
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTWINSIM_FUZZ=ON \
  -DTWINSIM_SANITIZE=ON -DTWINSIM_BENCH=OFF -DTWINSIM_CUDA=OFF -DTWINSIM_GEMM_AVX2=OFF >/dev/null
cmake --build build-fuzz --target fuzz_scenario -j"$(nproc)"
mkdir -p build-fuzz/corpus
cp scenarios/*.yaml scenarios/*/*.yaml models/catalog/*.yaml hardware/catalog/nodes/*.yaml build-fuzz/corpus/ 2>/dev/null || true
cp tests/fuzz/regressions/* build-fuzz/corpus/ 2>/dev/null || true
cd build-fuzz
./tests/fuzz_scenario -max_total_time="$SECONDS_TO_RUN" -max_len=4096 -timeout=10 corpus
