"""backward_twice.memory: SavedBytes (what a forward saves) and LiveSaved (what graphs hold now).

Exact counts from shapes, releases seen at the moment autograd drops a saved tensor,
no reference cycles, gradients unchanged, and autograd's in-place check kept."""
import contextlib
import gc
import weakref

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from backward_twice.memory import LiveSaved, SavedBytes
from backward_twice.walk import snapshot


# -- SavedBytes --------------------------------------------------------------------------
def test_savedbytes_counts_references_and_unique_storages():
    x = torch.rand(10, requires_grad=True)
    with SavedBytes() as sb:
        y = (x * x).sum()              # mul saves x twice
    assert sb.count == 2 and sb.nbytes == 80 and sb.unique_nbytes == 40
    y.backward()
    assert torch.allclose(x.grad, 2 * x.detach())


@pytest.mark.parametrize("make", [SavedBytes, LiveSaved], ids=["SavedBytes", "LiveSaved"])
def test_retained_graph_is_released_when_its_tensors_are_deleted(make):
    x = torch.rand(1000, requires_grad=True)
    with make():
        h = x.exp()                    # exp saves its own output
        loss = h.sum()
    alive = weakref.ref(h.untyped_storage())
    loss.backward(retain_graph=True)
    del h, loss
    gc.collect()
    assert alive() is None


@pytest.mark.parametrize("make", [SavedBytes, LiveSaved], ids=["SavedBytes", "LiveSaved"])
def test_wrapped_python_numbers_are_not_seen_but_the_walker_sees_them(make):
    x = torch.rand(4, requires_grad=True)
    with make() as rec:
        y = x * 2                      # MulBackward0 saves the 2 as a 0-d tensor, without the pack hook
    assert rec.count == 0 and rec.nbytes == 0
    assert [(op.name, s.slot, s.state) for op, s in snapshot(y).saved_tensors()] == [
        ("MulBackward0", "other", "held")]


def test_ctx_attributes_of_a_custom_function_are_not_seen():
    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a)   # seen
            ctx.b = b                  # a plain attribute: not seen
            return a * b

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return g * ctx.b, g * a

    a, b = torch.ones(3, requires_grad=True), torch.ones(5, 3, requires_grad=True)
    with SavedBytes() as sb:
        Scale.apply(a, b).sum()
    assert sb.count == 1 and sb.nbytes == 12


def test_hooks_do_not_nest_the_innermost_counts():
    x = torch.rand(4, requires_grad=True)
    with SavedBytes() as outer:
        with SavedBytes() as inner:
            x.exp()
        x.sin()
    assert inner.count == 1 and outer.count == 1


@pytest.mark.parametrize("make", [SavedBytes, LiveSaved], ids=["SavedBytes", "LiveSaved"])
def test_higher_order_gradients_unchanged(make):
    def run(hooks):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        with hooks or torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            h = x * 2
            y = (h ** 3).sum() + x.exp().sum()       # pow saves a non-leaf, exp its own output
        g, = torch.autograd.grad(y, x, create_graph=True)
        g2, = torch.autograd.grad(g.sum(), x)
        return g, g2, snapshot(y).count_by_state()

    plain, hooked = run(None), run(make())
    assert torch.equal(plain[0], hooked[0]) and torch.equal(plain[1], hooked[1])
    assert plain[2] == hooked[2]       # the double backward freed the same saved tensors


# -- LiveSaved: per storage (the default) -------------------------------------------------
def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))


def test_backward_frees_and_retain_keeps():
    model, x = mlp(), torch.randn(5, 4)
    live = LiveSaved(exclude=model.parameters())
    with live:
        loss = model(x).pow(2).mean()
    # x (5x4), tanh output (5x8, saved by Tanh and by the second Linear: counted once), out (5x1)
    assert live.nbytes == (5 * 4 + 5 * 8 + 5 * 1) * 4
    held = live.nbytes
    loss.backward(retain_graph=True)
    assert live.nbytes == held
    loss.backward()
    assert live.nbytes == 0 and live.count == 0 and live.peak == held


def test_deleting_the_last_reference_frees_a_retained_graph_without_gc():
    model, x = mlp(), torch.randn(5, 4)
    live = LiveSaved(exclude=model.parameters())
    gc.disable()
    try:
        with live:
            out = model(x)
            loss = out.pow(2).mean()
        loss.backward(retain_graph=True)
        del loss
        assert live.nbytes > 0          # `out` still holds the model's part of the graph
        del out
        assert live.nbytes == 0 and live.count == 0
    finally:
        gc.enable()


def test_parameters_are_excluded_but_counted_as_references():
    model, x = mlp(), torch.randn(5, 4)
    everything, no_params = LiveSaved(), LiveSaved(exclude=model.parameters())
    with everything:
        a = model(x).sum()
    with no_params:
        b = model(x).sum()
    assert everything.count == no_params.count == everything.recorded
    # x needs no grad, so the first Linear saved no weight; the second saved its (8, 1) weight.t()
    assert everything.nbytes - no_params.nbytes == 8 * 1 * 4
    del a, b


def test_not_reentrant():
    live = LiveSaved()
    with live:
        with pytest.raises(RuntimeError, match="already recording"):
            with live:
                pass
    with live:                         # but it can be used again, block after block
        pass


def test_per_must_be_named_right():
    with pytest.raises(ValueError, match="storage"):
        LiveSaved(per="tensor")


# -- LiveSaved: per reference -----------------------------------------------------------
def two_losses():
    x = torch.ones(4, 3)
    w = torch.full((3, 2), 0.5, requires_grad=True)
    h = (x @ w).tanh()                 # mm saves x (48 B), tanh saves its result (32 B)
    return h, h.sum(), (h ** 2).sum()   # sum saves no tensor; pow saves h (32 B)


def test_per_reference_counts_like_savedbytes_and_sees_release():
    with SavedBytes() as sb:
        two_losses()
    with LiveSaved(per="reference") as live:
        h, l1, l2 = two_losses()
    assert live.nbytes == live.total == live.peak == sb.nbytes == 48 + 32 + 32
    assert live.count == live.recorded == sb.count == 3
    l1.backward(retain_graph=True)
    assert live.nbytes == 112                      # retain_graph: nothing released
    l2.backward()
    assert live.nbytes == 0 and live.count == 0    # pow, tanh, mm all ran and released
    assert live.peak == 112 and live.recorded == 3


def test_per_storage_counts_a_buffer_saved_twice_once():
    with LiveSaved() as by_storage:
        two_losses()                   # the graph dies at once: peak says what it held
    with LiveSaved(per="reference") as by_reference:
        two_losses()
    assert by_reference.peak - by_storage.peak == 32   # h, saved by tanh and by pow: one buffer
    assert by_storage.total == by_storage.peak and by_storage.storages == 2


def test_a_shared_buffer_is_released_when_its_last_holder_goes_in_any_order():
    x = torch.ones(4, requires_grad=True)
    with LiveSaved() as live:
        b = x.exp()                    # ExpBackward0 saves b (first)
        d = b.sin().sum()              # SinBackward0 saves b (second): one buffer, 16 B
        r = (b * 1.0).sum()            # saves no tensor
    assert live.nbytes == 16 and live.count == 2
    r.backward()                       # runs ExpBackward0: the first holder goes, sin still holds b
    assert live.nbytes == 16 and live.count == 1
    torch.autograd.grad(d, b)          # runs SinBackward0 only: the last holder goes
    assert live.nbytes == 0 and live.count == 0


def test_released_when_graph_is_dropped():
    with LiveSaved(per="reference") as live:
        h, l1, l2 = two_losses()
    l1.backward()                      # runs sum, tanh, mm: frees tanh's and mm's tensors
    assert live.nbytes == 32           # pow's saved h: loss2 was never backwarded
    del h, l1, l2
    gc.collect()
    assert live.nbytes == 0


def test_samples_at_each_node_and_hooks_removed():
    with LiveSaved(per="reference") as live:
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


def test_samples_go_down_as_the_engine_frees():
    with LiveSaved(per="reference") as live:
        h, l1, l2 = two_losses()
    with live.during(l2):
        l2.backward()
    assert [b for _, b in live.samples] == [112, 112, 80, 48, 0]   # pow, tanh, mm freed in turn


def test_snapshot_reads_through_the_hooks():
    with LiveSaved():
        h, l1, l2 = two_losses()
    s = snapshot(l1, l2)
    assert s.count_by_state() == {"held": 3, "freed": 0}
    l2.backward()
    assert snapshot(l1, l2).count_by_state()["freed"] == 3


def test_saved_output_does_not_keep_a_dropped_graph_alive():
    x = torch.ones(4, requires_grad=True)
    with LiveSaved() as live:
        y = x.tanh().sum()             # tanh saves its own output
    assert live.nbytes == 16
    del y                              # no backward: the graph just goes away
    assert live.nbytes == 0            # no reference cycle through the packed output, no gc needed


def test_counts_what_backward_and_dropping_release():
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    with LiveSaved() as live:
        b = a.exp()            # saves its result
        c = (b * a).sum()      # saves b and a
        d = (a * a).sum()      # saves a twice
    assert live.count == 5
    c.backward(retain_graph=True)
    assert live.count == 5
    c.backward()
    assert live.count == 2     # only d's graph is left
    del d
    assert live.count == 0


# -- LiveSaved: saved storages still in memory (weak references) --------------------------
def mlp_and_data():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
    return model, torch.randn(16, 8), torch.randn(16, 1)


def test_storages_alive_after_backward_are_the_ones_held_elsewhere():
    model, x, y = mlp_and_data()
    with LiveSaved() as live:
        loss = F.mse_loss(model(x), y)
    # addmm1 saves x; relu saves its output, addmm2 saves it again (one storage) and W2.t();
    # mse saves the prediction and the target
    assert live.recorded == 6 and live.storages == 5
    held_elsewhere = (x.numel() + model[2].weight.numel() + y.numel()) * 4
    assert live.nbytes == live.total == held_elsewhere + (16 * 32 + 16 * 1) * 4
    loss.backward()
    assert live.nbytes == 0
    assert live.alive_count == 3 and live.alive_nbytes == held_elsewhere


def test_retained_graph_keeps_storages_until_its_tensors_are_deleted():
    model, x, y = mlp_and_data()
    with LiveSaved() as live:
        loss = F.mse_loss(model(x), y)
    loss.backward(retain_graph=True)
    assert live.alive_count == live.storages and live.alive_nbytes == live.nbytes
    del loss
    gc.collect()
    assert live.alive_count == 3      # the hooks themselves must not keep the graph alive


def test_gradients_unchanged_by_the_hooks():
    model, x, y = mlp_and_data()
    F.mse_loss(model(x), y).backward()
    plain = [p.grad.clone() for p in model.parameters()]
    for make in (SavedBytes, LiveSaved):
        model.zero_grad()
        with make():
            loss = F.mse_loss(model(x), y)
        loss.backward()
        assert all(torch.equal(g, p.grad) for g, p in zip(plain, model.parameters()))
    z = torch.tensor([0.5, 1.0], requires_grad=True)
    with LiveSaved() as live:
        out = z.exp().sin().sum()      # exp saves its own output
    out.backward()
    assert torch.allclose(z.grad, z.detach().exp() * z.detach().exp().cos())
    assert live.recorded == 2 and live.storages == 1   # sin saves its input: the same buffer


def test_storages_that_died_are_still_counted_when_their_id_is_reused():
    model, x, y = mlp_and_data()
    with LiveSaved() as live:
        for _ in range(5):             # each step's graph dies; new buffers may reuse old ids
            F.mse_loss(model(x), y).backward()
    per_step = (16 * 32 + 16 * 1) * 4  # the ReLU output and the prediction: new buffers every step
    held_elsewhere = (x.numel() + model[2].weight.numel() + y.numel()) * 4
    assert live.storages == 3 + 5 * 2 and live.total == held_elsewhere + 5 * per_step
    assert live.alive_nbytes == held_elsewhere and live.nbytes == 0
    assert live.peak == held_elsewhere + per_step


def test_savedbytes_unique_storages_over_a_loop():
    model, x, y = mlp_and_data()
    with SavedBytes() as sb:
        for _ in range(5):             # dead buffers' addresses and ids get reused: still new storages
            F.mse_loss(model(x), y).backward()
    per_step = (16 * 32 + 16 * 1) * 4
    held_elsewhere = (x.numel() + model[2].weight.numel() + y.numel()) * 4
    assert sb.count == 5 * 6 and sb.unique_nbytes == held_elsewhere + 5 * per_step


def test_retained_graphs_kept_in_a_list_add_up():
    model, x, y = mlp_and_data()
    kept = []
    with LiveSaved() as live:
        for _ in range(3):
            loss = F.mse_loss(model(x), y)
            loss.backward(retain_graph=True)
            kept.append(loss)
    held_elsewhere = (x.numel() + model[2].weight.numel() + y.numel()) * 4
    assert live.alive_nbytes == live.nbytes == held_elsewhere + 3 * (16 * 32 + 16 * 1) * 4
    kept.clear()
    del loss
    assert live.alive_nbytes == held_elsewhere and live.nbytes == 0


def test_excluded_storages_count_zero_alive_bytes_too():
    model, x, y = mlp_and_data()
    live = LiveSaved(exclude=[*model.parameters(), x, y])
    with live:
        F.mse_loss(model(x), y).backward()
    assert live.alive_count == 3 and live.alive_nbytes == 0 and live.total == (16 * 32 + 16 * 1) * 4


# -- the in-place check survives the hooks ------------------------------------------------
INPLACE_CASES = {
    "exp_ on a copy": lambda a: (a * 1).exp_().sum(),
    "sigmoid_ then square": lambda a: ((lambda b: b * b)((a * 1).sigmoid_())).sum(),
    "exp result modified": lambda a: a.exp().add_(1).sum(),
    "relu input modified": lambda a: (lambda b: (b.relu(), b.mul_(3))[0])(a * 2).sum(),
    "index assign on a clone": lambda a: (lambda b: (b.__setitem__(0, 5.0), b * b)[1])(a.clone()).sum(),
    "tanh result modified": lambda a: (a * 1).tanh().mul_(2).sum(),
    "leaf changed through .data (untracked)": lambda a: (lambda w: (w * w.exp(), w.data.add_(1))[0])(a).sum(),
}


def inplace_outcome(f, hooks):
    a = torch.randn(4, requires_grad=True)
    try:
        with hooks:
            y = f(a)
        y.backward()
        return "ok"
    except RuntimeError as err:
        assert "modified by an inplace operation" in str(err)
        return "inplace error"


@pytest.mark.parametrize("name", sorted(INPLACE_CASES))
def test_inplace_check_matches_autograd_without_hooks(name):
    f = INPLACE_CASES[name]
    plain = inplace_outcome(f, contextlib.nullcontext())
    assert inplace_outcome(f, SavedBytes()) == inplace_outcome(f, LiveSaved()) == plain
    # why the classes redo the check: under any pack hook, autograd does not
    identity = torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t)
    assert inplace_outcome(f, identity) == "ok"


def test_an_optimizer_step_between_forward_and_backward_still_raises():
    model, x = mlp(), torch.randn(5, 4)
    ref = torch.autograd.grad(model(x).sum(), list(model.parameters()))
    with LiveSaved():
        loss = model(x).sum()
    got = torch.autograd.grad(loss, list(model.parameters()), retain_graph=True)
    assert all(torch.equal(r, g) for r, g in zip(ref, got))
    with torch.no_grad():
        model[2].weight.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_the_walker_reports_a_modified_saved_tensor_under_the_hooks():
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    x = torch.tensor([3.0, 4.0], requires_grad=True)
    with SavedBytes():
        y = (w * x).sum()              # saves w (self) and x (other)
    with torch.no_grad():
        w.add_(1.0)
    saved = {s.slot: s for _, s in snapshot(y).saved_tensors()}
    assert saved["self"].state == "held" and saved["self"].modified == "version 0 -> 1"
    assert saved["other"].modified is None
