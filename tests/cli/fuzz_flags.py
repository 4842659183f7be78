#!/usr/bin/env python3
"""A seeded fuzzer over twinsim's command lines (issue 23): valid invocations of every
command, mutated by replacing flag values with hostile ones, adding flags the command has
(with hostile values), adding `--set KEY=VALUE` for keys of every section, dropping and
repeating arguments. Whatever the line, twinsim must end within 10 s and 2 GiB, with exit
status 0, 1, 2 (twinsim's own refusals) or CLI11's parse errors, never by a signal, and a
refusal must say what it refuses: no raw C++ exception text (std::bad_alloc, vector::,
stoi, basic_string), no sanitizer report.

    fuzz_flags.py TWINSIM SCENARIOS_DIR [CASES] [SEED]

The default 300 cases take about 10 s on 2 cores (Release); TWINSIM_FUZZ_CASES and
TWINSIM_FUZZ_SEED override them. A failing line is printed whole, to become a row of
check_hostile_cli.py once fixed.
"""
import os
import random
import subprocess
import sys
import tempfile
import time

TWINSIM, SCENARIOS = (os.path.abspath(a) for a in sys.argv[1:3])
CASES = int(os.environ.get("TWINSIM_FUZZ_CASES", sys.argv[3] if len(sys.argv) > 3 else 300))
SEED = int(os.environ.get("TWINSIM_FUZZ_SEED", sys.argv[4] if len(sys.argv) > 4 else 20261125))
LIMIT_S, LIMIT_BYTES = 10, 2 << 30
# CLI11's parse errors: 103 file, 104 conversion, 105 validation, 106 required, 107 requires,
# 108 excludes, 109 extras, 111 invalid, 113 option not found, 114 argument mismatch (not
# 100-102 or 112: errors in how the options were declared)
OK_STATUSES = {0, 1, 2, 103, 104, 105, 106, 107, 108, 109, 111, 113, 114}
# text that means an error escaped unexplained, or memory was misused
FORBIDDEN = ["terminate called", "std::bad_alloc", "vector::", "basic_string", "stoi", "stod", "stoll",
             "AddressSanitizer", "runtime error:", "Segmentation fault", "what():", "LeakSanitizer"]

HOSTILE = ["", "0", "-1", "-0", "1", "2", "3", "7", "1.5", "-2.5", "nan", "NaN", "inf", "-inf", "1e308", "1e-308",
           "4294967296", "9223372036854775807", "9223372036854775808", "99999999999999999999999", "0x10", "1e3",
           "08", " 4", "4 ", "4abc", "abc", "true", "null", "~", "[]", "{}", "[1, 2]", "{a: 1}", "'quoted'", "\"q\"",
           "é", "\u202e", "=", ",", ":", "::", "1:0", "0:0", "-5:8", "8:", ":8", "x" * 5000, "--json", "-", "%s%n",
           "../../etc/passwd", "/dev/zero", "/dev/null", "/nonexistent/file", "."]
SET_KEYS = ["plan.tp", "plan.pp", "plan.dp", "plan.cp", "plan.ep", "plan.zero", "plan.schedule", "plan.virtual_stages",
            "plan.recompute", "plan.stage_layers", "plan.sequence_parallel", "plan.offload_optimizer",
            "plan.zero_hpz_partition_size", "training.seq_len", "training.global_batch", "training.micro_batch",
            "training.precision", "training.optimizer", "training.optimizer.lr", "training.data", "model",
            "model.layers", "model.hidden", "model.heads", "model.kv_heads", "model.vocab", "model.moe",
            "model.moe.experts", "model.sliding_window", "model.hf_config", "cluster", "cluster.nodes",
            "cluster.gpu", "cluster.gpu.memory_GiB", "cluster.straggler", "cluster.fabric.oversubscription",
            "inference.batch", "inference.prompt_len", "inference.output_len", "nosuchsection.key", "plan", ""]


def base_lines(folder):
    """Valid invocations, each quick (well under a second in Release)."""
    s = lambda *p: os.path.join(SCENARIOS, *p)
    small = ["--set", "cluster.nodes=1", "--set", "plan.tp=8", "--set", "plan.pp=1", "--set", "plan.dp=1"]
    return [
        ["simulate", s("training", "llama3-70b-h100.yaml")],
        ["simulate", s("inference", "llama2-7b-a100.yaml"), "--json"],
        ["memory", s("default.yaml"), "--json"],
        ["search", s("training", "llama3-8b-offload-1xh100.yaml"), "--gpus", "8", "--analytic-only", "--top", "3"],
        ["serve", s("inference", "llama2-7b-a100.yaml"), "--requests", "50", "--rate", "4"],
        ["collective", "--op", "allreduce", "--ranks", "16", "-b", "1K", "-e", "1M", "-f", "4"],
        ["capacity", "--model", "llama3-8b", "--gpu", "h100-sxm", "--tokens", "1e11", "--days", "30", "--max-gpus", "64"],
        ["capacity", "--model", "llama3-8b", "--gpu", "h100-sxm", "--serve", "--rate", "2", "--ttft-p99", "2"],
        ["describe-model", "llama3-8b", "--json"],
        ["simulate", s("default.yaml")] + small,
        ["checkpoint", "merge", s("exec", "tiny-gpt-single.yaml"), "--checkpoint-dir", folder, "--out", "m.st"],
        ["compare", s("default.yaml"), s("default.yaml")],
    ]


def flags_of(line):
    return [a for a in line if a.startswith("-") and len(a) > 1]


def mutate(line, rng):
    line = list(line)
    for _ in range(rng.randint(1, 3)):
        kind = rng.random()
        values = [i for i in range(1, len(line)) if not line[i].startswith("-")]
        if kind < 0.35 and values:  # a value becomes hostile
            line[rng.choice(values)] = rng.choice(HOSTILE)
        elif kind < 0.6:  # --set KEY=hostile
            line += ["--set", f"{rng.choice(SET_KEYS)}={rng.choice(HOSTILE)}"]
        elif kind < 0.75 and flags_of(line):  # a flag the command has, again, with a hostile value
            line += [rng.choice(flags_of(line)), rng.choice(HOSTILE)]
        elif kind < 0.85 and len(line) > 2:  # an argument dropped
            del line[rng.randrange(1, len(line))]
        elif kind < 0.95:  # a hostile word anywhere
            line.insert(rng.randrange(1, len(line) + 1), rng.choice(HOSTILE))
        else:  # the command word itself
            line[0] = rng.choice(["simulate", "serve", "search", "run", "checkpoint", "nosuch", "", "--help"])
    return line


def run_measured(argv, folder):
    """(exit status or None on timeout, output, the child's own peak resident bytes)."""
    with tempfile.TemporaryFile() as out:
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=folder,
                             env=dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1"))
        deadline = time.monotonic() + LIMIT_S
        while True:  # wait4 gives this child's own rusage (RUSAGE_CHILDREN is a running maximum)
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                p.kill()
                os.wait4(p.pid, 0)
                return None, "", 0
            time.sleep(0.005)
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        return p.returncode, out.read().decode("utf-8", "replace"), usage.ru_maxrss * 1024


def check(line, folder):
    """None when the line ends as it must, else why not."""
    status, out, peak = run_measured([TWINSIM] + line, folder)
    if status is None:
        return f"still running after {LIMIT_S} s"
    if status not in OK_STATUSES:
        return f"exit status {status}\n{out[-2000:]}"
    for bad in FORBIDDEN:
        if bad in out:
            return f"printed '{bad}'\n{out[-2000:]}"
    if status != 0 and not out.strip():
        return "failed without a message"
    if peak > LIMIT_BYTES:
        return f"peak resident memory {peak} bytes"
    return None


def main():
    rng = random.Random(SEED)
    failures = []
    with tempfile.TemporaryDirectory() as folder:
        bases = base_lines(folder)
        for line in bases:  # the unmutated lines must themselves end properly
            why = check(line, folder)
            if why:
                failures.append((line, why))
        for _ in range(CASES):
            line = mutate(rng.choice(bases), rng)
            why = check(line, folder)
            if why:
                failures.append((line, why))
    print(f"{CASES} fuzzed command lines (seed {SEED}), {len(failures)} failed")
    for line, why in failures:
        shown = [a if len(a) <= 80 else a[:40] + f"...({len(a)} chars)" for a in line]
        print("FAIL:", shown, "\n ", why)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
