"""Apply the course-wide cell changes to every notebook (idempotent: run it again after any merge).

    python -m scripts.course_cells            # rewrite notebooks/NN_*.ipynb in place (sources and metadata only)
    python -m scripts.course_cells --check    # exit 1 if a notebook lacks one of the changes (tests/test_course_cells.py)

What it does, to the source and metadata of the cells concerned only (cell ids, outputs and every
other cell untouched; running it twice changes nothing the second time):
1. the first code cell starts with INSTALL_BLOCK: on Colab (or any Jupyter without the course
   installed) it installs the course's `helpers` with pip, keeping the platform's own torch
   (pyproject.toml asks for torch>=2.13); where `helpers` imports, it does nothing. The source
   is COURSE_PIP, or the environment variable BACKWARD_TWICE_PIP at run time (a local path in
   the zero-install test, scripts/zero_install_check);
2. every cell tagged `raises-exception` starts with the line `%raises` (helpers/notebook.py; a
   line magic for ruff, which skips cells with cell magics, made the cell magic `%%raises` by
   an IPython input transformer): the error is raised for real and shown as the cell's error output, and
   Run All goes on in Colab and VS Code too (they ignore the tag); nbval still compares it;
3. every exercise check cell (`check("N.M", ...)`) is folded (`jupyter.source_hidden`): its hint
   is not in sight before a first wrong answer.
"""
from __future__ import annotations

import argparse
import sys

import nbformat

from scripts import notebooks, skeleton

# Where Colab installs the course from. The repository's public address goes here (then re-run
# this script); until then, BACKWARD_TWICE_PIP must be set where the notebooks run without it.
COURSE_PIP = "backward-twice-helpers @ git+https://github.com/OWNER/backward-twice"
INSTALL_MARK = "# Colab, or a Jupyter without this course installed:"
INSTALL_BLOCK = f"""{INSTALL_MARK} install its `helpers` (and graphviz, pygraphviz);
# the platform's own torch is kept (torch>=2.13). Where `helpers` imports, this does nothing.
import importlib, importlib.util, os
if importlib.util.find_spec("helpers") is None:
    course = os.environ.get("BACKWARD_TWICE_PIP", "{COURSE_PIP}")
    %pip install --quiet {{course}}
    importlib.invalidate_caches()
"""
INSTALL_END = "    importlib.invalidate_caches()\n"
RAISES_MAGIC = "%raises"


def with_install_block(source: str) -> str:
    """`source` with INSTALL_BLOCK at its top, replacing an earlier version of the block."""
    if source.startswith(INSTALL_MARK):
        end = source.find(INSTALL_END)
        if end < 0:
            raise ValueError("the install block's last line is missing: remove the block by hand, then re-run")
        source = source[end + len(INSTALL_END):]
    return INSTALL_BLOCK + source


def with_raises_magic(source: str) -> str:
    if source.lstrip().startswith(("%raises", "%%raises")):
        return source.replace("%%raises", RAISES_MAGIC, 1)
    return f"{RAISES_MAGIC}\n{source}"


def apply(nb) -> list:
    """Apply the three changes to `nb` in place; return what changed, one line per cell."""
    changed = []
    sk = skeleton.classify(nb)
    first = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        before = (cell.source, repr(cell.metadata.get("jupyter")))
        if i == first:
            cell.source = with_install_block(cell.source)
        if "raises-exception" in skeleton.tags(cell):
            cell.source = with_raises_magic(cell.source)
        if sk.kind[i] == "check":
            cell.metadata.setdefault("jupyter", {})["source_hidden"] = True
        if (cell.source, repr(cell.metadata.get("jupyter"))) != before:
            changed.append(f"cell {i} ({cell.get('id')})")
    return changed


def main(argv) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 if a notebook needs a change")
    args = ap.parse_args(argv)
    stale = 0
    for path in notebooks():
        nb = nbformat.read(path, as_version=4)
        changed = apply(nb)
        if changed and args.check:
            stale += 1
            print(f"{path.name}: needs `python -m scripts.course_cells` ({', '.join(changed)})")
        elif changed:
            nbformat.write(nb, path)
            print(f"{path.name}: {len(changed)} cell(s) updated")
    if args.check and not stale:
        print(f"course cells: all {len(notebooks())} notebooks up to date")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
