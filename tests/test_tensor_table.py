"""backward_twice.tensor_table: the computed leaf/non-leaf table of notebook 04."""
import warnings

import pytest
import torch

from backward_twice.snapshot import GraphInputError
from backward_twice.tensor_table import TensorState, at_a_glance, tensor_state


def example():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    c = torch.tensor([0.5, 0.5])
    y = x * 2
    y.retain_grad()
    z = y * c
    loss = z.sum()
    return {"x": x, "c": c, "y": y, "z": z, "loss": loss}


def test_states_before_and_after_backward():
    t = example()
    with at_a_glance(t) as table:
        t["loss"].backward()
    rows = dict(table.rows())
    assert [n for n, _ in table.rows()] == ["x", "c", "y", "z", "loss"]      # the order given
    assert rows["x"] == {"is_leaf": (True, True), "requires_grad": (True, True),
                         "retains_grad": (False, False), "grad_filled": (False, True)}
    assert rows["c"]["is_leaf"] == (True, True) and rows["c"]["grad_filled"] == (False, False)
    assert rows["c"]["requires_grad"] == (False, False)
    assert rows["y"]["retains_grad"] == (True, True) and rows["y"]["grad_filled"] == (False, True)
    assert rows["z"]["is_leaf"] == (False, False) and rows["z"]["grad_filled"] == (False, False)
    assert rows["loss"]["grad_filled"] == (False, False)


def test_reading_non_leaf_grad_is_silent():
    t = example()
    with warnings.catch_warnings():
        warnings.simplefilter("error")                 # the non-leaf .grad warning would raise here
        assert tensor_state(t["z"]) == TensorState(False, True, False, False)


def test_a_flag_changed_inside_the_block_shows_both_values():
    t = example()
    with at_a_glance(t) as table:
        t["loss"].backward()
        t["z"].retain_grad()                           # too late: the flag changes, .grad stays None
    text = repr(table)
    z_line = next(line for line in text.splitlines() if line.startswith("z "))
    assert "False → True" in z_line and z_line.split()[-2:] == ["False", "False"]
    md = table._repr_markdown_()
    assert md.splitlines()[0].startswith("| tensor |") and "| z | False | True | False → True |" in md


def test_text_form_is_a_table_with_one_line_per_tensor():
    t = example()
    with at_a_glance(t) as table:
        t["loss"].backward()
    lines = repr(table).splitlines()
    assert lines[0].split() == ["tensor", "is_leaf", "requires_grad", "retains_grad", "grad", "before",
                                "grad", "after"]
    assert [line.split()[0] for line in lines[1:]] == ["x", "c", "y", "z", "loss"]


def test_block_that_raises_records_no_after_state():
    t = example()
    table = at_a_glance(t)
    with pytest.raises(ValueError):
        with table:
            raise ValueError("boom")
    assert table.after is None and table._repr_markdown_() is None
    assert "has not finished" in repr(table)
    with pytest.raises(RuntimeError, match="block has finished"):
        table.rows()


@pytest.mark.parametrize("bad, text", [
    ({}, "at least one tensor"),
    ([torch.ones(1)], r"at_a_glance's names must be a dict \{name: tensor\}, like at_a_glance\(\{'x'.*; got a list"),
    ({"x": 3.0}, r"at_a_glance's names\['x'\] is a float, not a torch.Tensor"),
    ({1: torch.ones(1)}, r"at_a_glance's names must map a name \(str\) to a tensor; got key 1\."),
])
def test_bad_input_is_explained(bad, text):
    with pytest.raises(GraphInputError, match=text):
        at_a_glance(bad)


def test_tensor_state_rejects_a_non_tensor():
    with pytest.raises(GraphInputError, match="not a torch.Tensor"):
        tensor_state(None)
