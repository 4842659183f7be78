#!/usr/bin/env python3
"""A multi-rank run's collectives split into what the call itself took and what the ranks
waited for each other (issue 61): from `twinsim run`'s trace.json (one track per rank on the
shared clock, exec/runtime/profiler.hpp), per collective op and call, over every call after
the first (the prefill, or a warm-up):

  skew   = the last rank's arrival - the first's (the earlier ranks wait this long)
  call   = the last rank's leaving - the last arrival: the call's own time, as
           `twinsim calibrate` times it (calibrate/comm_bench.cpp) and the hardware file's
           measured_busbw prices it
  added  = the last leaving - the ranks' mean arrival: what the op adds to a step whose
           compute is priced at the ranks' mean; the simulator charges call + straggler wait

usage: collective_waits.py TRACE.json [REGEX]   (default REGEX: tp_exit|reduce|gather|sample|all_to_all)
"""
import json
import re
import statistics
import sys
from collections import defaultdict


def tracks(path):
    """name -> rank -> [(start_us, end_us), ...] in run order."""
    data = json.load(open(path))
    events = data["traceEvents"] if isinstance(data, dict) else data
    out = defaultdict(lambda: defaultdict(list))
    for e in events:
        if e.get("ph") == "X":
            out[e["name"]][e["tid"]].append((e["ts"], e["ts"] + e["dur"]))
    return out


def split_calls(by_rank):
    """Medians of skew, call and added over the calls after the first."""
    calls = list(zip(*by_rank.values()))[1:]
    skew, call, added = [], [], []
    for ranks in calls:
        enters = [s for s, _ in ranks]
        last_leave = max(e for _, e in ranks)
        skew.append(max(enters) - min(enters))
        call.append(last_leave - max(enters))
        added.append(last_leave - statistics.mean(enters))
    return statistics.median(skew), statistics.median(call), statistics.median(added)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    pattern = re.compile(sys.argv[2] if len(sys.argv) > 2 else r"tp_exit|reduce|gather|sample|all_to_all")
    print(f"{'op':32s} {'skew us':>8s} {'call us':>8s} {'added us':>9s}   (medians over calls)")
    for name, by_rank in tracks(sys.argv[1]).items():
        if len(by_rank) > 1 and pattern.search(name) and min(len(v) for v in by_rank.values()) > 1:
            skew, call, added = split_calls(by_rank)
            print(f"{name:32s} {skew:8.1f} {call:8.1f} {added:9.1f}")


if __name__ == "__main__":
    main()
