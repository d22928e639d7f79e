"""helpers.walk and helpers.snapshot: what a walk records (ids and their roles, saved states,
names, the cap), read as plain data, and the formatters of small values."""
import dataclasses
import sys

import pytest
import torch
from autograd_programs import chain, seed_graph

from helpers.snapshot import Role, Saved, SavedState, TensorBox, fmt_bytes, fmt_values
from helpers.walk import SavedTensorModified, _unreadable_state, snapshot


# ---------------------------------------------------------------- roles and ids
def test_every_node_id_has_a_role():
    t = seed_graph()
    snap = snapshot(t["d"], t["e"], names=t)
    roles = {snap.tensors[i].name if i in snap.tensors else snap.ops[i].name: snap.role(i)
             for i in [*snap.ops, *snap.tensors]}
    assert roles == {"MeanBackward0": Role.OP, "SumBackward0": Role.OP, "MulBackward0": Role.OP,
                     "PowBackward0": Role.OP, "a": Role.LEAF, "d": Role.OUTPUT, "e": Role.OUTPUT,
                     "b": Role.INTERMEDIATE, "c": Role.INTERMEDIATE}
    assert all(snap.role(dst) is not Role.LEAF for _, dst in snap.edges)   # leaves only feed
    with pytest.raises(KeyError):
        snap.role("no such node")


def test_roles_and_states_are_typed_and_still_read_as_words():
    assert Role.LEAF == "leaf" and f"{Role.OUTPUT}" == "output"
    saved = Saved(slot="self", is_tensor=True, state="freed")      # coerced, so `is` works
    assert saved.state is SavedState.FREED
    with pytest.raises(ValueError):
        Saved(slot="self", is_tensor=True, state="gone")
    with pytest.raises(ValueError):
        TensorBox("x", "x", Role.OP, (1,), "float32", True, False, None)
    t = seed_graph()
    t["d"].backward()
    snap = snapshot(t["e"])
    assert {s.state for _, s in snap.saved_tensors()} == {SavedState.FREED}
    counts = snap.count_by_state()
    assert counts == {"held": 0, "freed": 2} and all(type(k) is str for k in counts)   # prints as words


# ---------------------------------------------------------------- saved states
def test_a_hook_that_reports_a_change_in_place_is_read_as_data_not_words():
    err = SavedTensorModified("any wording at all", saved_version=1, now_version=3)
    assert _unreadable_state(err) == (SavedState.HELD, "version 1 -> 3")
    torch_words = RuntimeError("one of the variables needed for gradient computation has been modified "
                               "by an inplace operation: [torch.FloatTensor [2]] is at version 2; "
                               "expected version 0 instead.")
    assert _unreadable_state(torch_words) == (SavedState.HELD, "version 0 -> 2")
    assert _unreadable_state(RuntimeError("Trying to backward through the graph a second time"))[0] \
        is SavedState.FREED
    assert _unreadable_state(ValueError("hook failed")) == (SavedState.UNREADABLE, "ValueError: hook failed")


def test_snapshot_says_what_changed_since_an_earlier_one_and_takes_its_saved_states():
    t = seed_graph()
    names = {k: t[k] for k in "abce"}
    before = snapshot(t["e"], names=names)
    t["e"].backward()
    after = snapshot(t["e"], names=names)
    assert sorted((op.name, s.slot) for op, s in after.freed_since(before)) == [
        ("MulBackward0", "other"), ("PowBackward0", "self")]
    assert after.freed_since(after) == [] and after.modified_since(before) == []
    assert after.grad_changes_since(before) == ["a.grad: None -> [4, 8, 12, 16] (1, 4)"]   # de/da = 4a
    merged = before.with_saved_from(after)
    assert merged.tensors is before.tensors and merged.edges is before.edges
    assert [s.state for _, s in merged.saved_tensors()] == [s.state for _, s in after.saved_tensors()]
    assert merged.count_by_state() == {"held": 0, "freed": 2} and before.count_by_state()["held"] == 2
    # every field but `ops` is carried over, including any added later
    kept = [f.name for f in dataclasses.fields(before) if f.name != "ops"]
    assert all(getattr(merged, k) == getattr(before, k) for k in kept)


# ---------------------------------------------------------------- the cap
def test_deep_chain_walks_iteratively():
    x, y = chain(5000)
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(200)  # a recursive walk would die here
    try:
        snap = snapshot(y, max_nodes=10_000)
    finally:
        sys.setrecursionlimit(old)
    assert len(snap.ops) == 5000 and not snap.truncated
    assert snap.total_nodes == 5001 and snap.hidden_count == 0


def test_cap_is_configurable_and_the_rest_is_counted():
    _, y = chain(50)
    capped = snapshot(y, max_nodes=10)
    assert capped.truncated and not snapshot(y, max_nodes=51).truncated
    assert capped.hidden_count == 51 - 10 == sum(capped.hidden_by_type.values())


# ---------------------------------------------------------------- formatters
def test_formatters_are_short_and_deterministic():
    assert [fmt_bytes(n) for n in (None, 12, 1536, 3 << 20)] == ["? B", "12 B", "1.5 KiB", "3.0 MiB"]
    assert fmt_values(torch.tensor(-0.0)) == "0"
    assert fmt_values(torch.tensor([1.0, 2.5])) == "[1, 2.5]"
    assert fmt_values(torch.ones(3, 4)) == "(3, 4) norm 3.464"
