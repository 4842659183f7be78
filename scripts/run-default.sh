#!/usr/bin/env bash
# Installs, builds the `twinsim` binary alone (no tests, benchmarks or Python module: those
# are test.sh's), and simulates the built-in default scenario (GPT-3 175B on DGX A100).
set -euo pipefail
cd "$(dirname "$0")/.."
TWINSIM_BUILD_TARGET=twinsim ./scripts/build.sh
"./${TWINSIM_BUILD_DIR:-build}/app/twinsim" simulate "$@"
