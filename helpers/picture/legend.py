"""Which marks a picture uses: its legend lists exactly those (palette.LEGEND says what each means)."""
from __future__ import annotations

from ..snapshot import NAMED_TENSOR_ROLES, Role, SavedState
from .far_uses import far_leaf_uses
from .marks import Marks
from .transposes import folded_transposes


def features(snaps, marks: Marks, grouping=None) -> list[str]:
    present = []
    saved = [s for snap in snaps for _, s in snap.saved_tensors()]
    roles = {t.role for snap in snaps for t in snap.tensors.values()}
    if Role.LEAF in roles:
        present.append("leaf")
    present.append("op")
    if roles & NAMED_TENSOR_ROLES:
        present.append("named")
    if any(s.state is SavedState.HELD and not s.modified for s in saved):
        present.append("held")
    if any(s.state is SavedState.FREED for s in saved):
        present.append("freed")
    if any(s.modified for s in saved):
        present.append("modified")
    if any(snap.shared_buffers() for snap in snaps):
        present.append("shared")
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
    if any(snap.above is not None for snap in snaps):
        present.append("above")
    return present
