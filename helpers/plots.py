"""Small matplotlib charts with the same look in every notebook.

Figures are returned, not shown: end a cell with the figure (or `fig`) to display it.
Their text form (`<Figure size ...>`) is stable, so nbval compares it; the PNG is not compared.
"""
from __future__ import annotations

import re

import matplotlib.pyplot as plt

MAX_PANELS = 4       # panels described one by one in a figure's alt text; the rest are counted


def figure_alt(fig) -> str:
    """A text description of a matplotlib figure, for the `alt` of its picture (screen readers,
    the static site): per panel its title, axis labels, legend entries and, for bar charts,
    each bar's label and height. Built from the figure itself, so any figure gets one."""
    panels = []
    for ax in fig.axes:
        if not ax.has_data():
            continue
        title = ax.get_title().strip()
        bits = [f"image: {title}" if ax.images else (title or "untitled panel")]
        axis = []
        for name, label, scale in (("x", ax.get_xlabel(), ax.get_xscale()), ("y", ax.get_ylabel(), ax.get_yscale())):
            if label:
                axis.append(f"{name}: {label}" + (" (log scale)" if scale == "log" else ""))
        if axis:
            bits.append(", ".join(axis))
        legend = ax.get_legend()
        if legend is not None:
            bits.append("lines: " + "; ".join(t.get_text() for t in legend.get_texts()))
        bars = [b for c in ax.containers for b in getattr(c, "patches", [])]
        if bars:
            names = _category_names(ax)
            values = [f"{name}: {b.get_height():,.4g}" if name else f"{b.get_height():,.4g}"
                      for name, b in zip(names or [""] * len(bars), bars)]
            bits.append("bars: " + "; ".join(values))
        panels.append(", ".join(bits))
    if not panels:
        return "an empty figure"
    more = f"; and {len(panels) - MAX_PANELS} more panels" if len(panels) > MAX_PANELS else ""
    kind = "chart" if len(panels) == 1 else f"figure of {len(panels)} panels"
    text = f"A {kind}: " + " | ".join(panels[:MAX_PANELS]) + more
    text = re.sub(r"\\([A-Za-z]+)", r"\1", text.replace("$", ""))    # mathtext $\sigma(x)$ -> sigma(x)
    return " ".join(text.replace("\n", " ").split())


def _category_names(ax) -> list[str]:
    """The category labels of a bar chart drawn with string x values, in order."""
    units = ax.xaxis.get_units()
    mapping = getattr(units, "_mapping", None)    # matplotlib.category.UnitData
    return [str(k) for k in mapping] if mapping else []


def finish(fig):
    """The figure laid out and closed: displayed once, by the cell's result, not again by the
    inline backend. Every figure a helper returns ends here."""
    fig.tight_layout()
    plt.close(fig)
    return fig


def _finish(fig, ax):
    """The common look of a chart, then `finish`."""
    ax.spines[["top", "right"]].set_visible(False)
    return finish(fig)


def bars(values: dict[str, float], title: str, ylabel: str, fmt: str = "{:,.0f}", colors=None):
    """A bar chart of {label: number}, each bar labelled with its value."""
    fig, ax = plt.subplots(figsize=(6.4, 3.2), dpi=100)
    labels, heights = list(values), [float(v) for v in values.values()]
    rects = ax.bar(labels, heights, color=colors or "#4a90d9")
    for r, h in zip(rects, heights):
        ax.annotate(fmt.format(h), (r.get_x() + r.get_width() / 2, h), ha="center", va="bottom",
                    fontsize=9, xytext=(0, 2), textcoords="offset points")
    ax.set_title(title, fontsize=11)
    ax.set_ylabel(ylabel)
    ax.margins(y=0.15)
    return _finish(fig, ax)


def lines(xs, series: dict[str, list[float]], title: str, xlabel: str, ylabel: str, logx=False, logy=False):
    """One line per {name: [y values]} over the shared `xs`."""
    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=100)
    for name, ys in series.items():
        ax.plot(xs, ys, marker="o", markersize=3, label=name)
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_title(title, fontsize=11)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=9)
    return _finish(fig, ax)


def timeline(series: dict[str, list[float]], title: str, marks: dict[str, list[tuple]] | None = None,
             xlabel: str = "engine steps (nodes run, in order)", ylabel: str = "saved tensors alive (kB)"):
    """A step chart of {name: [bytes at each step]} (e.g. `LiveSaved.samples`), in kB.

    marks: {name: [(step, text), ...]} labels on a series' line at that step, written above
    the line; with a third element "right", written to the right of the point instead.
    """
    fig, ax = plt.subplots(figsize=(6.8, 3.4), dpi=100)
    top = max(max(ys) for ys in series.values()) / 1000
    longest = max(len(ys) for ys in series.values())
    room = 0
    for name, ys in series.items():
        line, = ax.step(range(len(ys)), [y / 1000 for y in ys], where="post", label=name, linewidth=2)
        for step, text, *where in (marks or {}).get(name, []):
            right = where == ["right"]
            room = max(room, len(text) * 0.55 if right else 0)   # x units a label of 8pt needs, roughly
            ax.annotate(text, (step, ys[step] / 1000), xytext=(5, 0) if right else (0, 5),
                        textcoords="offset points", ha="left" if right else "center",
                        va="center" if right else "bottom", fontsize=8, color=line.get_color())
    ax.set_title(title, fontsize=11)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, top * 1.15)
    ax.set_xlim(-1, longest + room * longest / 50)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=9, loc="lower left")
    return _finish(fig, ax)
