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
A slow rank's side: when its element-wise ops (norms, residuals, RoPE, activations: a few KiB,
in L1/L2) are slower too, its core ran slower (on a VM: the host shared the physical core or
lowered its clock); when only its GEMMs are, their weights' stream from the L3 or DRAM did.

usage: decode_sync.py TRACE.json [TRACE.json ...]
"""
import json
import re
import statistics
import sys
from collections import defaultdict

COLLECTIVE = re.compile(r"(tp_exit|\.reduce\.|\.gather\.|\.sample\.|dispatch|combine)")
ELEMENT_WISE = re.compile(r"\.(\w*norm|residual|rope|act)\.fwd$")
# a rank this much slower than the other is slow; its element-wise ops this much, core-side
# (26 lopsided runs on the 2-vCPU EPYC guest: element-wise x1.43-1.68 where the vCPU's own
# register loop ran 1.7x slower, x1.01-1.16 where it did not). The cut is the C++ rule's,
# compare/rank_balance.hpp kSlowRankRatio, by which `twinsim validate` drops a disturbed run
# (tests/cli/check_decode_sync.py checks they agree); this script is the diagnostic: the skew,
# the transport and the slow side of one trace, which validate does not need.
SLOW = 1.3


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
    return colls, pass_us(ranks, lambda name: not COLLECTIVE.search(name))


def pass_us(ranks, pick):
    """{rank: a decode pass's time in the ops `pick` takes (each op's median call, summed)}."""
    return {r: sum(statistics.median([c["dur"] for c in calls[1:]]) for name, calls in ops.items()
                   if pick(name) and len(calls) > 1) for r, ops in ranks.items()}


def slow_side(evs):
    """None when the ranks' compute is within SLOW of each other; else (slow rank, "core" when
    its element-wise ops are SLOW times the other's too, else "memory"); None for not 2 ranks."""
    ranks = by_rank(evs)
    if len(ranks) != 2:
        return None
    compute = pass_us(ranks, lambda name: not COLLECTIVE.search(name))
    small = pass_us(ranks, lambda name: ELEMENT_WISE.search(name))
    slow, fast = sorted(compute, key=compute.get, reverse=True)
    if compute[slow] < SLOW * compute[fast]:
        return None
    return slow, "core" if small[slow] >= SLOW * small[fast] else "memory"


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
        side = slow_side(events(path))
        if side:
            print(f"  rank {side[0]} slow, {side[1]}-side" +
                  (" (its element-wise ops slower too)" if side[1] == "core" else " (only its GEMMs slower)"))
        for k, v in sorted(colls.items()):
            print(f"  {k:24s} {v['calls']:4d} calls  skew {v['skew_us']:7.1f} us  transport {v['transport_us']:6.1f} us")


if __name__ == "__main__":
    main()
