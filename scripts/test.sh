#!/usr/bin/env bash
# Installs, builds, and runs every test (GoogleTest, MPI and CLI tests through ctest).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ctest --test-dir build --output-on-failure -j"${TWINSIM_JOBS:-$(nproc)}"
