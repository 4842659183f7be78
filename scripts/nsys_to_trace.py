#!/usr/bin/env python3
"""An Nsight Systems SQLite export as the Chrome trace `twinsim compare` reads (issue 55).

    nsys export --type sqlite -o run.sqlite run.nsys-rep
    scripts/nsys_to_trace.py run.sqlite run.json [--step-range NAME]
    twinsim compare sim.json run.json

Reads the tables of NVIDIA's SQLite export schema (Nsight Systems documentation, "SQLite
Export Schema Reference"): CUPTI_ACTIVITY_KIND_KERNEL (start, end in ns, deviceId, streamId,
correlationId; the name a StringIds id in demangledName, else shortName), CUPTI_ACTIVITY_KIND_MEMCPY
and _MEMSET when present, and NVTX_EVENTS ranges (text, or textId into StringIds). Writes
kernels as cat "kernel" (memcpy/memset as "gpu_memcpy"/"gpu_memset") with args device, stream
and correlation, times in microseconds; each NVTX range whose text is ProfilerStep#N (PyTorch's
profiler under emit_nvtx) or, with --step-range NAME, whose text is NAME becomes a
"ProfilerStep#i" annotation, on the host (cat user_annotation) as PyTorch writes it. Python's
standard library only; the file is written whole (a temporary file, then renamed).
"""
import argparse
import json
import os
import sqlite3
import sys
import tempfile


def tables(db):
    return {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def columns(db, table):
    return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


def strings(db, names):
    return dict(db.execute("SELECT id, value FROM StringIds")) if "StringIds" in names else {}


def kernels(db, text):
    cols = columns(db, "CUPTI_ACTIVITY_KIND_KERNEL")
    name_col = "demangledName" if "demangledName" in cols else "shortName"
    rows = db.execute(f"SELECT start, end, deviceId, streamId, correlationId, {name_col} "
                      "FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start")
    return [{"ph": "X", "cat": "kernel", "name": text.get(name, str(name)), "pid": device, "tid": stream,
             "ts": start / 1e3, "dur": (end - start) / 1e3,
             "args": {"device": device, "stream": stream, "correlation": correlation}}
            for start, end, device, stream, correlation, name in rows]


def copies(db, names):
    out = []
    for table, cat, name in (("CUPTI_ACTIVITY_KIND_MEMCPY", "gpu_memcpy", "Memcpy"),
                             ("CUPTI_ACTIVITY_KIND_MEMSET", "gpu_memset", "Memset")):
        if table not in names:
            continue
        for start, end, device, stream in db.execute(f"SELECT start, end, deviceId, streamId FROM {table}"):
            out.append({"ph": "X", "cat": cat, "name": name, "pid": device, "tid": stream, "ts": start / 1e3,
                        "dur": (end - start) / 1e3, "args": {"device": device, "stream": stream}})
    return out


def steps(db, names, text, step_range):
    if "NVTX_EVENTS" not in names:
        return []
    cols = columns(db, "NVTX_EVENTS")
    text_id = "textId" if "textId" in cols else "NULL"
    ranges = []
    for start, end, label, label_id in db.execute(f"SELECT start, end, text, {text_id} FROM NVTX_EVENTS "
                                                  "WHERE end IS NOT NULL AND end > start ORDER BY start"):
        label = label if label is not None else text.get(label_id, "")
        if (step_range and label == step_range) or (not step_range and label.startswith("ProfilerStep#")):
            ranges.append((start, end))
    return [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "pid": 0, "tid": 0,
             "ts": start / 1e3, "dur": (end - start) / 1e3, "args": {}} for i, (start, end) in enumerate(ranges)]


def convert(sqlite_path, step_range=None):
    db = sqlite3.connect(f"file:{sqlite_path}?mode=ro", uri=True)
    names = tables(db)
    if "CUPTI_ACTIVITY_KIND_KERNEL" not in names:
        sys.exit(f"{sqlite_path}: no CUPTI_ACTIVITY_KIND_KERNEL table (profile with --trace=cuda)")
    text = strings(db, names)
    events = kernels(db, text) + copies(db, names) + steps(db, names, text, step_range)
    return {"traceEvents": sorted(events, key=lambda e: e["ts"]), "source": f"nsys export {os.path.basename(sqlite_path)}"}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("sqlite")
    p.add_argument("out")
    p.add_argument("--step-range", help="the NVTX range that marks one step (default: ProfilerStep#N ranges)")
    a = p.parse_args()
    trace = convert(a.sqlite, a.step_range)
    if os.path.exists(a.out) and not os.path.isfile(a.out):
        sys.exit(f"{a.out}: exists and is not a regular file")
    folder = os.path.dirname(os.path.abspath(a.out))
    with tempfile.NamedTemporaryFile("w", dir=folder, delete=False, suffix=".tmp") as f:
        json.dump(trace, f)
    os.replace(f.name, a.out)
    kernels_n = sum(1 for e in trace["traceEvents"] if e["cat"] == "kernel")
    steps_n = sum(1 for e in trace["traceEvents"] if e["cat"] == "user_annotation")
    print(f"wrote {a.out}: {kernels_n} kernels, {steps_n} steps")


if __name__ == "__main__":
    main()
