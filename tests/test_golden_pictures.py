"""Golden pictures (issue 18 §1): every picture of notebooks 00-11 is stored as its DOT source in
tests/golden/<notebook>/<cell id>.<k>.dot, and a change to a picture is a diff reviewed on purpose.

How it holds together, cheaply (no notebook is run here):
- each picture's output carries its DOT (backward_twice.graph.DOT_MIME); nbval compares it like
  text/plain, so a fresh run that draws differently fails nbval;
- this test compares the committed outputs with tests/golden/.
After reviewing a picture change: regenerate the notebook (bash scripts/regen), then
`python -m scripts.golden --accept` and commit tests/golden with it (the diff is the review).
`python -m scripts.golden --run` shows the change before any notebook is regenerated.
"""
import json

import nbformat
import pytest
import torch

from backward_twice.graph import DOT_MIME, dot_record, draw
from scripts import golden, notebooks

NOTEBOOKS = notebooks()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem[:2] for p in NOTEBOOKS])
def test_committed_pictures_match_golden_files(path):
    diffs = golden.differences(path)
    assert not diffs, (f"{len(diffs)} picture(s) of {path.name} differ from tests/golden. If the change "
                       "is on purpose: bash scripts/regen that notebook, `python -m scripts.golden "
                       "--accept`, and commit tests/golden (its diff is the review).\n" + "\n".join(diffs)[:6000])


def test_every_drawn_picture_has_a_golden_file():
    # the golden set is not empty by accident: the course draws pictures in most notebooks
    drawn = {p.name for p in golden.GOLDEN.iterdir() if any(p.glob("*.dot"))}
    assert len(drawn) >= 8, sorted(drawn)


def _notebook_with(tmp_path, dot: str):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("draw(y)")
    cell.id = "cell-a"
    cell.outputs = [nbformat.v4.new_output("display_data", data={"text/plain": "y", DOT_MIME: dot})]
    nb.cells = [cell]
    path = tmp_path / "99_probe.ipynb"
    nbformat.write(nb, path)
    return path


def test_a_changed_picture_fails_and_accept_takes_it(tmp_path, monkeypatch):
    monkeypatch.setattr(golden, "GOLDEN", tmp_path / "golden")
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    first = draw(x * 2, names={"x": x})
    path = _notebook_with(tmp_path, first._repr_mimebundle_()[DOT_MIME])
    assert golden.differences(path) == ["99_probe/cell-a.0.dot: new picture (no golden file)"]
    assert golden.accept(path) == 1
    assert golden.differences(path) == []
    # the same cell now draws another graph (exp instead of a product): a diff naming both ops
    other = draw(x.exp(), names={"x": x})
    path = _notebook_with(tmp_path, other._repr_mimebundle_()[DOT_MIME])
    (diff,) = golden.differences(path)
    assert "-" in diff and "MulBackward0" in diff and "ExpBackward0" in diff


def test_dot_record_blanks_only_measured_sizes():
    src = '\tn [label=<<TABLE WIDTH="120" HEIGHT="44" BORDER="1"><TR><TD>x</TD></TR></TABLE>>]\n'
    assert dot_record(src) == '\tn [label=<<TABLE WIDTH="~" HEIGHT="~" BORDER="1"><TR><TD>x</TD></TR></TABLE>>]\n'
    json.dumps(dot_record(src))      # stored in a notebook output as one string
