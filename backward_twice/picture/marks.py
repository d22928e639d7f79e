"""What a picture marks on top of a snapshot, and how it groups nodes: the inputs of the passes."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Marks:
    """highlight: the node running now; ran: {id: (k, ...)}, the nodes a backward call ran, k-th;
    changed: tensor ids whose .grad changed; fills: {id: fill colour} replacing the usual (the
    training step that made an op, where backward stopped); path: {(from id, to id)}, edges drawn
    thick; legend: ((colour, words), ...) added to the legend; spotlight: ids drawn as usual, every
    other box faded; region: boxes more than one edge from the spotlight folded into one count (region.py);
    compact: a module drawn by path, compact: chains of ops that saved no tensor folded (chains.py), settings
    left to the text form, parameters on one line each (focus.compact_params);
    totals: a module overview of totals only (compact call boxes): with compact, every run of ops outside
    the call boxes is one box too, whether they saved tensors or not, its ops named and its saved tensors
    counted as a call box counts them (chains.fold);
    notes: {id: one line}, a recorded fact about a box ('made at train.py:12, step 3'), drawn as the
    box's last row, word for word (the caller words it; the picture never shortens or drops it);
    tags: {id: a short word}, what a box's fill means ('step 2'), drawn on its first row: no
    meaning by colour alone."""

    highlight: frozenset = frozenset()
    ran: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    changed: frozenset = frozenset()
    fills: Mapping[str, str] = field(default_factory=dict)
    path: frozenset = frozenset()
    legend: tuple = ()
    spotlight: frozenset = frozenset()     # when set, every other box is faded: the change stands out
    region: bool = False                   # only the spotlight and its neighbours drawn, the rest counted
    compact: bool = False                  # a module drawn by path, compact (chains.py, focus.compact_params)
    totals: bool = False                   # with compact: ops outside the call boxes as totals (chains.py)
    notes: Mapping[str, str] = field(default_factory=dict)
    tags: Mapping[str, str] = field(default_factory=dict)


NO_MARKS = Marks()


@dataclass
class Grouping:
    """Clusters of a picture (backward_twice.modules): `of` maps a node id to its cluster; `clusters`
    maps a cluster to (its parent or None, its label as spans); `boxes` are extra boxes (id ->
    Table, placed in cluster of[id]) and `box_edges` their edges; `params`: leaf ids drawn as
    one-line parameter boxes; `invisible`: edges that only order the layout."""

    of: dict[str, str]
    clusters: dict
    boxes: dict = field(default_factory=dict)
    box_edges: list = field(default_factory=list)
    params: frozenset = frozenset()
    invisible: list = field(default_factory=list)
