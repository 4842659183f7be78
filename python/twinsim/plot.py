"""Matplotlib figures for twinsim results. Each function returns the Figure.

    >>> import twinsim, twinsim.plot
    >>> fig = twinsim.plot.memory_breakdown([twinsim.memory("scenarios/default.yaml")], labels=["GPT-3 175B"])
    >>> fig.savefig("memory.png")
"""
from __future__ import annotations

import json
import os

from twinsim._core import memory_categories

GIB = 1024**3
MEMORY_CATEGORIES = tuple(memory_categories())  # the report's keys, from the C++ contract


def _plt():
    import matplotlib

    if not os.environ.get("DISPLAY") and matplotlib.get_backend().lower() not in ("agg", "module://matplotlib_inline.backend_inline"):
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def timeline(trace, max_tracks: int = 16, title: str | None = None):
    """A Gantt chart of a Chrome trace (a path, the parsed JSON, or a Report with a
    trace): one row per (pid, tid), one bar per complete ("X") event, coloured by
    category."""
    plt = _plt()
    if hasattr(trace, "trace_path"):
        trace = trace.trace_path
    if isinstance(trace, (str, os.PathLike)):
        with open(trace) as f:
            trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    names = {}
    for e in events:  # thread_name metadata, when present
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[(e.get("pid"), e.get("tid"))] = e.get("args", {}).get("name")
    spans = [e for e in events if e.get("ph") == "X"]
    tracks = sorted({(e.get("pid"), e.get("tid")) for e in spans}, key=lambda t: (str(t[0]), str(t[1])))
    tracks = tracks[:max_tracks]
    row = {t: i for i, t in enumerate(tracks)}
    cats = sorted({e.get("cat", "") for e in spans})
    cmap = plt.get_cmap("tab10")
    colour = {c: cmap(i % 10) for i, c in enumerate(cats)}
    fig, ax = plt.subplots(figsize=(12, 0.45 * len(tracks) + 1.5))
    for c in cats:
        for t in tracks:
            bars = [(e["ts"] / 1e3, e.get("dur", 0) / 1e3) for e in spans
                    if e.get("cat", "") == c and (e.get("pid"), e.get("tid")) == t]
            if bars:
                ax.broken_barh(bars, (row[t] - 0.4, 0.8), color=colour[c], label=c)
    handles, labels = ax.get_legend_handles_labels()
    uniq = dict(zip(labels, handles))
    if uniq:
        ax.legend(uniq.values(), uniq.keys(), loc="upper right", fontsize="small")
    ax.set_yticks(range(len(tracks)))
    ax.set_yticklabels([names.get(t) or f"{t[0]}/{t[1]}" for t in tracks])
    ax.invert_yaxis()
    ax.set_xlabel("time (ms)")
    ax.set_title(title or "simulated timeline")
    fig.tight_layout()
    return fig


def memory_breakdown(reports, labels=None, capacity_bytes: int | None = None, title: str | None = None):
    """Stacked bars of per-GPU memory by category, one bar per report (MemoryReport,
    Report, or their dicts), with the GPU's capacity as a line."""
    plt = _plt()
    if not isinstance(reports, (list, tuple)):
        reports = [reports]
    mems = []
    for r in reports:
        d = r.to_dict() if hasattr(r, "to_dict") else r
        mems.append(d["memory"])
    labels = labels or [f"#{i}" for i in range(len(mems))]
    fig, ax = plt.subplots(figsize=(max(4, 1.2 * len(mems) + 2), 4))
    bottom = [0.0] * len(mems)
    for cat in MEMORY_CATEGORIES:
        vals = [m["breakdown"].get(cat, 0) / GIB for m in mems]
        if any(vals):
            ax.bar(labels, vals, bottom=bottom, label=cat)
            bottom = [b + v for b, v in zip(bottom, vals)]
    cap = capacity_bytes or mems[0].get("capacity_bytes")
    if cap:
        ax.axhline(cap / GIB, color="black", linestyle="--", linewidth=1, label="capacity")
    ax.set_ylabel("GiB per GPU")
    ax.set_title(title or "memory per GPU (stage with the highest peak)")
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


def pareto(result, title: str | None = None):
    """Step time against GPUs for the Pareto front (colour: peak memory), with the
    top plans marked."""
    plt = _plt()
    d = result.to_dict() if hasattr(result, "to_dict") else result
    fig, ax = plt.subplots(figsize=(7, 4.5))
    front = d["pareto"]
    if front:
        sc = ax.scatter([p["plan"]["gpus"] for p in front], [p["analytic_step_s"] for p in front],
                        c=[p["peak_bytes"] / GIB for p in front], cmap="viridis", label="Pareto front (estimate)")
        fig.colorbar(sc, ax=ax, label="peak GiB per GPU")
    top = d["top"]
    if top:
        ax.scatter([e["plan"]["gpus"] for e in top],
                   [e.get("simulated_step_s", e["analytic_step_s"]) for e in top],
                   marker="x", color="red", label="top plans (simulated)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("GPUs")
    ax.set_ylabel("step time (s)")
    ax.set_title(title or f"plan search ({d.get('candidates', 0):,} plans)")
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


def predicted_vs_measured(predicted, measured, labels=None, title: str | None = None):
    """Predicted against measured values (e.g. per-op times) on log axes, with the
    y = x line and +-20% bands."""
    plt = _plt()
    predicted, measured = list(predicted), list(measured)
    if len(predicted) != len(measured):
        raise ValueError("predicted and measured need the same length")
    fig, ax = plt.subplots(figsize=(5, 5))
    ax.scatter(measured, predicted)
    if labels:
        for x, y, t in zip(measured, predicted, labels):
            ax.annotate(str(t), (x, y), fontsize="x-small")
    vals = [v for v in predicted + measured if v > 0]
    if vals:
        lo, hi = min(vals) * 0.8, max(vals) * 1.25
        ax.plot([lo, hi], [lo, hi], color="black", linewidth=1)
        ax.plot([lo, hi], [lo * 1.2, hi * 1.2], color="grey", linestyle=":", linewidth=1)
        ax.plot([lo, hi], [lo / 1.2, hi / 1.2], color="grey", linestyle=":", linewidth=1)
        ax.set_xscale("log")
        ax.set_yscale("log")
    ax.set_xlabel("measured")
    ax.set_ylabel("predicted")
    ax.set_title(title or "predicted vs measured")
    fig.tight_layout()
    return fig
