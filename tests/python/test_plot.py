"""Each plot returns a matplotlib Figure with the data drawn."""
import matplotlib

matplotlib.use("Agg")

import twinsim
import twinsim.plot as tp


def test_memory_breakdown_bars(small_scenario):
    reps = [twinsim.memory(small_scenario.set("plan.recompute", r)) for r in ("none", "full")]
    fig = tp.memory_breakdown(reps, labels=["none", "full"])
    ax = fig.axes[0]
    assert len(ax.patches) >= 2 * 4  # >= 4 categories x 2 bars


def test_timeline_from_trace(small_scenario, tmp_path):
    trace = tmp_path / "t.json"
    rep = twinsim.simulate(small_scenario.set("plan.pp", 2).set("plan.tp", 4), trace=trace)
    fig = tp.timeline(rep)
    assert len(fig.axes[0].collections) > 0


def test_pareto_scatter(small_scenario):
    res = twinsim.search(small_scenario, gpus_range=(8, 16), top=3, max_micro_batch=1)
    fig = tp.pareto(res)
    assert len(fig.axes[0].collections) == 2  # front + top plans


def test_predicted_vs_measured():
    fig = tp.predicted_vs_measured([1.0, 2.0, 3.1], [1.1, 1.9, 3.0], labels=["a", "b", "c"])
    assert len(fig.axes[0].collections) == 1


def test_memory_categories_are_the_reports_keys(small_scenario):
    # one list in C++ (models/memory_category.hpp) serves the report and the plots
    rep = twinsim.memory(small_scenario)
    assert set(tp.MEMORY_CATEGORIES) == set(rep.to_dict()["memory"]["breakdown"])
    assert tp.MEMORY_CATEGORIES[0] == "params" and len(tp.MEMORY_CATEGORIES) == 6
