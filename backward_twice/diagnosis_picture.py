"""Pictures for the diagnosis of a failed backward, and graphs coloured by training step.

`stop_picture(StopRequest(...))` draws where a failed backward stopped. This is the seam between the
diagnosis (backward_twice.diagnose) and the picture engine, agreed before either changes it
(docs/diagnosis.md, "The seam with the pictures"): the diagnosis decides *what* to show and words
every fact, in a `StopRequest`; this module decides *how* (which nodes fit, what folds), and shows
every note word for word. `StepClock` and `draw_steps` colour a graph's nodes by the training step
that created them (a long loop's graph: around where the newest step uses an older step's graph).
"""
from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field

import torch

from . import render
from .graph import Picture, describe
from .names import named_tensors
from .picture import palette
from .picture.alt_text import alt_of, listed
from .picture.layout import fits as fits_rule
from .picture.layout import smallest_text_px
from .trace import next_sequence_nr
from .walk import is_leaf_node, nodes_under, snapshot_with_ids


def seq(fn) -> int:
    """A node's creation number (autograd's sequence_nr: later nodes have larger numbers)."""
    return fn._sequence_nr()


# fills for "made by step k" (k = 1, 2, ...); index 0 is "before the loop". Chosen apart from
# the leaf blue and the named-tensor green of backward_twice.render.
# (backward_twice.picture.palette: one meaning per colour, so no purple, which means 'ran #k', and no
# orange.) A diagnosis's "earlier step" and "this step" are two of the same step fills.
STEP_FILLS, STEP_WORDS = palette.STEP_FILLS, palette.STEP_WORDS
OLD_FILL, NEW_FILL = palette.STEP_FILLS[1], palette.STEP_FILLS[2]   # diagnosis: earlier steps / this step
STOP_FILL = palette.STOP                            # diagnosis: the node where backward stopped
TAGS = {OLD_FILL: "earlier step", NEW_FILL: "this step", STOP_FILL: "stopped here"}   # each fill in words

# A diagnosis picture draws a graph of up to max_nodes (default 30) whole if that reads at
# notebook width, else around the stop: up to ABOVE_STOP nodes up the path from the loss (fewer
# when that is still too wide), the stop, what feeds it, at most AROUND_NODES nodes in all. An
# RNN over 30 time steps, drawn whole up to 60 nodes, was 1,566 pt wide (5.5 px text at 860 px,
# and the stop not drawn); around the stop it is 802 pt wide (10.7 px).
ABOVE_STOP = 3
AROUND_NODES = 12


@dataclass(frozen=True)
class StopRequest:
    """What the diagnosis asks the picture of a failed (or, will_stop=True, a not yet run) backward
    to show. The diagnosis fills it; the picture engine draws it.

    root: the tensor backward was called on. stop: the node where the engine stops (filled orange),
    or None when not known. path: the nodes from root.grad_fn down to stop (thick edges). old: the
    nodes made by earlier steps (one fill; every other node: this step's fill). names: {name:
    tensor}, the labels. notes: {node: one line}, a recorded fact about a node, worded by the
    diagnosis ('made at train.py:12, step 3', 'its saved self was freed by loss.backward() at
    train.py:14'): drawn on the node's box and listed in the text form, word for word, and never
    a guess (the diagnosis passes only what it recorded). max_nodes: a graph of at most this many
    nodes that fits one screen is drawn whole."""

    root: torch.Tensor
    stop: object = None
    path: tuple = ()
    old: frozenset = frozenset()
    names: Mapping = field(default_factory=dict)
    notes: Mapping = field(default_factory=dict)
    max_nodes: int = 30
    will_stop: bool = False


def stop_picture(request: StopRequest) -> Picture:
    """The picture of `request` (StopRequest): `stop` filled orange, `old` and the others in two
    fills, `path` in thick edges, `names` labelled, each of `notes` on its node. The graph is drawn
    whole when it has at most `max_nodes` nodes and fits one screen (its text reads at notebook
    width and it is at most CORE_MAX_HEIGHT_PX tall); else around the stop, the rest counted in one
    box, so that the picture of a long loop stays readable. A note whose node is not drawn is still
    listed in the text form ("notes:"), which says so."""
    r = request
    path, old = list(r.path), frozenset(r.old)
    words = ((r.stop.name() if r.stop is not None else "an unknown node"), r.will_stop)
    whole = []
    snap, ids = snapshot_with_ids(r.root, names=r.names, max_nodes=r.max_nodes)
    if not snap.truncated:
        whole = [_stop_picture(words, snap, ids, r.stop, path, old, r.notes)]
    caps = dict.fromkeys(c for c in (min(r.max_nodes, AROUND_NODES), 16, 10, 6) if c <= min(r.max_nodes, AROUND_NODES))
    focused = (_stop_picture(words, snap, ids, r.stop, path, old, r.notes)
               for cap in caps for snap, ids in _around([r.root], path, r.names, cap))
    return _readable(itertools.chain(whole, focused))


def _around(roots, path: list, names, max_nodes: int):
    """(snapshot, ids) of the graph behind `roots` drawn around the last node of `path` (a chain
    of nodes from a root down to it): focused on the node ABOVE_STOP steps up the path, then
    fewer (lazily), each drawing that last node, what feeds it, up to `max_nodes` nodes; the
    rest counted in one box (backward_twice.walk, focus=)."""
    for k in range(min(ABOVE_STOP, len(path) - 1), -1, -1):
        snap, ids = snapshot_with_ids(*roots, names=names, max_nodes=max_nodes, focus=path[-1 - k])
        if path[-1] in ids:
            yield snap, ids


def fits(pic) -> bool:
    """A diagnosis picture is read on one screen: picture.layout.fits, the rule every picture is held
    to (text at least 11 px at notebook width, at most CORE_MAX_HEIGHT_PX tall there). Picture.svg
    applies it too: a picture that breaks it is drawn as a card saying so."""
    svg = pic.svg
    return fits_rule(svg) and not getattr(pic, "simplified", 0)     # a card fits, but is not this picture


def _readable(pictures):
    """The first of `pictures` (laid out one by one) that fits one screen (fits), else the one
    with the largest smallest text; None for none."""
    best = None
    for pic in pictures:
        if fits(pic):
            return pic
        if best is None or _text_px(pic) > _text_px(best):
            best = pic
    return best


def _text_px(pic) -> float:
    """The smallest text of the picture as drawn; a card (a picture that gave up) reads worst."""
    return float("-inf") if getattr(pic, "simplified", 0) else smallest_text_px(pic.svg)


def _stop_picture(words, snap, ids, stop, path, old_set, notes=None) -> Picture:
    """`snap` drawn with this step's and earlier steps' colours, the stop and the path marked,
    each note on its node's box."""
    fills = {i: (OLD_FILL if fn in old_set else NEW_FILL) for fn, i in ids.items() if not is_leaf_node(fn)}
    on_path = [ids.get(fn) for fn in path]
    marked = {(b, a) for a, b in zip(on_path, on_path[1:]) if a and b}   # forward direction
    if snap.above is not None:    # the path goes on, through the box, to the loss
        marked |= {(i, "above") for i in snap.above.into}
    stop_id = ids.get(stop)
    if stop_id is not None:
        fills[stop_id] = STOP_FILL
    stopped_at, will_stop = words
    title = f"{'will stop' if will_stop else 'stopped'} in {stopped_at}"
    if snap.above is not None:
        title += ": the graph around it"
    legend = ((STOP_FILL, f"where backward stopped: {stopped_at}; thick: the path from the loss"),
              (OLD_FILL, "made by an earlier step (freed before this call)"),
              (NEW_FILL, "made by this step"))
    notes = notes or {}
    drawn = {ids[fn]: text for fn, text in notes.items() if fn in ids}
    tags = {i: TAGS[c] for i, c in fills.items()}        # the fill in words: no meaning by colour alone
    marks = render.Marks(fills=fills, path=frozenset(marked), legend=legend, notes=drawn, tags=tags)
    text = describe(snap)
    if notes:
        lines = [f"  {ids[fn] + ' ' if fn in ids else ''}{fn.name()}: {note}"
                 + ("" if fn in ids else " (node not drawn)") for fn, note in notes.items()]
        text += "\nnotes:\n" + "\n".join(lines)
    return Picture(render.to_dot(snap, title, marks=marks), text, alt=alt_of(snap, title))


# Nodes coloured by the step that made them
class StepClock:
    """Marks where each training step begins in autograd's creation order: call `tick()` on the
    first line of the loop body; `step_of(node)` then says which step made a node, and
    `draw_steps(loss, clock=clock)` fills every op with the colour of its step.

    Example (run by tests/test_docstrings.py):

        >>> import torch, backward_twice as bt
        >>> clock = bt.StepClock()
        >>> w = torch.ones(2, requires_grad=True)
        >>> losses = []
        >>> for step in range(2):
        ...     clock.tick()                 # the first line of each step
        ...     losses.append((w * 2).sum())
        >>> [clock.step_of(loss.grad_fn) for loss in losses]
        [1, 2]
    """

    def __init__(self):
        self.starts = []

    def tick(self) -> None:
        self.starts.append(next_sequence_nr())

    def step_of(self, fn) -> int:
        """0 for nodes made before the first tick, else the step (1, 2, ...) that made `fn`."""
        s = seq(fn)
        return sum(1 for b in self.starts if s >= b)


class StepPicture(Picture):
    """A picture from `draw_steps`; `.snapshot` and `.steps` ({op id: step}) for checks."""

    def __init__(self, dot, text, snap, steps, alt=None):
        super().__init__(dot, text, alt=alt)
        self.snapshot, self.steps = snap, steps

    def saved_states_by_step(self) -> dict:
        """{step: {'held': n, 'freed': n}} over the saved tensors of the ops drawn."""
        out = {}
        for op, s in self.snapshot.saved_tensors():
            k = self.steps[op.id]
            out.setdefault(k, {"held": 0, "freed": 0})
            out[k][s.state] = out[k].get(s.state, 0) + 1
        return out


def draw_steps(*roots, clock: StepClock, names=None, title=None, max_nodes=120, focus=None) -> StepPicture:
    """A picture of the graph behind `roots` with every op filled by the step that created it.

    names: {name: tensor}, or a whole namespace such as `globals()`: then its tensors, the items
    of its tuples and lists, and the tensors of its modules are named (as why_backward does).
    focus: as in backward_twice.graph.draw, only the part of the graph under it is drawn.
    title, max_nodes: as in draw(); max_nodes is 120 by default (not 300): a loop's graph past
        that is drawn around where the steps meet, which reads at notebook width.
    Without focus, a graph of more than `max_nodes` nodes, or one that does not fit one screen
    (too wide to read at notebook width, or over CORE_MAX_HEIGHT_PX tall), is drawn around where
    the newest step uses an older step's graph (the last nodes of the newest step on the way
    there, the older node, what feeds it), the rest counted in a box.

    Example (run by tests/test_docstrings.py):

        >>> import torch, backward_twice as bt
        >>> clock = bt.StepClock()
        >>> w = torch.ones(2, requires_grad=True)
        >>> total = 0
        >>> for step in range(2):
        ...     clock.tick()
        ...     total = total + (w * 2).sum()
        >>> print(bt.draw_steps(total, clock=clock).text.splitlines()[0])
        ops coloured by the training step that made them (made by step 1: salmon, made by step 2: yellow).
    """
    if names is not None and any(not isinstance(v, torch.Tensor) for v in names.values()):
        names = dict(named_tensors(names))
    if focus is not None:
        return _step_picture(*snapshot_with_ids(*roots, names=names, max_nodes=max_nodes, focus=focus),
                             clock, title)
    whole = _step_picture(*snapshot_with_ids(*roots, names=names, max_nodes=max_nodes), clock, title)
    if not whole.snapshot.truncated and fits(whole):
        return whole
    path = _where_steps_meet(roots, clock)
    if not path:
        return whole
    focused = (_step_picture(snap, ids, clock, title, around=(clock.step_of(path[-2]), clock.step_of(path[-1])))
               for snap, ids in _around(roots, path, names, min(max_nodes, AROUND_NODES)))
    return _readable(itertools.chain([] if whole.snapshot.truncated else [whole], focused)) or whole


def _where_steps_meet(roots, clock: StepClock) -> list:
    """The shortest chain of nodes from a root down to the first node (nearest the roots) of an
    older step that a node of the newest step uses; [] when the graph holds one step only."""
    parents: dict = {}
    nodes, _ = nodes_under([t.grad_fn for t in roots if t.grad_fn is not None], parents=parents)
    ops = [fn for fn in nodes if not is_leaf_node(fn)]
    if not ops:
        return []
    newest = max(clock.step_of(fn) for fn in ops)
    meet = next((fn for fn in ops if clock.step_of(fn) < newest and parents[fn] is not None
                 and clock.step_of(parents[fn]) == newest), None)
    path = []
    while meet is not None:
        path.append(meet)
        meet = parents[meet]
    return path[::-1]


def _step_picture(snap, ids, clock: StepClock, title, around=None) -> StepPicture:
    """`snap` with every op filled by the step that made it. around: (newer step, older step)
    when it is drawn around where the newer step uses the older one's graph."""
    steps = {i: clock.step_of(fn) for fn, i in ids.items() if not is_leaf_node(fn)}
    fills = {i: STEP_FILLS[min(k, len(STEP_FILLS) - 1)] for i, k in steps.items()}
    used = sorted(set(steps.values()))
    words = {k: "made before the loop" if k == 0 else f"made by step {k}" for k in used}
    key = ", ".join(f"{words[k]}: {STEP_WORDS[min(k, len(STEP_WORDS) - 1)]}" for k in used)
    head = (title + ": " if title else "") + "ops coloured by the training step that made them"
    if around is not None:   # short: the title sits beside the box of nodes not drawn
        older = "the graph made before the loop" if around[1] == 0 else f"step {around[1]}'s graph"
        head = (title + ": " if title else "") + f"where step {around[0]} uses {older}"
    legend = tuple((STEP_FILLS[min(k, len(STEP_FILLS) - 1)], words[k]) for k in used)
    by_step = "\n".join(("before the loop" if k == 0 else f"step {k}") + ": "
                        + ", ".join(f"{i} {snap.ops[i].name}" for i, s in steps.items() if s == k)
                        for k in used)
    tags = {i: "before loop" if k == 0 else f"step {k}" for i, k in steps.items()}   # the fill in words
    marks = render.Marks(fills=fills, legend=legend, tags=tags)
    made = " ".join(("Made before the loop" if k == 0 else f"Step {k} made") + ": "
                    + listed([snap.ops[i].name for i, s in steps.items() if s == k]) + "." for k in used)
    alt = f"{alt_of(snap, head)} Each op's box says which step made it. {made}"
    pic = StepPicture(render.to_dot(snap, head, marks=marks), f"{head} ({key}).\n{describe(snap)}\n{by_step}", snap, steps,
                      alt=alt)
    pic.simpler = lambda: render.simpler_cuts(snap, head, marks)     # when it does not fit: fewer nodes
    return pic


