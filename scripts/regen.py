"""Execute notebooks top to bottom in a fresh kernel and save the outputs in place.

The kernel runs the way nbval runs it (cwd notebooks/, this interpreter), so the
saved outputs are exactly what the tests will compare against.
"""
import pathlib
import sys
import time

import nbformat
from nbclient import NotebookClient

from scripts import ROOT, notebooks

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
CELL_TIMEOUT = 600      # seconds one cell may run before nbclient stops it: a hang fails, it never blocks


def client(nb, cwd, allow_errors: bool = False) -> NotebookClient:
    """The one way notebooks are run outside nbval (regen, tests/test_rerun.py, tests/test_student.py):
    a fresh python3 kernel of this interpreter, in `cwd`, each cell given CELL_TIMEOUT seconds."""
    return NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3", allow_errors=allow_errors,
                          record_timing=False, resources={"metadata": {"path": str(cwd)}})


def drop_dead_widget_view(output) -> None:
    """Remove a widget view from a saved output that has a static form too.

    Widget state is not saved (it holds random model ids), so once the kernel is gone the
    view could only show "Error displaying widget: model not found" in JupyterLab. Without
    it, JupyterLab and the static site show the output's text/html (the stepper's frames).
    nbval never compares this mime type, so the fresh run's view does not count as a change.
    """
    data = output.get("data", {})
    if WIDGET_VIEW in data and set(data) - {WIDGET_VIEW, "text/plain"}:
        del data[WIDGET_VIEW]


def regen(path: pathlib.Path) -> float:
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    client(nb, path.parent).execute()
    for cell in nb.cells:  # keep diffs small: no per-run metadata
        cell.metadata.pop("execution", None)
        for out in cell.get("outputs", []):
            drop_dead_widget_view(out)
    nb.metadata.pop("widgets", None)
    nbformat.write(nb, path)
    return time.perf_counter() - start


def main(args):
    paths = [pathlib.Path(a).resolve() for a in args] or notebooks()
    for p in paths:
        print(f"{p.relative_to(ROOT) if p.is_relative_to(ROOT) else p}: {regen(p):.1f} s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
