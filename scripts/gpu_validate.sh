#!/usr/bin/env bash
# The executor on a GPU, unattended, in one command (issue #52): what a short loan of a GPU
# machine must show about the CUDA backend, each step under its own time limit so that one
# failure keeps the rest, everything written under OUT:
#   1. device.txt              nvidia-smi's view of the GPU
#   2. kernels.xml / .log      test_cuda: every CUDA kernel and the CUDA backend's kernel table
#                              against the CPU kernels, fp32 / bf16 / fp16 (tests/unit/cuda)
#   3. run-<case>-{cpu,cuda}/  `twinsim run` of scenarios/validation/gpu/tiny-*.yaml on the CPU
#                              backend and with --device cuda: measured.json and trace.json
#   4. parity.json             the two backends' losses, step by step, and whether they agree
#                              within the case's tolerance (fp32 1e-4, bf16 2e-2 relative)
#   5. steptime.json           gpt2-small-1xh100.yaml: the step time `twinsim run --device
#                              cuda` measures beside the one `twinsim simulate` predicts
#   6. summary.json            one line per step: passed / failed / skipped and why
# About 3 minutes with a carried bundle; budget 8 (the build, when it has to run, is ~4).
#
# Binaries: a bundle packed here by scripts/gpu_bundle.sh (twinsim, test_cuda, the shared
# libraries and Open MPI's runtime; the GPU machine has the driver, CUDA, cuBLAS and NCCL but
# none of the build's own dependencies and no network), else a build of only the targets it
# needs (test_cuda and twinsim, sm_90, -j16) when the machine has those dependencies.
#
# Through the device tool (a machine with one H100 or H200), from this machine:
#   ./scripts/gpu_bundle.sh build .gpu          # here, once: packs the binaries into .gpu/
#   run(command="bash scripts/gpu_validate.sh", carry=[".gpu"], timeout_s=540)
# .gpu/ is ignored by git (.gitignore); OUT is the tool's $OUT, so its files come back (at most
# 8 files): the script packs the run folders into runs.tar.gz. On any GPU machine by hand:
#   OUT=/tmp/gpu-out bash scripts/gpu_validate.sh
# A dry run of its mechanics without a GPU: GPU_BUNDLE=build GPU_VALIDATE_DEVICE=cpu (the
# "cuda" side then runs on the CPU backend too).
# Commit what comes back under scenarios/validation/gpu/measured_<date>/.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-${1:-gpu-validate-out}}
BUNDLE=${GPU_BUNDLE:-.gpu}
DEVICE=${GPU_VALIDATE_DEVICE:-cuda}
mkdir -p "$OUT"
LOG="$OUT/gpu_validate.log"
exec > >(tee -a "$LOG") 2>&1
declare -A RESULT
note() { RESULT[$1]="$2"; echo "== $1: $2"; }
start=$(date +%s)

# 1. the device
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv > "$OUT/device.txt" 2>&1 \
  && note device "$(tail -1 "$OUT/device.txt")" || note device "failed: nvidia-smi (no GPU?)"

# 2. the binaries: the carried bundle, else a build of the two targets
if [[ -x "$BUNDLE/app/twinsim-cuda" && -x "$BUNDLE/tests/test_cuda" ]]; then
  BIN="$BUNDLE"
  export LD_LIBRARY_PATH="$PWD/$BUNDLE/lib:${LD_LIBRARY_PATH:-}"
  if [[ -d "$BUNDLE/mpi" ]]; then  # Open MPI, relocated (gpu_bundle.sh): a singleton needs no orted
    export OMPI_MCA_ess_singleton_isolated=1
    export OMPI_MCA_mca_base_component_path="$PWD/$BUNDLE/mpi/components"
    export PMIX_MCA_mca_base_component_path="$PWD/$BUNDLE/mpi/pmix"
  fi
  note binaries "bundle $BUNDLE"
else
  BIN=build-gpu
  if timeout 330 bash -c "cmake -S . -B $BIN -G Ninja -DCMAKE_BUILD_TYPE=Release -DTWINSIM_CUDA=ON \
        -DCMAKE_CUDA_ARCHITECTURES=90 > '$OUT/build.log' 2>&1 && \
        cmake --build $BIN --target test_cuda twinsim twinsim-executor twinsim-cuda -j16 >> '$OUT/build.log' 2>&1"; then
    note binaries "built in $BIN ($(( $(date +%s) - start )) s)"
  else
    note binaries "failed: configure/build, see build.log"
  fi
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=8
TWINSIM="$BIN/app/twinsim"

# 3. the CUDA kernels and the kernel table against the CPU kernels
if timeout 180 "$BIN/tests/test_cuda" --gtest_output="xml:$OUT/kernels.xml" > "$OUT/kernels.log" 2>&1; then
  passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$OUT/kernels.log")
  skipped=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$OUT/kernels.log")
  # a skip on a GPU machine means the GPU was not usable (the reason is in kernels.log)
  note kernels "passed: ${passed:-0} tests${skipped:+, skipped: $skipped (see kernels.log)}"
else
  note kernels "failed: $(grep '^\[  FAILED  \]' "$OUT/kernels.log" | sort -u | head -20 | tr '\n' ' ')"
fi

# 4. a tiny model on both backends, losses compared
parity() {  # case tolerance
  local case=$1 tol=$2 scenario="scenarios/validation/gpu/$1.yaml"
  for device in cpu cuda; do
    timeout 150 "$TWINSIM" run "$scenario" --steps 4 --device "$([[ $device == cuda ]] && echo "$DEVICE" || echo cpu)" \
      --out "$OUT/run-$case-$device" \
      > "$OUT/run-$case-$device.log" 2>&1 || { note "parity-$case" "failed: run --device $device, see run-$case-$device.log"; return; }
  done
  local worst
  if worst=$(python3 - "$OUT" "$case" "$tol" <<'PY'

import json, sys
out, case, tol = sys.argv[1], sys.argv[2], float(sys.argv[3])
loss = {d: json.load(open(f"{out}/run-{case}-{d}/measured.json"))["losses"] for d in ("cpu", "cuda")}
worst = max(abs(g - c) / max(abs(c), 1e-12) for c, g in zip(loss["cpu"], loss["cuda"]))
ok = len(loss["cpu"]) == len(loss["cuda"]) > 0 and worst <= tol
json.dump({"case": case, "cpu": loss["cpu"], "cuda": loss["cuda"], "worst_relative": worst, "tolerance": tol,
           "passed": ok}, open(f"{out}/parity-{case}.json", "w"), indent=2)
print(f"{worst:.3g}")
sys.exit(0 if ok else 1)
PY
  ); then note "parity-$case" "passed: worst relative difference $worst <= $tol"
  else note "parity-$case" "failed: worst relative difference ${worst:-?} > $tol (parity-$case.json)"; fi
}
parity tiny-gpt-fp32 1e-4
parity tiny-llama-bf16 2e-2

# 5. a step time measured beside the simulator's
st="scenarios/validation/gpu/gpt2-small-1xh100.yaml"
if [[ $DEVICE != cuda ]]; then
  note steptime "skipped: a dry run (GPT-2 small on the CPU backend takes minutes)"
elif timeout 30 "$TWINSIM" simulate "$st" --json > "$OUT/simulate-gpt2.json" 2> "$OUT/simulate-gpt2.log" &&
   timeout 150 "$TWINSIM" run "$st" --steps 3 --device "$DEVICE" --out "$OUT/run-gpt2-cuda" > "$OUT/run-gpt2-cuda.log" 2>&1; then
  python3 - "$OUT" <<'PY' && note steptime "measured (steptime.json)" || note steptime "failed: reading the reports"
import json, sys
out = sys.argv[1]
measured = json.load(open(f"{out}/run-gpt2-cuda/measured.json"))
predicted = json.load(open(f"{out}/simulate-gpt2.json"))
step = lambda r: r["time"]["step_s"]
json.dump({"scenario": "gpt2-small-1xh100", "measured_step_s": step(measured), "predicted_step_s": step(predicted),
           "ratio": step(measured) / step(predicted)}, open(f"{out}/steptime.json", "w"), indent=2)
PY
else
  note steptime "failed: see run-gpt2-cuda.log / simulate-gpt2.log"
fi

# 6. the summary; the run folders packed (the tool returns at most 8 files)
tar -czf "$OUT/runs.tar.gz" -C "$OUT" $(cd "$OUT" && ls -d run-* simulate-* parity-* build.log 2>/dev/null) 2>/dev/null \
  && (cd "$OUT" && rm -rf run-* simulate-* parity-*.json build.log)
python3 - "$OUT" "$(( $(date +%s) - start ))" "${!RESULT[@]}" -- "${RESULT[@]}" <<'PY'
import json, sys
out, seconds, rest = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
cut = rest.index("--")
json.dump({"seconds": seconds, "steps": dict(zip(rest[:cut], rest[cut + 1:]))}, open(f"{out}/summary.json", "w"), indent=2)
PY
echo "gpu_validate: $(( $(date +%s) - start )) s; results in $OUT"
grep -q failed <<< "${RESULT[*]}" && exit 1 || exit 0
