"""Repeated structure folds (issue 28 §1, backward_twice/picture/repeats.py): runs of identical blocks,
found in one pass, become one 'xN' box; blocks that differ in one saved shape never do."""
from __future__ import annotations

import re

import torch
from torch import nn

from backward_twice import draw
from backward_twice.modules import record_modules
from backward_twice.picture import repeats
from backward_twice.walk import snapshot


def _rnn_steps(steps=12):
    """A user's own recurrence, no modules recorded: h = tanh(x_t @ w_x + h @ w_h)."""
    torch.manual_seed(0)
    w_x, w_h = torch.randn(3, 5, requires_grad=True), torch.randn(5, 5, requires_grad=True)
    xs, h = torch.randn(steps, 2, 3), torch.zeros(2, 5)
    for t in range(steps):
        h = torch.tanh(xs[t] @ w_x + h @ w_h)
    return h.pow(2).sum()


class Residual(nn.Module):
    def __init__(self, d=6, hidden=8):
        super().__init__()
        self.up, self.down = nn.Linear(d, hidden), nn.Linear(hidden, d)

    def forward(self, x):
        return x + self.down(torch.relu(self.up(x)))


def _residual_stack(hiddens):
    torch.manual_seed(0)
    model = nn.Sequential(*(Residual(hidden=h) for h in hiddens))
    x = torch.randn(4, 6)
    with record_modules(model):
        loss = model(x).sum()
    return loss, model


def _folded_names(folded):
    return {o for r in folded.runs for b in r.blocks[1:] for o in b}


def test_rnn_steps_without_modules_fold_into_one_box():
    snap = snapshot(_rnn_steps(12))
    folded = repeats.fold(snap)
    (run,) = folded.runs
    # step 0 multiplies no h (it needs no grad): it differs; steps 1..11 are the same block, one drawn
    assert len(run.blocks) == 11 and folded.count == 10
    assert sorted(run.names) == sorted(["TanhBackward0", "AddBackward0", "MmBackward0", "MmBackward0"])
    assert folded.ops_folded == 10 * 4 and len(folded.snap.ops) == len(snap.ops) - 40
    assert "10 x the block" in folded.words
    pic = draw(_rnn_steps(12))
    assert "&#215;10 more of the block below" in pic.dot and "\npicture: folded: 10 x the block" in pic.text
    # the text form still lists every op
    assert len(re.findall(r"^\w+ TanhBackward0\(", pic.text, flags=re.M)) == 12


def test_residual_blocks_fold_and_the_box_says_what_they_hold():
    loss, _ = _residual_stack([8] * 6)
    folded = repeats.fold(snapshot(loss))
    (run,) = folded.runs
    # the first block adds x, which needs no grad (no edge): it differs; five are the same
    assert len(run.blocks) == 5 and sorted(run.names) == sorted(
        ["AddBackward0", "AddmmBackward0", "AddmmBackward0", "ReluBackward0", "TBackward0", "TBackward0"])
    # each folded block saves its input (4x6), relu's result (4x8), and two weights by reference
    box = repeats._box(snapshot(loss), run)
    text = " ".join(span.text for row in box.rows for cell in row for span in cell.spans)
    assert "\u00d74 more of the block below" in text and "activations" in text


def test_blocks_that_differ_in_one_shape_do_not_fold():
    # the same ops each time, but every block's hidden width differs: nothing is identical
    loss, _ = _residual_stack([8, 9, 10, 11, 12, 13])
    assert repeats.fold(snapshot(loss)) is None
    # six blocks, the third of another width: it is never inside a box
    loss, model = _residual_stack([8, 8, 16, 8, 8, 8])
    snap = snapshot(loss)
    folded = repeats.fold(snap)
    odd = {oid for oid, op in snap.ops.items() if any(s.shape and 16 in s.shape for s in op.saved if s.is_tensor)}
    assert odd and folded is not None and not odd & _folded_names(folded)
    assert folded.runs[0].blocks and len(folded.runs[0].blocks) == 3      # the three 8-wide blocks nearest the loss


def _module_runs(hiddens):
    from backward_twice.modules import find_runs, module_groups
    from backward_twice.walk import snapshot_with_ids
    torch.manual_seed(0)
    model = nn.Sequential(*(Residual(hidden=h) for h in hiddens))
    with record_modules(model) as rec:
        loss = model(torch.randn(4, 6)).sum()
    params = dict(model.named_parameters())
    snap, ids = snapshot_with_ids(loss, names=params, max_nodes=1000)
    groups = module_groups(snap, ids, rec, {n: n.rsplit(".", 1)[0] for n in params})
    return [[key[0] for key in run] for run in find_runs(snap, groups)]


def test_module_calls_fold_only_when_their_ops_have_the_same_shapes():
    # blocks 1..5 take an input that needs grad (block 0's does not: one op fewer)
    assert _module_runs([8] * 6) == [["1", "2", "3", "4", "5"]]
    # the same class and op names, other shapes: not a run (the names-only rule folded them)
    assert _module_runs([8, 9, 10, 11, 12, 13]) == []
    assert _module_runs([8, 8, 8, 8, 16, 8]) == [["1", "2", "3"]]     # a run stops at the other width


def test_identical_side_branches_of_one_op_fold_beside_it():
    torch.manual_seed(0)
    w = torch.randn(5, 5, requires_grad=True)
    xs = torch.randn(10, 2, 5)
    ys = [torch.sigmoid(xs[t] @ w).sum(-1) for t in range(10)]     # one branch a step, stacked
    loss = torch.stack(ys).sum()
    folded = repeats.fold(snapshot(loss))
    (run,) = folded.runs
    # ten steps: one is the spine (drawn), nine are side branches of the stack: one drawn, eight folded
    assert run.beside and len(run.blocks) == 9 and folded.count == 8
    assert "&#215;8 more like the branch beside" in draw(loss).dot


def test_the_after_view_folds_with_what_backward_freed():
    import backward_twice as bt
    loss = _rnn_steps(30)
    with bt.watch(loss) as w:
        loss.backward()
    view = w.after_view()
    svg = view.svg
    assert "more of the block below" in view.dot and "freed" in view.dot, view.text.splitlines()[0]
    assert view.text.splitlines()[0].startswith("after: what changed")
    assert "<svg" in svg


def test_runs_are_found_in_one_pass_over_the_spine():
    """No period is tried blindly: the candidates are the gaps between equal tokens (a handful),
    and each is one scan; a chain of 2,000 identical blocks has one candidate period."""
    torch.manual_seed(0)
    w, h = torch.randn(4, 4, requires_grad=True), torch.randn(1, 4)
    for _ in range(2000):
        h = torch.tanh(h @ w)
    snap = snapshot(h.sum(), max_nodes=5000)
    spine = repeats._spine(snap)
    owned, _ = repeats._owners(snap, spine)
    tokens = repeats._tokens(snap, spine, owned)
    assert repeats._periods(tokens) == [2] and len(spine) == 4001
    (run,) = repeats.find_runs(snap)
    assert len(run.blocks) == 1999            # the first step (h needs no grad) differs


def test_expand_true_draws_every_op_unfolded():
    loss = _rnn_steps(12)
    folded, whole = draw(loss), draw(loss, expand=True)
    assert "more of the block below" in folded.dot and "draw(expand=True) draws them" in folded.dot
    assert "more of the block below" not in whole.dot and not whole.held_to_rule
    assert whole.dot.count("TanhBackward0</B>") == 12 or whole.dot.count(">TanhBackward0<") == 12


def test_the_folded_text_and_dot_are_the_same_on_every_run():
    """nbval compares the text form and the DOT: folding must not depend on addresses or set order."""
    from backward_twice.graph import dot_record
    first, second = draw(_rnn_steps(12)), draw(_rnn_steps(12))
    assert first.text == second.text and "picture: folded: 10 x the block" in first.text
    assert dot_record(first.dot) == dot_record(second.dot)
    loss, _ = _residual_stack([8] * 6)
    again, _ = _residual_stack([8] * 6)
    assert repeats.fold(snapshot(loss)).words == repeats.fold(snapshot(again)).words
