"""Fills and a thick path chosen by the caller: the training step that made each op
(backward_twice.diagnosis_picture.draw_steps), where backward stopped and the path from the loss to it
(stop_picture). Marks.fills replace a box's usual fill; Marks.path edges are drawn thick."""
from __future__ import annotations

from .marks import Marks
from .palette import STOP
from .scene import Scene, Span


def fill(scene: Scene, marks: Marks) -> None:
    """Each box's fill, and beside its name the word that fill means (Marks.tags: 'step 2')."""
    for nid, colour in marks.fills.items():
        box = scene.boxes.get(nid)
        if box is None or box.table is None:
            continue
        if box.kind == "op":
            box.table.rows[0][0].bg = colour
        elif box.kind == "tensor":
            box.table.bg = colour
    for nid, word in marks.tags.items():
        box = scene.boxes.get(nid)
        if box is not None and box.table is not None and box.kind in ("op", "tensor"):
            box.table.rows[0][0].spans.append(Span(f" \u00b7 {word}", size=10))


def thicken(scene: Scene, marks: Marks) -> None:
    if not marks.path:
        return
    for e in scene.edges:
        if e.origin is not None and e.via is None:
            continue                      # a reference box's edge is never on the path
        ends = {(e.origin or e.tail, e.via), (e.via, e.head)} if e.via else {(e.tail, e.head)}
        if ends & marks.path:
            e.style, e.colour, e.width, e.mark_colour = None, STOP, 3, None
