#!/usr/bin/env python3
"""scripts/decode_sync.py on hand-made 2-rank decode traces (issue 61): each collective call
split into the arrival skew and MPI's own transport, each rank's compute a pass, and which
side a slow rank is slow on.

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


def pass_events(t, gemm_us, act_us, exit_end):
    """One pass on both ranks from t: rank r's gate_up takes gemm_us[r], then its activation
    act_us[r], then it enters the tp_exit, which both leave at t + exit_end."""
    evs = []
    for r in (0, 1):
        arrive = gemm_us[r] + act_us[r]
        evs += [op("layer0.mlp.gate_up.fwd", r, t, gemm_us[r]),
                op("layer0.mlp.act.fwd", r, t + gemm_us[r], act_us[r]),
                op("layer0.mlp.tp_exit.fwd", r, t + arrive, exit_end - arrive)]
    return evs


def prompt_pass():
    """The prompt's pass, the first call of every op (the script drops it)."""
    return pass_events(0, (500, 500), (50, 50), 600)


def main():
    sys.path.insert(0, os.path.join(sys.argv[1], "scripts"))
    from decode_sync import slow_side, sync_split
    # three decode passes 100 us apart: rank 0's gate_up takes 10 us, rank 1's 30 us, each
    # activation 1 us; rank 0 enters the exit at 11 us, rank 1 at 31, both leave at 35: rank 0
    # waits 31 - 11 = 20 us for rank 1 (skew 20) and MPI takes 35 - 31 = 4 us (transport 4)
    evs = prompt_pass()
    for k in range(3):
        evs += pass_events(1000 + 100 * k, (10, 30), (1, 1), 35)
    colls, compute = sync_split(evs)
    exit_split = colls.get("mlp.tp_exit.fwd", {})
    check(list(colls) == ["mlp.tp_exit.fwd"], f"only the collective is split: {list(colls)}")
    check(exit_split.get("calls") == 3, f"the 3 decode calls, not the prompt's: {exit_split}")
    check(exit_split.get("skew_us") == 20, f"skew = 31 - 11 = 20 us: {exit_split}")
    check(exit_split.get("transport_us") == 4, f"transport = 35 - 31 = 4 us: {exit_split}")
    check(compute == {0: 11, 1: 31}, f"compute a pass: rank 0 10 + 1 us, rank 1 30 + 1 us: {compute}")
    # rank 1 is 31 / 11 = 2.8x slower (>= 1.3) with its activation as fast as rank 0's: memory
    check(slow_side(evs) == (1, "memory"), f"only the GEMM slower: memory-side: {slow_side(evs)}")
    # the activation 3 us against 1 (3x >= 1.3) as well: the core itself ran slower
    evs = prompt_pass() + pass_events(1000, (10, 30), (1, 3), 40)
    check(slow_side(evs) == (1, "core"), f"the element-wise op slower too: core-side: {slow_side(evs)}")
    # both ranks alike: no skew, no slow rank
    evs = prompt_pass() + pass_events(1000, (30, 30), (1, 1), 35)
    colls, compute = sync_split(evs)
    check(colls["mlp.tp_exit.fwd"]["skew_us"] == 0 and compute == {0: 31, 1: 31},
          f"equal ranks: skew 0, compute 31 each: {colls} {compute}")
    check(slow_side(evs) is None, "equal ranks: no slow side")
    # 1.2x apart (below 1.3): not called slow
    evs = prompt_pass() + pass_events(1000, (25, 30), (5, 6), 40)
    check(slow_side(evs) is None, f"36 / 30 = 1.2x: not slow: {slow_side(evs)}")
    one = [e for e in evs if e["tid"] == 0]
    check(sync_split(one) is None and slow_side(one) is None, "a 1-rank trace is not split")
    # one cut: the script's is the one validate applies (compare/rank_balance.hpp)
    import re
    import decode_sync
    header = open(os.path.join(sys.argv[1], "compare", "rank_balance.hpp")).read()
    cut = re.search(r"kSlowRankRatio = ([0-9.]+);", header)
    check(cut is not None and float(cut.group(1)) == decode_sync.SLOW,
          f"decode_sync.SLOW {decode_sync.SLOW} is rank_balance.hpp's kSlowRankRatio {cut and cut.group(1)}")
    print(f"{len(FAILS)} failed" if FAILS else "all passed")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
