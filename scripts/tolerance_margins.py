"""How far each notebook's `torch.allclose` check is from flipping (docs/stable_outputs.md, rule 2).

Runs every notebook top to bottom (as scripts/regen does, outputs not saved) with `torch.allclose`
wrapped: each call records margin = max |a - b| / (atol + rtol |b|), which is below 1 when the check
says "close". A check whose margin is near 1 holds on this CPU and may flip on another, whose
kernels round the same sums differently by a few float32 steps. So it fails when a "close" check
has margin above 1/MIN_ROOM or a "not close" one below MIN_ROOM: such a check needs a tolerance of
its own, chosen from the dtype and the sums involved, with a comment saying why.

    python -m scripts.tolerance_margins            # every notebook; exit 1 if a check is within MIN_ROOM
    python -m scripts.tolerance_margins 13_ddp_on_the_cpu.ipynb
"""
from __future__ import annotations

import json
import sys

import nbformat

from scripts import notebooks
from scripts.regen import client

MIN_ROOM = 5.0      # a check must be at least this many times inside (or outside) its tolerance

WRAP = r'''
import torch as _torch
_allclose = _torch.allclose
_MARGINS = []


def _recording_allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    result = _allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    try:
        a64, b64 = _torch.as_tensor(a).double(), _torch.as_tensor(b).double()
        margin = ((a64 - b64).abs() / (atol + rtol * b64.abs())).max().item()
    except Exception:
        margin = float("nan")
    _MARGINS.append((get_ipython().execution_count, bool(result), margin))
    return result


_torch.allclose = _recording_allclose
'''
DUMP = "import json as _json; print(_json.dumps(_MARGINS))"


def margins(path) -> list[tuple[int, bool, float]]:
    """[(code cell index, close?, margin)] for every torch.allclose call of a run of `path`."""
    nb = nbformat.read(path, as_version=4)
    n_code = sum(c.cell_type == "code" for c in nb.cells)
    nb.cells.insert(0, nbformat.v4.new_code_cell(WRAP))
    nb.cells.append(nbformat.v4.new_code_cell(DUMP))
    client(nb, path.parent, allow_errors=True).execute()
    counts = [c.execution_count for c in nb.cells if c.cell_type == "code"]
    index = {count: i - 1 for i, count in enumerate(counts) if count is not None and 0 < i <= n_code}
    out = json.loads("".join(o.get("text", "") for o in nb.cells[-1].outputs))
    return [(index.get(count, -1), close, margin) for count, close, margin in out]


def main(argv: list[str]) -> int:
    paths = [p for p in notebooks() if not argv or p.name in argv]
    fragile = 0
    for path in paths:
        found = margins(path)
        close = [m for _, c, m in found if c and m == m]
        apart = [m for _, c, m in found if not c and m == m]
        near = [(i, c, m) for i, c, m in found if m == m and (m > 1 / MIN_ROOM if c else m < MIN_ROOM)]
        fragile += len(near)
        print(f"{path.name}: {len(found)} checks; close ones at most {max(close, default=0):.3g} of their "
              f"tolerance, apart ones at least {min(apart, default=float('inf')):.3g} times it"
              + "".join(f"\n  FRAGILE: code cell {i}: {'close' if c else 'not close'} at {m:.3g} of its tolerance"
                        for i, c, m in near), flush=True)
    if fragile:
        print(f"tolerance margins: {fragile} check(s) within {MIN_ROOM:g}x of flipping: give each a tolerance of its "
              "own, from the dtype and the sums involved, with a comment saying why", flush=True)
    return 1 if fragile else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
