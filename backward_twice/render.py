"""A Snapshot's pictures as DOT: single, a pair side by side or stacked, a set sharing box sizes.

The public face of backward_twice.picture (the scene, its passes, the DOT writer, the layout): callers
keep importing `render.to_dot`, `render.pair_dot`, `render.svg_from_dot`, ... from here.
"""
from __future__ import annotations

from .picture import dot_writer, shared_sizes
from .picture.build import scene_of
from .picture.dot_writer import esc  # noqa: F401 (re-exported)
from .picture.far_uses import FAR_RANKS, far_leaf_uses, op_levels  # noqa: F401 (re-exported)
from .picture.layout import engine, laid_out, quiet_fd2, stack_svgs, svg_from_dot, svg_img  # noqa: F401
from .picture.legend import columns, features
from .picture.marks import NO_MARKS, Grouping, Marks
from .picture.palette import CHANGED, CLUSTER, FREED, HELD, HIGHLIGHT, LEAF, MODIFIED, NAMED, OP, RAN, STOP, VALUE  # noqa: F401
from .picture.snapshot_boxes import GRAD_VALUES_SHOWN, short_values  # noqa: F401 (re-exported)
from .picture.transposes import TRANSPOSE, folded_transposes  # noqa: F401 (re-exported)
from .snapshot import Snapshot, gc_paused, worked_out_once


def to_dot(snap: Snapshot, title=None, highlight=(), marks: Marks = NO_MARKS,
           grouping: Grouping | None = None, legend: bool = True, refs: bool = True,
           sizes=None, entries=None, fold: bool = True) -> str:
    """DOT of one snapshot (picture.build.scene_of says what each argument does)."""
    with gc_paused(), worked_out_once():
        return dot_writer.write(scene_of(snap, title, highlight, marks, grouping, refs=refs, fold=fold,
                                         sizes=sizes, legend=legend, entries=entries))


SIMPLEST_CAP = 4        # the last try at a readable picture draws this many nodes (at 10 a DenseNet-style
                        # concatenation of 40 layers reads at 11.6 px; a GRU step's three gates side by side need fewer)


def cut_title(title, cap) -> str:
    """The title of a picture drawn up to `cap` nodes so that it reads: it says so, and how to see more."""
    note = f"drawn up to {cap} nodes, to read at notebook width (max_nodes= draws more)"
    return f"{title}: {note}" if title else note


def caps(nodes: int):
    """The node counts tried, largest first, when a picture of `nodes` nodes does not fit: halving
    down to SIMPLEST_CAP."""
    cap = nodes
    while cap > SIMPLEST_CAP:
        cap = max(SIMPLEST_CAP, cap // 2)
        yield cap


def short_cut_title(title, cap) -> str:
    """cut_title, short: the title of a picture cut after the fact (an after view, a module picture)."""
    words = f"{cap} nodes nearest the output (print(pic) lists all)"
    return f"{title}: {words}" if title else f"the {words}"


def simpler_cuts(snap: Snapshot, title=None, marks: Marks = NO_MARKS):
    """DOT of `snap` cut to fewer nodes each time (picture.cap.cut: the nodes nearest the roots, the
    rest counted), each titled with what it left out (short_cut_title)."""
    from .picture import cap as capping
    for n in caps(len(snap.ops) + snap.leaf_count):
        yield to_dot(capping.cut(snap, n), short_cut_title(title, n), marks=marks)


def region_dot(snap: Snapshot, title, marks: Marks) -> str | None:
    """DOT of the changed region of `snap` (marks.spotlight and its neighbours, the rest counted:
    picture/region.py), or None when nothing lies farther than one edge from the spotlight."""
    from dataclasses import replace

    from .picture import region
    scene = scene_of(snap, title, marks=replace(marks, region=True))
    return dot_writer.write(scene) if region.REGION in scene.boxes else None


def _legend(snaps, marks):
    from .picture import palette
    return palette.entries(features(snaps, marks), marks.legend)


def pair_dot(left: Snapshot, right: Snapshot, titles=("before", "after"), marks: Marks = NO_MARKS,
             sizes=None) -> str:
    """Both snapshots in one layout, side by side, as two clusters (stacked_dots stacks them).
    `marks` apply to the second (the nodes a backward call ran). sizes: box sizes shared by
    both (pair_sizes)."""
    halves = []
    for key, snap, title, m in (("L", left, titles[0], NO_MARKS), ("R", right, titles[1], marks)):
        scene = scene_of(snap, marks=m, sizes=sizes, legend=False)
        scene.title = title
        halves.append((key, scene))
    legend = _legend([left, right], marks)
    return dot_writer.write_pair(halves, legend, columns(legend))


def stacked_dots(left: Snapshot, right: Snapshot, titles=("before", "after"),
                 marks: Marks = NO_MARKS, sizes=None) -> tuple[str, str, str]:
    """The pair as three pictures laid out apart, to be stacked (stack_svgs): before, after and
    the legend of both. One layout of both puts the second beside the first's widest rank, not
    under it; the legend apart keeps a legend wider than the graph from re-centring 'after'."""
    dots = []
    for snap, title, m in ((left, titles[0], NO_MARKS), (right, titles[1], marks)):
        scene = scene_of(snap, marks=m, sizes=sizes, legend=False)
        scene.title, scene.title_on_top = title, True
        scene.title_width = (sizes or {}).get("title", (None,))[0]
        dots.append(dot_writer.write(scene))
    legend = _legend([left, right], marks)
    return (*dots, dot_writer.write_legend(legend, columns(legend)))


def box_sizes(pictures, titles=()) -> dict[str, tuple[int, int]]:
    """{node id: (width, height)} in whole points, the largest over `pictures`, a list of
    (Snapshot, Marks) drawn in one set (a pair, a stepper's frames); "title": the largest of
    `titles`."""
    scenes = [scene_of(snap, marks=marks, legend=False) for snap, marks in pictures]
    return shared_sizes.measure(scenes, titles)


def pair_sizes(left: Snapshot, right: Snapshot, titles=("before", "after"),
               marks: Marks = NO_MARKS) -> dict[str, tuple[int, int]]:
    """box_sizes of a pair (marks on the second), for the nodes both halves draw alike: the
    same id and the same op or tensor name (compare() may pair two different graphs)."""
    same = {nid for nid in (*left.ops, *left.tensors) if _kind(left, nid) == _kind(right, nid)}
    sizes = box_sizes([(left, NO_MARKS), (right, marks)], titles)
    return {k: v for k, v in sizes.items() if k == "title" or k in same or k.split("_to_")[0] in same}


def _kind(snap: Snapshot, nid: str):
    op = snap.ops.get(nid)
    if op is not None:
        return "op", op.name
    t = snap.tensors.get(nid)
    return None if t is None else ("tensor", t.name)
