"""Which marks a picture uses: its legend lists exactly those (palette.LEGEND says what each means)."""
from __future__ import annotations

from ..snapshot import NAMED_TENSOR_ROLES, Role, SavedState, Snapshot
from .far_uses import far_leaf_uses
from .marks import Marks
from .transposes import folded_transposes

ROW_KEYS = ("held", "freed", "modified", "recomputed", "shared")     # what rows of saved tensors show


def features(snaps, marks: Marks, grouping=None) -> list[str]:
    present = []
    roles = {t.role for snap in snaps for t in snap.tensors.values()}
    if Role.LEAF in roles:
        present.append("leaf")
    present.append("op")
    if roles & NAMED_TENSOR_ROLES:
        present.append("named")
    rows = set().union(*(row_keys(snap) for snap in snaps))
    present += [k for k in ROW_KEYS if k in rows]
    if marks.highlight:
        present.append("running")
    if marks.ran:
        present.append("ran")
    if marks.changed:
        present.append("changed")
    if marks.spotlight:
        present.append("faded")
    if any(far_leaf_uses(snap) for snap in snaps):
        present.append("ref")
    if any(folded_transposes(snap) for snap in snaps):
        present.append("transpose")
    if grouping is not None and grouping.clusters:
        present.append("module")
    if grouping is not None and any(str(b).startswith("repeat") for b in grouping.boxes):
        present.append("repeat")
    if any(snap.truncated for snap in snaps):
        present.append("more")
    if any(snap.outside is not None for snap in snaps):      # a module drawn by path: one entry for both boxes
        present.append("outside")
    elif any(snap.above is not None for snap in snaps):
        present.append("above")
    return present


def row_keys(snap: Snapshot, ops=None) -> set[str]:
    """The ROW_KEYS the rows of these ops' saved tensors draw (every op's when None; a module overview of
    totals draws rows only in the op boxes it did not fold: Marks.totals)."""
    slots = list(snap.saved_tensors(ops))
    saved = [s for _, s in slots]
    shared = {(op.id, s.slot) for held in snap.shared_buffers().values() for op, s in held}
    return {k for k, present in (
        ("held", any(s.state is SavedState.HELD and not s.modified for s in saved)),
        ("freed", any(s.state is SavedState.FREED for s in saved)),
        ("modified", any(s.modified for s in saved)),
        ("recomputed", any(s.state is SavedState.RECOMPUTED for s in saved)),
        ("shared", any((op.id, s.slot) in shared for op, s in slots)),
    ) if present}


# A legend as wide as this never makes its picture shrink at notebook width (860 px = 645 pt).
LEGEND_BUDGET_PT = 645


def columns(entries, budget_pt: float = LEGEND_BUDGET_PT) -> int:
    """How many entries a legend row holds: the most (up to 4) whose measured width fits
    `budget_pt`, so a legend takes as few rows as it can without widening a picture past the
    notebook's width; 2 when even 2 do not fit (the legend's words wrap nowhere)."""
    if len(entries) <= 2:
        return 2
    for n in (4, 3):
        if n <= len(entries) and _legend_width(tuple(entries), n) <= budget_pt:
            return n
    return 2


_WIDTHS: dict = {}      # (the entries' words, columns) -> width in pt: legends repeat


def _legend_width(entries: tuple, n: int) -> float:
    key = (tuple(words for _, words in entries), n)
    if key not in _WIDTHS:
        from . import dot_writer
        from .layout import laid_out
        plain = laid_out(dot_writer.write_legend(entries, n), "plain")
        _WIDTHS[key] = next((float(line.split(" ")[4]) * 72 for line in plain.splitlines()
                             if line.startswith("node ")), float("inf"))
    return _WIDTHS[key]
