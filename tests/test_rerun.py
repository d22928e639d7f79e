"""Every cell survives being run again (GUIDE.md, re-run rule).

One fresh kernel per notebook (cwd notebooks/, as nbval and scripts/regen.py run it):
1. each code cell is run, then the same cell again at once (Shift-Enter twice);
2. then the whole notebook once more, top to bottom, in the same kernel (Run All again).
Both passes share the kernel to keep the suite fast (three runs of each cell instead of four
for two separate tests); pass 2 is a Run All after a Run All, with each cell of the first
having run twice.

Errors allowed, by tag:
- `raises-exception`: the cell may raise in any run, but always the error of its first run
  (same class, same start of the message; nbval and the `expect_raised` cell below it check
  the first run's error itself);
- `fails-on-rerun`: the first run must pass; a later run may fail only with the error the text
  explains: its class (e.g. `RuntimeError`) or the start of its message must appear in the
  cell's comments or the nearest markdown cell above or below it.
Any other error, in any run, fails the test, naming the notebook, the cell and the error.

Each notebook is its own test class, so `--dist loadscope` spreads the notebooks over the workers.
"""
import re

import nbformat

from scripts import notebooks
from scripts.regen import client as notebook_client

NOTEBOOKS = notebooks()
RAISES, FAILS_ON_RERUN = "raises-exception", "fails-on-rerun"


def error_of(cell):
    """(ename, evalue) of the cell's error output, or None."""
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            return out["ename"], out["evalue"]
    return None


def explaining_text(cells, i) -> str:
    """The cell's comments and the nearest markdown cell above and below it."""
    text = "\n".join(line for line in cells[i].source.splitlines() if line.lstrip().startswith("#"))
    for step in (-1, 1):
        j = i + step
        while 0 <= j < len(cells) and cells[j].cell_type != "markdown":
            j += step
        if 0 <= j < len(cells):
            text += "\n" + cells[j].source
    return text


def explained(error, text) -> bool:
    ename, evalue = error
    return bool(re.search(rf"\b{re.escape(ename)}\b", text)) or (len(evalue) >= 20 and evalue[:40] in text)


def same_error(a, b) -> bool:
    """The same class and the same start of the message (expect_raised checks a stable part of it)."""
    return a[0] == b[0] and a[1][:60] == b[1][:60]


def judge(cells, i, first, error, run: str):
    """None if `error` (from run `run` of cell i) is allowed by the cell's tags, else the failure."""
    if error is None:
        return None
    tags = cells[i].metadata.get("tags", [])
    if RAISES in tags and (first is None or same_error(error, first)):
        return None
    if FAILS_ON_RERUN in tags and run != "first run" and explained(error, explaining_text(cells, i)):
        return None
    head = cells[i].source.strip().splitlines()[0][:70] if cells[i].source.strip() else ""
    why = " (after each cell above ran twice)" if run == "first run" else ""
    if RAISES in tags:
        why = f" (tagged {RAISES}, but its first run raised {first[0]}: {first[1][:60]})"
    elif FAILS_ON_RERUN in tags:
        why = (f" (tagged {FAILS_ON_RERUN}: only a re-run may fail, with an error the text around "
               "the cell names)") if run != "first run" else f" (tagged {FAILS_ON_RERUN}: the first run must pass)"
    return f"cell {i} [{head}] {run}: {error[0]}: {error[1][:160]}{why}"


def rerun_failures(path):
    """(failures when each cell runs twice, failures on the Run All that follows)."""
    nb = nbformat.read(path, as_version=4)
    client = notebook_client(nb, path.parent, allow_errors=True)
    code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    first, twice, run_all = {}, [], []
    with client.setup_kernel():
        for i in code:
            client.execute_cell(nb.cells[i], i)
            first[i] = error_of(nb.cells[i])
            twice.append(judge(nb.cells, i, first[i], first[i], "first run"))
            client.execute_cell(nb.cells[i], i)
            twice.append(judge(nb.cells, i, first[i], error_of(nb.cells[i]), "run again at once"))
        for i in code:
            client.execute_cell(nb.cells[i], i)
            run_all.append(judge(nb.cells, i, first[i], error_of(nb.cells[i]), "Run All again"))
    return [f for f in twice if f], [f for f in run_all if f]


def _test_for(path):
    def test_every_cell_runs_twice_and_run_all_runs_twice(self):
        twice, run_all = rerun_failures(path)
        report = []
        if twice:
            report.append(f"{len(twice)} failure(s) running each cell twice:\n  " + "\n  ".join(twice))
        if run_all:
            report.append(f"{len(run_all)} failure(s) on Run All in the same kernel after that:\n  "
                          + "\n  ".join(run_all))
        assert not report, f"{path.name}:\n" + "\n".join(report)
    return test_every_cell_runs_twice_and_run_all_runs_twice


for _path in NOTEBOOKS:           # one class per notebook: one xdist scope each
    _name = "TestRerun_" + _path.stem
    globals()[_name] = type(_name, (), {"test_every_cell_runs_twice_and_run_all_runs_twice": _test_for(_path)})


# ----------------------------------------------------------------------------------
# The judging rules, on hand-made cells (no kernel).
def _cells(*specs):
    cells = []
    for kind, source, tags in specs:
        cell = (nbformat.v4.new_code_cell if kind == "code" else nbformat.v4.new_markdown_cell)(source)
        if tags:
            cell.metadata["tags"] = tags
        cells.append(cell)
    return cells


BACKWARD = ("RuntimeError", "Trying to backward through the graph a second time (or directly access...)")


def test_an_untagged_cell_may_not_fail_in_any_run():
    cells = _cells(("code", "y.backward()", None))
    assert judge(cells, 0, None, None, "run again at once") is None
    failure = judge(cells, 0, None, BACKWARD, "run again at once")
    assert failure.startswith("cell 0 [y.backward()] run again at once: RuntimeError: Trying to backward")


def test_a_raises_exception_cell_may_raise_its_own_error_again_but_no_other():
    cells = _cells(("code", "d.backward(retain_variables=True)", [RAISES]))
    typeerror = ("TypeError", "unexpected keyword argument 'retain_variables'")
    assert judge(cells, 0, typeerror, typeerror, "run again at once") is None
    assert judge(cells, 0, typeerror, None, "Run All again") is None
    assert "its first run raised TypeError" in judge(cells, 0, typeerror, BACKWARD, "run again at once")
    other_message = ("TypeError", "backward() missing 1 required positional argument")
    assert "its first run raised TypeError" in judge(cells, 0, typeerror, other_message, "Run All again")


def test_a_fails_on_rerun_cell_may_fail_later_only_with_the_error_its_text_explains():
    cells = _cells(("markdown", "Run it again: the RuntimeError says the graph was freed.", None),
                   ("code", "loss.backward()", [FAILS_ON_RERUN]))
    assert judge(cells, 1, None, BACKWARD, "run again at once") is None
    assert judge(cells, 1, None, BACKWARD, "Run All again") is None
    assert "first run must pass" in judge(cells, 1, None, BACKWARD, "first run")
    assert "names" in judge(cells, 1, None, ("KeyError", "'w'"), "run again at once")
    by_message = _cells(("code", "y.backward()", [FAILS_ON_RERUN]),
                        ("markdown", "It fails: *Trying to backward through the graph a second time*.", None))
    assert judge(by_message, 0, None, BACKWARD, "run again at once") is None
