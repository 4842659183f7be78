#!/usr/bin/env python3
"""End-to-end checks of the twinsim command line against the contract of SCENARIO.md:
the report's keys, the breakdown summing to the step, and errors on stderr with a
non-zero exit status. Usage: check_cli.py PATH_TO_TWINSIM SCENARIOS_DIR"""
import json
import os
import re
import subprocess
import sys
import tempfile

TWINSIM, SCENARIOS = sys.argv[1], sys.argv[2]
failures = []


def run(*args):
    return subprocess.run([TWINSIM, *args], capture_output=True, text=True, timeout=120)


def check(condition, what):
    if not condition:
        failures.append(what)


def keys_of(obj, path):
    for key in path.split("."):
        obj = obj[key]
    return obj


# simulate --json on the built-in default: every key of the report contract
r = run("simulate", "--json")
check(r.returncode == 0, f"simulate --json exit {r.returncode}: {r.stderr}")
report = json.loads(r.stdout)
for key in ["params.total", "params.active", "memory.capacity_bytes", "memory.peak_bytes", "memory.fits",
            "memory.breakdown.params", "memory.breakdown.grads", "memory.breakdown.optimizer",
            "memory.breakdown.activations", "memory.breakdown.kv_cache", "memory.breakdown.buffers",
            "memory.stages", "time.step_s", "time.breakdown.compute_s", "time.breakdown.recompute_s",
            "time.breakdown.tp_comm_s", "time.breakdown.pp_bubble_s", "time.breakdown.dp_comm_exposed_s",
            "throughput.tokens_per_s", "throughput.tokens_per_s_per_gpu", "throughput.model_tflops_per_gpu",
            "throughput.hardware_tflops_per_gpu", "throughput.mfu", "throughput.hfu"]:
    try:
        keys_of(report, key)
    except (KeyError, TypeError):
        failures.append(f"report lacks {key}")
step = report["time"]["step_s"]
check(abs(sum(report["time"]["breakdown"].values()) - step) <= 1e-9 * step, "breakdown does not sum to step_s")
check(report["params"]["total"] == 174615846912, f"gpt3-175b params {report['params']['total']}")
check(0 < report["throughput"]["mfu"] <= report["throughput"]["hfu"] < 1, "mfu/hfu out of order")
peak = max(s["peak_bytes"] for s in report["memory"]["stages"])
check(report["memory"]["peak_bytes"] == peak, "memory.peak_bytes is not the highest stage peak")

# the table without --json, and --set overrides
r = run("simulate", "--set", "plan.pp=8", "--set", "plan.dp=24")
check(r.returncode == 0 and "step time" in r.stdout and "MFU" in r.stdout, "simulate table: " + r.stderr)

# memory alone
r = run("memory", "--json")
m = json.loads(r.stdout)
check(r.returncode == 0 and "memory" in m and "time" not in m, "memory --json")

# a scenario file, and the trace
r = run("simulate", f"{SCENARIOS}/default.yaml", "--json", "--trace", "/tmp/twinsim_cli_trace.json")
check(r.returncode == 0 and json.loads(r.stdout)["time"]["step_s"] == step, "default.yaml differs from built-in")
with open("/tmp/twinsim_cli_trace.json") as f:
    check(len(json.load(f)["traceEvents"]) > 1000, "trace too small")

# a request trace for serve (arrival_s, prompt_len, output_len)
TRACE = os.path.join(tempfile.mkdtemp(prefix="twinsim_cli_"), "requests.csv")
with open(TRACE, "w") as f:
    f.write("arrival_s,prompt_len,output_len\n0,16,8\n")

# errors: non-zero exit, the message on stderr naming key, value and rule
for args, message in [
    (["serve", SCENARIOS + "/inference/llama2-7b-a100.yaml", "--trace-file", TRACE, "--rate", "3"],
     "--rate excludes --trace-file"),
    (["simulate", "--set", "plan.tp=5"], "plan.tp=5 does not divide model.heads=96"),
    (["memory", "--set", "model=gpt3-175"], "did you mean 'gpt3-175b'"),
    (["simulate", "/nonexistent.yaml"], "cannot be opened"),
    (["simulate", "--set", "plan.zero=7"], "plan.zero=7"),
    # scenario files: regular files of at most 16 MiB (scenario/load.cpp)
    (["simulate", SCENARIOS], "is not a regular file (a directory, device or pipe)"),
    (["simulate", "/dev/zero"], "is not a regular file (a directory, device or pipe)"),
    # output files are written whole or not at all, the error naming the path (io/whole_file.hpp)
    (["simulate", "--trace", "/nonexistent/dir/t.json"], "cannot write '/nonexistent/dir/t.json'"),
    (["serve", SCENARIOS + "/inference/llama2-7b-a100.yaml", "--requests", "5", "--csv", "/nonexistent/dir/x.csv"],
     "cannot write '/nonexistent/dir/x.csv'"),
    # options that conflict or do not apply are refused, not ignored
    (["simulate", SCENARIOS + "/inference/llama2-7b-a100.yaml", "--trace", "/tmp/t.json"],
     "--trace=/tmp/t.json traces a training step; this scenario is an inference batch"),
    (["simulate", SCENARIOS + "/inference/llama2-7b-a100.yaml", "--fidelity", "full"],
     "--fidelity=full applies to a training step"),
    (["search", "--recompute-mix", "--gpus", "8"], "--gpus excludes --recompute-mix"),
    (["capacity", "--serve", "--model", "llama3-8b", "--gpu", "h100-sxm", "--tokens", "1e12"], "--tokens excludes --serve"),
    (["capacity", "--model", "llama3-8b", "--gpu", "h100-sxm", "--tokens", "1e12", "--days", "9", "--rate", "2"],
     "--rate requires --serve"),
    # a step whose task graph would not fit is refused up front (sim/training/step_size.hpp)
    (["simulate", "--set", "model.layers=1000000", "--set", "plan.pp=1", "--set", "plan.dp=96"],
     "the step graph would hold about"),
    (["simulate", "--max-memory-gib", "0.001"], "--max-memory-gib=0.001 the step graph would hold about"),
    # command-line numbers: finite, in range, whole where counted (app/cli_checks.hpp)
    (["capacity", "--model", "llama3-8b", "--gpu", "h100-sxm", "--tokens", "nan", "--days", "10"],
     "--tokens: nan must be a finite number > 0"),
    (["capacity", "--model", "llama3-8b", "--gpu", "h100-sxm", "--tokens", "2e12", "--days", "inf"],
     "--days: inf must be a finite number > 0"),
    (["search", "--gpus-range", "1:1e9"], "--gpus-range=1:1e9 must be A:B with whole numbers"),
    (["search", "--gpus-range", "8:16abc"], "--gpus-range=8:16abc must be A:B with whole numbers"),
    (["search", "--gpus-range", "8:99999999999"], "must satisfy 1 <= A <= B <= 16777216"),
    (["search", "--recompute-mix", "--memory-budget-gib", "-1"], "--memory-budget-gib: -1 must be a finite number > 0"),
    (["search", "--top", "1e9"], "--top: 1e9 must be a whole number from 1 to 10000"),
    (["search", "--gpus", "8.5"], "--gpus: 8.5 must be a whole number"),
    (["run", SCENARIOS + "/exec/tiny-gpt-single.yaml", "--seed", "-1"], "--seed: -1 must be a whole number from 0"),
    (["run", SCENARIOS + "/exec/tiny-gpt-single.yaml", "--lr", "nan"], "--lr: nan must be a finite number > 0"),
    (["serve", SCENARIOS + "/inference/" + "llama2-7b-a100.yaml", "--requests", "1e9"],
     "--requests: 1e9 must be a whole number from 1 to 10000000"),
    # --engine-bench names an engine whose script it knows; vLLM's own flags want vLLM's block
    (["serve", SCENARIOS + "/inference/llama2-7b-a100.yaml", "--requests", "5", "--engine-bench", "tgi"],
     "--engine-bench=tgi must be vllm, sglang or trtllm"),
    (["serve", SCENARIOS + "/inference/llama2-7b-a100.yaml", "--requests", "5", "--engine-bench", "sglang",
      "--goodput", "ttft:100"], "--goodput: is vLLM's flag"),
]:
    r = run(*args)
    check(r.returncode != 0, f"{args} exited 0")
    check(message in r.stderr, f"{args}: stderr {r.stderr!r} lacks {message!r}")
    check(r.stdout == "", f"{args} printed to stdout")

# serve --engine-bench: a vLLM stack's block as before (`--engine-bench vllm` alike, the flag
# before the scenario too); an SGLang stack's is bench_serving's, with its Backend line
VLLM_STACK = SCENARIOS + "/validation/engines/vllm082-llama3.1-8b-h200-fp8.yaml"
plain = run("serve", VLLM_STACK, "--requests", "5", "--engine-bench")
check(plain.returncode == 0 and plain.stdout.startswith("============ Serving Benchmark Result ============\n")
      and "Backend:" not in plain.stdout, "serve --engine-bench on a vLLM stack: " + plain.stderr)
check(run("serve", VLLM_STACK, "--requests", "5", "--engine-bench", "vllm").stdout == plain.stdout,
      "--engine-bench vllm differs from the vLLM stack's plain --engine-bench")
check(run("serve", "--engine-bench", VLLM_STACK, "--requests", "5").stdout == plain.stdout,
      "serve --engine-bench SCENARIO no longer reads SCENARIO")
r = run("serve", SCENARIOS + "/validation/engines/sglang044-llama3.1-8b-h200-fp8.yaml", "--requests", "5",
        "--engine-bench")
check(r.returncode == 0 and "\nBackend:                                 sglang    \n" in r.stdout,
      "serve --engine-bench on an SGLang stack: " + r.stderr)
r = run("serve", VLLM_STACK, "--requests", "5", "--engine-bench", "trtllm")
check(r.returncode == 0 and "= PERFORMANCE OVERVIEW \n" in r.stdout, "serve --engine-bench trtllm: " + r.stderr)

# collective sweep in nccl-tests conventions
r = run("collective", "--cluster", "dgx-a100-80gb", "--op", "allreduce", "--ranks", "8")
check(r.returncode == 0 and "busbw" in r.stdout, "collective: " + r.stderr)

# start-up: `twinsim` maps no CUDA library beyond the runtime (cuBLAS, cuBLASLt and NCCL cost
# every command ~26,000 page faults); `run --device cuda` hands over to twinsim-cuda beside it
ldd = subprocess.run(["ldd", TWINSIM], capture_output=True, text=True)
if ldd.returncode == 0:
    heavy = [line.split()[0] for line in ldd.stdout.splitlines() if re.match(r"\s*lib(cublas|cublasLt|nccl)\.", line)]
    check(not heavy, f"twinsim links {heavy}: they belong to twinsim-cuda alone (app/cuda_executable.hpp)")

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("all CLI checks passed")
