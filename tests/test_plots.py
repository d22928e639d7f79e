"""helpers.plots: the charts return closed figures with what was asked for on them."""
from helpers.plots import bars, line_panels, lines, timeline


def test_bars_and_lines():
    fig = bars({"a": 1, "b": 2}, "t", "y")
    assert [t.get_text() for t in fig.axes[0].texts] == ["1", "2"]
    fig = lines([1, 2, 3], {"x": [1, 2, 3], "y": [3, 2, 1]}, "t", "x", "y", logy=True)
    assert len(fig.axes[0].lines) == 2 and fig.axes[0].get_yscale() == "log"


def test_timeline():
    fig = timeline({"a": [3000, 2000, 0], "b": [3000, 3000, 1000]}, "t",
                   marks={"a": [(2, "end", "right")], "b": [(0, "start")]})
    assert len(fig.axes) == 1 and len(fig.axes[0].lines) == 2
    assert sorted(t.get_text() for t in fig.axes[0].texts) == ["end", "start"]
    assert fig.axes[0].get_ylabel() == "saved tensors alive (KiB)"
    # KiB, the unit fmt_bytes prints everywhere: 3,000 bytes are drawn at 2.93 (KiB), not at 3 (kB)
    step_a = fig.axes[0].lines[0]
    assert list(step_a.get_ydata())[:2] == [3000 / 1024, 2000 / 1024]
    assert all(float(t).is_integer() for t in fig.axes[0].get_xticks())     # engine steps are whole


def _tick_texts(fig, axis="x"):
    fig.canvas.draw()
    ax = fig.axes[0]
    ticks = ax.get_xticklabels() if axis == "x" else ax.get_yticklabels()
    lo, hi = ax.get_xlim() if axis == "x" else ax.get_ylim()
    return [t.get_text() for t in ticks if t.get_text() and lo <= t.get_position()[0 if axis == "x" else 1] <= hi]


def test_log_axes_have_plain_numbers_on_every_x_value():
    """On a log-log chart of depths 1..64, x reads 1 2 4 ... 64 (not only 10^0 and 10^1) and y
    has 1-2-5 ticks written as plain numbers."""
    depths = [1, 2, 4, 8, 16, 32, 64]
    fig = lines(depths, {"a": [2 * d + 1 for d in depths], "b": [d * d + 2 * d for d in depths]},
                "t", "depth", "runs", logx=True, logy=True)
    assert _tick_texts(fig, "x") == ["1", "2", "4", "8", "16", "32", "64"]
    ys = _tick_texts(fig, "y")
    assert {"10", "100", "1,000"} <= set(ys) and "20" in ys and not any("^" in t or "e" in t for t in ys)


def test_integer_x_values_get_integer_ticks():
    fig = lines(list(range(1, 21)), {"a": list(range(20))}, "t", "iteration", "y")
    ticks = [t for t in fig.axes[0].get_xticks() if 1 <= t <= 20]
    assert ticks and all(float(t).is_integer() for t in ticks)


def test_line_panels_draw_equal_series_once_labelled_with_all_names():
    xs = [1, 2, 3, 4]
    fig = line_panels(xs, {"bytes": ("KiB", {"A": [0] * 4, "B": [1, 1, 1, 1], "C": [0] * 4}),
                           "nodes": ("nodes", {"A": [0] * 4, "B": [0] * 4, "C": [2, 4, 6, 8]})},
                      "Loops", "iteration")
    left, right = fig.axes
    assert [line.get_label() for line in left.lines] == ["A, C", "B"]
    assert [line.get_label() for line in right.lines] == ["A, B", "C"]
    assert sorted(t.get_text() for t in right.texts) == ["A, B", "C"]          # labels at the line ends
    colour = {line.get_label(): line.get_color() for ax in fig.axes for line in ax.lines}
    assert colour["A, C"] == colour["A, B"] != colour["C"]                       # a group wears its first name's colour
    assert all(float(t).is_integer() and 1 <= t <= 4 for ax in fig.axes for t in ax.get_xticks())


def test_figure_alt_describes_what_is_drawn():
    import matplotlib.pyplot as plt
    import torch

    from helpers.multitask import show_images
    from helpers.plots import figure_alt

    assert figure_alt(bars({"saved by\nthe forward": 1536.0, "after": 0}, "Saved buffers", "KiB")) == (
        "A chart: Saved buffers, y: KiB, bars: saved by the forward: 1,536; after: 0")
    assert figure_alt(lines([1, 2], {"summed": [3, 4], "sequential": [5, 9]}, "Nodes", "layers", "count",
                            logx=True)) == "A chart: Nodes, x: layers (log scale), y: count, lines: summed; sequential"
    x, y = torch.zeros(6, 1, 4, 4), torch.tensor([[1, 0], [0, 1], [1, 1], [0, 0], [1, 0], [0, 1]])
    assert figure_alt(show_images(x, y, n=6)) == (
        "A figure of 6 panels: image: cat | image: car | image: cat + car | image: neither; and 2 more panels")
    assert figure_alt(line_panels([1, 2], {"bytes": ("KiB", {"A": [0, 0], "C": [0, 0]}),
                                           "nodes": ("count", {"A": [0, 0], "C": [1, 2]})}, "Loops", "i")) == (
        "A figure of 2 panels: bytes, x: i, y: KiB, lines: A, C | nodes, x: i, y: count, lines: A; C")
    fig = lines([0, 1], {"sigmoid $\\sigma(x)$": [0.5, 0.7]}, "S", "x", "y")
    assert figure_alt(fig).endswith("lines: sigmoid sigma(x)")                 # mathtext made readable
    fig, _ = plt.subplots()
    plt.close(fig)
    assert figure_alt(fig) == "an empty figure"


def test_setup_gives_every_figure_in_ipython_an_alt_text(monkeypatch):
    """helpers.notebook.setup() registers the description with IPython's display formatter:
    a figure displayed in a notebook gets {'image/png': {'alt': ...}} in its output metadata."""
    import IPython
    from IPython.core.formatters import DisplayFormatter

    from helpers import notebook

    class Shell:
        display_formatter = DisplayFormatter()

    shell = Shell()
    monkeypatch.setattr(IPython, "get_ipython", lambda: shell)
    fig = bars({"a": 1.0}, "One bar", "B")
    assert shell.display_formatter.format(fig)[1] == {}               # before: no metadata
    notebook.describe_figures()
    data, metadata = shell.display_formatter.format(fig)
    assert metadata == {"image/png": {"alt": "A chart: One bar, y: B, bars: a: 1"}}
    assert "text/plain" in data                                       # the figure's own output stays
