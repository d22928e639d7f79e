"""LiveSaved: exact bytes held by saved tensors, following backward and reference drops."""
import gc

import pytest
import torch

from helpers.keepalive import LiveSaved


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))


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
    assert live.nbytes == 0 and live.refs == 0


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
        assert live.nbytes == 0 and live.refs == 0
    finally:
        gc.enable()


def test_parameters_are_excluded_but_counted_as_refs():
    model, x = mlp(), torch.randn(5, 4)
    everything, no_params = LiveSaved(), LiveSaved(exclude=model.parameters())
    with everything:
        a = model(x).sum()
    with no_params:
        b = model(x).sum()
    assert everything.refs == no_params.refs
    # x needs no grad, so the first Linear saved no weight; the second saved its (8, 1) weight.t()
    assert everything.nbytes - no_params.nbytes == 8 * 1 * 4
    del a, b


def test_gradients_unchanged_and_inplace_check_kept():
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


def test_not_reentrant():
    live = LiveSaved()
    with live:
        with pytest.raises(RuntimeError):
            with live:
                pass


INPLACE_CASES = {
    "exp_ on a copy": lambda a: (a * 1).exp_().sum(),
    "sigmoid_ then square": lambda a: ((lambda b: b * b)((a * 1).sigmoid_())).sum(),
    "exp result modified": lambda a: a.exp().add_(1).sum(),
    "relu input modified": lambda a: (lambda b: (b.relu(), b.mul_(3))[0])(a * 2).sum(),
    "index assign on a clone": lambda a: (lambda b: (b.__setitem__(0, 5.0), b * b)[1])(a.clone()).sum(),
    "tanh result modified": lambda a: (a * 1).tanh().mul_(2).sum(),
}


@pytest.mark.parametrize("name", sorted(INPLACE_CASES))
def test_inplace_check_matches_autograd_without_hooks(name):
    f = INPLACE_CASES[name]

    def outcome(use_live):
        a = torch.randn(4, requires_grad=True)
        try:
            if use_live:
                with LiveSaved():
                    y = f(a)
            else:
                y = f(a)
            y.backward()
            return "ok"
        except RuntimeError as err:
            assert "modified by an inplace operation" in str(err)
            return "inplace error"

    assert outcome(True) == outcome(False)
