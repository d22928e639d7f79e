"""Same size, same place: a before/after pair and a stepper's frames draw the same graph with
labels of different sizes (a FREED mark, a longer grad, a 'ran #k' badge), and dot lays out
each picture from its own sizes: the trunk moved between 'before' and 'after'. Each box is
measured once in every picture of the set, and drawn at the largest size in all of them."""
from __future__ import annotations

import math

from . import dot_writer
from .layout import laid_out
from .scene import Scene


def measure(scenes: list[Scene], titles=()) -> dict[str, tuple[int, int]]:
    """{box id: (width, height)} in whole points, the largest over `scenes`; "title": the
    largest of `titles`. Measured by one layout of every box alone: no edges, one rank."""
    sizes: dict[str, tuple[int, int]] = {}
    for line in laid_out(dot_writer.write_boxes(scenes, titles), "plain").splitlines():
        if line.startswith("node "):
            _, name, _, _, w, h = line.split(" ", 6)[:6]
            key = name.split("_", 1)[1]
            w, h = math.ceil(float(w) * 72 - 0.01), math.ceil(float(h) * 72 - 0.01)
            old = sizes.get(key, (0, 0))
            sizes[key] = (max(old[0], w), max(old[1], h))
    return sizes


def apply(scene: Scene, sizes) -> None:
    """Each box drawn at least its shared size: the table's WIDTH and HEIGHT (edges still end at
    the box), and a filled first row (an op's name) stretched to it, which dot does not do."""
    for nid, (w, h) in (sizes or {}).items():
        box = scene.boxes.get(nid)
        if box is None or box.table is None or box.simple:    # count boxes keep their own size
            continue
        t = box.table
        t.width, t.height = w, h
        if t.rows and t.rows[0] and t.rows[0][0].bg and t.cellspacing == 0:
            t.first_row_width = w - 2 * int(t.border or 0)
