"""The self-check API: right, wrong, and missing answers, never a traceback."""
import torch

from helpers.exercise import check, same


def test_right_wrong_and_missing(capsys):
    assert check("1.1", 3, 3, hint="count the saved tensors") is None  # nothing echoed in a cell
    check("1.1", 2, 3, hint="count the saved tensors")
    check("1.1", ..., 3, hint="count the saved tensors")
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Exercise 1.1: right!"
    assert out[1] == "Exercise 1.1: not quite: you said 2. Hint: count the saved tensors"
    assert out[2].startswith("Exercise 1.1: no answer yet")


def test_lenient_but_not_sloppy():
    assert same(0.3333, 1 / 3) and not same(0.33, 1 / 3)
    assert same(" TRUE ".strip().lower() == "true", True)
    assert not same(1, True) and not same(True, 1)          # a bool is not a number here
    assert same({"A", "b"}, {"a", "B"}) and not same({"a"}, {"a", "b"})
    assert same([4.0, 8], (4, 8.0)) and not same([4, 8], [4])
    assert same([1.0, 2.0], torch.tensor([1.0, 2.0])) and not same([1.0, 3.0], torch.tensor([1.0, 2.0]))
    assert not same("a string", torch.tensor([1.0]))         # garbage in: a verdict, not a crash
    assert not same(None, 3) and not same(object(), {"a"})
