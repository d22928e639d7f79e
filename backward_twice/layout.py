"""DOT -> SVG (or 'plain', 'json') under a time limit: the one place a picture is laid out.

Graphviz's `dot` runs in C and cannot be interrupted from Python: laid out in-process, a
graph with many long edges (attention over every earlier state, 40 steps) blocks the kernel
for minutes. So each source is first measured (`measure`: boxes, arrows, and the bends dot
must route, i.e. the ranks every arrow skips), and then

- small (the common case: every notebook picture): laid out in-process, no extra cost;
- medium: simplified (`SIMPLER`: straight arrows, fewer passes against crossings) and laid
  out in a child process killed after `TIMEOUT_S` (pygraphviz's bundled engine, or the `dot`
  program when render.engine() says so);
- beyond `REFUSE_COST`, or when the child runs out of time: not laid out. A small picture
  says what was refused and why, and how to draw less (`focus=`, `max_nodes=`).

`note(source)` is the sentence a picture's text form adds when its picture is simplified or
refused (deterministic: it depends on the source only). A refusal after a time-out cannot be
known in advance; its picture says so.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass

TIMEOUT_S = 5.0
# Cost = arrows + bends (ranks skipped by the arrows: the virtual nodes dot orders and routes).
# Measured with the bundled engine (scripts/bench.py --only layout; docs/robust.md, "Bounded layout"):
# the 9 graphs of the layout table (cost <= 451) in 0.3-0.9 s; attention over every earlier
# state: 10 steps, cost 789: 0.9-1.4 s; 20 steps, cost 6,157: 22 s (2.4 s simplified); 40, cost 52,584: minutes.
IN_PROCESS_COST = 600        # at most this: as drawn, in-process (a time-out is not needed)
REFUSE_COST = 4_000          # beyond this: refused without trying (even simplified, it would take long)
SIMPLER = {"splines": "line", "mclimit": "0.01"}   # between the two: straight arrows, 1% of the
                                                   # crossing-reduction passes, in a child process

_EDGE = re.compile(r'^\s*("(?:[^"\\]|\\.)*"|[\w.]+)(?::\w+)?\s*->\s*("(?:[^"\\]|\\.)*"|[\w.]+)', re.M)


NOT_DRAWN = "PICTURE NOT DRAWN"     # how a refused picture's SVG and text begin saying why
REFUSED_MARK = 'id="layout-refused"'     # on refused_svg's frame: what `refused` looks for


def refused(svg: str) -> bool:
    """Whether `svg` is refused_svg's small picture saying why a layout was not done."""
    return REFUSED_MARK in svg


class LayoutRefused(RuntimeError):
    """A layout in a format other than SVG that was refused (too costly, or out of time)."""


@dataclass(frozen=True)
class Cost:
    nodes: int     # boxes (nodes with an arrow)
    edges: int     # arrows
    bends: int     # ranks skipped by arrows, summed: the virtual nodes dot adds
    ranks: int = 0  # the longest path of arrows, in boxes: dot draws at least this many ranks

    @property
    def total(self) -> int:
        return self.edges + self.bends


def measure(source: str) -> Cost:
    """Boxes, arrows and bends of a DOT source, read from its edge lines. Ranks are each box's
    longest path down to a sink (the roots are drawn at the bottom; an input sits just above
    its deepest use, as dot places it)."""
    succ: dict[str, list[str]] = defaultdict(list)
    nodes: dict[str, None] = {}      # in order of appearance: the same source, the same result
    edges = 0
    for tail, head in _EDGE.findall(source):
        succ[tail].append(head)
        nodes.update(dict.fromkeys((tail, head)))
        edges += 1
    height: dict[str, int] = {}
    for start in nodes:                      # iterative, memoised; a cycle is cut where it closes
        stack, on_stack = [start], {start}
        while stack:
            n = stack[-1]
            if n in height:
                stack.pop()
                on_stack.discard(n)
                continue
            todo = [m for m in succ.get(n, ()) if m not in height and m not in on_stack]
            if todo:
                stack.extend(todo)
                on_stack.update(todo)
                continue
            stack.pop()
            on_stack.discard(n)
            height[n] = 1 + max((height.get(m, 0) for m in succ.get(n, ())), default=-1)
    bends = sum(max(0, height[t] - height[h] - 1) for t, heads in succ.items() for h in heads)
    return Cost(len(nodes), edges, bends, 1 + max(height.values()) if height else 0)


def note(source: str, cost: Cost | None = None) -> str | None:
    """What a picture's text says when its layout is simplified or refused in advance, else None."""
    cost = cost or measure(source)
    if cost.total <= IN_PROCESS_COST:
        return None
    if cost.total <= REFUSE_COST:
        return (f"PICTURE SIMPLIFIED: {cost.nodes:,} boxes and {cost.edges:,} arrows skipping {cost.bends:,} "
                f"ranks in all (layout cost {cost.total:,} > {IN_PROCESS_COST:,}): arrows drawn straight, with "
                "fewer passes against crossings, so Graphviz lays it out in seconds, not minutes.")
    return (f"{NOT_DRAWN}: {cost.nodes:,} boxes and {cost.edges:,} arrows skipping "
            f"{cost.bends:,} ranks in all (layout cost {cost.total:,} > {REFUSE_COST:,}) would take Graphviz "
            f"more than {TIMEOUT_S:g} s to lay out, and would not read at notebook width. "
            "Draw less: focus=<a tensor near the part you want>, or a smaller max_nodes=.")


def laid_out(source: str, fmt: str = "svg", prog: str | None = None) -> str:
    """`source` laid out by dot in `fmt`, within TIMEOUT_S; for 'svg', a refused layout is a
    small SVG that says why; for other formats it raises LayoutRefused.
    prog: 'dot' (the program) or 'pygraphviz' (bundled); default engine()."""
    prog = prog or engine()
    cost = measure(source)
    if cost.total <= IN_PROCESS_COST:
        return _in_process(source, fmt) if prog == "pygraphviz" else _dot_program(source, fmt)
    why = note(source, cost)
    if cost.total <= REFUSE_COST:
        try:
            return _child(source, fmt, SIMPLER) if prog == "pygraphviz" else _dot_program(source, fmt, SIMPLER)
        except subprocess.TimeoutExpired:
            why = (f"{NOT_DRAWN}: Graphviz did not lay out {cost.nodes:,} boxes and {cost.edges:,} "
                   f"arrows within {TIMEOUT_S:g} s (stopped). Draw less: focus=<a tensor near the part "
                   "you want>, or a smaller max_nodes=.")
    if fmt != "svg":
        raise LayoutRefused(why)
    return refused_svg(why)


def engine() -> str:
    """'dot' if a Graphviz `dot` is on PATH, else 'pygraphviz' (bundled engine).

    BACKWARD_TWICE_ENGINE=dot|pygraphviz forces one (used by the tests).
    """
    forced = os.environ.get("BACKWARD_TWICE_ENGINE")
    if forced:
        return forced
    return "dot" if shutil.which("dot") else "pygraphviz"


@contextlib.contextmanager
def quiet_fd2():
    """Silence C-level writes to fd 2 (the bundled fontconfig warns there)."""
    try:
        saved = os.dup(2)
    except OSError:
        yield
        return
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _in_process(source: str, fmt: str) -> str:
    with quiet_fd2():
        import pygraphviz

        out = pygraphviz.AGraph(string=source).draw(format=fmt, prog="dot")
    return out.decode() if isinstance(out, bytes) else out


_CHILD = """
import os, sys
os.dup2(os.open(os.devnull, os.O_WRONLY), 2)   # the bundled fontconfig warns on fd 2
import pygraphviz
g = pygraphviz.AGraph(string=sys.stdin.buffer.read().decode())
g.graph_attr.update(dict(a.split("=", 1) for a in sys.argv[2:]))   # overrides the source's own
out = g.draw(format=sys.argv[1], prog="dot")
sys.stdout.buffer.write(out if isinstance(out, bytes) else out.encode())
"""


def _child(source: str, fmt: str, attrs: dict | None = None) -> str:
    """Bundled Graphviz in a child process, killed after TIMEOUT_S (TimeoutExpired); attrs:
    graph attributes set over the source's."""
    args = [f"{k}={v}" for k, v in (attrs or {}).items()]
    done = subprocess.run([sys.executable, "-c", _CHILD, fmt, *args], input=source.encode(), capture_output=True,
                          timeout=TIMEOUT_S)
    if done.returncode != 0:
        raise RuntimeError("Graphviz (bundled, in a child process) failed: "
                           + done.stderr.decode(errors="replace")[-500:])
    return done.stdout.decode()


def _dot_program(source: str, fmt: str, attrs: dict | None = None) -> str:
    """The `dot` program, killed after TIMEOUT_S; attrs: graph attributes (-G: used where the
    source sets none, which is true of SIMPLER's)."""
    dot = shutil.which("dot")
    if dot is None:
        raise RuntimeError("BACKWARD_TWICE_ENGINE=dot but no `dot` program is on PATH")
    flags = [f"-G{k}={v}" for k, v in (attrs or {}).items()]
    done = subprocess.run([dot, f"-T{fmt}", *flags], input=source.encode(), capture_output=True, timeout=TIMEOUT_S)
    if done.returncode != 0:
        raise RuntimeError("dot failed: " + done.stderr.decode(errors="replace")[-500:])
    return done.stdout.decode()


def refused_svg(why: str, width_pt: int = 600) -> str:
    """A small SVG with `why` in lines of about 90 characters (what is shown instead of a picture)."""
    from html import escape

    words, lines, line = why.split(), [], ""
    for w in words:
        if len(line) + len(w) + 1 > 90:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}".strip()
    lines.append(line)
    height = 16 * len(lines) + 16
    text = "".join(f'<text x="8" y="{20 + 16 * i}" font-family="Helvetica" font-size="11">{escape(s)}</text>'
                   for i, s in enumerate(lines))
    return ('<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n'
            f'<svg width="{width_pt}pt" height="{height}pt" viewBox="0.00 0.00 {width_pt}.00 {height}.00" '
            'xmlns="http://www.w3.org/2000/svg">\n'
            f'<rect {REFUSED_MARK} x="1" y="1" width="{width_pt - 2}" height="{height - 2}" fill="#fff8e1" stroke="#b35c00"/>'
            f"{text}\n</svg>\n")
