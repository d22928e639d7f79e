"""The cheat sheet (notebooks/11_cheat_sheet.ipynb): one decision table, every row linked to the
section that proves it, every statement backed by a (folded) check cell.

nbval runs the notebook itself (its check cells assert); these tests check its shape and links.
"""
import re
import urllib.parse

import nbformat

from scripts import ROOT
from scripts.skeleton import anchors, heading_anchor, local_links

SHEET = ROOT / "notebooks" / "11_cheat_sheet.ipynb"
TOOLS = ("retain_graph=True", "create_graph=True", "retain_grad()", "detach()", "torch.no_grad()",
         "torch.autograd.grad(", "zero_grad(set_to_none", "torch.utils.checkpoint", "torch.inference_mode()",
         ".data", "backward(inputs=", "requires_grad_(False)", "model.eval()",
         "saved_tensors_hooks(", "allow_mutation_on_saved_tensors(", "get_gradient_edge(")


def table_rows(nb) -> list:
    """[[cells...]] of the decision table (the markdown table under '## 1.')."""
    text = next(c.source for c in nb.cells if c.cell_type == "markdown" and "| Tool |" in c.source)
    rows = [line for line in text.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in row.strip("|").split(" | ")] for row in rows[2:]]


def test_table_has_one_full_row_per_tool():
    rows = table_rows(nbformat.read(SHEET, as_version=4))
    assert len(rows) == len(TOOLS)
    for tool, row in zip(TOOLS, rows):
        assert tool in row[0], (tool, row[0])
        assert len(row) == 5 and all(len(c) > 8 for c in row), row      # keeps, when, mistake, proof
        assert re.search(r"\]\(\d\d_\w+\.ipynb#", row[4]), f"{tool}: no link to the section that proves it"


def test_every_section_link_resolves():
    """A notebook restructured elsewhere renames its sections: this names the broken link."""
    links = [(f, frag) for f, frag in local_links(nbformat.read(SHEET, as_version=4)) if frag]
    assert len(links) >= len(TOOLS)
    broken = []
    for file, frag in links:
        target = SHEET.parent / file
        if not target.is_file():
            broken.append(file)
        elif frag and urllib.parse.unquote(frag) not in anchors(nbformat.read(target, as_version=4)):
            broken.append(f"{file}#{frag}")
    assert broken == [], f"cheat sheet links to sections that do not exist: {broken}"


def test_each_row_is_checked_by_a_folded_cell():
    nb = nbformat.read(SHEET, as_version=4)
    hidden = [c for c in nb.cells if c.cell_type == "code" and c.metadata.get("jupyter", {}).get("source_hidden")]
    checks = [c for c in hidden if "assert" in c.source]
    for tool in TOOLS:
        key = tool.split("(")[0].split("=")[0].replace("torch.", "")
        assert any(key in c.source for c in checks), f"no folded check cell for {tool}"
    for c in checks:        # each says what it checked, in its committed output
        assert any("checked" in o.get("text", "") for o in c.outputs), c.source[:60]


def test_anchor_rule_matches_a_known_heading():
    assert heading_anchor('### 8.3 "Gradient buffers" are not what `backward()` frees') == \
        '8.3-"Gradient-buffers"-are-not-what-backward()-frees'
