"""Spotlight: one change should draw the eye (notebook 04: y's 'retains grad' line, not the red
FREED marks around it). Every box outside Marks.spotlight is faded: a pale frame, no fill, grey text
that still reads (FADED_TEXT, >= 4.5:1: de-emphasised by its frame and fill, not made unreadable). A view of
what changed leaves out the ops' settings (`alpha = 1`): backward never changes them."""
from __future__ import annotations

from .marks import Marks
from .palette import FADED, FADED_TEXT
from .scene import Scene


def fade(scene: Scene, marks: Marks) -> None:
    if not marks.spotlight:
        return
    for box in scene.boxes.values():
        if box.table is not None and box.kind == "op":
            box.table.rows = [row for row in box.table.rows if not (row and row[0].setting)]
        if box.id in marks.spotlight or box.table is None or box.kind not in ("op", "tensor", "param", "ref"):
            continue
        t = box.table
        t.colour, t.bg, t.border = FADED, None, 1
        for row in t.rows:
            for cell in row:
                cell.colour, cell.bg = FADED_TEXT, None
                for span in cell.spans:
                    span.colour = None
