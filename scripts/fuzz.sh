#!/usr/bin/env bash
# Fuzzes with libFuzzer (clang, AddressSanitizer and UndefinedBehaviorSanitizer) for a
# bounded time:
#   scripts/fuzz.sh [SECONDS] [TARGET]   (default 60 s, TARGET scenario)
#   TARGET scenario: the scenario loader and the --set parser (tests/fuzz/fuzz_scenario.cpp)
#   TARGET csv:      the CSV readers: request traces, vTrain, nccl-tests, GEMM sweeps
#                    (tests/fuzz/fuzz_csv.cpp; the first byte of an input picks the reader)
# Seeds come from scenarios/, the catalogs and the validation CSVs, plus
# tests/fuzz/regressions. A crash leaves crash-* files in build-fuzz/; copy each into
# tests/fuzz/regressions/ (scenario inputs) so the test suite replays it. The corpus stays
# in build-fuzz/corpus-TARGET between runs. FUZZ_JOBS=N builds with N jobs (default nproc).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TO_RUN="${1:-60}"
TARGET="${2:-scenario}"
case "$TARGET" in scenario|csv) ;; *) echo "fuzz.sh: TARGET is scenario or csv, not '$TARGET'" >&2; exit 2 ;; esac
./scripts/bootstrap.sh
command -v clang++ >/dev/null || apt-get install -y -qq clang >/dev/null
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTWINSIM_FUZZ=ON \
  -DTWINSIM_SANITIZE=ON -DTWINSIM_BENCH=OFF -DTWINSIM_CUDA=OFF -DTWINSIM_GEMM_AVX2=OFF >/dev/null
cmake --build build-fuzz --target "fuzz_$TARGET" -j"${FUZZ_JOBS:-$(nproc)}"
CORPUS="build-fuzz/corpus-$TARGET"
mkdir -p "$CORPUS"
if [ "$TARGET" = scenario ]; then
  cp scenarios/*.yaml scenarios/*/*.yaml models/catalog/*.yaml hardware/catalog/nodes/*.yaml "$CORPUS"/ 2>/dev/null || true
  cp tests/fuzz/regressions/* "$CORPUS"/ 2>/dev/null || true
else
  # each seed: the byte that picks its reader (0 requests, 1 vTrain, 2 nccl-tests, 3 GEMM), then the file
  seed() { { printf "\\$(printf '%03o' "$1")"; head -c 4000 "$2"; } > "$CORPUS/seed-$1-$(basename "$2")"; }
  for f in scenarios/validation/vtrain/*.csv; do [ -f "$f" ] && seed 1 "$f"; done
  for f in scenarios/validation/microbench/nccl_allreduce*.csv; do [ -f "$f" ] && seed 2 "$f"; done
  for f in scenarios/validation/microbench/gemm*.csv; do [ -f "$f" ] && seed 3 "$f"; done
  cp tests/fuzz/csv/* "$CORPUS"/ 2>/dev/null || true  # request traces and hostile tables
fi
cd build-fuzz
# a unit slower than FUZZ_TIMEOUT s (default 5: the sanitizers make a load 5-10x slower, more
# on a busy machine) is written as timeout-*; time it on the release build, where every
# refusal must take under a second
"./tests/fuzz_$TARGET" -max_total_time="$SECONDS_TO_RUN" -max_len=4096 -timeout="${FUZZ_TIMEOUT:-5}" -rss_limit_mb=2048 \
  -print_final_stats=1 "corpus-$TARGET"
