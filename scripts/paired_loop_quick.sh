#!/usr/bin/env bash
# The paired loop's quick figure on this machine (issue 61): `twinsim calibrate --quick`,
# then `twinsim validate --quick` (the host suite's quick.txt cases) against that file,
# and the table printed. A figure to read, not a pass/fail judgement (these machines are
# noisy): a change that breaks the loop on another machine shows in that machine's output.
# It fails only when a command fails. About 1-3 minutes on 2 cores.
# TWINSIM_BUILD_DIR (default ./build) holds the twinsim binary.
set -euo pipefail
cd "$(dirname "$0")/.."
twinsim="${TWINSIM_BUILD_DIR:-build}/app/twinsim"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
start=$(date +%s)
"$twinsim" calibrate --quick --out "$out/host.yaml" >"$out/calibrate.log" 2>&1 || { cat "$out/calibrate.log"; exit 1; }
"$twinsim" validate --quick --hardware "$out/host.yaml" --out "$out/validate" >"$out/validate.txt" 2>"$out/validate.log" ||
  { cat "$out/validate.log"; exit 1; }
echo "== paired loop, quick: calibrate --quick + validate --quick in $(($(date +%s) - start)) s on" \
  "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) CPUs (a figure, not a verdict)"
tail -n 1 "$out/calibrate.log"
cat "$out/validate.txt"
