#!/usr/bin/env bash
# Installs what is missing and builds twinsim (Release) into ./build.
# Extra arguments go to CMake's configure step, e.g. -DTWINSIM_SANITIZE=ON.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh
BUILD_DIR="${TWINSIM_BUILD_DIR:-build}"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-Release}" "$@" >/dev/null
cmake --build "$BUILD_DIR" -j"${TWINSIM_JOBS:-$(nproc)}"
