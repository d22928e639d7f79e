"""A saved tensor changed in place after it was saved (e.g. by optimizer.step()) is reported,
not raised: it is still held, and backward through its node would fail."""
import torch

from helpers import render
from helpers.graph import draw, watch
from helpers.walk import snapshot


def graph():
    w = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
    x = torch.tensor([3.0, 4.0], requires_grad=True)
    y = (w * x).sum()          # MulBackward0 saves w (self) and x (other)
    return w, x, y


def test_modified_saved_tensor_is_held_with_a_note():
    w, x, y = graph()
    snapshot(y, names={"w": w, "x": x})        # an earlier walk: sizes are remembered
    with torch.no_grad():
        w.add_(1.0)                            # what an optimizer step does
    snap = snapshot(y, names={"w": w, "x": x})
    saved = {s.slot: s for _, s in snap.saved_tensors()}
    assert saved["self"].state == "held" and saved["self"].modified == "version 0 -> 1"
    assert saved["self"].shape == (2,) and saved["self"].alias == "w"
    assert saved["other"].modified is None
    assert snap.count_by_state() == {"held": 2, "freed": 0}     # counts unchanged
    text = draw(y, names={"w": w, "x": x}).text
    assert "self (= w): (2,) float32 8 B MODIFIED IN PLACE since saved (version 0 -> 1)" in text
    assert "MODIFIED IN PLACE" in render.to_dot(snap)


def test_modified_without_an_earlier_walk_still_draws():
    w, x, y = graph()
    with torch.no_grad():
        w.mul_(2.0)
    (s,) = [s for _, s in snapshot(y).saved_tensors() if s.modified]
    assert s.slot == "self" and s.shape is None and "size unknown" in s.describe()


def test_watch_reports_the_change_and_backward_really_fails():
    w, x, y = graph()
    with watch(y, names={"w": w, "x": x}, label="step") as seen:
        with torch.no_grad():
            w.sub_(0.5)
    assert "modified in place since saved: 1 saved tensor(s): MulBackward0.self (version 0 -> 1)" in repr(seen)
    try:
        y.backward()
    except RuntimeError as err:
        assert "modified by an inplace operation" in str(err)
    else:
        raise AssertionError("backward should have raised")


def test_freed_still_wins_after_backward():
    w, x, y = graph()
    y.backward()
    with torch.no_grad():
        w.add_(1.0)
    assert snapshot(y).count_by_state() == {"held": 0, "freed": 2}
