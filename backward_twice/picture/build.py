"""A Snapshot to a scene: the passes, in order. Each pass is in a file named for its job."""
from __future__ import annotations

from dataclasses import replace

from ..snapshot import Snapshot
from . import (
    cap,
    chains,
    far_uses,
    focus,
    module_clusters,
    palette,
    ran_marks,
    region,
    shared_sizes,
    spotlight,
    step_colours,
    transposes,
)
from .legend import ROW_KEYS, columns, features, row_keys
from .marks import NO_MARKS, Grouping, Marks
from .scene import Scene
from .snapshot_boxes import base_scene


def scene_of(snap: Snapshot, title=None, highlight=(), marks: Marks = NO_MARKS, grouping: Grouping | None = None,
             refs: bool = True, fold: bool = True, sizes=None, legend: bool = True, entries=None) -> Scene:
    """The scene of one snapshot. refs=False / fold=False draw every use of a shared leaf as an
    edge / every TBackward0 as a box (slow to lay out; kept for the benchmark). sizes: box sizes
    shared with related pictures (shared_sizes.measure); entries: legend keys shared too (a
    stepper's frames), else this picture's own; legend=False: no legend, the title on top."""
    scene = base_scene(snap, grouping.params if grouping is not None else frozenset())
    if fold:
        transposes.fold(scene, snap)
    if refs:
        far_uses.add_refs(scene, snap)
    step_colours.fill(scene, marks)
    ran_marks.mark(scene, marks, highlight)
    spotlight.fade(scene, marks)
    if marks.region:
        region.keep_region(scene, snap, marks)
    shared_sizes.apply(scene, sizes)
    if grouping is not None:
        module_clusters.group(scene, grouping)
    cap.add_more_box(scene, snap)
    focus.add_above_box(scene, snap)
    focus.add_outside_box(scene, snap)
    chained = chains.fold(scene, snap, totals=marks.totals) if marks.compact else 0
    if marks.compact:
        focus.compact_params(scene, snap)
    step_colours.thicken(scene, marks)
    if grouping is not None:
        module_clusters.order_only(scene, grouping)
    scene.title = title
    scene.title_width = (sizes or {}).get("title", (None,))[0]
    if legend:
        scene.framed_title = bool(title)
        m = replace(marks, highlight=frozenset(highlight) | marks.highlight) if highlight else marks
        keys = features([snap], m, grouping) if entries is None else entries
        if region.REGION in scene.boxes:
            keys = [*keys, "region"]
        if chained:
            kinds = {"ops" if b.table.style is None else "chain" for b in scene.boxes.values() if b.kind == "chain"}
            keys = [*keys, *sorted(kinds, reverse=True)]
        if marks.totals:        # rows of saved tensors drawn only in the op boxes left: their keys only
            keys = [k for k in keys if k not in ROW_KEYS or k in row_keys(snap, [b for b in scene.boxes
                                                                                   if b in snap.ops])]
        scene.legend = palette.entries(keys, marks.legend)
        scene.legend_columns = columns(scene.legend)
    return scene
