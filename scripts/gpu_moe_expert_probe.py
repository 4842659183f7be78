#!/usr/bin/env python3
"""What an MoE expert block pays per local expert, on the GPU it runs on (issue #53; s11
report 16: the small-expert runs miss ~30-40 us per expert GEMM pass that no component prices).

One expert block (gate_up GEMMs, SwiGLU, down GEMMs), forward and backward (dgrad, then wgrad
accumulated into the experts' main_grad, as Transformer Engine's GroupedLinear does with
Megatron's fuse_wgrad_accumulation), at one EP rank's shapes:

  qwen3_30b_ep8    Qwen3-30B-A3B (hidden 2048, expert ffn 768, 128 experts, top-8), EP 8:
                   16 local experts x 2048 rows (seq 4096 x mbs 1 a rank x top-8 x EP / 128)
  qwen3_30b_ep16   the same at EP 16: 8 local experts x 4096 rows
  gpt_oss_120b_ep8 gpt-oss-120B (hidden 2880, ffn 2880, 128 experts, top-4), EP 8: 16 x 1024

each of these ways (--ways):
  loop_1s         TE GroupedLinear's non-fused path emulated: one cuBLAS GEMM per expert
                  (torch.mm on torch.split views), one stream, wgrad into fp32 main_grad
                  (addmm with out_dtype fp32 and beta 1 where torch runs it: the JSON's
                  wgrad_accumulate says which WGRAD_MODES way ran)
  loop_4s         the same on 4 CUDA streams forked from and joined to the current one, as
                  TE's general_grouped_gemm does (NVTE_NUM_COMPUTE_STREAMS, default 4)
  loop_1s_bf16g   loop_1s with bf16 main_grad (the recipes' grad_reduce_in_fp32: false)
  grouped_mm      torch._grouped_mm (CUTLASS grouped GEMM), wgrad in bf16 then added to main_grad
  dense           the same FLOPs as one dense GEMM per pass (the floor; not the same function)
  loop_1s_routed  loop_1s with the router's rows: top-k of random logits over every EP rank's
                  tokens, the busiest rank's local experts (balanced ways: equal rows)
  loop_4s_routed  loop_4s likewise

Per (case, way) it records: CUDA-event wall of each op and of the block (eager, as a training
step launches it; host issue time beside it), the block replayed from a CUDA graph (launch gaps
removed), each kernel's device time under torch.profiler attributed to its op, and each way's
error against an fp32 reference (the dense way excepted). Op names are the simulator's
(`moe.experts.<op>` in `twinsim simulate --json`): scripts/moe_probe_to_table.py prices them.
The activation is eager PyTorch (silu, mul: several kernels), not Megatron's fused kernel.

Writes OUTDIR/moe_probe_ops.csv (one row a case, way and op or block pass),
OUTDIR/moe_probe_kernels.csv (per kernel name: calls, device us) and OUTDIR/moe_probe.json
(GPU, clocks before and after, torch version, cases, each way's status and error).
--dry-run runs the same code on the CPU at tiny sizes (no streams, graphs or kernels: the
profiler's CPU ops stand in), for tests/cli/check_moe_expert_probe.py.
Not run on a GPU yet (written without a device). About 60 s on an H100 (estimate: the blocks
are 1-5 ms; 20 timed reps, a graph and a profiled rep each, 21 case-ways). Usage:
  python3 scripts/gpu_moe_expert_probe.py --out OUTDIR [--ways loop_1s,dense] [--reps 20]
"""
import argparse
import contextlib
import datetime
import json
import os
import statistics
import subprocess
import sys
import time
import traceback

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from moe_probe_trace import kernels_by_op  # noqa: E402  chrome-trace kernels -> their op

# name: (hidden, expert ffn, experts in all, top-k, EP, tokens a rank, scenario judged)
CASES = {
    "qwen3_30b_ep8": (2048, 768, 128, 8, 8, 4096, "megatron-bridge-qwen3-30b-a3b-h100-26.02.01.yaml"),
    "qwen3_30b_ep16": (2048, 768, 128, 8, 16, 4096, "megatron-bridge-qwen3-30b-a3b-ep16-h100-26.04.yaml"),
    "gpt_oss_120b_ep8": (2880, 2880, 128, 4, 8, 4096, "megatron-bridge-gpt-oss-120b-h100-26.02.yaml"),
}
DRY_RUN_SHAPE = (64, 32, 64)  # hidden, ffn, tokens a rank: tiny; the same experts, top-k and EP
WAYS = ["loop_1s", "loop_4s", "loop_1s_bf16g", "grouped_mm", "dense", "loop_1s_routed", "loop_4s_routed"]
FWD_OPS = ["gate_up.fwd", "act.fwd", "down.fwd"]
BWD_OPS = ["down.bwd_dgrad", "down.bwd_wgrad", "act.bwd_dgrad", "gate_up.bwd_dgrad", "gate_up.bwd_wgrad"]
OPS = FWD_OPS + BWD_OPS


def routed_splits(experts, top_k, ep, tokens, seed=0):
    """Rows per local expert of the busiest EP rank when every rank's tokens pick top-k of
    random logits (torch.topk, as Megatron's router on untrained logits)."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(ep * tokens, experts, generator=g)
    counts = torch.bincount(logits.topk(top_k, dim=1).indices.flatten(), minlength=experts)
    per_rank = counts.view(ep, experts // ep)
    return per_rank[per_rank.sum(1).argmax()].tolist()


def balanced_splits(experts, top_k, ep, tokens):
    local = experts // ep
    return [tokens * top_k * ep // experts] * local  # each rank's tokens x top-k, spread evenly


class Streams:
    """The compute streams of TE's general_grouped_gemm (fork from the current stream, GEMM i
    on stream i mod n, join back); on the CPU, or with one stream, plain calls."""

    def __init__(self, n, cuda):
        self.side = [torch.cuda.Stream() for _ in range(n)] if cuda and n > 1 else []

    def fork(self):
        if self.side:
            ev = torch.cuda.current_stream().record_event()
            for s in self.side:
                s.wait_event(ev)

    def on(self, i):
        return torch.cuda.stream(self.side[i % len(self.side)]) if self.side else contextlib.nullcontext()

    def join(self):
        for s in self.side:
            torch.cuda.current_stream().wait_event(s.record_event())


WGRAD_MODES = ("addmm_out_dtype", "mm_out_dtype_then_add", "mm_then_add")
WGRAD_MODE = ["addmm_out_dtype"]  # the first that runs here (wgrad_mode_for), one a process


def wgrad_into(main_grad, dy, x):
    """main_grad += dy^T x with bf16 operands: cuBLAS with beta = 1 and an fp32 output when
    main_grad is fp32 (TE's accumulate=True), else the product and an add (see WGRAD_MODES)."""
    if main_grad.dtype == dy.dtype:
        main_grad.addmm_(dy.t(), x)
    elif WGRAD_MODE[0] == "addmm_out_dtype":
        torch.addmm(main_grad, dy.t(), x, out_dtype=main_grad.dtype, out=main_grad)
    elif WGRAD_MODE[0] == "mm_out_dtype_then_add":
        main_grad.add_(torch.mm(dy.t(), x, out_dtype=main_grad.dtype))
    else:
        main_grad.add_(torch.mm(dy.t(), x))


def wgrad_mode_for(dev):
    """The first WGRAD_MODES way this torch runs on dev that gives the fp32 reference's sum
    (addmm's out_dtype overload is CUDA-only, and its self dtype rule changed across versions)."""
    a = torch.randn(64, 32, device=dev).to(torch.bfloat16)
    b = torch.randn(64, 48, device=dev).to(torch.bfloat16)
    want = 1 + a.float().t() @ b.float()
    for mode in WGRAD_MODES:
        WGRAD_MODE[0] = mode
        try:
            g = torch.ones(32, 48, device=dev)
            wgrad_into(g, a, b)
            if float((g - want).norm() / want.norm()) < 1e-2:
                return mode
        except (RuntimeError, TypeError, NotImplementedError):
            pass
    raise RuntimeError("no way to accumulate a bf16 product into fp32 runs here")


def swiglu_fwd(gu):
    a, b = gu.chunk(2, dim=-1)
    return F.silu(a) * b


def swiglu_bwd(dh, gu):
    a, b = gu.chunk(2, dim=-1)
    s = torch.sigmoid(a)
    return torch.cat([dh * b * s * (1 + a * (1 - s)), dh * a * s], dim=-1)


class Block:
    """One rank's experts: weights [E, out, in] as TE stores them, main_grads beside them."""

    def __init__(self, hidden, ffn, splits, way, dev, dtype):
        e, rows = len(splits), sum(splits)
        self.way, self.splits, self.dev = way, splits, dev
        init = lambda *s, fan: (torch.randn(*s, device=dev) / fan**0.5).to(dtype)  # noqa: E731
        n_w = 1 if way == "dense" else e
        self.w_gu, self.w_d = init(n_w, 2 * ffn, hidden, fan=hidden), init(n_w, hidden, ffn, fan=ffn)
        g_dtype = dtype if way == "loop_1s_bf16g" else torch.float32
        self.g_gu = torch.zeros(self.w_gu.shape, device=dev, dtype=g_dtype)
        self.g_d = torch.zeros(self.w_d.shape, device=dev, dtype=g_dtype)
        self.x, self.dy = init(rows, hidden, fan=1), init(rows, hidden, fan=1)
        self.offs = torch.tensor(splits, device=dev).cumsum(0).to(torch.int32)
        self.streams = Streams(4 if way.startswith("loop_4s") else 1, dev == "cuda")

    def gemm(self, x, w, transpose):
        """x [rows, *] times each expert's w (w^T in the forward) on its split of the rows."""
        if self.way == "dense":
            return x @ (w[0].t() if transpose else w[0])
        if self.way == "grouped_mm":
            return torch._grouped_mm(x, w.transpose(-2, -1) if transpose else w, offs=self.offs)
        n = w.shape[1] if transpose else w.shape[2]
        out = torch.empty(x.shape[0], n, device=x.device, dtype=x.dtype)
        xs, outs = torch.split(x, self.splits), torch.split(out, self.splits)
        self.streams.fork()
        for i, (xi, oi) in enumerate(zip(xs, outs)):
            with self.streams.on(i):
                torch.mm(xi, w[i].t() if transpose else w[i], out=oi)
        self.streams.join()
        return out

    def wgrad(self, g, dy, x):
        if self.way == "dense":
            return wgrad_into(g[0], dy, x)
        if self.way == "grouped_mm":  # bf16 per-expert products, one add into main_grad
            return g.add_(torch._grouped_mm(dy.t(), x, offs=self.offs))
        dys, xs = torch.split(dy, self.splits), torch.split(x, self.splits)
        self.streams.fork()
        for i, (dyi, xi) in enumerate(zip(dys, xs)):
            with self.streams.on(i):
                wgrad_into(g[i], dyi, xi)
        self.streams.join()

    def run(self, mark):
        """The block forward then backward; mark(op) after each op (the op boundary events)."""
        gu = self.gemm(self.x, self.w_gu, True)
        mark("gate_up.fwd")
        h = swiglu_fwd(gu)
        mark("act.fwd")
        y = self.gemm(h, self.w_d, True)
        mark("down.fwd")
        dh = self.gemm(self.dy, self.w_d, False)
        mark("down.bwd_dgrad")
        self.wgrad(self.g_d, self.dy, h)
        mark("down.bwd_wgrad")
        dgu = swiglu_bwd(dh, gu)
        mark("act.bwd_dgrad")
        dx = self.gemm(dgu, self.w_gu, False)
        mark("gate_up.bwd_dgrad")
        self.wgrad(self.g_gu, dgu, self.x)
        mark("gate_up.bwd_wgrad")
        return y, dx


def reference_error(block):
    """Largest ||out - ref|| / ||ref|| over y, dx and both weight gradients, the reference the
    same block in fp32 on the same device (the dense way computes another function: None)."""
    if block.way == "dense":
        return None
    block.g_gu.zero_(), block.g_d.zero_()
    y, dx = block.run(lambda op: None)
    f = lambda t: t.float()  # noqa: E731
    xs, dys = torch.split(f(block.x), block.splits), torch.split(f(block.dy), block.splits)
    ref = {k: [] for k in ("y", "dx", "g_gu", "g_d")}
    for i, (xi, dyi) in enumerate(zip(xs, dys)):
        gu = xi @ f(block.w_gu[i]).t()
        h = swiglu_fwd(gu)
        dgu = swiglu_bwd(dyi @ f(block.w_d[i]), gu)
        ref["y"].append(h @ f(block.w_d[i]).t())
        ref["dx"].append(dgu @ f(block.w_gu[i]))
        ref["g_d"].append(dyi.t() @ h)
        ref["g_gu"].append(dgu.t() @ xi)
    got = {"y": y, "dx": dx, "g_gu": block.g_gu, "g_d": block.g_d}
    err = 0.0
    for k, parts in ref.items():
        r = torch.cat(parts) if k in ("y", "dx") else torch.stack(parts)
        err = max(err, float((f(got[k]) - r).norm() / r.norm()))
    return err


def timing_event():
    return torch.cuda.Event(enable_timing=True)


def timed_run(block, cuda, reps):
    """Median CUDA-event wall of each op and of the block over reps (eager), and the median host
    time to issue the block. On the CPU, host clocks at the op boundaries."""
    per_op, blocks, host = {op: [] for op in OPS}, [], []
    for _ in range(reps):
        stamps = []
        mark = (lambda op: stamps.append(torch.cuda.current_stream().record_event(timing_event()))) if cuda \
            else (lambda op: stamps.append(time.perf_counter()))
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        mark("start")
        block.run(mark)
        host.append(time.perf_counter() - t0)
        if cuda:
            stamps[-1].synchronize()
            gaps = [a.elapsed_time(b) / 1e3 for a, b in zip(stamps, stamps[1:])]
        else:
            gaps = [b - a for a, b in zip(stamps, stamps[1:])]
        for op, s in zip(OPS, gaps):
            per_op[op].append(s)
        blocks.append(sum(gaps))
    med = {op: statistics.median(v) for op, v in per_op.items()}
    med["block.fwd"] = statistics.median([sum(v) for v in zip(*(per_op[o] for o in FWD_OPS))])
    med["block.bwd"] = statistics.median([sum(v) for v in zip(*(per_op[o] for o in BWD_OPS))])
    med["block.fwd_bwd"] = statistics.median(blocks)
    return med, statistics.median(host)


def graph_seconds(block, reps):
    """Median wall of the block replayed from one CUDA graph (no host gaps), or None."""
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                block.run(lambda op: None)
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            block.run(lambda op: None)
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times = []
        for _ in range(reps):
            start.record()
            g.replay()
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop) / 1e3)
        del g
        return statistics.median(times)
    except RuntimeError as e:
        print("graph capture failed:", str(e).splitlines()[0], flush=True)
        torch.cuda.synchronize()
        return None


def profiled(block, cuda, tmpdir):
    """{op: [(kernel, device us), ...]} of one block run under torch.profiler (CPU ops when no
    GPU), each op's work in its own record_function range."""
    from torch.profiler import ProfilerActivity, profile, record_function
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    ranges = []

    def mark(op):  # closes the range of op and opens the next one
        ranges.pop().__exit__(None, None, None)
        if op != OPS[-1]:
            ranges.append(record_function("moe_probe/" + OPS[OPS.index(op) + 1]))
            ranges[-1].__enter__()

    with profile(activities=acts) as prof:
        ranges.append(record_function("moe_probe/" + OPS[0]))
        ranges[-1].__enter__()
        block.run(mark)
        if cuda:
            torch.cuda.synchronize()
    path = os.path.join(tmpdir, "moe_probe_trace.json")
    prof.export_chrome_trace(path)
    with open(path) as f:
        trace = json.load(f)
    os.remove(path)
    return kernels_by_op(trace, "moe_probe/", cuda)


def gemm_shape(op, hidden, ffn):
    """(n, k) of the layer's weight as the sim's op names it: out, in features."""
    return (2 * ffn, hidden) if op.startswith("gate_up") else (hidden, ffn)


def op_rows(case, way, shape, splits, med, graph_s, host_s, kernels, cuda):
    hidden, ffn = shape
    e, rows = len(splits), sum(splits)
    base = dict(case=case, way=way, device="cuda" if cuda else "cpu", experts=e, rows=rows, rows_min=min(splits),
                rows_max=max(splits), hidden=hidden, ffn=ffn)
    for op in OPS + ["block.fwd", "block.bwd", "block.fwd_bwd"]:
        durations = [us for o in _pass_ops(op) for _, us in kernels.get(o, [])]
        gemm = not op.startswith(("act", "block"))
        n, k = gemm_shape(op, hidden, ffn) if gemm else (0, 0)
        flops = 2 * rows * n * k if gemm else 0  # each pass of a GEMM: 2 x rows x out x in
        wall = med[op]
        yield dict(base, op=op, gemm_calls=(1 if way == "dense" else e) if gemm else "", n=n or "", k=k or "",
                   flops=flops, wall_us=round(wall * 1e6, 3), tflops=round(flops / wall / 1e12, 2) if flops else "",
                   kernel_us=round(sum(durations), 3), kernels=len(durations),
                   graph_us=round(graph_s * 1e6, 3) if graph_s and op == "block.fwd_bwd" else "",
                   host_us=round(host_s * 1e6, 3) if op == "block.fwd_bwd" else "")


def _pass_ops(op):
    """The ops a row sums: a block pass's ops, or the op itself."""
    return {"block.fwd": FWD_OPS, "block.bwd": BWD_OPS, "block.fwd_bwd": OPS}.get(op, [op])


def kernel_rows(case, way, kernels):
    for op, ks in kernels.items():
        names = {}
        for name, us in ks:
            names.setdefault(name, []).append(us)
        for name, d in sorted(names.items(), key=lambda kv: -sum(kv[1])):
            yield dict(case=case, way=way, op=op, kernel=name[:200], calls=len(d), total_us=round(sum(d), 3),
                       mean_us=round(sum(d) / len(d), 3), min_us=round(min(d), 3), max_us=round(max(d), 3))


def smi():
    q = "name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,power.draw,power.limit,temperature.gpu"
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=" + q, "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20).stdout.strip()
        return dict(zip(q.split(","), [v.strip() for v in out.splitlines()[0].split(",")])) if out else None
    except (OSError, subprocess.SubprocessError):
        return None


def meta(cuda):
    m = dict(date=datetime.datetime.now(datetime.timezone.utc).isoformat(), torch=torch.__version__,
             cuda=torch.version.cuda, device="cpu", sms=None)
    if cuda:
        p = torch.cuda.get_device_properties(0)
        m.update(device=p.name, sms=p.multi_processor_count, memory_bytes=p.total_memory)
    return m


def run_case(case, spec, args, cuda, out):
    hidden, ffn, experts, top_k, ep, tokens, scenario = spec
    if args.dry_run:
        hidden, ffn, tokens = DRY_RUN_SHAPE
    dev, dtype = ("cuda", torch.bfloat16) if cuda else ("cpu", torch.bfloat16)
    info = dict(hidden=hidden, ffn=ffn, experts=experts, top_k=top_k, ep=ep, tokens=tokens, scenario=scenario,
                balanced=balanced_splits(experts, top_k, ep, tokens),
                routed=routed_splits(experts, top_k, ep, tokens), ways={})
    for way in args.ways:
        splits = info["routed" if way.endswith("_routed") else "balanced"]
        try:
            block = Block(hidden, ffn, splits, way, dev, dtype)
            err = reference_error(block)
            for _ in range(3):  # warm-up: cuBLAS handles, heuristics, the allocator
                block.run(lambda op: None)
            med, host_s = timed_run(block, cuda, args.reps)
            graph_s = graph_seconds(block, args.reps) if cuda else None
            kernels = profiled(block, cuda, args.out)
            out["ops"].extend(op_rows(case, way, (hidden, ffn), splits, med, graph_s, host_s, kernels, cuda))
            out["kernels"].extend(kernel_rows(case, way, kernels))
            info["ways"][way] = dict(status="ok", rel_error=err)
            graph = f"{graph_s * 1e6:10.1f}" if graph_s else "       n/a"
            print(f"{case:17s} {way:15s} block {med['block.fwd_bwd'] * 1e6:10.1f} us  graph {graph} us  "
                  f"host {host_s * 1e6:9.1f} us  err {err}", flush=True)
            del block
        except Exception as e:  # keep the other ways' rows
            traceback.print_exc()
            info["ways"][way] = dict(status="failed", error=f"{type(e).__name__}: {str(e).splitlines()[0][:300]}")
        if cuda:
            torch.cuda.empty_cache()
    return info


def write_csv(path, rows):
    import csv
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()) if rows else ["case"])
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {path}: {len(rows)} rows", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="folder for the CSVs and the JSON")
    ap.add_argument("--ways", default=",".join(WAYS), help="comma-separated, of " + ",".join(WAYS))
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated, of " + ",".join(CASES))
    ap.add_argument("--reps", type=int, default=20, help="timed repetitions a case and way (medians)")
    ap.add_argument("--dry-run", action="store_true", help="on the CPU at tiny sizes (a test of the script)")
    args = ap.parse_args(argv)
    args.ways = [w for w in args.ways.split(",") if w]
    bad = [w for w in args.ways if w not in WAYS] + [c for c in args.cases.split(",") if c not in CASES]
    if bad:
        ap.error(f"unknown way or case: {bad}")
    cuda = torch.cuda.is_available() and not args.dry_run
    if not cuda and not args.dry_run:
        ap.error("no CUDA device: use --dry-run for the CPU check")
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = False
    os.makedirs(args.out, exist_ok=True)
    out = dict(ops=[], kernels=[])
    report = dict(meta=meta(cuda), smi_before=smi(), args=dict(vars(args)), cases={},
                  wgrad_accumulate=wgrad_mode_for("cuda" if cuda else "cpu"))
    t0 = time.time()
    for case in args.cases.split(","):
        report["cases"][case] = run_case(case, CASES[case], args, cuda, out)
    report.update(smi_after=smi(), seconds=round(time.time() - t0, 1))
    write_csv(os.path.join(args.out, "moe_probe_ops.csv"), out["ops"])
    write_csv(os.path.join(args.out, "moe_probe_kernels.csv"), out["kernels"])
    with open(os.path.join(args.out, "moe_probe.json"), "w") as f:
        json.dump(report, f, indent=1)
    failed = [(c, w) for c, i in report["cases"].items() for w, s in i["ways"].items() if s["status"] != "ok"]
    print(f"moe probe: {len(out['ops'])} op rows in {report['seconds']} s; failed: {failed or 'none'}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
