"""Execute notebooks top to bottom in a fresh kernel and save the outputs in place.

The kernel runs the way nbval runs it (cwd notebooks/, this interpreter), so the
saved outputs are exactly what the tests will compare against.
"""
import pathlib
import sys
import time

import nbformat
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).resolve().parent.parent


def regen(path: pathlib.Path) -> float:
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    NotebookClient(nb, timeout=600, kernel_name="python3", record_timing=False,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    for cell in nb.cells:  # keep diffs small: no per-run metadata
        cell.metadata.pop("execution", None)
    nb.metadata.pop("widgets", None)
    nbformat.write(nb, path)
    return time.perf_counter() - start


def main(args):
    paths = [pathlib.Path(a).resolve() for a in args] or sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))
    for p in paths:
        print(f"{p.relative_to(ROOT)}: {regen(p):.1f} s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
