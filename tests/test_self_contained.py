"""A core path that stands on its own (issue 20 §5), checked by parsing the cells.

- No visible core-path code cell uses a name that only folded code binds: a Going deeper
  section's cells, or a core cell whose source is hidden. A learner who reads the core path
  sees where every name they read comes from.
- No exercise sends the learner into a Going deeper section: its text does not name or link
  one, and its cells use no name that only a Going deeper section binds (the check above).
- An exercise's check cell (hidden) computes its answer from core-path code only: it uses no name
  that only a Going deeper section binds, so the check works with every Going deeper section unread
  (folded sections are the ones a reader, or a course that cuts them, skips).
Where cells are folded is scripts/lengths.py's rule (`sections`), read through scripts/skeleton.py.
"""
import ast

import pytest
from IPython.core.inputtransformer2 import TransformerManager
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from scripts import lengths, skeleton

NOTEBOOKS = lengths.notebooks()
_IPYTHON = TransformerManager()


def bound_and_used(source: str) -> tuple[set, set]:
    """(names a cell binds, names it reads) in its own code; IPython magics are turned into Python first.
    A function parameter is no use of a folded name of the same spelling (it is the cell's own), and
    binds nothing outside the cell."""
    tree = ast.parse(_IPYTHON.transform_cell(source))
    bound, used, params = set(), set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (used if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.arg):
            params.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return bound, used - params


def names_bound_only_outside(nb, inside, reads) -> list[tuple[int, list[str]]]:
    """[(cell index, names)] of the code cells `inside(sk, i, cell)` keeps whose source `reads(cell)`
    and that read names only cells outside bind (solutions and navigation left out)."""
    sk = skeleton.classify(nb)
    bound_in, bound_out, uses = set(), set(), []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or sk.kind[i] in ("solution", "nav"):
            continue
        bound, used = bound_and_used(cell.source)
        if inside(sk, i, cell):
            bound_in |= bound
            if reads(cell):
                uses.append((i, used))
        else:
            bound_out |= bound
    only_outside = bound_out - bound_in
    return [(i, sorted(used & only_outside)) for i, used in uses if used & only_outside]


def folded_names_used(nb) -> list[tuple[int, list[str]]]:
    """[(cell index, names)] of the visible core cells that read names bound only in folded code
    (a Going deeper cell, or a hidden core cell)."""
    return names_bound_only_outside(nb, lambda sk, i, cell: sk.core(i) and not lengths.is_hidden(cell),
                                    lambda cell: True)


def exercises_pointing_into_going_deeper(nb) -> list[str]:
    """The exercises whose text (the heading's block, or the check call's hint) names or links a Going
    deeper section."""
    found = []
    deeper = {skeleton.heading_anchor(p.heading) for _, pieces in lengths.sections(nb) for p in pieces
              if p.opens == "deeper"}
    for cell, pieces in lengths.sections(nb):
        for p in pieces:
            if p.part != "core" or cell.cell_type != "markdown" or "### Exercise" not in p.text:
                continue
            for block in p.text.split("### Exercise")[1:]:
                title = block.splitlines()[0].strip()
                if "going deeper" in block.lower() or any(f"#{a}" in block for a in deeper):
                    found.append(title)
        if cell.cell_type == "code" and pieces and pieces[0].part == "core":
            for name, _ in skeleton.check_calls(cell.source):
                if "going deeper" in cell.source.lower():
                    found.append(f"{name} (its check cell)")
    return found


def check_cells_using_going_deeper(nb) -> list[tuple[int, list[str]]]:
    """[(cell index, names)] of the core-path cells that call check(...) and read names that only a
    Going deeper section binds (a hidden core cell's names count as the core path's)."""
    return names_bound_only_outside(nb, lambda sk, i, cell: sk.core(i),
                                    lambda cell: bool(list(skeleton.check_calls(cell.source))))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_visible_core_cells_use_no_name_bound_only_in_folded_code(path):
    nb = skeleton.read(path).nb
    bad = folded_names_used(nb)
    assert not bad, (f"{path.name}: visible core cells use names bound only in folded code (a Going deeper "
                     f"section or a hidden cell): " + "; ".join(f"cell {i}: {', '.join(n)}" for i, n in bad)
                     + ". Show the definition on the core path, or fold the use.")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_no_exercise_needs_a_going_deeper_section(path):
    nb = skeleton.read(path).nb
    assert exercises_pointing_into_going_deeper(nb) == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_exercise_checks_use_no_name_bound_only_in_going_deeper(path):
    nb = skeleton.read(path).nb
    bad = check_cells_using_going_deeper(nb)
    assert not bad, (f"{path.name}: exercise checks use names only a Going deeper section binds: "
                     + "; ".join(f"cell {i}: {', '.join(n)}" for i, n in bad) + ". Compute the answer in the check cell.")


def _hidden(source):
    cell = new_code_cell(source)
    cell.metadata["jupyter"] = {"source_hidden": True}
    return cell


def test_the_rule_on_a_small_notebook():
    nb = new_notebook(cells=[
        new_markdown_cell("# 01 · T"),
        _hidden("helper = 1\nshared = 2"),                         # hidden: folded code
        new_code_cell("shared = 3\nprint(helper + shared)"),        # helper: only folded; shared: also visible
        new_code_cell("def f(helper):\n    return helper"),         # a parameter, not a use
        new_markdown_cell("## Going deeper: more"),
        new_code_cell("deep = 4"),
        new_markdown_cell("## 2. Back"),
        new_code_cell("%matplotlib inline\nx = deep"),               # IPython syntax parsed; deep: folded only
        new_markdown_cell("## 3. Exercises\n\n### Exercise 1.1: predict\nUse the Going deeper section.\n\n"
                          "### Exercise 1.2: predict\nSee [this](#Going-deeper:-more).\n\n"
                          "### Exercise 1.3: predict\nNothing folded."),
        new_code_cell('check("1.3", answer_1_3, 3, hint="the Going deeper section has it")'),
        new_markdown_cell("## Solutions"),
        new_code_cell("check('1.1', deep, deep)"),                  # a solution may use anything
    ])
    assert folded_names_used(nb) == [(2, ["helper"]), (7, ["deep"])]
    assert check_cells_using_going_deeper(nb) == []                 # the check 1.3 uses no folded name
    assert exercises_pointing_into_going_deeper(nb) == ["1.1: predict", "1.2: predict", "1.3 (its check cell)"]


def test_a_check_cell_that_needs_a_going_deeper_function_is_found():
    """Notebook 10's check 10.3 once called tbptt(3, 6), defined only in a Going deeper section."""
    nb = new_notebook(cells=[
        new_markdown_cell("# 10 · T"),
        new_markdown_cell("## 1. Core"),
        _hidden("steps = 24"),                                      # hidden core code: the core path's own
        new_markdown_cell("### Going deeper: measured"),
        new_code_cell("def tbptt(k1, k2):\n    return k2 / k1"),
        new_markdown_cell("## 2. Exercises\n\n### Exercise 10.3: predict\nHow many?"),
        _hidden('check("10.3", answer_10_3, tbptt(3, 6) + steps)'),
        _hidden('check("10.4", answer_10_4, steps / 3)'),
    ])
    assert check_cells_using_going_deeper(nb) == [(6, ["tbptt"])]
