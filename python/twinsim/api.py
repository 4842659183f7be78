"""The Python API over twinsim._core (which takes and returns JSON text)."""
from __future__ import annotations

import copy
import json
import os
import pathlib
from dataclasses import dataclass
from typing import Any, Iterable

from twinsim import _core

GIB = 1024**3


def _frame(rows, columns=None):
    import pandas as pd  # imported lazily: the core API works without pandas

    return pd.DataFrame(rows, columns=columns)



class Scenario:
    """A scenario as a plain dict (the YAML of SCENARIO.md), plus ``--set`` style edits.

    The dict is what you see; nothing is validated until it is simulated (or
    :meth:`resolved` is called), exactly as the command line does."""

    def __init__(self, data: dict | None = None):
        self.data: dict = copy.deepcopy(data) if data is not None else {}

    @classmethod
    def from_dict(cls, data: dict) -> "Scenario":
        return cls(data)

    def to_dict(self) -> dict:
        return copy.deepcopy(self.data)

    def copy(self) -> "Scenario":
        return Scenario(self.data)

    def set(self, key: str, value: Any) -> "Scenario":
        """A copy with ``key`` (dotted, e.g. ``plan.tp``) set to ``value``, by the rules of
        ``--set`` (the same C++ code): a catalog name under ``model``, ``cluster``,
        ``cluster.gpu`` or ``stack`` becomes ``{preset: NAME}`` to set a key inside it, and a
        key under any other single value is refused (ScenarioError)."""
        return Scenario(json.loads(_core.set_json(self.text(), key, json.dumps(value))))

    def get(self, key: str, default: Any = None) -> Any:
        node: Any = self.data
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                return default
            node = node[part]
        return node

    def text(self) -> str:
        return json.dumps(self.data)

    def resolved(self) -> dict:
        """The validated plan (every `plan` knob, by its key, defaults and dp filled in) and
        cluster (nodes filled in). Raises ScenarioError."""
        _use_host_calibration()
        return json.loads(_core.resolved_json(self.text(), []))

    def __repr__(self) -> str:
        return f"Scenario({self.data!r})"


DATA_DIR = pathlib.Path(__file__).resolve().parent / "data"


def data_path(relative: str | os.PathLike = "") -> pathlib.Path:
    """A file the package carries, by its path in the repository: ``scenarios/...`` (the
    ready scenarios: default, training, inference, exec), ``models/catalog/...`` and
    ``hardware/catalog/...``. Raises FileNotFoundError naming what the package holds."""
    path = DATA_DIR / relative
    if not path.exists():
        raise FileNotFoundError(f"{relative}: not among the package's files (under {DATA_DIR}: "
                                "scenarios/, models/catalog/, hardware/catalog/)")
    return path


def _packaged(path: str) -> str | None:
    """``scenarios/x.yaml`` (or ``models/catalog/...``, ``hardware/catalog/...``) when the
    working directory has no such file: the package's copy, if it has one."""
    relative = pathlib.PurePath(path)
    if relative.is_absolute() or not relative.parts or relative.parts[0] not in ("scenarios", "models", "hardware"):
        return None
    packaged = DATA_DIR / relative
    return str(packaged) if packaged.is_file() else None


def load_scenario(source: str | os.PathLike | dict) -> Scenario:
    """A scenario from a YAML/JSON file, YAML text, or a dict. A relative ``scenarios/...``
    path not found from the working directory is the package's copy (:func:`data_path`)."""
    if isinstance(source, dict):
        return Scenario(source)
    s = str(source)
    if "\n" not in s and not os.path.exists(s) and _packaged(s):
        s = _packaged(s)
    if "\n" not in s and os.path.exists(s):
        return Scenario(json.loads(_core.scenario_file_json(s)))
    if "\n" not in s and (s.endswith(".yaml") or s.endswith(".yml") or s.endswith(".json")):
        raise _core.ScenarioError(f"scenario={s} cannot be opened (no such file, or not readable)")
    return Scenario(json.loads(_core.text_json(s)))


def default_scenario() -> Scenario:
    """GPT-3 175B on 1536 A100s (Narayanan et al. 2021), the CLI's default."""
    return Scenario(json.loads(_core.text_json(_core.default_scenario_text())))


def host_calibration_file() -> pathlib.Path | None:
    """The hardware file ``cluster: host`` stands for, found as the command line finds it:
    ``$TWINSIM_HOST_FILE`` (empty: none, the catalog's placeholder), else
    ``hardware/calibrated/host.yaml`` (``twinsim calibrate``'s output) from the working
    directory or the repository the package was built from; None when there is none."""
    named = os.environ.get("TWINSIM_HOST_FILE")
    if named is not None:
        return pathlib.Path(named) if named and os.path.isfile(named) else None
    relative = pathlib.Path("hardware", "calibrated", "host.yaml")
    for candidate in (relative, pathlib.Path(_core.source_tree) / relative):
        if candidate.is_file():
            return candidate.resolve()
    return None


def _use_host_calibration() -> None:
    file = host_calibration_file()
    _core.set_host_cluster_file(str(file) if file else "")


def _as_scenario(s) -> Scenario:
    _use_host_calibration()  # before anything resolves `cluster: host`
    return s if isinstance(s, Scenario) else load_scenario(s)


def _overrides(overrides: dict | Iterable[str] | None) -> list[str]:
    if overrides is None:
        return []
    if isinstance(overrides, dict):
        return [f"{k}={_yaml_value(v)}" for k, v in overrides.items()]
    return list(overrides)


def _yaml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


@dataclass
class Report:
    """``twinsim simulate --json``: params, memory, time, throughput (SCENARIO.md)."""

    data: dict
    trace_path: str | None = None

    def to_dict(self) -> dict:
        return copy.deepcopy(self.data)

    @property
    def step_s(self) -> float | None:
        return self.data.get("time", {}).get("step_s")

    @property
    def mfu(self) -> float | None:
        return self.data.get("throughput", {}).get("mfu")

    @property
    def peak_bytes(self) -> int:
        return self.data["memory"]["peak_bytes"]

    def to_frame(self):
        """One row per quantity: section, name, value (time breakdown, throughput, memory)."""
        rows = []
        for section in ("time", "throughput", "inference"):
            block = self.data.get(section, {})
            for k, v in block.items():
                if isinstance(v, dict):
                    rows += [(section, f"{k}.{kk}", vv) for kk, vv in v.items()]
                else:
                    rows.append((section, k, v))
        rows += [("memory", k, v) for k, v in self.data["memory"]["breakdown"].items()]
        rows.append(("memory", "peak_bytes", self.data["memory"]["peak_bytes"]))
        return _frame(rows, ["section", "name", "value"])


@dataclass
class MemoryReport:
    """``twinsim memory --json``: per-GPU memory, by category and by pipeline stage."""

    data: dict

    def to_dict(self) -> dict:
        return copy.deepcopy(self.data)

    @property
    def peak_bytes(self) -> int:
        return self.data["memory"]["peak_bytes"]

    @property
    def fits(self) -> bool:
        return self.data["memory"]["fits"]

    @property
    def breakdown(self) -> dict:
        return dict(self.data["memory"]["breakdown"])

    def to_frame(self):
        """One row per pipeline stage, one column per category (bytes), plus peak_bytes."""
        rows = []
        for st in self.data["memory"]["stages"]:
            row = {"stage": st["stage"], **st["breakdown"], "peak_bytes": st["peak_bytes"]}
            rows.append(row)
        return _frame(rows)


def _plan_row(plan: dict) -> dict:
    return {k: v for k, v in plan.items() if k != "overrides"}


@dataclass
class SearchResult:
    """``twinsim search --json``: the best plans (simulated) and the Pareto front."""

    data: dict

    def to_dict(self) -> dict:
        return copy.deepcopy(self.data)

    @property
    def top(self) -> list[dict]:
        return self.data["top"]

    @property
    def pareto(self) -> list[dict]:
        return self.data["pareto"]

    def best_overrides(self) -> list[str]:
        """The best plan as ``--set`` overrides (for :func:`simulate`)."""
        return self.top[0]["plan"]["overrides"].split() if self.top else []

    def to_frame(self):
        """The top plans, best first."""
        rows = []
        for rank, e in enumerate(self.top, 1):
            rows.append({"rank": rank, **_plan_row(e["plan"]), "analytic_step_s": e["analytic_step_s"],
                         "simulated_step_s": e.get("simulated_step_s"), "peak_bytes": e["peak_bytes"]})
        return _frame(rows)

    def pareto_frame(self):
        """The Pareto front of step time, memory and GPUs (analytic estimates)."""
        rows = [{**_plan_row(p["plan"]), "analytic_step_s": p["analytic_step_s"], "peak_bytes": p["peak_bytes"]}
                for p in self.pareto]
        return _frame(rows)


@dataclass
class CapacityPlan:
    """``twinsim capacity --json``: GPUs, plan, time and cost to train."""

    data: dict

    def to_dict(self) -> dict:
        return copy.deepcopy(self.data)

    def __getattr__(self, name):
        try:
            return self.data[name]
        except KeyError as e:
            raise AttributeError(name) from e

    def to_frame(self):
        row = {k: v for k, v in self.data.items() if k != "plan"}
        row.update({f"plan.{k}": v for k, v in _plan_row(self.data["plan"]).items()})
        return _frame([row])


def simulate(scenario, overrides=None, trace: str | os.PathLike | None = None, fidelity: str = "fast") -> Report:
    """Predict one training step (or inference batch); ``trace`` writes a Chrome trace.
    ``fidelity`` is ``twinsim simulate --fidelity``: "fast" (one GPU per stage), "full"
    (every GPU, shared NICs and the cluster's fabric; alike replicas simulated once) or
    "full-per-rank"."""
    s = _as_scenario(scenario)
    data = json.loads(_core.simulate_json(s.text(), _overrides(overrides), str(trace) if trace else "", fidelity))
    return Report(data, str(trace) if trace else None)


def memory(scenario, overrides=None) -> MemoryReport:
    """``twinsim memory --json``: memory per GPU, by category and pipeline stage.

        >>> twinsim.memory("scenarios/training/llama3-70b-h100.yaml").fits
        True
    """
    s = _as_scenario(scenario)
    return MemoryReport(json.loads(_core.memory_json(s.text(), _overrides(overrides))))


def search(scenario, gpus: int | None = None, gpus_range: tuple[int, int] | None = None,
           objective: str = "step_time", top: int = 10, simulate: bool = True, max_micro_batch: int = 16,
           overrides=None) -> SearchResult:
    """Every valid plan on ``gpus`` (or each count in ``gpus_range``), ranked by
    ``objective`` (step_time, cost, tokens_per_s); the top ones simulated."""
    if gpus is not None and gpus_range is not None:
        raise ValueError("give gpus or gpus_range, not both")
    lo, hi = (gpus, gpus) if gpus is not None else (gpus_range or (0, 0))
    s = _as_scenario(scenario)
    text = _core.search_json(s.text(), _overrides(overrides), int(lo), int(hi), objective, int(top), bool(simulate),
                             int(max_micro_batch))
    return SearchResult(json.loads(text))


class ServeResult(dict):
    """``twinsim serve --json`` as a dict (its keys, SCENARIO.md), plus :meth:`to_frame`."""

    def to_dict(self) -> dict:
        return copy.deepcopy(dict(self))

    def to_frame(self):
        """One row per latency (ttft, tpot, e2e...: every entry holding ``mean_s``), its
        statistics as columns (mean_s, p50_s, p90_s, p99_s)."""
        rows = {k: v for k, v in self.items() if isinstance(v, dict) and "mean_s" in v}
        return _frame(list(rows.values())).set_axis(list(rows.keys()), axis=0)


def serve(scenario, requests: int = 300, rate: float = 1.0, seed: int = 0, prefix_tokens: int = 0,
          prefix_hit_rate: float = 1.0, router: str = "", swap_space_gib: float = 0.0, overrides=None) -> ServeResult:
    """``twinsim serve --json``: ``requests`` Poisson arrivals at ``rate`` per second (the
    scenario's prompt and output lengths) through one replica's continuous batching;
    ``prefix_tokens`` > 0 turns on prefix caching with ``prefix_hit_rate``; ``router``
    ("round_robin" or "least_loaded") serves all ``plan.dp`` replicas behind it;
    ``swap_space_gib`` per GPU swaps preempted sequences' K,V to the host. Returns the
    summary: ``ttft``, ``tpot``, ``e2e`` ({mean_s, p50_s, p90_s, p99_s}), throughput, KV occupancy.

        >>> r = twinsim.serve("scenarios/inference/llama2-7b-a100.yaml", requests=100, rate=4)
        >>> r.to_frame()[["p50_s", "p99_s"]]
    """
    s = _as_scenario(scenario)
    return ServeResult(json.loads(_core.serve_json(s.text(), _overrides(overrides), int(requests), float(rate),
                                                   int(seed), int(prefix_tokens), float(prefix_hit_rate), str(router),
                                                   float(swap_space_gib))))


def recompute_mix(scenario, budget_bytes: int = 0, overrides=None) -> dict:
    """The cheapest per-layer recompute mix that fits ``budget_bytes`` (0: the GPU's memory)."""
    s = _as_scenario(scenario)
    return json.loads(_core.recompute_json(s.text(), _overrides(overrides), int(budget_bytes)))


@dataclass
class ServingCapacity:
    """``twinsim capacity --serve --json``: the smallest deployment (TP x replicas, or two
    pools when disaggregated) whose simulated p99 latencies meet the targets at the rate."""

    data: dict

    def to_dict(self) -> dict:
        return copy.deepcopy(self.data)

    @property
    def feasible(self) -> bool:
        return self.data["feasible"]

    @property
    def deployment(self) -> dict:
        return dict(self.data.get("deployment", {}))

    @property
    def gpus(self) -> int | None:
        return self.data.get("deployment", {}).get("gpus")

    def to_frame(self):
        """One row per deployment tried, smallest first: tp, replicas, gpus, p99 TTFT and TPOT."""
        return _frame(self.data["tried"])


_SERVING_ONLY = ("rate", "ttft_p99", "tpot_p99", "prompt_len", "output_len", "disaggregate", "prefix_tokens",
                 "prefix_hit_rate", "speculative")


def capacity(model: str, tokens: float | None = None, days: float | None = None, gpu: str | None = None,
             price_per_gpu_hour: float = 0.0, seq_len: int = 4096, global_batch: int = 1024,
             max_gpus: int = 16384, failures: str = "llama3-h100", storage_GBps: float = 0.0,
             restart_minutes: float = 10.0, checkpoint_interval_minutes: float = 0.0,
             sync_checkpoint: bool = False, serve: bool = False, **serving):
    """``twinsim capacity``. Training: GPUs needed to train ``model`` on ``tokens`` within
    ``days`` (6NT FLOPs, Kaplan et al. 2020), a :class:`CapacityPlan`, failures included as
    ``twinsim capacity`` includes them: ``failures`` is a published rate set ("llama3-h100",
    "rsc1-a100") or "none"; ``storage_GBps`` the checkpoint storage, all writers together (0:
    Llama 3's 2 TB/s per 16,384 GPUs); ``restart_minutes`` per failure;
    ``checkpoint_interval_minutes`` (0: Young/Daly's optimum); ``sync_checkpoint`` stalls the
    step for the whole write. With failures, ``days`` is the time at the effective training
    time ratio, ``failure_free_days`` the time without them and ``goodput`` says what they
    cost (``goodput["time_to_train"]["failure_gpu_hours"]``, ``["failure_cost"]`` with a price).

        >>> twinsim.capacity("llama3-70b", tokens=2e12, days=30, gpu="h100-sxm").gpus

    ``serve=True`` (``capacity --serve``): the smallest deployment meeting ``ttft_p99`` (and
    ``tpot_p99``, seconds; 0: none) at ``rate`` requests per second, with ``prompt_len``,
    ``output_len``, ``disaggregate``, ``prefix_tokens``, ``prefix_hit_rate`` and
    ``speculative`` (an ``inference.speculative`` mapping) as the command's options; a
    :class:`ServingCapacity`.

        >>> twinsim.capacity("llama3-8b", gpu="h100-sxm", serve=True, rate=2, ttft_p99=1).deployment
    """
    if gpu is None:
        raise TypeError("capacity() needs gpu (a catalog GPU, e.g. 'h100-sxm')")
    unknown = set(serving) - set(_SERVING_ONLY)
    if unknown:
        raise TypeError(f"capacity() got unexpected keyword arguments {sorted(unknown)}")
    if serve:
        if tokens is not None or days is not None:
            raise _core.ScenarioError("tokens/days size training; serve=True sizes a deployment by rate and ttft_p99")
        return _serving_capacity(model, gpu, **serving)
    if serving:
        raise _core.ScenarioError(f"{sorted(serving)} size a serving deployment: give serve=True")
    if not tokens or not days:
        raise _core.ScenarioError("tokens/days are required for training capacity (or give serve=True)")
    return CapacityPlan(json.loads(_core.capacity_json(model, gpu, float(tokens), float(days),
                                                       float(price_per_gpu_hour), int(seq_len), int(global_batch),
                                                       int(max_gpus), str(failures), float(storage_GBps),
                                                       float(restart_minutes), float(checkpoint_interval_minutes),
                                                       bool(sync_checkpoint))))


def _serving_capacity(model: str, gpu: str, rate: float = 0.0, ttft_p99: float = 0.0, tpot_p99: float = 0.0,
                      prompt_len: int = 1024, output_len: int = 256, disaggregate: bool = False,
                      prefix_tokens: int = 0, prefix_hit_rate: float = 1.0, speculative: dict | None = None):
    speculative_text = json.dumps(speculative) if speculative else ""  # JSON is YAML
    return ServingCapacity(json.loads(_core.serving_capacity_json(
        model, gpu, float(rate), float(ttft_p99), float(tpot_p99), int(prompt_len), int(output_len),
        bool(disaggregate), int(prefix_tokens), float(prefix_hit_rate), speculative_text)))


def _report_json(x) -> str:
    if isinstance(x, (Report, MemoryReport)):
        return json.dumps(x.data)
    if isinstance(x, dict):
        return json.dumps(x)
    with open(x) as f:  # a path to a JSON report
        return f.read()


@dataclass
class Comparison:
    """Simulated against measured (compare/): step time, per op, per op category and
    memory per category, each with predicted, measured, abs_error and rel_error.
    An inference comparison (``kind == "inference"``) has TTFT and TPOT instead of the
    step, and its ops per pass of the prefill and decode phases."""

    data: dict

    def to_dict(self) -> dict:
        return copy.deepcopy(self.data)

    @property
    def kind(self) -> str:
        return self.data.get("kind", "training")

    @property
    def step_s(self) -> dict:
        return dict(self.data["step_s"])

    @property
    def ttft_s(self) -> dict:
        return dict(self.data["ttft_s"])

    @property
    def tpot_s(self) -> dict:
        return dict(self.data["tpot_s"])

    def to_frame(self):
        """One row per op: per-call and per-step predicted and measured seconds
        (inference: per pass, with a ``phase`` column, prefill or decode)."""
        rows = []
        if self.kind == "inference":
            for phase in ("prefill", "decode"):
                for op in self.data[phase]["ops"]:
                    rows.append({"phase": phase, "name": op["name"], "category": op.get("category"),
                                 "calls": op.get("calls_per_pass"),
                                 "predicted_s": op["per_call_s"]["predicted"],
                                 "measured_s": op["per_call_s"]["measured"],
                                 "rel_error": op["per_call_s"]["rel_error"],
                                 "predicted_pass_s": op["per_pass_s"]["predicted"],
                                 "measured_pass_s": op["per_pass_s"]["measured"]})
            return _frame(rows)
        for op in self.data["ops"]:
            rows.append({"name": op["name"], "category": op.get("category"), "calls": op.get("calls_per_step"),
                         "predicted_s": op["per_call_s"]["predicted"], "measured_s": op["per_call_s"]["measured"],
                         "rel_error": op["per_call_s"]["rel_error"],
                         "predicted_step_s": op["per_step_s"]["predicted"],
                         "measured_step_s": op["per_step_s"]["measured"]})
        return _frame(rows)

    def memory_frame(self):
        rows = [{"category": k, **v} for k, v in self.data["memory"]["breakdown"].items()]
        rows.append({"category": "peak_bytes", **self.data["memory"]["peak_bytes"]})
        return _frame(rows)


def compare(simulated, measured) -> Comparison:
    """Lines up a simulated report (a :class:`Report`, its dict, or a JSON file) with a
    measured one (`twinsim run`'s measured.json: a path or a dict)."""
    return Comparison(json.loads(_core.compare_json(_report_json(simulated), _report_json(measured))))


def describe_model(model) -> dict:
    """``twinsim describe-model --json``: how twinsim reads a model, with its parameter
    counts and KV bytes per token. `model` is a catalog name, a config.json path, a
    Hugging Face config as a dict (what ``json.load`` gives; it has ``model_type``), or an
    inline model mapping (``{"preset": "llama3-8b", "layers": 2}``)."""
    if isinstance(model, dict):
        section = {"hf_config": model} if "model_type" in model else model
        return json.loads(_core.describe_model_json(json.dumps(section)))
    return json.loads(_core.describe_model_json(os.fspath(model)))


def catalog() -> dict:
    """The names of the catalog's models, GPUs and node types."""
    return {"models": _core.catalog_model_names(), "gpus": _core.catalog_gpu_names(),
            "nodes": _core.catalog_node_names()}
