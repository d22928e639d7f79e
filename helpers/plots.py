"""Small matplotlib charts with the same look in every notebook.

Figures are returned, not shown: end a cell with the figure (or `fig`) to display it.
Their text form (`<Figure size ...>`) is stable, so nbval compares it; the PNG is not compared.
"""
from __future__ import annotations


import matplotlib.pyplot as plt


def bars(values: dict, title: str, ylabel: str, fmt: str = "{:,.0f}", colors=None):
    """A bar chart of {label: number}, each bar labelled with its value."""
    fig, ax = plt.subplots(figsize=(6.4, 3.2), dpi=100)
    labels, heights = list(values), [float(v) for v in values.values()]
    rects = ax.bar(labels, heights, color=colors or "#4a90d9")
    for r, h in zip(rects, heights):
        ax.annotate(fmt.format(h), (r.get_x() + r.get_width() / 2, h), ha="center", va="bottom",
                    fontsize=9, xytext=(0, 2), textcoords="offset points")
    ax.set_title(title, fontsize=11)
    ax.set_ylabel(ylabel)
    ax.spines[["top", "right"]].set_visible(False)
    ax.margins(y=0.15)
    fig.tight_layout()
    plt.close(fig)  # displayed once, by the cell's result, not again by the inline backend
    return fig


def lines(xs, series: dict, title: str, xlabel: str, ylabel: str, logx=False, logy=False):
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
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    plt.close(fig)
    return fig
