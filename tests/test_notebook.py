"""The blog's workflow as a notebook (docs/notebooks/pong_dqn.ipynb), executed cell by cell at a tiny scale."""

import os

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOK = os.path.join(os.path.dirname(__file__), "..", "docs", "notebooks", "pong_dqn.ipynb")


def test_the_dqn_notebook_runs_end_to_end(tmp_path, monkeypatch):
    monkeypatch.setenv("PONGRL_NOTEBOOK_SCALE", "0.002")
    # One torch thread in the kernel: on a machine whose cores are busy (a league beside the tests), torch's
    # default of one thread per core spends its time waiting on the others, and the tiny run took 10 times as long.
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    text = "\n".join(
        output.get("text", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
    )
    assert text.count("finished at step") == 4  # four chunks, spliced
    assert "exact protocol:" in text and "sticky actions 0.25:" in text and "zoo:dqn vs zoo:ppo" in text
    assert any(line.startswith("conv1") for line in text.splitlines())  # a probe row per layer
    images = [
        output for cell in notebook.cells for output in cell.get("outputs", []) if "image/png" in output.get("data", {})
    ]
    videos = [
        output
        for cell in notebook.cells
        for output in cell.get("outputs", [])
        if "<video" in output.get("data", {}).get("text/html", "")
    ]
    assert images and videos
    assert os.path.exists(tmp_path / "runs" / "notebook-dqn" / "metrics.csv")
