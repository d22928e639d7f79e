"""Guard: every committed notebook carries the outputs of a fresh top-to-bottom run.

nbval passes a notebook whose outputs were cleared (there is nothing to compare),
so without this guard a notebook committed unexecuted would be "green" while
checking nothing.
"""
import copy

import nbformat
import pytest

from scripts import notebooks

NOTEBOOKS = notebooks()


def skipped(cell) -> bool:
    return "nbval-skip" in cell.metadata.get("tags", []) or "NBVAL_SKIP" in cell.source


def problems(nb) -> list:
    """Why `nb` is not a fresh Run All (empty list when it is)."""
    found = []
    code = [c for c in nb.cells if c.cell_type == "code" and c.source.strip() and not skipped(c)]
    if not code:
        found.append("no code cells")
    counts = [c.execution_count for c in code]
    missing = sum(n is None for n in counts)
    if missing:
        found.append(f"{missing} code cell(s) never executed")
    elif counts != list(range(1, len(counts) + 1)):
        found.append(f"execution counts {counts[:6]}... are not 1..{len(counts)} (not one fresh Run All)")
    if code and not any(c.outputs for c in code):
        found.append("no outputs at all (cleared?)")
    for c in code:
        for o in c.outputs:
            if o.output_type == "error" and "raises-exception" not in c.metadata.get("tags", []):
                found.append(f"an error in a cell not tagged raises-exception: {o.ename}")
    return found


def test_there_are_notebooks():
    assert NOTEBOOKS, "notebooks/ holds no numbered notebook"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_has_fresh_outputs(path):
    assert problems(nbformat.read(path, as_version=4)) == []


def test_guard_catches_stripped_and_partial_runs():
    nb = nbformat.read(NOTEBOOKS[0], as_version=4)
    assert problems(nb) == []

    stripped = copy.deepcopy(nb)          # what "Clear All Outputs" + save leaves behind
    for c in stripped.cells:
        if c.cell_type == "code":
            c.outputs, c.execution_count = [], None
    assert any("never executed" in p for p in problems(stripped))

    rerun = copy.deepcopy(nb)             # one cell re-run by hand after Run All
    code = [c for c in rerun.cells if c.cell_type == "code" and c.source.strip()]
    code[1].execution_count = len(code) + 5
    assert any("not 1.." in p for p in problems(rerun))

    unexpected = copy.deepcopy(nb)        # an error output where no error is expected
    first = next(c for c in unexpected.cells if c.cell_type == "code" and not c.metadata.get("tags"))
    first.outputs = [nbformat.v4.new_output("error", ename="NameError", evalue="x", traceback=[])]
    assert any("NameError" in p for p in problems(unexpected))
