#!/usr/bin/env python3
"""Where a 2-rank decode's time goes at its collectives (issue 61): per collective op of a
`twinsim run` trace.json (validate keeps one per case and run: validate-out/CASE/run-K/),
each call's two records (the ranks' clocks are one machine's, so their ends agree) split as

  skew      = |start on rank 0 - start on rank 1|: the early rank waiting for the late one,
              that is, the late rank's extra compute since the last collective
  transport = the call's end - the later start: what MPI itself took once both had arrived

and per rank, the decode pass's compute: the median call of every op that is not a
collective, summed over a pass. A slow rank shows as a compute ratio far from 1 and a skew
near the gap; both ranks slow as equal compute and small skew; MPI as a large transport.

usage: decode_sync.py TRACE.json [TRACE.json ...]
"""
import json
import re
import statistics
import sys
from collections import defaultdict

COLLECTIVE = re.compile(r"(tp_exit|\.reduce\.|\.gather\.|\.sample\.|dispatch|combine)")


def events(path):
    data = json.load(open(path))
    return [e for e in (data["traceEvents"] if isinstance(data, dict) else data) if e.get("ph") == "X"]


def kind(name):
    return re.sub(r"^layer\d+\.", "", name)


def by_rank(evs):
    out = defaultdict(lambda: defaultdict(list))
    for e in sorted(evs, key=lambda e: e["ts"]):
        out[e["tid"]][e["name"]].append(e)
    return out


def sync_split(evs):
    """{kind: {"calls", "skew_us", "transport_us"}} (medians over decode calls) for the
    collectives, and {rank: compute us a pass}; None when the trace has not two ranks. Every op's
    first call is the prompt's pass (the prefill calls each op once, as decode_ops.py reads it)."""
    ranks = by_rank(evs)
    if len(ranks) != 2:
        return None
    r0, r1 = sorted(ranks)
    split = defaultdict(lambda: {"skew": [], "transport": []})
    for name, calls0 in ranks[r0].items():
        calls1 = ranks[r1].get(name, [])
        if not COLLECTIVE.search(name) or len(calls1) != len(calls0):
            continue
        for a, b in zip(calls0[1:], calls1[1:]):  # the first call is the prompt's pass
            last_start = max(a["ts"], b["ts"])
            split[kind(name)]["skew"].append(abs(a["ts"] - b["ts"]))
            split[kind(name)]["transport"].append(max(a["ts"] + a["dur"], b["ts"] + b["dur"]) - last_start)
    colls = {k: {"calls": len(v["skew"]), "skew_us": statistics.median(v["skew"]),
                 "transport_us": statistics.median(v["transport"])} for k, v in split.items() if v["skew"]}
    compute = {}
    for r in (r0, r1):
        per_kind = defaultdict(float)
        for name, calls in ranks[r].items():
            decode = [c["dur"] for c in calls[1:]]
            if not COLLECTIVE.search(name) and decode:
                per_kind[kind(name)] += statistics.median(decode)
        compute[r] = sum(per_kind.values())
    return colls, compute


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for path in sys.argv[1:]:
        got = sync_split(events(path))
        if got is None:
            print(f"{path}: not a 2-rank trace")
            continue
        colls, compute = got
        r0, r1 = sorted(compute)
        print(f"{path}: compute a pass rank {r0} {compute[r0]:.0f} us, rank {r1} {compute[r1]:.0f} us "
              f"(ratio {max(compute.values()) / min(compute.values()):.2f})")
        for k, v in sorted(colls.items()):
            print(f"  {k:24s} {v['calls']:4d} calls  skew {v['skew_us']:7.1f} us  transport {v['transport_us']:6.1f} us")


if __name__ == "__main__":
    main()
