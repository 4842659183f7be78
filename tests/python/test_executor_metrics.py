"""Live metrics of `twinsim run --metrics-port` (#21 item 5): scraped over HTTP from both
ranks of a 2-rank run while it trains, then checked against what the run wrote.

What can be worked out by hand: tiny-gpt DP2 with ZeRO 0 in fp32 all-reduces every
gradient once per step; a ring all-reduce sends 2 (n - 1) / n of the buffer per rank, the
whole buffer for n = 2, so after k steps each rank has sent k x its grads bytes in the dp
group and nothing in tp or pp."""
import json
import re
import socket
import subprocess
import time
import urllib.error
import urllib.request

import pytest

SAMPLE = re.compile(r'^(\w+)\{([^}]*)\} (\S+)$')


def free_port_pair():
    """A base port whose next port is free too (ranks 0 and 1 serve on P and P + 1)."""
    for _ in range(50):
        with socket.socket() as a:
            a.bind(("127.0.0.1", 0))
            base = a.getsockname()[1]
            if base >= 65535:
                continue
            with socket.socket() as b:
                try:
                    b.bind(("127.0.0.1", base + 1))
                except OSError:
                    continue
        return base
    pytest.skip("no two consecutive free ports")


def parse(text):
    """{(name, frozenset(labels)): value} of a Prometheus text exposition."""
    samples = {}
    for line in text.splitlines():
        if line.startswith("#") or not line:
            continue
        m = SAMPLE.match(line)
        assert m, f"not a sample line: {line!r}"
        labels = frozenset(tuple(kv.split("=", 1)) for kv in m.group(2).split(","))
        samples[(m.group(1), labels)] = float(m.group(3))
    return samples


def value(samples, name, rank, **labels):
    key = frozenset({("rank", f'"{rank}"'), *((k, f'"{v}"') for k, v in labels.items())})
    return samples[(name, key)]


def scrape(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        return r.read().decode()


def test_two_rank_run_serves_its_metrics_while_it_trains(root, twinsim_exe, mpirun, tmp_path):
    argv, env = mpirun
    port = free_port_pair()
    out = tmp_path / "run"
    steps = 30  # about 12 s here: a window to scrape in even on a machine several times faster
    job = subprocess.Popen(argv + ["-np", "2", str(twinsim_exe), "run", str(root / "scenarios/exec/tiny-gpt-dp2.yaml"),
                                   "--steps", str(steps), "--out", str(out), "--metrics-port", str(port)],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    scraped = {}
    try:
        deadline = time.monotonic() + 120
        while len(scraped) < 2 and job.poll() is None and time.monotonic() < deadline:
            for rank in (0, 1):
                try:
                    samples = parse(scrape(port + rank))
                except (urllib.error.URLError, ConnectionError, OSError):
                    continue
                # wait for two finished steps: the first's busy time includes the warm-up
                if ("twinsim_step", frozenset({("rank", f'"{rank}"')})) in samples and \
                        value(samples, "twinsim_steps_total", rank) >= 2:
                    scraped[rank] = samples
            time.sleep(0.2)
        running_when_scraped = job.poll() is None
        output, _ = job.communicate(timeout=300)
    finally:
        if job.poll() is None:
            job.kill()
    assert job.returncode == 0, output
    assert set(scraped) == {0, 1}, f"not scraped from both ranks while running:\n{output}"
    assert running_when_scraped
    for rank, s in scraped.items():
        done = value(s, "twinsim_steps_total", rank)
        assert 2 <= done < steps  # taken during the run, not after it
        assert value(s, "twinsim_step", rank) == done - 1
        assert value(s, "twinsim_step_seconds", rank) > 0
        assert 0 < value(s, "twinsim_compute_utilization", rank) <= 1
        grads = value(s, "twinsim_memory_bytes", rank, category="grads")
        assert grads > 0 and value(s, "twinsim_memory_bytes", rank, category="params") == grads  # fp32, ZeRO 0
        assert value(s, "twinsim_bytes_sent_total", rank, group="dp") == done * grads
        assert value(s, "twinsim_bytes_sent_total", rank, group="tp") == 0
        assert value(s, "twinsim_bytes_sent_total", rank, group="pp") == 0
        assert 0 <= value(s, "twinsim_link_utilization", rank, group="dp") < 1
    assert f"rank 0: metrics on http://127.0.0.1:{port}/metrics" in output
    # the same series in the run directory: a line per step, the last exposition
    measured = json.loads((out / "measured.json").read_text())
    for rank in (0, 1):
        lines = [json.loads(l) for l in (out / "metrics" / f"rank-{rank}.jsonl").read_text().splitlines()]
        assert [l["step"] for l in lines] == list(range(steps))
        assert [l["loss"] for l in lines] == pytest.approx(measured["losses"], rel=1e-12)
        assert lines[-1]["groups"]["dp"]["bytes_sent"] == steps * lines[-1]["memory_bytes"]["grads"]
        last = parse((out / "metrics" / f"rank-{rank}.prom").read_text())
        assert value(last, "twinsim_steps_total", rank) == steps
        assert value(last, "twinsim_memory_peak_bytes", rank, category="activations") == \
            lines[-1]["memory_peak_bytes"]["activations"] > 0


def test_bad_metrics_ports_are_refused(root, twinsim_exe, tmp_path):
    scenario = str(root / "scenarios/exec/tiny-gpt-single.yaml")
    r = subprocess.run([str(twinsim_exe), "run", scenario, "--steps", "1", "--out", str(tmp_path),
                        "--metrics-port", "70000"], capture_output=True, text=True)
    assert r.returncode != 0 and "--metrics-port" in r.stderr
    with socket.socket() as busy:  # a port another program holds
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        r = subprocess.run([str(twinsim_exe), "run", scenario, "--steps", "1", "--out", str(tmp_path),
                            "--metrics-port", str(port)], capture_output=True, text=True)
    assert r.returncode != 0
    assert f"--metrics-port: cannot listen on 127.0.0.1:{port}" in r.stderr
    r = subprocess.run([str(twinsim_exe), "run", str(root / "scenarios/exec/tiny-llama-infer-tp2.yaml"),
                        "--set", "plan.tp=1", "--steps", "1", "--out", str(tmp_path), "--metrics-port", "19999"],
                       capture_output=True, text=True)
    # a refused flag value for this scenario: status 2, naming the flag and its value
    assert r.returncode == 2 and "--metrics-port=19999 applies to training runs" in r.stderr, r.stderr
