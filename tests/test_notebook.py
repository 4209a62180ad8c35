"""notebooks/l2c_alpha_gradient.ipynb: committed without outputs, and it runs top to bottom."""
from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
kernelspec = pytest.importorskip("ipykernel.kernelspec")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "l2c_alpha_gradient.ipynb"
KERNEL = "gradcheck-l2c-tests"


def seed_line(code: str) -> int:
    """The line of reference/seed_l2c.py whose statement starts with ``code``."""
    lines = (ROOT / "reference" / "seed_l2c.py").read_text().splitlines()
    (number,) = [n for n, line in enumerate(lines, 1) if line.strip().startswith(code)]
    return number


@pytest.fixture
def kernel(tmp_path, monkeypatch):
    """A kernelspec for this very interpreter, found first through JUPYTER_PATH; nothing is installed."""
    kernelspec.write_kernel_spec(tmp_path / "kernels" / KERNEL)
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    return KERNEL


def test_is_committed_without_outputs():
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code
    assert [cell.source for cell in code if cell.outputs or cell.execution_count is not None] == []


def test_runs_top_to_bottom_and_shows_the_cuts_the_graph_and_the_heatmap(kernel):
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        notebook, kernel_name=kernel, timeout=600, resources={"metadata": {"path": str(ROOT)}}
    )
    client.execute()

    outputs = [out for cell in notebook.cells if cell.cell_type == "code" for out in cell.outputs]
    text = "".join(out.get("text", "") for out in outputs if out.output_type == "stream")
    assert "gradient of alpha is None" in text  # the question's symptom
    item = seed_line("theta_next[name] -= model.w[i][j].item()")
    reload = seed_line("model.load_state_dict(theta_next)")
    assert f"reference/seed_l2c.py:{item}: error: item" in text
    assert f"reference/seed_l2c.py:{reload}: error: state_dict_reload" in text
    assert "the watched tensor got a gradient; no findings" in text  # the fixed step, traced twice
    assert text.count("the watched tensor got a gradient") == 2
    mimes = [mime for out in outputs for mime in out.get("data", {})]
    assert "image/svg+xml" in mimes  # the graph with alpha cut off
    assert "image/png" in mimes  # the learned mixing matrix
