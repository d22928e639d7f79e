"""The picture's visual language: each colour and mark has one meaning, in every tool.

`LEGEND` is the whole language, {key: (swatch, words)}; a picture's legend lists the keys it
uses. tests/test_palette.py fails when two meanings share a colour.
"""
from __future__ import annotations

from .scene import Cell

LEAF = "#cfe8fc"
OP = "#eeeeee"
NAMED = "#d9f2d0"
FREED = "#c0392b"
HELD = "#1e6b30"
VALUE = "#666666"
HIGHLIGHT = "#ffb703"
MODIFIED = "#b35c00"
RAN = "#6a3d9a"
CHANGED = "#0b62a4"
CLUSTER = "#7a8a9a"
EDGE = "#555555"
CALL_FILL = "#f4f6f8"


def swatch(bg=None, colour=None, style=None, border=None) -> Cell:
    return Cell(bg=bg, frame_colour=colour, style=style, border=border, width=12, height=10)


LEGEND = {
    "leaf": (swatch(LEAF), "leaf tensor, with its .grad"),
    "op": (swatch(OP), "op (grad_fn), with what it saved"),
    "named": (swatch(NAMED), "tensor you named (dashed: made by)"),
    "held": (swatch(HELD), "saved tensor held in memory"),
    "freed": (swatch(FREED), "saved tensor FREED by backward"),
    "modified": (swatch(MODIFIED), "saved, then modified in place"),
    "shared": (swatch(VALUE), "shared buffer: one buffer, several slots (counted once)"),
    "running": (swatch(HIGHLIGHT), "the node running in this step"),
    "ran": (swatch(RAN), "ran #k: ran in this backward, k-th"),
    "changed": (swatch(CHANGED), ".grad changed by this call"),
    "ref": (swatch(LEAF, style="dashed", border=1), "same leaf, drawn again near a far use"),
    "transpose": (swatch(), ".T on an edge: weight used transposed (TBackward0)"),
    "module": (swatch(colour=CLUSTER, style="rounded", border=1), "module call: saved bytes held / freed"),
    "repeat": (swatch(CALL_FILL, colour=CLUSTER, style="dashed", border=1), "xN: N more blocks like the one drawn, folded"),
    "more": (swatch(colour=FREED, style="dashed", border=1), "nodes beyond max_nodes, counted"),
    "above": (swatch(colour=CLUSTER, style="dashed", border=1), "nodes from the focus to the roots, counted"),
}


def entries(keys, extra=()) -> list:
    """Legend entries [(swatch Cell, words)] for `keys`, then `extra` ((colour, words), ...)."""
    return [LEGEND[k] for k in keys] + [(swatch(c), words) for c, words in extra]
