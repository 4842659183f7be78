#!/usr/bin/env python3
"""The bias-epilogue probe's timings (scripts/gpu_cublaslt_bias_epilogue.cu) set against
gpt-oss-120B's missing time (issue #53), so the probe's answer reads in one command:

    python3 scripts/bias_epilogue_to_table.py bias_epilogue.csv [--twinsim build/app/twinsim]

Per gpt-oss case, at TE's 4 streams: each expert GEMM pass measured without and with fc1's
epilogues (BIAS forward, BGRADB wgrad), their sum over a layer and micro-batch (each of the six
passes runs once: moe_act recomputation reruns the activation, not the GEMMs), and what the
epilogues add, as a share of the published run's missing time per layer and micro-batch
(tests/unit/validation/gpt_oss_across_plans_test.cpp, derived by hand there: H100 26.02 5.41 ms,
B200 26.02.01 EP8 11.5 ms, B200 26.02 EP64 11.0 ms). With --twinsim, a case whose GPU is the
probe's is priced too: `twinsim simulate SCENARIO --json` ops moe.experts.{gate_up,down}.{fwd,
bwd_dgrad,bwd_wgrad} (one micro-batch, one layer), and measured - priced is the share of the
miss the expert GEMMs hold as TE issues them.
"""
import argparse
import csv
import json
import subprocess
import sys

TRAINING = "scenarios/validation/training/"
# case: (judged scenario, its GPU as the probe's device name has it, missing s a layer-micro-batch)
CASES = {
    "gpt_oss_ep8_mbs1": ("megatron-bridge-gpt-oss-120b-h100-26.02.yaml", "H100", 5.41e-3),
    "gpt_oss_ep8_mbs4": ("megatron-bridge-gpt-oss-120b-b200-26.02.01.yaml", "B200", 11.5e-3),
    "gpt_oss_ep64_mbs4": ("megatron-bridge-gpt-oss-120b-b200-26.02.yaml", "B200", 11.0e-3),
}
SIM_OP = {("fc1", "fwd"): "gate_up.fwd", ("fc1", "dgrad"): "gate_up.bwd_dgrad", ("fc1", "wgrad"): "gate_up.bwd_wgrad",
          ("fc2", "fwd"): "down.fwd", ("fc2", "dgrad"): "down.bwd_dgrad", ("fc2", "wgrad"): "down.bwd_wgrad"}


def read(path, streams="4"):
    """{case: {(linear, pass): {epilogue: median_us}}} at `streams`, and the GPU's name."""
    by_case, gpu = {}, ""
    with open(path) as f:
        for r in csv.DictReader(f):
            if r["streams"] != streams:
                continue
            gpu = r["gpu"]
            us = float(r["median_us"])
            by_case.setdefault(r["case"], {}).setdefault((r["linear"], r["pass"]), {})[r["epilogue"]] = us
    return by_case, gpu


def layer_sums(passes):
    """(all six passes without epilogues, with fc1's, what the epilogues add) in us; None where
    a pass is missing or cuBLASLt had no algorithm (-1)."""
    none = with_bias = 0.0
    for key in SIM_OP:
        got = passes.get(key, {})
        plain = got.get("none", -1)
        biased = got.get("bias", plain)
        if plain < 0 or biased < 0:
            return None
        none += plain
        with_bias += biased
    return none, with_bias, with_bias - none


def priced_us(twinsim, scenario):
    cmd = [twinsim, "simulate", TRAINING + scenario, "--json"]
    ops = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)["time"]["ops"]
    by_name = {op["name"]: op["time_s"] for op in ops}
    return 1e6 * sum(by_name["moe.experts." + n] for n in SIM_OP.values())


def rows(by_case, gpu, twinsim):
    out = []
    for case, (scenario, gpu_tag, miss_s) in CASES.items():
        sums = layer_sums(by_case.get(case, {}))
        if sums is None:
            continue
        none, with_bias, extra = sums
        row = dict(case=case, measured_us=none, measured_bias_us=with_bias, epilogue_us=extra,
                   epilogue_share_of_miss=extra / (miss_s * 1e6), priced_us=None, gap_share_of_miss=None)
        if twinsim and gpu_tag in gpu:
            row["priced_us"] = priced_us(twinsim, scenario)
            row["gap_share_of_miss"] = (with_bias - row["priced_us"]) / (miss_s * 1e6)
        out.append(row)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--twinsim", help="the twinsim binary: price the cases run on the probe's GPU")
    ap.add_argument("--streams", default="4")
    args = ap.parse_args(argv)
    by_case, gpu = read(args.csv, args.streams)
    print(f"{gpu}, {args.streams} streams; us a layer and micro-batch, the six expert GEMM passes")
    print(f"{'case':18s} {'no epilogue':>11s} {'fc1 bias':>9s} {'adds':>8s} {'of miss':>8s} {'priced':>8s} "
          f"{'meas-priced of miss':>20s}")
    for r in rows(by_case, gpu, args.twinsim):
        priced = f"{r['priced_us']:8.0f} {r['gap_share_of_miss']:20.1%}" if r["priced_us"] is not None else ""
        print(f"{r['case']:18s} {r['measured_us']:11.0f} {r['measured_bias_us']:9.0f} {r['epilogue_us']:8.0f} "
              f"{r['epilogue_share_of_miss']:8.1%} {priced}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
