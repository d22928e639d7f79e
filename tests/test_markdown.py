"""Markdown cells hold no control characters (a `\\t` in `\\times` once became a real tab), and
Going deeper sections follow the convention JupyterLab and the site fold them by (GUIDE.md)."""
import re

import nbformat
import pytest

from scripts import lengths

NOTEBOOKS = lengths.notebooks()
CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")       # every control character but the newline


def control_characters(nb):
    """[(cell number, cell id, character name, the text around it)] for every markdown cell with one."""
    found = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        for m in CONTROL.finditer(cell.source):
            around = cell.source[max(0, m.start() - 20):m.end() + 20]
            found.append((i, cell.get("id", "?"), f"U+{ord(m.group()):04X}", around))
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_markdown_has_no_control_characters(path):
    found = control_characters(nbformat.read(path, as_version=4))
    assert not found, f"{path.name}: control characters in markdown: " + "; ".join(
        f"cell {i} (id {cid}) has {name} in {around!r}" for i, cid, name, around in found)


def test_a_tab_in_markdown_is_found_and_named():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("fine\nlines"),
                                         nbformat.v4.new_code_cell("x =\t1"),     # code may hold tabs
                                         nbformat.v4.new_markdown_cell("2 \times 1024")])
    assert [(i, name) for i, _, name, _ in control_characters(nb)] == [(2, "U+0009")]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_going_deeper_headings_open_their_cell_and_start_folded(path):
    """A 'Going deeper' heading is its cell's first line, and the cell carries
    jp-MarkdownHeadingCollapsed, so JupyterLab opens the notebook with the section folded."""
    nb = nbformat.read(path, as_version=4)
    wrong = []
    for i, (cell, pieces) in enumerate(lengths.sections(nb)):
        for n, piece in enumerate(pieces):
            if piece.opens == "deeper":
                if n != 0:
                    wrong.append(f"cell {i}: {piece.heading!r} is not the cell's first line")
                elif not cell.metadata.get("jp-MarkdownHeadingCollapsed"):
                    wrong.append(f"cell {i}: {piece.heading!r} lacks metadata jp-MarkdownHeadingCollapsed: true")
    assert not wrong, f"{path.name}: " + "; ".join(wrong)
