"""Marks of a backward call on a picture: the node running now (a stepper's frame), the nodes the
call ran with their order ('ran #3'), and the .grad it changed (thick frame, bold value)."""
from __future__ import annotations

from .marks import Marks
from .palette import CHANGED, HIGHLIGHT, RAN
from .scene import Cell, Scene, Span


def badge(order) -> list[Span]:
    """'ran #3' (or 'ran #2, #7' for a node two backward calls ran) after a node's name."""
    if not order:
        return []
    order = (order,) if isinstance(order, int) else tuple(order)
    text = ", ".join(f"#{k}" for k in order[:3]) + (", ..." if len(order) > 3 else "")
    return [Span("\u00a0"), Span(f"ran {text}", colour=RAN, size=10, bold=True)]


def mark(scene: Scene, marks: Marks, highlight=frozenset()) -> None:
    highlight = frozenset(highlight) | marks.highlight
    for box in scene.boxes.values():
        order = marks.ran.get(box.id)
        t = box.table
        if box.id in marks.notes:          # a recorded fact, word for word, as the box's last row
            t.rows.append([Cell([Span(marks.notes[box.id], italic=True)], size=10, align="LEFT")])
        if box.kind == "op":
            if order is not None:
                t.rows[0][0].spans += badge(order)
                t.colour, t.border = RAN, 2
            if box.id in highlight:
                t.rows[0][0].bg = HIGHLIGHT
        elif box.kind in ("tensor", "param"):
            if order is not None:
                t.rows[0][0].spans += badge(order)
            if box.id in highlight:
                t.bg = HIGHLIGHT
            if box.kind == "tensor" and box.id in marks.changed:
                t.rows[2][0].spans[-1] = Span(t.rows[2][0].spans[-1].text, colour=CHANGED, bold=True)
                t.colour, t.border = CHANGED, 3
            elif box.kind == "tensor" and order is not None:
                t.colour, t.border = RAN, 2
    for e in scene.edges:
        if e.via is None:
            continue
        order = marks.ran.get(e.via)
        if order:
            e.tail_mark += " " + ", ".join(f"#{k}" for k in order[:3])
            e.colour = e.mark_colour = RAN
            e.width = 2
        if e.via in highlight:
            e.colour, e.mark_colour, e.width = HIGHLIGHT, None, 3
