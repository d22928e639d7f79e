"""LiveSaved sees saved tensors being saved and released, exactly, by shape."""
import gc

import torch

from helpers.livebytes import LiveSaved, timeline_figure
from helpers.memory import SavedBytes
from helpers.walk import snapshot


def two_losses():
    x = torch.ones(4, 3)
    w = torch.full((3, 2), 0.5, requires_grad=True)
    h = (x @ w).tanh()                 # mm saves x (48 B), tanh saves its result (32 B)
    return h, h.sum(), (h ** 2).sum()   # sum saves no tensor; pow saves h (32 B)


def test_counts_like_savedbytes_and_sees_release():
    with SavedBytes() as sb:
        two_losses()
    with LiveSaved() as live:
        h, l1, l2 = two_losses()
    assert live.nbytes == live.total == live.peak == sb.nbytes == 48 + 32 + 32
    assert live.count == 3
    l1.backward(retain_graph=True)
    assert live.nbytes == 112                      # retain_graph: nothing released
    l2.backward()
    assert live.nbytes == 0 and live.count == 0    # pow, tanh, mm all ran and released
    assert live.peak == 112


def test_released_when_graph_is_dropped():
    with LiveSaved() as live:
        h, l1, l2 = two_losses()
    l1.backward()                      # runs sum, tanh, mm: frees tanh's and mm's tensors
    assert live.nbytes == 32           # pow's saved h: loss2 was never backwarded
    del h, l1, l2
    gc.collect()
    assert live.nbytes == 0


def test_samples_at_each_node_and_hooks_removed():
    with LiveSaved() as live:
        h, l1, l2 = two_losses()
    with live.during(l1, l2):
        l2.backward(retain_graph=True)
        live.mark("end")
    names = [s[0] for s in live.samples]
    assert names == ["SumBackward0", "PowBackward0", "TanhBackward0", "MmBackward0",
                     "torch::autograd::AccumulateGrad", "end"]
    assert all(b == 112 for _, b in live.samples)
    live.samples.clear()
    l2.backward()                      # hooks were removed: no samples
    assert live.samples == [] and live.nbytes == 0


def test_snapshot_reads_through_the_hooks():
    with LiveSaved():
        h, l1, l2 = two_losses()
    s = snapshot(l1, l2)
    assert s.count_by_state() == {"held": 3, "freed": 0}
    l2.backward()
    assert snapshot(l1, l2).count_by_state()["freed"] == 3


def test_timeline_figure():
    fig = timeline_figure({"a": [3000, 2000, 0], "b": [3000, 3000, 1000]}, "t",
                          marks={"a": [(2, "end", "right")], "b": [(0, "start")]})
    assert len(fig.axes) == 1 and len(fig.axes[0].lines) == 2
    assert sorted(t.get_text() for t in fig.axes[0].texts) == ["end", "start"]


def test_saved_output_does_not_keep_a_dropped_graph_alive():
    x = torch.ones(4, requires_grad=True)
    with LiveSaved() as live:
        y = x.tanh().sum()             # tanh saves its own output
    assert live.nbytes == 16
    del y                              # no backward: the graph just goes away
    assert live.nbytes == 0            # no reference cycle through the packed output, no gc needed


def test_measure_only_the_inplace_check_is_off_under_hooks():
    w = torch.ones(3, requires_grad=True)
    with LiveSaved():
        v = w * 1.0
        out = (v * v).sum()
    with torch.no_grad():
        v.add_(1)                      # without hooks the backward below would raise
    out.backward()                     # documented: pack hooks disable the version check
    assert torch.equal(w.grad, torch.full((3,), 4.0))
