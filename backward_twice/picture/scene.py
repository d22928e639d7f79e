"""The scene: what a picture shows, as plain data. It knows nothing of DOT or Graphviz.

A Scene has boxes (each a table of rows of cells of text spans), edges between them, clusters
that group boxes (module calls, the two halves of a pair), a title and legend entries. Passes
(the other files of this package, one feature each) build and change scenes; only
backward_twice.picture.dot_writer turns one into DOT.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Span:
    """A run of text with its look. br: a line break (ALIGN="LEFT") instead of text."""

    text: str = ""
    colour: str | None = None
    size: int | None = None
    bold: bool = False
    italic: bool = False
    strike: bool = False
    br: bool = False
    br_align: str | None = "LEFT"


@dataclass
class Cell:
    """One table cell: spans in a font (colour, size) of its own, or a swatch (no spans)."""

    spans: list[Span] = field(default_factory=list)
    colour: str | None = None
    size: int | None = None
    align: str | None = None       # "LEFT"
    valign: str | None = None
    bg: str | None = None
    colspan: int | None = None
    rowspan: int | None = None
    width: int | None = None
    height: int | None = None
    border: int | None = None
    style: str | None = None
    frame_colour: str | None = None   # a swatch's outline (COLOR)
    setting: bool = False             # an op's saved setting (`alpha = 1`), not a tensor: never changes


@dataclass
class Table:
    """A box's look: rows of cells, its frame and fill."""

    rows: list[list[Cell]]
    border: int | None = 1
    cellborder: int | None = 0
    cellspacing: int | None = 0
    cellpadding: int | None = 2
    colour: str | None = None
    bg: str | None = None
    style: str | None = None
    width: int | None = None          # shared sizes: drawn at least this big (points)
    height: int | None = None
    first_row_width: int | None = None   # a filled first row stretched to the table's width
    colour_first: bool = False        # COLOR written before BGCOLOR (ops) or after it


@dataclass
class Box:
    """A node of the picture. kind: 'op', 'tensor', 'param', 'ref', 'more', 'above', 'call',
    'run', 'title', 'legend' (what made it, for passes and tests)."""

    id: str
    table: Table | None
    kind: str
    cluster: str | None = None
    plain_label: str | None = None     # a text label instead of a table (the title node)
    attrs: dict = field(default_factory=dict)    # extra node attributes (fontsize)
    simple: bool = False                          # no margin=0 (the count boxes)
    near: str | None = None                       # a reference box: the op it stands next to


@dataclass
class Edge:
    tail: str
    head: str
    style: str | None = None           # 'dashed', 'dotted', 'invis'
    colour: str | None = None
    width: float | None = None
    tail_mark: str | None = None        # '.T #3': a folded transpose, beside the edge's start
    mark_colour: str | None = None
    minlen: int | None = None
    via: str | None = None              # the folded transpose this edge stands for
    origin: str | None = None           # the leaf, when the tail is its reference box


@dataclass
class Cluster:
    id: str
    parent: str | None
    label: list[Span]
    kind: str = "module"               # 'module', 'half' (a side of a pair), 'title'
    title_width: int | None = None


@dataclass
class Scene:
    boxes: dict[str, Box] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)
    clusters: dict[str, Cluster] = field(default_factory=dict)
    title: str | None = None
    title_width: int | None = None
    legend: list[tuple[str, str]] = field(default_factory=list)   # (swatch key or colour, words)
    legend_columns: int = 2
    framed_title: bool = False         # the title labels a cluster of everything (legend below)
    title_on_top: bool = False         # the title as the graph's label (no legend in the graph)
    notes: list[str] = field(default_factory=list)   # what a pass simplified, for the text form
    moved: dict[str, str] = field(default_factory=dict)   # a box folded into another (chains.fold): its id -> that box's

    def add(self, box: Box) -> Box:
        self.boxes[box.id] = box
        return box
