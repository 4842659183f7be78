#!/usr/bin/env bash
# Installs what is missing and builds twinsim (Release) into ./build.
# Extra arguments go to CMake's configure step, e.g. -DTWINSIM_SANITIZE=ON.
# TWINSIM_BUILD_TARGET builds one target and what it needs (run-default.sh: `twinsim`);
# unset, everything (tests, benchmarks, the Python module).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh
BUILD_DIR="${TWINSIM_BUILD_DIR:-build}"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-Release}" "$@" >/dev/null
TARGET=()
if [ -n "${TWINSIM_BUILD_TARGET:-}" ]; then TARGET=(--target "$TWINSIM_BUILD_TARGET"); fi
echo "build: ${TWINSIM_BUILD_TARGET:-everything} in $BUILD_DIR with ${TWINSIM_JOBS:-$(nproc)} jobs" \
     "(a first build takes minutes; [done/total] counts the steps)" >&2
cmake --build "$BUILD_DIR" -j"${TWINSIM_JOBS:-$(nproc)}" "${TARGET[@]}"
