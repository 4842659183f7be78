#!/usr/bin/env python3
"""The MoE expert probe (scripts/gpu_moe_expert_probe.py) and its importer
(scripts/moe_probe_to_table.py), on the CPU (issue #53).

  check_moe_expert_probe.py table TWINSIM SOURCE_DIR   no torch needed: the trace attribution on
      a hand-made trace, and the importer on a full-shape probe folder written here
  check_moe_expert_probe.py probe TWINSIM SOURCE_DIR   the probe's --dry-run (torch on the CPU)
      and the importer on its output; exit 77 (skipped) when no interpreter has torch. The
      interpreter is $TWINSIM_TORCH_PYTHON if set, else this one.
"""
import csv
import json
import os
import subprocess
import sys
import tempfile

FAILS = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILS.append(what)


def check_trace_attribution(scripts):
    """Two ranges; three kernels, one on a side stream launched inside the first range but run
    after the second began, one launched outside both: attribution follows the launch."""
    sys.path.insert(0, scripts)
    from moe_probe_trace import kernels_by_op
    ev = [dict(ph="X", cat="user_annotation", name="p/gate_up.fwd", ts=0, dur=100),
          dict(ph="X", cat="user_annotation", name="p/act.fwd", ts=100, dur=50),
          dict(ph="X", cat="cuda_runtime", name="cudaLaunchKernel", ts=10, dur=5, args=dict(correlation=1)),
          dict(ph="X", cat="cuda_runtime", name="cudaLaunchKernel", ts=20, dur=5, args=dict(correlation=2)),
          dict(ph="X", cat="cuda_runtime", name="cudaLaunchKernel", ts=120, dur=5, args=dict(correlation=3)),
          dict(ph="X", cat="cuda_runtime", name="cudaLaunchKernel", ts=200, dur=5, args=dict(correlation=4)),
          dict(ph="X", cat="kernel", name="gemm_a", ts=30, dur=40, args=dict(correlation=1, stream=7)),
          dict(ph="X", cat="kernel", name="gemm_b", ts=130, dur=60, args=dict(correlation=2, stream=20)),
          dict(ph="X", cat="kernel", name="silu", ts=190, dur=8, args=dict(correlation=3, stream=7)),
          dict(ph="X", cat="kernel", name="late", ts=210, dur=3, args=dict(correlation=4, stream=7))]
    got = kernels_by_op(dict(traceEvents=ev), "p/", True)
    check(got == {"gate_up.fwd": [("gemm_a", 40.0), ("gemm_b", 60.0)], "act.fwd": [("silu", 8.0)]},
          f"kernels go to the range of their launch, the side stream's too: {got}")
    cpu = [dict(ph="X", cat="user_annotation", name="p/down.fwd", ts=0, dur=100),
           dict(ph="X", cat="cpu_op", name="aten::matmul", ts=5, dur=50, pid=1, tid=1),
           dict(ph="X", cat="cpu_op", name="aten::mm", ts=10, dur=40, pid=1, tid=1),
           dict(ph="X", cat="cpu_op", name="aten::silu", ts=60, dur=10, pid=1, tid=1)]
    got = kernels_by_op(cpu, "p/", False)
    check(got == {"down.fwd": [("aten::matmul", 50.0), ("aten::silu", 10.0)]},
          f"without a GPU the outermost CPU ops (mm inside matmul is not counted again): {got}")


def sim_op(twinsim, scenario, name):
    cmd = [twinsim, "simulate", "scenarios/validation/training/" + scenario, "--json", "--set",
           "training.precision=bf16"]
    ops = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)["time"]["ops"]
    return next(o for o in ops if o["name"] == name)


def full_shape_folder(folder):
    """A probe folder at Qwen3-30B EP8's shape with made-up times: loop_1s's gate_up.fwd 1000 us,
    every other GEMM op 500 us, and the dense way at 300 us an op."""
    scenario = "megatron-bridge-qwen3-30b-a3b-h100-26.02.01.yaml"
    case = dict(hidden=2048, ffn=768, experts=128, top_k=8, ep=8, tokens=4096, scenario=scenario,
                balanced=[2048] * 16, routed=[2048] * 16, ways={})
    with open(os.path.join(folder, "moe_probe.json"), "w") as f:
        json.dump(dict(meta=dict(device="fixture", date="2026-12-07"), cases=dict(qwen3_30b_ep8=case)), f)
    ops = ["gate_up.fwd", "act.fwd", "down.fwd", "down.bwd_dgrad", "down.bwd_wgrad", "act.bwd_dgrad",
           "gate_up.bwd_dgrad", "gate_up.bwd_wgrad"]
    rows = []
    for way, base in (("loop_1s", 500.0), ("dense", 300.0)):
        for op in ops:
            n, k = (1536, 2048) if op.startswith("gate_up") else (2048, 768) if op.startswith("down") else ("", "")
            wall = 1000.0 if (way, op) == ("loop_1s", "gate_up.fwd") else base
            rows.append(dict(case="qwen3_30b_ep8", way=way, op=op, experts=16, rows=32768, n=n, k=k,
                             flops=2 * 32768 * n * k if n else 0, wall_us=wall, kernel_us=wall, graph_us=""))
    with open(os.path.join(folder, "moe_probe_ops.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return scenario


def check_table(twinsim, src, python):
    with tempfile.TemporaryDirectory() as folder:
        scenario = full_shape_folder(folder)
        out = subprocess.run([python, "scripts/moe_probe_to_table.py", folder, "--twinsim", twinsim],
                             capture_output=True, text=True)
        print(out.stdout[-3000:], out.stderr[-2000:])
        check(out.returncode == 0, "the importer runs on a full-shape folder")
        with open(os.path.join(folder, "moe_probe_vs_sim.csv")) as f:
            table = list(csv.DictReader(f))
    # 16 experts x 2048 rows, hidden 2048, ffn 768 in bf16: x 32768 x 2048 x 2 = 134,217,728 B,
    # weights 16 x 1536 x 2048 x 2 = 100,663,296 B, y 32768 x 1536 x 2 = 100,663,296 B: 335,544,320
    gate_up = sim_op(twinsim, scenario, "moe.experts.gate_up.fwd")
    check(gate_up["hbm_bytes"] == 335544320, f"the judged scenario prices the probe's shape: {gate_up['hbm_bytes']} B")
    row = next((r for r in table if r["kernel"] == "loop_1s" and r["op"] == "gate_up.fwd"), None)
    check(row is not None and abs(float(row["priced_us"]) - gate_up["time_s"] * 1e6) < 0.01,
          f"priced_us is simulate --json's bf16 gate_up.fwd ({gate_up['time_s'] * 1e6:.2f} us): {row}")
    # 2 x 32768 x 1536 x 2048 = 206.16 GFLOP in 1000 us: 206.2 TFLOP/s
    check(row is not None and row["tflops"] == "206.2" and row["pass"] == "fwd" and row["rows_per_expert"] == "2048.0",
          "grouped-table columns: 206.2 TFLOP/s at 16 x 2048 rows, pass fwd")
    check(len(table) == 12 and {r["distribution"] for r in table} == {"uniform"}, f"6 GEMM ops x 2 ways: {len(table)}")
    # loop_1s vs dense over the 6 GEMM ops: (1000 + 5 x 500) - 6 x 300 = 1700 us over 16 x 6 passes = 17.71
    check("+17.71" in out.stdout, "the loop's excess over the dense floor: +17.71 us an expert GEMM pass")
    # against the sim: (1000 + 5 x 500 us - the six ops' bf16 prices) over 16 x 6 passes
    gemms = ("gate_up.fwd", "gate_up.bwd_dgrad", "gate_up.bwd_wgrad", "down.fwd", "down.bwd_dgrad", "down.bwd_wgrad")
    priced = sum(sim_op(twinsim, scenario, f"moe.experts.{op}")["time_s"] * 1e6 for op in gemms)
    want = f"{(3500 - priced) / 96:+.2f}"
    gaps = [ln.split() for ln in out.stdout.splitlines() if ln.startswith("  loop_1s ")]
    line = gaps[0] if gaps else []
    check(line[1:2] == [want], f"the loop's gap to the price, {want} us an expert GEMM pass: {line}")
    check("published NVIDIA/TransformerEngine#2045 TE 2.2: 16 x 2048 x N768 x K2048" in out.stdout,
          "TE #2045's row at the same experts, rows and K is printed beside")


def check_probe(twinsim, src):
    python = os.environ.get("TWINSIM_TORCH_PYTHON", sys.executable)
    if subprocess.run([python, "-c", "import torch"], capture_output=True).returncode != 0:
        print(f"skipped: {python} has no torch (set TWINSIM_TORCH_PYTHON to one that has)")
        return 77
    with tempfile.TemporaryDirectory() as folder:
        run = subprocess.run([python, "scripts/gpu_moe_expert_probe.py", "--dry-run", "--out", folder, "--reps", "2"],
                             capture_output=True, text=True, timeout=600)
        print(run.stdout[-4000:], run.stderr[-4000:])
        check(run.returncode == 0, "the dry run ends with every way ok")
        check_probe_output(folder)
        table = subprocess.run([python, "scripts/moe_probe_to_table.py", folder, "--twinsim", twinsim],
                               capture_output=True, text=True)
        print(table.stdout[-2000:], table.stderr[-2000:])
        check(table.returncode == 0 and table.stdout.count("UNPRICED: gate_up.fwd: sim") == 3,
              "the importer leaves the dry run's tiny cases unpriced, naming the bytes that differ")
    return 0


def check_probe_output(folder):
    with open(os.path.join(folder, "moe_probe_ops.csv")) as f:
        rows = list(csv.DictReader(f))
    with open(os.path.join(folder, "moe_probe_kernels.csv")) as f:
        kernels = list(csv.DictReader(f))
    with open(os.path.join(folder, "moe_probe.json")) as f:
        report = json.load(f)
    ways = ["loop_1s", "loop_4s", "loop_1s_bf16g", "grouped_mm", "dense", "loop_1s_routed", "loop_4s_routed"]
    cases = {"qwen3_30b_ep8": 16, "qwen3_30b_ep16": 8, "gpt_oss_120b_ep8": 16}
    check(set(report["cases"]) == set(cases) and all(k in report["meta"] for k in ("torch", "device", "date")),
          "the JSON names the three cases, the torch version, the device and the date")
    for case, local in cases.items():
        info = report["cases"][case]
        # dry run: 64 tokens a rank x top-k x EP over 128 experts: qwen 64 x 8 x 8 / 128 = 32 rows
        # an expert, at EP 16 64; gpt-oss 64 x 4 x 8 / 128 = 16
        want = {"qwen3_30b_ep8": 32, "qwen3_30b_ep16": 64, "gpt_oss_120b_ep8": 16}[case]
        check(info["balanced"] == [want] * local, f"{case}: balanced rows {want} x {local}")
        # the busiest rank holds at least the mean: 64 x top-k x EP / EP ranks
        check(len(info["routed"]) == local and sum(info["routed"]) >= local * want,
              f"{case}: routed rows of the busiest rank {sum(info['routed'])} >= {local * want}")
        for way in ways:
            st = info["ways"].get(way, {})
            err = st.get("rel_error")
            check(st.get("status") == "ok" and (way == "dense") == (err is None) and (err is None or err < 3e-2),
                  f"{case} {way}: ok, error against fp32 {err}")
            mine = {r["op"]: r for r in rows if r["case"] == case and r["way"] == way}
            check(len(mine) == 11 and all(float(r["wall_us"]) > 0 for r in mine.values()),
                  f"{case} {way}: 8 ops and 3 block passes, each timed")
    # qwen3_30b_ep8 gate_up: 2 x (16 x 32 rows) x (2 x 32) x 64 = 4,194,304 flops a pass
    r = next(r for r in rows if (r["case"], r["way"], r["op"]) == ("qwen3_30b_ep8", "loop_1s", "gate_up.bwd_wgrad"))
    check(r["flops"] == "4194304" and r["gemm_calls"] == "16", f"gate_up wgrad flops and calls by hand: {r['flops']}")
    # on the CPU the outermost calls: one addmm/mm an expert (then an add_ where mm_then_add ran)
    calls = [k for k in kernels if (k["case"], k["way"], k["op"]) == ("qwen3_30b_ep8", "loop_1s", "gate_up.bwd_wgrad")]
    products = sum(int(k["calls"]) for k in calls if k["kernel"] in ("aten::mm", "aten::addmm"))
    check(products == 16, f"the profiled wgrad holds one product an expert: {products} ({calls})")


def main():
    mode, twinsim, src = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3]
    os.chdir(src)
    if mode == "table":
        check_trace_attribution(os.path.join(src, "scripts"))
        check_table(twinsim, src, sys.executable)
        rc = 0
    else:
        rc = check_probe(twinsim, src)
    if rc == 77:
        return 77
    print(f"{len(FAILS)} failed" if FAILS else "all passed")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
