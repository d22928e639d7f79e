"""The repository's scripts, importable as one package: `from scripts import nav, build_site`.

`pip install -e .` (requirements.txt) installs this package next to `helpers` (pyproject.toml),
so `from scripts import ...` works the same in a script run as `python scripts/nav.py`, under
`python -m scripts.nav`, and in the tests, with no sys.path edits. The bash entry points
(`bash scripts/test`, `site`, `regen`, ...) set up .venv and call one script each.

What the scripts and tests share lives here: where things are, and the notebooks in order.
"""
from __future__ import annotations

import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
NB_DIR = ROOT / "notebooks"
BUILD = ROOT / "build"
NOTEBOOK_GLOB = "[0-9][0-9]_*.ipynb"     # 00_reading_the_graph.ipynb ...: the course, in order


def notebooks() -> list[pathlib.Path]:
    """Every notebook of the course, in reading order (their file names start with the number)."""
    return sorted(NB_DIR.glob(NOTEBOOK_GLOB))
