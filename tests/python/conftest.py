import os
import pathlib

import pytest

ROOT = pathlib.Path(os.environ.get("TWINSIM_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))


@pytest.fixture
def root():
    return ROOT


@pytest.fixture
def small_scenario():
    import twinsim

    return twinsim.load_scenario({
        "model": "llama3-8b",
        "cluster": "dgx-h100",
        "training": {"seq_len": 4096, "global_batch": 64, "micro_batch": 1, "precision": "bf16"},
        "plan": {"tp": 8, "pp": 1, "dp": 1, "sequence_parallel": True, "zero": 1, "recompute": "selective"},
    })

# notebook kernels start in another directory: make PYTHONPATH entries absolute
os.environ["PYTHONPATH"] = os.pathsep.join(
    str(pathlib.Path(p).resolve()) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)
