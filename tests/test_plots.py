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
    assert fig.axes[0].get_ylabel() == "saved tensors alive (kB)"
