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


def test_a_wrong_kind_of_answer_is_named_without_giving_the_answer_away(capsys):
    check("2.1", "3", 3, hint="count them")
    check("2.2", 1, True, hint="does it still exist?")
    check("2.3", [1.0, 2.0], 3.0, hint="a single number")
    check("2.4", ["a"], {"a", "b"}, hint="which ones?")          # a list for a set: same kind
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Exercise 2.1: not quite: you said '3'. That is a string; the answer is a number. Hint: count them"
    assert out[1] == ("Exercise 2.2: not quite: you said 1. That is a number; the answer is True or False. "
                      "Hint: does it still exist?")
    assert "That is a list of numbers; the answer is a number." in out[2]
    assert out[3] == "Exercise 2.4: not quite: you said ['a']. Hint: which ones?"


def test_odd_answers_never_raise(capsys):
    class Broken:
        def __repr__(self):
            raise ValueError("no repr")

        def __eq__(self, other):
            raise TypeError("no eq")

    check("3.1", Broken(), 3, hint="h")
    check("3.2", list(range(1000)), torch.arange(3.0), hint="h")
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("Exercise 3.1: not quite: you said <a Broken>.")
    assert out[1].startswith("Exercise 3.2: not quite: you said [0, 1, 2, 3") and "..." in out[1]


def test_check_cell_run_before_its_answer_cell_gets_a_sentence_not_a_traceback():
    """In IPython, `answer_0_1` undefined -> one sentence naming the cell to run; the cell still
    fails (Run All stops there), and every other NameError keeps IPython's usual traceback."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        from IPython.core.interactiveshell import InteractiveShell
        sh = InteractiveShell.instance()
        sh.run_cell("from helpers.exercise import check")
        r = sh.run_cell("check('0.1', answer_0_1, 3, hint='h')")
        print("FAILED:", not r.success, type(r.error_in_exec).__name__)
        r = sh.run_cell("not_an_answer + 1")
        print("FAILED:", not r.success)
        sh.run_cell("answer_0_1 = 3")
        sh.run_cell("check('0.1', answer_0_1, 3, hint='h')")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**__import__("os").environ, "NO_COLOR": "1", "TERM": "dumb"})
    out = done.stdout
    assert ("NameError: answer_0_1 is not defined yet: run the cell `answer_0_1 = ...` above this one first"
            in out), out
    assert "FAILED: True NameError" in out
    assert "Traceback" in out and "not_an_answer" in out          # other NameErrors: as usual
    assert out.count("Traceback") == 1
    assert "Exercise 0.1: right!" in out


def test_an_answer_checked_again_keeps_the_latest(capsys):
    from helpers.exercise import results

    check("r.1", ..., 3, hint="h")
    check("r.2", 3, 3, hint="h")
    assert {k: v for k, v in results().items() if k.startswith("r.")} == {"r.1": "no answer", "r.2": "right"}
    check("r.1", 2, 3, hint="h")                    # a first guess
    check("r.1", 2, 3, hint="h")                    # the same cell run again: the same line
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == lines[-2]
    assert results()["r.1"] == "not quite"
    check("r.1", 3, 3, hint="h")                    # corrected
    assert [k for k in results() if k.startswith("r.")] == ["r.1", "r.2"] and results()["r.1"] == "right"
