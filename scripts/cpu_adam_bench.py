#!/usr/bin/env python3
"""DeepSpeed's CPU Adam (DeepSpeedCPUAdam, the optimizer ZeRO-Offload runs on the host),
timed on this machine: parameters updated per second by thread count, one CSV row each.

Needs torch and deepspeed (not project dependencies; a measurement tool):
    python3 -m venv /tmp/ds && /tmp/ds/bin/pip install torch numpy ninja deepspeed
    /tmp/ds/bin/python scripts/cpu_adam_bench.py --params 268435456 --threads 1 2

The update is DeepSpeed's: fp32 parameters, gradients and both moments on the host, one
step() over one tensor (ZeRO-Offload's sub-group), AdamW as DeepSpeed's default. The first
steps (the JIT build, first touch) are not timed."""
import argparse
import os
import platform
import time


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", type=int, default=1 << 28, help="parameters in the updated tensor")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, os.cpu_count() or 1])
    ap.add_argument("--steps", type=int, default=10, help="timed steps per thread count")
    args = ap.parse_args()

    import torch
    import deepspeed
    from deepspeed.ops.adam import DeepSpeedCPUAdam

    param = torch.nn.Parameter(torch.ones(args.params, dtype=torch.float32))
    param.grad = torch.full_like(param, 0.5)
    opt = DeepSpeedCPUAdam([param], lr=1e-4)
    for _ in range(2):  # the op's build and the moments' first touch
        opt.step()
    print("cpu,deepspeed,torch,params,threads,step_s,params_per_s,params_per_s_per_thread")
    for threads in args.threads:
        torch.set_num_threads(threads)
        opt.step()
        times = []
        for _ in range(args.steps):
            start = time.perf_counter()
            opt.step()
            times.append(time.perf_counter() - start)
        median = sorted(times)[len(times) // 2]
        rate = args.params / median
        print(f"\"{cpu_model()}\",{deepspeed.__version__},{torch.__version__},{args.params},{threads},"
              f"{median:.4f},{rate:.4g},{rate / threads:.4g}", flush=True)


if __name__ == "__main__":
    main()
