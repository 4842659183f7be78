#!/usr/bin/env bash
# Everything a short loan of a GPU machine should run, in one command, on that machine,
# from the repository root: the GPU suite on binaries packed here (scripts/gpu_bundle.sh ->
# .gpu/), then the measurements the catalog is judged on, each under its own time limit so
# that one failure keeps the rest:
#   0. gpu_moe_expert_probe.py          issue #53 first: an MoE expert block at Qwen3-30B's and
#                                       gpt-oss-120B's EP-rank shapes, per-expert GEMM loop (1 and
#                                       4 streams) vs torch._grouped_mm vs one dense GEMM, profiled
#                                       (~60 s; scripts/moe_probe_to_table.py prices it)
#   0b. gpu_cublaslt_bias_epilogue.cu   issue #53: gpt-oss fc1's bias epilogues (BIAS forward,
#                                       BGRADB wgrad) against none, as TE 2.9 issues the experts'
#                                       GEMMs (~10 s; built here with nvcc)
#   1. gpu_suite.sh --prebuilt          CUDA kernels vs CPU kernels, benchmarks
#   2. gpu_microbench.py                GEMMs, attention, copies, memory-bound kernels, dispatch
#   3. gpu_train_step.py --profile      Llama training steps, and their kernels
#   4. gpu_gemm_conditions.py           one GEMM under each measuring condition
#   5. gpu_gemm_duty_cycle.py           the GEMM rate against its share of the time (the
#                                       power limit: copy, SwiGLU and idle fillers)
#   6. gpu_power_response.py            how fast the power limit acts
#   7. gpu_attention_power.py           attention's draw on the limit, cool and sustained
#   8. gpu_attention_long.py            attention at 8k-128k tokens (where the curves end): only
#                                       with GPU_SESSION_ALL=1, to leave the probe its time (both
#                                       GPUs measured on 2026-11-26, the catalog holds the points)
#   9. gpu_decode_step.py               decode steps of Llama-2-7B's shapes, graph-replayed and
#                                       profiled (kv_cache_attention, kv_attention_latency)
#  10. gpu_gemm_tiles.py                products chosen for their tiles (gemm_tile_edges)
# Everything lands in OUTDIR/<gpu>/ and, packed, in OUTDIR/gpu_session.tar.gz (one file,
# for a transfer that returns only a few). About 12 minutes on an H100 or H200; steps 5-7
# (about 4) feed scripts/duty_cycle_to_catalog.py and the catalog's power_limited_gemm.
# Usage (on the GPU machine): ./scripts/gpu_session.sh OUTDIR
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: scripts/gpu_session.sh OUTDIR}
export PYTHONUNBUFFERED=1

gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -cs 'A-Za-z0-9' '-' | sed 's/-$//')
dir="$OUT/${gpu:-gpu}"
mkdir -p "$dir"
echo "gpu_session: $gpu -> $dir"

# the machine's own cuBLAS, cudart and NCCL (the toolkit's, or PyTorch's wheels)
libs=$(for n in libcublas.so.13 libcudart.so.13 libnccl.so.2; do
         f=$(find /usr/local /opt /usr/lib -name "$n" 2>/dev/null | head -1)
         [[ -n "$f" ]] && dirname "$f"
       done | sort -u | paste -sd:)
export LD_LIBRARY_PATH="$PWD/.gpu/lib:$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

step() {  # step NAME SECONDS COMMAND...: runs it, its output in NAME.log, and says how it ended
  local name=$1 limit=$2
  shift 2
  echo "== $name (limit ${limit}s)"
  timeout "$limit" "$@" >"$dir/$name.log" 2>&1
  echo "   $name: exit $? ($(tail -1 "$dir/$name.log"))"
}

step moe_expert_probe 120 python3 scripts/gpu_moe_expert_probe.py --out "$dir/moe_probe"
step bias_epilogue 120 bash -c "nvcc -O2 -std=c++17 -arch=native scripts/gpu_cublaslt_bias_epilogue.cu -lcublasLt \
  -o '$dir/bias_probe' && '$dir/bias_probe' --out '$dir/bias_epilogue.csv'"
if [[ -x .gpu/tests/test_cuda ]]; then
  step gpu_suite 240 env BUILD_DIR=.gpu ./scripts/gpu_suite.sh --prebuilt
else
  echo "== gpu_suite: skipped, no .gpu/ bundle (run scripts/gpu_bundle.sh where the project builds)"
fi
step microbench 330 python3 scripts/gpu_microbench.py "$dir"
step train_step 240 python3 scripts/gpu_train_step.py "$dir" --profile
step gemm_conditions 120 python3 scripts/gpu_gemm_conditions.py "$dir"
step duty_cycle 150 python3 scripts/gpu_gemm_duty_cycle.py "$dir" 4
step duty_cycle_sleep 60 python3 scripts/gpu_gemm_duty_cycle.py "$dir" 4 --filler sleep --duty 0.9,0.7,0.5,0.3 \
  --shapes 8192x28672x4096 --name gemm_duty_cycle_sleep.csv
step duty_cycle_swiglu 60 python3 scripts/gpu_gemm_duty_cycle.py "$dir" 4 --filler swiglu --duty 0.9,0.7,0.5,0.35 \
  --shapes 8192x28672x4096 --name gemm_duty_cycle_swiglu.csv
step power_response 60 python3 scripts/gpu_power_response.py "$dir"
step attention_power 120 python3 scripts/gpu_attention_power.py "$dir" 5
if [[ -n "${GPU_SESSION_ALL:-}" ]]; then
  step attention_long 120 python3 scripts/gpu_attention_long.py "$dir"
fi
step decode_step 150 python3 scripts/gpu_decode_step.py "$dir"
step gemm_tiles 60 python3 scripts/gpu_gemm_tiles.py "$dir"

tar -czf "$OUT/gpu_session.tar.gz" -C "$OUT" "$(basename "$dir")"
echo "gpu_session: $(ls "$dir" | wc -l) files in $OUT/gpu_session.tar.gz"
