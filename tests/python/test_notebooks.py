"""Every notebook in notebooks/ runs top to bottom without an error (nbclient)."""
import os
import pathlib

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = pathlib.Path(os.environ.get("TWINSIM_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path, tmp_path, monkeypatch):
    # as a user runs them: from a directory outside the repository, which they are not told
    monkeypatch.delenv("TWINSIM_SOURCE_DIR", raising=False)
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=240, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError on the first failing cell
