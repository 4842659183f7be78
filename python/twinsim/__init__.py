"""twinsim for notebooks: load and modify scenarios as dicts, simulate a training step,
predict memory, search plans, plan capacity — each result an object with ``.to_dict()``
and pandas DataFrames (``.to_frame()``). Errors in a scenario raise
:class:`twinsim.ScenarioError` (a ``ValueError``) with the command line's message.

    >>> import twinsim
    >>> s = twinsim.load_scenario("scenarios/default.yaml").set("plan.pp", 8)
    >>> twinsim.simulate(s).step_s

``scenarios/...`` paths work from any directory: the package carries the ready scenarios
and the catalogs (:func:`twinsim.data_path`).
"""
from twinsim._core import ScenarioError
from twinsim.api import (
    CapacityPlan,
    Comparison,
    MemoryReport,
    Report,
    Scenario,
    SearchResult,
    ServeResult,
    ServingCapacity,
    capacity,
    catalog,
    compare,
    data_path,
    default_scenario,
    describe_model,
    host_calibration_file,
    load_scenario,
    memory,
    recompute_mix,
    search,
    serve,
    simulate,
)

__all__ = [
    "ScenarioError", "Scenario", "Report", "MemoryReport", "SearchResult", "CapacityPlan", "Comparison",
    "ServeResult", "ServingCapacity", "load_scenario", "data_path", "default_scenario", "simulate", "memory", "search", "serve", "capacity",
    "recompute_mix", "compare", "catalog", "describe_model", "host_calibration_file",
]
__version__ = "0.1.0"
