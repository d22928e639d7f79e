"""A smoke corpus of real models (issue 18 §4): each drawn before and after backward with
draw, watch and compare. No crash, no hang (layout is time-limited: backward_twice.layout), and the
figures make sense: before backward nothing is freed and no parameter counts as an activation;
after it, every saved tensor is freed with its size known, and each freed parameter is still held
by its leaf (the graph let go; the memory stays)."""
import warnings

import pytest
import torch
from test_robust import small_resnet
from torch import nn

from backward_twice import layout
from backward_twice.graph import compare, draw, watch
from backward_twice.snapshot import SavedKind


class _TransformerBlock(nn.Module):
    def __init__(self, d=16, heads=2):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x):
        a, _ = self.attn(x, x, x, need_weights=False)
        x = self.ln1(x + a)
        return self.ln2(x + self.ff(x))


def resnet():
    return small_resnet(), torch.randn(2, 3, 8, 8)


def transformer():
    torch.manual_seed(0)
    return _TransformerBlock(), torch.randn(2, 5, 16)


def rnn():
    torch.manual_seed(0)
    return nn.RNN(4, 8, batch_first=True), torch.randn(2, 6, 4)


class _Unrolled(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.RNNCell(4, 8)

    def forward(self, xs):
        h = torch.zeros(xs.shape[0], 8)
        for t in range(xs.shape[1]):
            h = self.cell(xs[:, t], h)
        return h


def rnn_cell():
    torch.manual_seed(0)
    return _Unrolled(), torch.randn(2, 12, 4)


def compiled(backend):
    def make():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        return torch.compile(model, backend=backend), torch.randn(3, 4)
    return make


# torch.compile: aot_eager only (its CompiledFunctionBackward node saves what the compiled
# forward kept); "eager" adds ~10 s of dynamo for a graph of ordinary nodes
MODELS = {"resnet": resnet, "transformer": transformer, "rnn": rnn, "rnn_cell": rnn_cell,
          "compile_aot_eager": compiled("aot_eager")}


def _loss(model, x):
    out = model(x)
    out = out[0] if isinstance(out, tuple) else out
    return out.pow(2).mean()


@pytest.mark.parametrize("name", list(MODELS))
def test_real_model_before_and_after_backward(name):
    warnings.simplefilter("ignore")
    model, x = MODELS[name]()
    loss = _loss(model, x)
    before = draw(loss, max_nodes=20_000)
    snap = before.snapshot
    assert "<svg" in before.svg and layout.measure(before.dot).total <= layout.REFUSE_COST
    states = snap.count_by_state()
    assert states["freed"] == 0 and states["held"] > 0
    m = snap.memory()
    assert m.held_unknown == 0 and m.activations > 0 and m.freed == 0
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    for _, s in snap.saved_tensors():   # a parameter is never counted as an activation
        if s.storage is not None and s.storage[0] in params:
            assert s.kind == SavedKind.LEAF, s
    with watch(loss, max_nodes=20_000) as w:
        loss.backward()
    after = w.after
    assert w.raised is None and "<svg" in w.picture.svg
    # every saved tensor backward ran through is freed; its size is known (seen held before)
    assert after.count_by_state()["held"] == 0 and after.count_by_state()["freed"] == states["held"]
    assert after.memory().freed > 0 and after.memory().freed_unknown == 0
    # and who still holds each freed buffer is known: a parameter is held by its leaf
    for _, s in after.saved_tensors():
        assert s.held_by is not None, s
        if s.kind == SavedKind.LEAF:
            assert any(h.startswith("leaf") for h in s.held_by), s
    pair = compare(before, draw(loss, max_nodes=20_000))
    assert "freed" in pair.text and "<svg" in pair.svg
