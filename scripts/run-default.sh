#!/usr/bin/env bash
# Installs, builds, and simulates the built-in default scenario (GPT-3 175B on DGX A100).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
./build/app/twinsim simulate "$@"
