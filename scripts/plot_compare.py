#!/usr/bin/env python3
"""Plots of `twinsim compare --plot PREFIX`: predicted against measured per op
(PREFIX_ops.png, log-log, one point per op, the diagonal is a perfect prediction) and
memory per category side by side (PREFIX_memory.png). An inference comparison plots the
ops of the prefill pass and of the mean decode pass, coloured by phase and category.

usage: plot_compare.py COMPARISON.json PREFIX   (COMPARISON.json: `twinsim compare --json`)
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402


def compared_ops(c):
    """The ops both sides have, each with the label it is coloured by."""
    if c.get("kind") == "inference":
        ops = [dict(o, category=f"{phase}: {o['category']}") for phase in ("prefill", "decode")
               for o in c[phase]["ops"]]
    else:
        ops = c["ops"]
    return [o for o in ops if not o["predicted_only"] and not o["measured_only"]]


def title(c):
    if c.get("kind") == "inference":
        ttft, tpot = c["ttft_s"], c["tpot_s"]
        return (f"per op, one call: TTFT predicted {ttft['predicted']:.4f} s, measured {ttft['measured']:.4f} s;\n"
                f"TPOT predicted {tpot['predicted']:.5f} s, measured {tpot['measured']:.5f} s")
    step = c["step_s"]
    return f"per op, one call: step predicted {step['predicted']:.4f} s, measured {step['measured']:.4f} s"


def plot_ops(c, path):
    ops = compared_ops(c)
    fig, ax = plt.subplots(figsize=(7, 6))
    if ops:
        pred = [o["per_call_s"]["predicted"] * 1e6 for o in ops]
        meas = [o["per_call_s"]["measured"] * 1e6 for o in ops]
        cats = sorted({o["category"] for o in ops})
        for cat in cats:
            xs = [m for m, o in zip(meas, ops) if o["category"] == cat]
            ys = [p for p, o in zip(pred, ops) if o["category"] == cat]
            ax.scatter(xs, ys, label=cat, s=18)
        lo = max(min(pred + meas) * 0.5, 1e-3)
        hi = max(pred + meas) * 2
        ax.plot([lo, hi], [lo, hi], "k--", lw=0.8, label="exact")
        ax.plot([lo, hi], [lo * 1.15, hi * 1.15], "k:", lw=0.5, label="±15%")
        ax.plot([lo, hi], [lo / 1.15, hi / 1.15], "k:", lw=0.5)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.legend(fontsize=7)
    if c.get("kind") == "inference":
        ax.set_title(title(c), fontsize=9)
    else:
        ax.set_title(title(c))
    ax.set_xlabel("measured (µs)")
    ax.set_ylabel("predicted (µs)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_memory(c, path):
    mem = c["memory"]["breakdown"]
    names = list(mem)
    pred = [mem[n]["predicted"] / 2**20 for n in names]
    meas = [mem[n]["measured"] / 2**20 for n in names]
    fig, ax = plt.subplots(figsize=(7, 4))
    x = range(len(names))
    ax.bar([i - 0.2 for i in x], pred, width=0.4, label="predicted")
    ax.bar([i + 0.2 for i in x], meas, width=0.4, label="measured")
    ax.set_xticks(list(x), names)
    ax.set_ylabel("MiB per GPU at the peak")
    peak = c["memory"]["peak_bytes"]
    ax.set_title(f"memory: peak predicted {peak['predicted'] / 2**20:.2f} MiB, measured {peak['measured'] / 2**20:.2f} MiB")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        c = json.load(f)
    plot_ops(c, sys.argv[2] + "_ops.png")
    plot_memory(c, sys.argv[2] + "_memory.png")


if __name__ == "__main__":
    main()
