"""helpers.plots: the charts return closed figures with what was asked for on them."""
from helpers.plots import bars, lines, timeline


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
    assert [round(y, 4) for y in fig.axes[0].lines[0].get_ydata()] == [round(3000 / 1024, 4), round(2000 / 1024, 4), 0]


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
