#!/usr/bin/env python3
"""An inference run of the executor lined up with the simulator's prediction of the same
scenario (`twinsim compare`): the times and memory come through unchanged, and the two
sides name the ops of each phase alike. Usage:
check_compare_inference.py TWINSIM SCENARIO MEASURED_DIR OUTPUT_LEN [--set K=V]..."""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

TWINSIM, SCENARIO, MEASURED_DIR, OUTPUT_LEN = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
OVERRIDES = sys.argv[5:]
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)


def run(*args):
    r = subprocess.run([TWINSIM, *args], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        sys.exit(f"twinsim {' '.join(args)}: exit {r.returncode}: {r.stderr}")
    return r.stdout


def strip_layer(name):
    head, _, rest = name.partition(".")
    return rest if head.startswith("layer") and head[5:].isdigit() else name


tmp = tempfile.mkdtemp(prefix="twinsim_cmp_inf_")
measured_path = os.path.join(MEASURED_DIR, "measured.json")
sim_path = os.path.join(tmp, "simulated.json")
with open(sim_path, "w") as f:
    f.write(run("simulate", SCENARIO, *OVERRIDES, "--json"))
with open(sim_path) as f:
    sim = json.load(f)
with open(measured_path) as f:
    meas = json.load(f)

# the executor's phases: one prefill pass, OUTPUT_LEN - 1 decode passes, every layer once a pass
for phase, passes in (("prefill", 1), ("decode", OUTPUT_LEN - 1)):
    block = meas["inference"][phase]
    check(block["passes"] == passes, f"measured {phase}.passes {block['passes']}, expected {passes}")
    for name in ("layer0.attn.qkv.fwd", "head.logits.fwd", "head.sample.fwd"):
        op = block["ops"].get(name)
        check(op is not None and op["count_per_pass"] == 1, f"measured {phase} {name}: {op}")
check(sim["inference"]["decode"]["passes"] == OUTPUT_LEN - 1, "simulated decode.passes")

cmp = json.loads(run("compare", sim_path, measured_path, "--json"))
check(cmp.get("kind") == "inference", f"kind {cmp.get('kind')}")
check("step_s" not in cmp, "an inference comparison has no step_s")
for key in ("ttft_s", "tpot_s", "output_tokens_per_s", "kv_cache_bytes_per_token"):
    check(cmp[key]["predicted"] == sim["inference"][key], f"{key} predicted {cmp[key]['predicted']}")
    check(cmp[key]["measured"] == meas["inference"][key], f"{key} measured {cmp[key]['measured']}")
# fp32 cache on both sides: the same bytes per token
check(cmp["kv_cache_bytes_per_token"]["rel_error"] == 0, f"KV bytes per token {cmp['kv_cache_bytes_per_token']}")
for cat in ("params", "kv_cache"):  # counted from the architecture on one side, allocations on the other
    pair = cmp["memory"]["breakdown"][cat]
    check(pair["predicted"] == pair["measured"] > 0, f"memory {cat} {pair}")

# names line up: only the ops one side has by design are one-sided
one_sided_ok = {"head.gather.fwd", "embedding.position.fwd"}
for phase in ("prefill", "decode"):
    ops = cmp[phase]["ops"]
    check(len(ops) >= 12, f"{phase}: {len(ops)} ops")
    calls = {}
    for name, op in meas["inference"][phase]["ops"].items():
        calls[strip_layer(name)] = calls.get(strip_layer(name), 0) + op["count_per_pass"]
    for op in ops:
        if op["predicted_only"] or op["measured_only"]:
            check(op["name"] in one_sided_ok, f"{phase}: {op['name']} is on one side only")
            continue
        # the simulator's calls per pass are the executor's summed over the layers
        check(op["calls_per_pass"] == calls[op["name"]],
              f"{phase} {op['name']}: {op['calls_per_pass']} calls predicted, {calls[op['name']]} measured")
    gaps = [abs(op["per_pass_s"]["abs_error"]) for op in ops]
    check(gaps == sorted(gaps, reverse=True), f"{phase}: ops not sorted by gap")

text = run("compare", sim_path, measured_path)
for s in ("TTFT, prefill (s)", "TPOT, decode pass (s)", "prefill: ops with the largest gap",
          "decode (mean pass): ops with the largest gap"):
    check(s in text, f"table lacks {s!r}")

if importlib.util.find_spec("matplotlib"):
    prefix = os.path.join(tmp, "cmp")
    run("compare", sim_path, measured_path, "--plot", prefix)
    for suffix in ("_ops.png", "_memory.png"):
        check(os.path.getsize(prefix + suffix) > 1000, f"no plot {prefix + suffix}")

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("inference comparison checks passed")
