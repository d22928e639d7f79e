"""Real models and odd inputs the pictures must survive (issue 18 §4): each test is built
from a case that crashed, froze or lied, and checks what the picture now says."""
import warnings

import pytest
import torch
from torch import nn

from backward_twice.graph import draw
from backward_twice.snapshot import GraphInputError, fmt_number, fmt_values
from backward_twice.walk import snapshot


# ---------------------------------------------------------------- complex leaves
def test_complex_leaf_grad_is_drawn_with_its_complex_values():
    z = torch.tensor([1 + 2j, 3 - 1j], requires_grad=True)
    (z.abs() ** 2).sum().backward()          # d|z|^2 / d conj(z) = 2z
    assert torch.equal(z.grad, 2 * z.detach())
    pic = draw(z * 1, names={"z": z})        # raised TypeError in fmt_number
    assert "leaf z (2,) complex64 grad=[2+4j, 6-2j]" in pic.text
    assert "<svg" in pic.svg


def test_complex_norm_is_the_complex_norm_not_the_norm_of_the_real_parts():
    g = torch.full((9,), 2j)                 # real parts all 0: the old text said "norm 0"
    assert torch.linalg.vector_norm(g).item() == pytest.approx(6.0)
    assert fmt_values(g) == "(9,) norm 6"
    z = torch.zeros(9, dtype=torch.complex64, requires_grad=True)
    (z * torch.full((9,), -2j)).real.sum().backward()
    assert "grad=(9,) norm 6" in draw(z * 1, names={"z": z}).text


def test_fmt_number_complex_signs_and_zero():
    assert [fmt_number(v) for v in (1 + 2j, 3 - 1j, -0.0 - 0.5j, 2 + 0j)] == ["1+2j", "3-1j", "0-0.5j", "2+0j"]


# ---------------------------------------------------------------- sparse grads
def test_sparse_embedding_grad_is_drawn_after_backward():
    torch.manual_seed(0)
    emb = nn.Embedding(4, 2, sparse=True)
    out = emb(torch.tensor([0, 1, 1])).sum()
    out.backward()
    assert emb.weight.grad.is_sparse
    expected = torch.linalg.vector_norm(emb.weight.grad.to_dense()).item()   # rows 0 and 1: 1 and 2 per entry
    assert expected == pytest.approx(10 ** 0.5)
    text = draw(out, names={"w": emb.weight}).text   # raised "reshape is not implemented for sparse tensors"
    # 3 lookups -> 3 stored rows of 2 (uncoalesced: row 1 twice); coalesced: 2 rows, 4 values
    assert "leaf w (4, 2) float32 grad=(4, 2) sparse_coo, 4 stored values, norm 3.16" in text


# ---------------------------------------------------------------- odd inputs
def _nested(layout=torch.strided):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # "prototype stage"
        return torch.nested.nested_tensor([torch.randn(2, 3), torch.randn(4, 3)], layout=layout,
                                          requires_grad=True)


@pytest.mark.parametrize("layout", [torch.strided, torch.jagged])
def test_nested_root_is_a_clear_graph_input_error(layout):
    nt = _nested(layout)
    with pytest.raises(GraphInputError, match="argument 1 is a nested tensor .*to_padded_tensor"):
        draw(nt * 2)


def test_nested_tensor_inside_the_graph_is_a_clear_graph_input_error():
    nt = _nested()
    y = torch.nested.to_padded_tensor(nt * 2, 0.0).sum()
    with pytest.raises(GraphInputError, match="saved as 'self' is a nested tensor"):
        snapshot(y)
    y.backward()                             # saved tensors freed: the nested leaf is still met
    with pytest.raises(GraphInputError, match="a leaf of the graph .* is a nested tensor"):
        draw(y)
    with pytest.raises(GraphInputError, match=r"names\['nt'\] is a nested tensor"):
        draw(y, names={"nt": nt})


def test_meta_tensors_say_what_they_would_take_and_have_no_values():
    # issue 28 §2: on the meta device sizes come from shapes and dtypes, and the text says so
    x = torch.randn(3, device="meta", requires_grad=True)
    y = (x * x).sum()
    text = draw(y, names={"x": x}).text
    assert "held  self (= x): (3,) float32 12 B" in text and "saved tensors: 2 held (24 B)" in text
    assert "meta device: the sizes are what these tensors would take; no memory is allocated" in text
    y.backward()
    assert "leaf x (3,) float32 grad=(3,) on meta: no values" in draw(y, names={"x": x}).text


def test_meta_tensors_share_no_buffer_by_address():
    # every meta tensor sits at address 0: unrelated tensors of one size were reported as one buffer,
    # and saved activations as sharing memory with unrelated weights. Sharing is by storage identity.
    w1 = torch.randn(8, 8, device="meta", requires_grad=True)
    w2 = torch.randn(8, 8, device="meta", requires_grad=True)
    x = torch.randn(8, 8, device="meta")
    y = ((x @ w1).tanh() @ w2).sum()
    text = draw(y, names={"w1": w1, "w2": w2}).text
    shared = [line for line in text.splitlines() if line.startswith("shared buffers")]
    # the one real sharing: tanh's result, saved by TanhBackward0 and as the second matmul's self
    # (by address, all 4 slots were one buffer and each was "= w1", a weight no slot saves)
    assert shared == ["shared buffers: 1 buffer(s) saved by 2 slots; counted once: 768 B held, 0 B freed"], text
    assert "(= w1)" not in text and "saved tensors: 4 held (1.0 KiB)" in text


def test_an_expanded_view_counts_its_buffer_not_its_view():
    # a causal mask broadcast with expand (stride 0): it read '4.0 KiB' for a 256-byte buffer
    T = 16
    mask = torch.ones(T, T).tril().bool()                     # 256 B
    s = torch.randn(4, 4, T, T, requires_grad=True)
    text = draw(s.masked_fill(mask.expand(4, 4, T, T), 0.0).sum(), names={"s": s}).text
    assert "held  mask: (4, 4, 16, 16) bool 256 B buffer, viewed as 4.0 KiB" in text
    assert "saved tensors: 1 held (256 B)" in text


def test_tensor_subclass_is_drawn_like_a_tensor():
    class Tagged(torch.Tensor):
        pass
    x = torch.randn(3, requires_grad=True).as_subclass(Tagged)
    y = (x * x).sum()
    assert "held  self (= x): (3,) float32 12 B" in draw(y, names={"x": x}).text
    y.backward()
    assert "FREED self (= x): (3,) float32 12 B" in draw(y, names={"x": x}).text   # size from the walk before


# ---------------------------------------------------------------- checkpointing
def _checkpointed_mlp(calls, layers=3):
    from torch.utils.checkpoint import checkpoint

    torch.manual_seed(0)
    mods = [nn.Linear(4, 4) for _ in range(layers)]

    def block(h, layer):
        calls.append(layer)
        return torch.relu(layer(h))

    x = torch.randn(2, 4, requires_grad=True)
    h = x
    for m in mods:
        h = checkpoint(block, h, m, use_reentrant=False)
    return h.sum(), x, mods


def _grads(x, mods):
    return [x.grad.clone()] + [p.grad.clone() for m in mods for p in m.parameters()]


def test_drawing_a_checkpointed_graph_runs_no_user_code_and_holds_nothing():
    calls = []
    loss, x, mods = _checkpointed_mlp(calls)
    assert len(calls) == 3
    snap = snapshot(loss)
    pic = draw(loss)
    assert len(calls) == 3                   # was 3 + 9: one forward per saved tensor read
    assert len(snap.recomputed_in_backward) == 6     # each layer's AddmmBackward0 and ReluBackward0
    assert "saved tensors: 0 held (0 B)" in pic.text
    assert pic.text.count("recomputed in backward (checkpoint), not held") == 9   # mat1, mat2, result x 3
    assert "recomputed in backward" in pic.svg
    loss.backward()                          # still works: only backward's own 3 recomputations
    assert len(calls) == 6


@pytest.mark.parametrize("tool", ["step_through", "watch"])
def test_a_checkpointed_backward_still_works_under_the_tools(tool):
    from backward_twice.graph import watch
    from backward_twice.stepper import step_through

    alone_calls = []
    loss, x, mods = _checkpointed_mlp(alone_calls)
    loss.backward()
    expected = _grads(x, mods)
    calls = []
    loss, x, mods = _checkpointed_mlp(calls)
    if tool == "step_through":               # raised CheckpointError "already unpacked once"
        st = step_through(lambda: loss.backward(), loss)
        assert st.raised is None and len(st.steps) == 17
    else:
        with watch(loss) as w:
            loss.backward()
        assert w.raised is None and "freed nothing" in w.picture.text   # nothing was held
    assert len(calls) == len(alone_calls) == 6     # the forward, then backward's recomputation
    assert all(torch.equal(a, b) for a, b in zip(_grads(x, mods), expected))


# ---------------------------------------------------------------- memory: what backward frees
class _Block(nn.Module):
    """A ResNet basic block (conv-BN-ReLU-conv-BN, plus the input)."""

    def __init__(self, c):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.c2, self.b2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

    def forward(self, x):
        return torch.relu(x + self.b2(self.c2(torch.relu(self.b1(self.c1(x))))))


def small_resnet():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                         _Block(16), _Block(16), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))


def test_memory_totals_separate_activations_from_parameters_and_inputs_saved_by_reference():
    from backward_twice.modules import record_modules

    model, x = small_resnet(), torch.randn(2, 3, 8, 8)
    with record_modules(model):
        loss = model(x).sum()           # SumBackward0 saves no tensor: all memory is the model's
    snap = snapshot(loss, max_nodes=20_000)
    m = snap.memory()
    # by reference: every conv weight and BN weight, the Linear weight (through its .T view), x,
    # and BN's running mean and var (buffers, saved as inputs); biases are not saved
    convs = [mod for mod in model.modules() if isinstance(mod, nn.Conv2d)]
    bns = [mod for mod in model.modules() if isinstance(mod, nn.BatchNorm2d)]
    expected = (sum(4 * mod.weight.numel() for mod in convs + bns) + 4 * model[-1].weight.numel() + 4 * x.numel()
                + sum(4 * (bn.running_mean.numel() + bn.running_var.numel()) for bn in bns))
    assert m.by_reference == expected
    assert m.activations > 0 and m.held_unknown == 0
    pic = draw(loss, modules=model)
    total = m.activations + m.by_reference
    # the model's line: held total, then what backward frees (was: one total, weights included)
    from backward_twice.snapshot import fmt_bytes
    assert f"held ({fmt_bytes(m.activations)} activations)" in pic.text
    assert fmt_bytes(total) in pic.text.splitlines()[1]
    flat = draw(loss, max_nodes=20_000).text
    assert (f"memory held {fmt_bytes(total)}: {fmt_bytes(m.activations)} activations (backward frees them), "
            f"{fmt_bytes(m.leaves)} of leaves (parameters) saved by reference (they outlive backward), "
            f"{fmt_bytes(m.inputs)} of inputs made outside the graph") in flat
    loss.backward()
    after = snapshot(loss, max_nodes=20_000).memory()
    assert after.held == {} and after.freed > 0      # sizes known: recorded by the walk before


def test_an_unknown_size_is_never_summed_as_zero_bytes():
    x = torch.randn(3, requires_grad=True)
    y = (x * x.exp()).sum()
    y.backward()                             # freed before any walk saw the saved tensors
    text = draw(y).text
    assert "3 freed (3 sizes unknown)" in text and "freed (0 B)" not in text
    z = (x * x.exp()).sum()
    snapshot(z)                              # seen held: the sizes are recorded
    z.backward()
    assert "3 freed (36 B)" in draw(z).text


def test_negative_ints_a_node_saved_print_as_negative():
    x = torch.randn(2, 3, 4, requires_grad=True)
    assert "value dim = (-1, -2)" in draw(x.mean(dim=(-1, -2)).sum()).text


# ---------------------------------------------------------------- who still holds a freed buffer
def _freed(snap):
    return {f"{op.name}.{s.slot}": s.held_by for op, s in snap.saved_tensors() if s.state == "freed"}


def test_held_by_notebook_00_a_freed_slot_whose_leaf_is_still_alive():
    from backward_twice.graph import watch

    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)      # 00 [12]
    b = a * a
    loss = b.sum()
    with watch(loss, names={"a": a, "b": b, "loss": loss}) as w:
        loss.backward()
    # "freed 2 saved tensors, 12 B", yet `a` is alive: the graph let go, the memory stayed
    assert _freed(w.after) == {"MulBackward0.other": ("leaf a",), "MulBackward0.self": ("leaf a",)}
    assert all(s.held_by is None for _, s in w.before.saved_tensors())   # held: the field is for freed


def test_held_by_is_empty_when_only_the_graph_held_it_and_unknown_without_a_walk_before():
    x = torch.randn(3, requires_grad=True)
    y = x.exp().sin().sum()
    snapshot(y)                               # seen held before backward
    y.backward()
    assert _freed(snapshot(y)) == {"SinBackward0.self": (), "ExpBackward0.result": ()}   # memory returned
    z = x.exp().sin().sum()
    z.backward()                              # drawn only after backward: never guessed
    assert _freed(snapshot(z)) == {"SinBackward0.self": None, "ExpBackward0.result": None}


def test_held_by_notebook_02_feats_freed_under_relu_yet_held_by_the_car_head():
    import torch.nn.functional as F

    from backward_twice.graph import watch
    from helpers.multitask import CatCarNet, make_images

    x, y = make_images(16, seed=0)
    torch.manual_seed(0)
    mini = CatCarNet(channels=2, convs=1, fcs=1)
    xs, ys = x[:4], y[:4]
    feats = mini.trunk(xs)                    # 02 [43]
    loss_cat = F.binary_cross_entropy_with_logits(mini.cat(feats).squeeze(1), ys[:, 0])
    loss_car = F.binary_cross_entropy_with_logits(mini.car(feats).squeeze(1), ys[:, 1])
    names = dict(mini.named_parameters()) | {"feats": feats, "loss_cat": loss_cat, "loss_car": loss_car}
    with watch(loss_cat, loss_car, names=names) as w:
        loss_cat.backward()
    freed = _freed(w.after)
    # the car head's Linear (not run by loss_cat's backward) still saves feats as its mat1
    assert freed["ReluBackward0.result"] == ("variable feats", "node AddmmBackward0")
    assert freed["ConvolutionBackward0.weight"] == ("leaf trunk.0.weight",)
    assert freed["ConvolutionBackward0.input"] == ("something not drawn here",)   # x, held by the caller
    car = [s for op, s in w.after.saved_tensors() if s.alias == "feats" and s.state == "held"]
    assert len(car) == 1 and car[0].held_by is None
    del x, xs
    loss_car.backward(inputs=list(mini.car.parameters()))   # the car head lets go too (the trunk is freed)
    assert _freed(snapshot(loss_cat, loss_car, names=names))["ReluBackward0.result"] == ("variable feats",)
    del names["feats"], feats                 # and once the variable is gone, so is the memory
    assert _freed(snapshot(loss_cat, loss_car, names=names))["ReluBackward0.result"] == ()


def test_held_by_in_the_stepper_frames():
    from backward_twice.stepper import step_through

    a = torch.tensor([1.0, 2.0], requires_grad=True)
    h = a.exp()
    out = (h * 3).sum()
    st = step_through(lambda: out.backward(), out, names={"a": a, "h": h, "out": out})
    last = st.frames[-1].snapshot
    # exp's result is h, still a variable; the 3 that MulBackward0 saved had only the graph
    assert _freed(last) == {"ExpBackward0.result": ("variable h",), "MulBackward0.other": ()}


def test_user_saved_tensor_hooks_are_never_run_by_a_drawing():
    unpacked = []

    def unpack(d):
        unpacked.append(1)
        return d["t"]

    x = torch.randn(3, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: {"t": t}, unpack):
        y = x.exp().sum()
    text = draw(y).text
    assert unpacked == []
    assert "UNREADABLE result: size unknown (not unpacked: a saved-tensor hook keeps it as a dict)" in text
    with torch.autograd.graph.save_on_cpu():   # keeps a tensor: read as held, without unpacking
        z = x.exp().sum()
    assert "held  result: (3,) float32 12 B" in draw(z).text
    y.backward()
    assert unpacked == [1]                     # backward's own unpack, once


def test_an_input_only_the_graph_holds_is_freed_by_backward_as_its_words_say():
    w = torch.tensor([0.5], requires_grad=True)     # 08's tiny loop: x is rebound every step
    loss = ((w * torch.randn(4) - 1.0) ** 2).mean()
    snap = snapshot(loss, names={"w": w})
    assert "of inputs made outside the graph (freed too, unless something else holds them)" in \
        snap.memory().words()
    loss.backward()
    held_by = {f"{op.name}.{s.slot}": s.held_by for op, s in snapshot(loss).saved_tensors()}
    assert held_by["MulBackward0.other"] == ()      # the random input: memory returned


# ---------------------------------------------------------------- engine-merge: held_by in the totals
def test_a_module_box_after_backward_says_how_much_of_what_was_freed_is_still_held():
    """A box that stands for several ops (module call, folded run) sums what backward freed; the
    parameters, BN running stats and x in that sum were never returned (Saved.held_by)."""
    from backward_twice.modules import record_modules
    from backward_twice.snapshot import fmt_bytes

    model, x = small_resnet(), torch.randn(2, 3, 8, 8)
    with record_modules(model):
        loss = model(x).sum()
    before = snapshot(loss, max_nodes=20_000).memory()      # a walk before backward: holders known
    loss.backward()
    m = snapshot(loss, max_nodes=20_000).memory()
    assert m.freed == before.activations + before.by_reference and m.held == {}
    assert m.freed_kept == before.by_reference > 0           # all of it still alive: model and x
    text = draw(loss, modules=model).text
    assert f"{fmt_bytes(m.freed)} freed ({fmt_bytes(m.freed_kept)} of it still held elsewhere)" in text
    relu = next(line for line in text.splitlines() if line.strip().startswith("2: ReLU"))
    assert "freed" in relu and "still held" not in relu     # its result: only the graph held it


def test_diagnosing_a_checkpointed_graph_runs_no_user_code():
    """why_backward_failed reads saved tensors through backward_twice.walk's one reader, which never
    unpacks a checkpoint's placeholder (each unpack re-ran the block's forward: 9 calls here)."""
    from backward_twice.diagnose import why_backward_failed

    calls = []
    loss, x, mods = _checkpointed_mlp(calls)
    d = why_backward_failed(loss, names={"loss": loss, "x": x})
    assert len(calls) == 3, len(calls) - 3   # the forward only
    assert "none of the 9 tensors saved in its graph" in d.message
    loss.backward()
    assert len(calls) == 6                   # backward's own 3 recomputations, and it still works
    with pytest.raises(RuntimeError) as err:
        loss.backward()
    d = why_backward_failed(err.value, names={"loss": loss, "x": x})
    assert len(calls) == 6 and "had been freed by an earlier backward" in d.message
