#!/usr/bin/env python3
"""scripts/decode_sync.py on hand-made 2-rank decode traces (issue 61): each collective call
split into the arrival skew and MPI's own transport, and each rank's compute a pass.

  check_decode_sync.py SOURCE_DIR
"""
import os
import sys

FAILS = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILS.append(what)


def op(name, tid, ts, dur):
    return dict(ph="X", name=name, pid=0, tid=tid, ts=ts, dur=dur)


def pass_events(t, gemm_us, exit_start, exit_end):
    """One pass on both ranks from t: rank r's gate_up takes gemm_us[r]; its tp_exit starts
    at t + exit_start[r] and ends at t + exit_end[r]."""
    return [e for r in (0, 1) for e in (op("layer0.mlp.gate_up.fwd", r, t, gemm_us[r]),
                                        op("layer0.mlp.tp_exit.fwd", r, t + exit_start[r],
                                           exit_end[r] - exit_start[r]))]


def main():
    sys.path.insert(0, os.path.join(sys.argv[1], "scripts"))
    from decode_sync import sync_split
    # the prompt's pass: 500 us of GEMM, a 50 us exit, on both ranks (dropped: first calls)
    evs = pass_events(0, (500, 500), (500, 500), (550, 550))
    # three decode passes 100 us apart: rank 0's gate_up takes 10 us, rank 1's 30 us; each
    # enters the exit when its GEMM ends and both leave at 34 us, so rank 0 waits 30 - 10 = 20
    # us for rank 1 (skew 20) and MPI takes 34 - 30 = 4 us once both are in (transport 4)
    for k in range(3):
        evs += pass_events(1000 + 100 * k, (10, 30), (10, 30), (34, 34))
    colls, compute = sync_split(evs)
    exit_split = colls.get("mlp.tp_exit.fwd", {})
    check(list(colls) == ["mlp.tp_exit.fwd"], f"only the collective is split (gate_up is compute): {list(colls)}")
    check(exit_split.get("calls") == 3, f"the 3 decode calls, not the prompt's: {exit_split}")
    check(exit_split.get("skew_us") == 20, f"skew = 30 - 10 = 20 us: {exit_split}")
    check(exit_split.get("transport_us") == 4, f"transport = 34 - 30 = 4 us: {exit_split}")
    check(compute == {0: 10, 1: 30}, f"compute a pass: rank 0 10 us, rank 1 30 us: {compute}")
    # both ranks equally slow: no skew, the same transport
    evs = pass_events(0, (500, 500), (500, 500), (550, 550))
    evs += pass_events(1000, (30, 30), (30, 30), (34, 34))
    colls, compute = sync_split(evs)
    check(colls["mlp.tp_exit.fwd"]["skew_us"] == 0 and compute == {0: 30, 1: 30},
          f"equal ranks: skew 0, compute 30 each: {colls} {compute}")
    check(sync_split([e for e in evs if e["tid"] == 0]) is None, "a 1-rank trace is not split")
    print(f"{len(FAILS)} failed" if FAILS else "all passed")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
