import os
import pathlib
import shutil

import pytest

ROOT = pathlib.Path(os.environ.get("TWINSIM_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))


@pytest.fixture
def root():
    return ROOT


@pytest.fixture(scope="session")
def twinsim_exe():
    """The built twinsim binary (TWINSIM_BINARY_DIR, else build/ in the source tree)."""
    exe = pathlib.Path(os.environ.get("TWINSIM_BINARY_DIR", ROOT / "build")) / "app" / "twinsim"
    if not exe.exists():
        pytest.skip("no twinsim binary built")
    return exe


@pytest.fixture(scope="session")
def mpirun():
    """mpirun's argv start (oversubscribed, as root allowed) and its environment."""
    path = shutil.which("mpirun")
    if path is None:
        pytest.skip("no mpirun")
    return [path, "--oversubscribe"], dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


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
