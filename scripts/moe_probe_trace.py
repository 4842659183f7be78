"""Which op each kernel of a torch.profiler chrome trace belongs to (scripts/gpu_moe_expert_probe.py).

The probe wraps each op in a record_function range named PREFIX + op: a `user_annotation` event
on the host. A kernel (or memcpy, memset) is the op's whose range holds the host call that
launched it: the `cuda_runtime` / `cuda_driver` event with the kernel's `correlation` id. Side
streams need nothing more: the launch is on the host thread whatever the stream. Without a GPU
(cuda=False) the outermost `cpu_op` events inside a range (aten::mm, aten::silu: the calls
made) stand in for kernels, so the same attribution runs in the CPU dry run. Standard library only.
"""

DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
LAUNCH_CATS = ("cuda_runtime", "cuda_driver")


def _ranges(events, prefix):
    return sorted((e["ts"], e["ts"] + e.get("dur", 0), e["name"][len(prefix):]) for e in events
                  if e.get("cat") == "user_annotation" and e.get("name", "").startswith(prefix))


def _op_at(ranges, ts):
    for begin, end, op in ranges:
        if begin <= ts <= end:
            return op
    return None


def _outer_cpu_ops(events):
    """cpu_op events that no other cpu_op of their thread holds: the calls the probe made
    (ranges nest on one thread)."""
    by_thread = {}
    for e in events:
        if e.get("cat") == "cpu_op" and e.get("ph") == "X":
            by_thread.setdefault((e.get("pid"), e.get("tid")), []).append(e)
    outer = []
    for ops in by_thread.values():
        ops.sort(key=lambda e: (e["ts"], -e.get("dur", 0)))
        open_until = float("-inf")
        for e in ops:
            if e["ts"] >= open_until:
                outer.append(e)
                open_until = e["ts"] + e.get("dur", 0)
    return outer


def kernels_by_op(trace, prefix, cuda):
    """{op: [(kernel name, device us), ...]} in launch order; kernels outside every range are
    left out (the profiler's own, the synchronize)."""
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    ranges = _ranges(events, prefix)
    out = {}
    if cuda:
        launch_ts = {e["args"]["correlation"]: e["ts"] for e in events
                     if e.get("cat") in LAUNCH_CATS and "correlation" in e.get("args", {})}
        work = [(launch_ts.get(e.get("args", {}).get("correlation")), e) for e in events if e.get("cat") in DEVICE_CATS]
    else:
        work = [(e["ts"], e) for e in _outer_cpu_ops(events)]
    for ts, e in sorted((w for w in work if w[0] is not None), key=lambda w: w[0]):
        op = _op_at(ranges, ts)
        if op is not None:
            out.setdefault(op, []).append((e["name"], float(e.get("dur", 0))))
    return out
