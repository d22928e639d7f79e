"""Small matplotlib charts with the same look in every notebook.

Figures are returned, not shown: end a cell with the figure (or `fig`) to display it.
Their text form (`<Figure size ...>`) is stable, so nbval compares it; the PNG is not compared.
Colours are the charts' own, registered in backward_twice.picture.palette (SERIES: blue, orange, black,
brown, indigo, in that order), none of them a colour of the graph pictures: matplotlib's default
cycle is never used.
"""
from __future__ import annotations

import re

import matplotlib.pyplot as plt
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, MaxNLocator, NullFormatter

from backward_twice.picture.palette import MEANINGS, SERIES

MAX_PANELS = 4       # panels described one by one in a figure's alt text; the rest are counted
KIB = 1024           # bytes in the unit every chart and every printed size uses (backward_twice.snapshot.fmt_bytes)


def series_colours(n: int) -> list[str]:
    """The colours of a chart's first `n` series, in order (palette.SERIES). A chart has at most
    len(SERIES) series: more would need a colour twice, and two series would read as one."""
    if n > len(SERIES):
        raise ValueError(f"a chart shows at most {len(SERIES)} series (one colour each), not {n}")
    return list(SERIES[:n])


def _bar_colour(c) -> str:
    """A bar's colour: the number of a series (0 = SERIES[0]) or a registered chart colour."""
    if isinstance(c, int):
        return series_colours(c + 1)[c]
    if c not in SERIES:
        raise ValueError(f"{c!r} is not a chart colour: use a series number 0-{len(SERIES) - 1} "
                         f"({', '.join(f'{k}: {MEANINGS[s]}' for k, s in enumerate(SERIES))})")
    return c


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
        elif any(not line.get_label().startswith("_") for line in ax.lines):
            bits.append("lines: " + "; ".join(line.get_label() for line in ax.lines
                                                if not line.get_label().startswith("_")))
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


def _plain_number(value, _pos=None) -> str:
    """Tick text a learner reads at once: 1, 20, 1,000, 0.5 (not 10^3 or 2.5e+01)."""
    return f"{value:,.10g}"


def _readable_ticks(ax, xs, logx: bool, logy: bool) -> None:
    """Ticks with numbers on them. A log x axis gets a tick at each x value when there are
    few (depths 1, 2, 4, ..., 64), else at 1, 2, 5 of each decade; a log y axis at 1, 2, 5 of
    each decade; integer x values (iterations, steps) get integer ticks only."""
    xs = list(xs)
    if logx:
        if len(xs) <= 12:
            ax.xaxis.set_major_locator(FixedLocator(xs))
        else:
            ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1, 2, 5)))
        ax.xaxis.set_major_formatter(FuncFormatter(_plain_number))
        ax.xaxis.set_minor_formatter(NullFormatter())
    elif xs and all(float(x).is_integer() for x in xs):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if logy:
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1, 2, 5)))
        ax.yaxis.set_major_formatter(FuncFormatter(_plain_number))
        ax.yaxis.set_minor_formatter(NullFormatter())


def bars(values: dict[str, float], title: str, ylabel: str, fmt: str = "{:,.0f}", colors=None):
    """A bar chart of {label: number}, each bar labelled with its value. colors: one per bar, a
    series number (0 = blue, 1 = orange, ...: bars with one number belong together) or a chart
    colour of palette.SERIES; by default every bar is series 0."""
    fig, ax = plt.subplots(figsize=(6.4, 3.2), dpi=100)
    labels, heights = list(values), [float(v) for v in values.values()]
    rects = ax.bar(labels, heights, color=[_bar_colour(c) for c in (colors or [0] * len(labels))])
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
    for (name, ys), colour in zip(series.items(), series_colours(len(series))):
        ax.plot(xs, ys, marker="o", markersize=3, label=name, color=colour)
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    _readable_ticks(ax, xs, logx, logy)
    ax.set_title(title, fontsize=11)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=9)
    return _finish(fig, ax)


def line_panels(xs, panels: dict[str, tuple[str, dict[str, list[float]]]], title: str, xlabel: str):
    """Line charts side by side over the shared `xs`, one per {panel title: (ylabel, {name: ys})}.

    Series with the same values in a panel are drawn as one line, labelled at its right end
    with all their names ("A, C"): which series move together, and which part ways from one
    panel to the next, is read off the labels, with no legend to match colours against.
    """
    fig, axes = plt.subplots(1, len(panels), figsize=(4.3 * len(panels), 3.4), dpi=100, squeeze=False)
    xs = list(xs)
    names_in_order = list(dict.fromkeys(name for _, series in panels.values() for name in series))
    color = dict(zip(names_in_order, series_colours(len(names_in_order))))
    ticks = [t for t in MaxNLocator(nbins=5, integer=True, steps=[1, 2, 5, 10]).tick_values(xs[0], xs[-1])
             if xs[0] <= t <= xs[-1]]                      # whole numbers, within the data
    if len(ticks) > 1 and ticks[0] - xs[0] >= 0.6 * (ticks[1] - ticks[0]):
        ticks.insert(0, xs[0])                             # the first x too, when it has room
    for ax, (panel_title, (ylabel, series)) in zip(axes[0], panels.items()):
        groups: dict[tuple, list[str]] = {}                # values -> names sharing them, first seen first
        for name, ys in series.items():
            groups.setdefault(tuple(float(y) for y in ys), []).append(name)
        top = max(max(ys) for ys in groups) or 1
        for ys, names in groups.items():                   # a group takes its first member's colour
            label = ", ".join(names)
            ax.plot(xs, ys, marker="o", markersize=3, linewidth=2, label=label, color=color[names[0]])
            ax.annotate(label, (xs[-1], ys[-1]), xytext=(6, 0), textcoords="offset points",
                        va="center", fontsize=9, fontweight="bold", color=color[names[0]])
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.set_ylim(-0.04 * top, top * 1.08)
        ax.set_xlim(xs[0] - 0.5, xs[-1] + (xs[-1] - xs[0]) * 0.22)    # room for the end labels
        ax.set_title(panel_title, fontsize=10)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.spines[["top", "right"]].set_visible(False)
    fig.suptitle(title, fontsize=11)
    return finish(fig)


def timeline(series: dict[str, list[float]], title: str, marks: dict[str, list[tuple]] | None = None,
             xlabel: str = "engine steps (nodes run, in order)", ylabel: str = "saved tensors alive (KiB)"):
    """A step chart of {name: [bytes at each step]} (e.g. `LiveSaved.samples`), in KiB.

    marks: {name: [(step, text), ...]} labels on a series' line at that step, written above
    the line; with a third element "right", written to the right of the point instead.
    """
    fig, ax = plt.subplots(figsize=(6.8, 3.4), dpi=100)
    top = max(max(ys) for ys in series.values()) / KIB
    longest = max(len(ys) for ys in series.values())
    room = 0
    for (name, ys), colour in zip(series.items(), series_colours(len(series))):
        line, = ax.step(range(len(ys)), [y / KIB for y in ys], where="post", label=name, linewidth=2, color=colour)
        for step, text, *where in (marks or {}).get(name, []):
            right = where == ["right"]
            room = max(room, len(text) * 0.55 if right else 0)   # x units a label of 8pt needs, roughly
            ax.annotate(text, (step, ys[step] / KIB), xytext=(5, 0) if right else (0, 5),
                        textcoords="offset points", ha="left" if right else "center",
                        va="center" if right else "bottom", fontsize=8, color=line.get_color())
    ax.set_title(title, fontsize=11)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, top * 1.15)
    ax.set_xlim(-1, longest + room * longest / 50)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))     # steps are whole numbers
    ax.grid(alpha=0.3)
    ax.legend(fontsize=9, loc="lower left")
    return _finish(fig, ax)
