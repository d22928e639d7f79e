"""backward_twice.trace: the engine's real node order through hooks, and which node a failing
backward stopped in."""
import inspect

import pytest
import torch
from autograd_programs import seed_graph

from backward_twice.snapshot import GraphInputError, saved_states
from backward_twice.trace import BackwardTrace, reachable_nodes, where_backward_stops
from backward_twice.walk import COUNT_LIMIT, snapshot


def test_second_backward_stops_in_the_node_whose_saved_tensor_is_freed():
    t = seed_graph()
    d, e = t["d"], t["e"]
    d.backward()
    assert saved_states(snapshot(e)) == {"MulBackward0.other": "freed", "PowBackward0.self": "freed"}
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        with where_backward_stops(e) as stop:
            e.backward()
    assert stop.ran == ["SumBackward0"] and stop.stopped_in == "MulBackward0"
    assert repr(stop) == "ran SumBackward0; stopped in MulBackward0 (RuntimeError)"


def test_a_backward_that_finishes_and_hooks_are_removed():
    t = seed_graph()
    d, e = t["d"], t["e"]
    with where_backward_stops(d) as stop:
        d.backward(retain_graph=True)
    assert stop.stopped_in is None and stop.raised is None
    assert stop.ran == ["MeanBackward0", "MulBackward0", "PowBackward0", "AccumulateGrad"]
    assert repr(stop).startswith("finished: ran MeanBackward0")
    e.backward()                       # no hook left behind: nothing more is recorded
    assert len(stop.ran) == 4


def test_the_node_that_raised_is_the_latest_start_left_open():
    """Decides between the two answers the stepper and where_backward_stops used to compute
    apart: the *first* started-and-unfinished node (by set membership) named the node of an
    earlier, caught failure; the *last* one is the node that raised now."""
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y1 = x.exp().sum()                 # ExpBackward0 saves its result
    y2 = (x * x).sum()                 # MulBackward0 saves both inputs
    y1.backward()
    y2.backward()
    with pytest.raises(RuntimeError, match="second time"):
        with where_backward_stops(y1, y2) as stop:
            with pytest.raises(RuntimeError, match="second time"):
                y1.backward()          # raised in ExpBackward0, caught inside the block
            y2.backward()              # raises in MulBackward0: the error that leaves the block
    assert stop.stopped_in == "MulBackward0"


def test_a_node_that_finished_in_an_earlier_call_and_raises_now_is_found():
    """Membership in 'finished once' cannot tell: the node finished in the first call."""
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp().sum()
    with BackwardTrace(y) as tr:
        y.backward()                   # every node runs and finishes
        assert tr.unfinished is None
        with pytest.raises(RuntimeError, match="second time"):
            y.backward()               # SumBackward0 runs again, ExpBackward0 raises
    assert tr.unfinished is not None and tr.unfinished.name() == "ExpBackward0"
    assert tr.order == ["SumBackward0", "ExpBackward0", "torch::autograd::AccumulateGrad", "SumBackward0"]


def test_reachable_nodes_is_bounded_like_the_renderer():
    """Tracing shares the renderer's ceiling: a graph over the limit is refused, not walked."""
    x = torch.ones(2, requires_grad=True)
    y = x
    for _ in range(60):
        y = y * 1.5
    assert len(reachable_nodes(y, limit=61)) == 61          # 60 MulBackward0 + AccumulateGrad
    with pytest.raises(GraphInputError, match="more than 50 nodes"):
        reachable_nodes(y, limit=50)
    assert inspect.signature(reachable_nodes).parameters["limit"].default == COUNT_LIMIT


def _branchy(seed):
    """A graph with branches, a shared weight and two inputs: (loss, {name: tensor})."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(4, 3, generator=g, requires_grad=True)
    w = torch.randn(3, 3, generator=g, requires_grad=True)
    b = torch.randn(3, generator=g, requires_grad=True)
    h = x
    for k in range(6 + seed % 5):
        h = torch.tanh(h @ w + b) if k % 2 else (h * 2).relu() + h.exp().mean()
    mid = h
    loss = (h.sin() * mid.cos()).sum() + w.pow(2).sum()
    return loss, {"x": x, "w": w, "b": b, "mid": mid}


def _count_full(make, run):
    loss, t = make()
    with BackwardTrace(loss, keep_grads=False, starts=False) as full:
        run(loss, t)
    return len(full.ran_order())


@pytest.mark.parametrize("how", ["backward", "backward_inputs", "grad_leaf", "grad_inner"])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_hooking_some_nodes_counts_the_others_from_the_engines_plan(seed, how):
    """watch() hooks only the nodes it draws: the rest are counted from the engine's plan for
    the call. The count must equal what hooking every node records, for backward(), backward
    with inputs=, and autograd.grad to a leaf or to an inner tensor (leaves do not run there)."""
    run = {"backward": lambda loss, t: loss.backward(),
           "backward_inputs": lambda loss, t: loss.backward(inputs=[t["w"]]),
           "grad_leaf": lambda loss, t: torch.autograd.grad(loss, [t["b"]]),
           "grad_inner": lambda loss, t: torch.autograd.grad(loss, [t["mid"]])}[how]
    expected = _count_full(lambda: _branchy(seed), run)
    loss, t = _branchy(seed)
    nodes = reachable_nodes(loss)
    drawn = nodes[: 3 + seed]
    with BackwardTrace(loss, keep_grads=False, starts=False, hooked=drawn) as part:
        run(loss, t)
    assert 0 < part.planned < expected
    assert len(part.ran_order()) + part.planned == expected, (how, seed)
    assert {part.nodes[i] for i in part.ran_order()} <= set(drawn)


def test_hooking_every_node_is_the_plain_trace_and_hooked_needs_the_light_mode():
    loss, _ = _branchy(0)
    with BackwardTrace(loss, keep_grads=False, starts=False, hooked=reachable_nodes(loss)) as tr:
        loss.backward()
    assert tr.hooked is None and tr.planned == 0 and len(tr.ran_order()) == len(tr.nodes)
    with pytest.raises(ValueError, match="starts=False"):
        BackwardTrace(loss, hooked=reachable_nodes(loss)[:2])
