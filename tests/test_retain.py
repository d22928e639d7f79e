"""helpers.retain: where a second backward stops, and which saved storages stay alive."""
import gc

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from helpers.retain import SavedStorages, saved_states, where_backward_stops
from helpers.walk import snapshot


def seed_graph():
    a = torch.tensor([[1.0, 2.0, 3.0, 4.0]], requires_grad=True)
    c = (a ** 2) * 2
    return a, c.mean(), c.sum()


def test_second_backward_stops_in_the_node_whose_saved_tensor_is_freed():
    a, d, e = seed_graph()
    d.backward()
    assert saved_states(snapshot(e)) == {"MulBackward0.other": "freed", "PowBackward0.self": "freed"}
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        with where_backward_stops(e) as stop:
            e.backward()
    assert stop.ran == ["SumBackward0"] and stop.stopped_in == "MulBackward0"
    assert repr(stop) == "ran SumBackward0; stopped in MulBackward0 (RuntimeError)"


def test_a_backward_that_finishes_and_hooks_are_removed():
    a, d, e = seed_graph()
    with where_backward_stops(d) as stop:
        d.backward(retain_graph=True)
    assert stop.stopped_in is None and stop.raised is None
    assert stop.ran == ["MeanBackward0", "MulBackward0", "PowBackward0", "AccumulateGrad"]
    assert repr(stop).startswith("finished: ran MeanBackward0")
    e.backward()                       # no hook left behind: nothing more is recorded
    assert len(stop.ran) == 4


def mlp_and_data():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
    return model, torch.randn(16, 8), torch.randn(16, 1)


def test_saved_storages_alive_after_backward_are_the_ones_held_elsewhere():
    model, x, y = mlp_and_data()
    with SavedStorages() as st:
        loss = F.mse_loss(model(x), y)
    # addmm1 saves x; relu saves its output, addmm2 saves it again (one storage) and W2.t();
    # mse saves the prediction and the target
    assert st.references == 6 and st.count == 5
    held_elsewhere = (x.numel() + model[2].weight.numel() + y.numel()) * 4
    assert st.nbytes == held_elsewhere + (16 * 32 + 16 * 1) * 4
    loss.backward()
    assert st.alive_count == 3 and st.alive_nbytes == held_elsewhere


def test_retained_graph_keeps_storages_until_its_tensors_are_deleted():
    model, x, y = mlp_and_data()
    with SavedStorages() as st:
        loss = F.mse_loss(model(x), y)
    loss.backward(retain_graph=True)
    assert st.alive_count == st.count
    del loss
    gc.collect()
    assert st.alive_count == 3      # the hooks themselves must not keep the graph alive


def test_gradients_unchanged_by_the_hooks():
    model, x, y = mlp_and_data()
    F.mse_loss(model(x), y).backward()
    plain = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    with SavedStorages():
        loss = F.mse_loss(model(x), y)
    loss.backward()
    assert all(torch.equal(g, p.grad) for g, p in zip(plain, model.parameters()))
    z = torch.tensor([0.5, 1.0], requires_grad=True)
    with SavedStorages() as st:
        out = z.exp().sin().sum()      # exp saves its own output
    out.backward()
    assert torch.allclose(z.grad, z.detach().exp() * z.detach().exp().cos())
    assert st.references == 2 and st.count == 1   # sin saves its input: the same buffer


def test_wrapped_python_numbers_are_not_seen():
    x = torch.rand(4, requires_grad=True)
    with SavedStorages() as st:
        y = x * 2                      # MulBackward0 saves the 2 as a 0-d tensor, hooks do not see it
    assert st.count == 0
    assert saved_states(snapshot(y)) == {"MulBackward0.other": "held"}


def test_storages_that_died_are_still_counted_when_their_id_is_reused():
    model, x, y = mlp_and_data()
    with SavedStorages() as st:
        for _ in range(5):             # each step's graph dies; new buffers may reuse old ids
            F.mse_loss(model(x), y).backward()
    per_step = (16 * 32 + 16 * 1) * 4  # the ReLU output and the prediction: new buffers every step
    held_elsewhere = (x.numel() + model[2].weight.numel() + y.numel()) * 4
    assert st.count == 3 + 5 * 2 and st.nbytes == held_elsewhere + 5 * per_step
    assert st.alive_nbytes == held_elsewhere


def test_retained_graphs_kept_in_a_list_add_up():
    model, x, y = mlp_and_data()
    kept = []
    with SavedStorages() as st:
        for _ in range(3):
            loss = F.mse_loss(model(x), y)
            loss.backward(retain_graph=True)
            kept.append(loss)
    held_elsewhere = (x.numel() + model[2].weight.numel() + y.numel()) * 4
    assert st.alive_nbytes == held_elsewhere + 3 * (16 * 32 + 16 * 1) * 4
    kept.clear()
    del loss
    assert st.alive_nbytes == held_elsewhere


def test_measuring_blocks_disable_the_inplace_check_documented_caveat():
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    with SavedStorages():
        h = w.exp()
        out = h.sum()
    h.add_(1)
    out.backward()                     # no "modified by an inplace operation" error under hooks
    assert w.grad is not None
