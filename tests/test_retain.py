"""helpers.retain: what backward frees, and where a second backward stops."""
import pytest
import torch

from helpers.retain import saved_states, where_backward_stops
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
