#!/usr/bin/env python3
"""A serving case's decode pass, op by op: what the executor measured against what the
simulator priced (issue 61). From `twinsim run`'s trace.json (validate keeps one per case
and run: validate-out/CASE/run-K/) and `simulate --json` of the same scenario.yaml:

  measured  = per op name (layers summed), the median call of each rank, mean of the ranks;
              every call after the first (a decode pass calls each op once a layer, the
              prefill once: the median is a decode's)
  predicted = the simulator's decode op: count x time_s
  gaps      = per rank, a pass's wall time (from one embedding lookup to the next) less its
              traced ops: what the ops' own records leave out (host time between ops)

usage: decode_ops.py TRACE.json SIMULATED.json
       (SIMULATED.json: `twinsim simulate validate-out/CASE/scenario.yaml --json`, which
       validate keeps as validate-out/CASE/run-K/simulated.json)
"""
import json
import re
import statistics
import sys
from collections import defaultdict


def events(path):
    data = json.load(open(path))
    return [e for e in (data["traceEvents"] if isinstance(data, dict) else data) if e.get("ph") == "X"]


def measured_us(evs):
    by = defaultdict(lambda: defaultdict(list))
    for e in evs:
        by[e["name"]][e["tid"]].append(e["dur"])
    out = defaultdict(float)
    for name, ranks in by.items():
        mean = statistics.mean(statistics.median(d[1:] or d) for d in ranks.values())
        out[re.sub(r"^layer\d+\.", "", name)] += mean
    return out


def gaps(evs):
    per = defaultdict(list)
    for e in evs:
        per[e["tid"]].append(e)
    for tid, es in sorted(per.items()):
        es.sort(key=lambda e: e["ts"])
        starts = [i for i, e in enumerate(es) if e["name"] == "embedding.lookup.fwd"]
        walls, sums = [], []
        for a, b in zip(starts[1:], starts[2:]):
            walls.append(es[b]["ts"] - es[a]["ts"])
            sums.append(sum(e["dur"] for e in es[a:b]))
        if not walls:
            continue
        ops = starts[2] - starts[1]
        gap = statistics.median(w - s for w, s in zip(walls, sums))
        print(f"rank {tid}: pass {statistics.median(walls):.1f} us, ops {statistics.median(sums):.1f} us, "
              f"gaps {gap:.1f} us over {ops} ops ({gap / ops:.2f} us an op)")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    evs = events(sys.argv[1])
    sim = json.load(open(sys.argv[2]))
    pred = {o["name"]: o["count"] * o["time_s"] * 1e6 for o in sim["inference"]["decode"]["ops"]}
    meas = measured_us(evs)
    tm = tp = 0.0
    for k in sorted(set(meas) | set(pred)):
        a, b = meas.get(k, 0.0), pred.get(k, 0.0)
        tm, tp = tm + a, tp + b
        err = f"{(b / a - 1) * 100:+.0f}%" if a else ""
        print(f"{k:26s} measured {a:8.1f} us  predicted {b:8.1f} us  {err}")
    print(f"ops: measured {tm:.1f} us, predicted {tp:.1f} us; simulated TPOT {sim['inference']['tpot_s'] * 1e6:.1f} us")
    gaps(evs)


if __name__ == "__main__":
    main()
