"""The self-check API: right, wrong, and missing answers, never a traceback."""
import torch

from helpers import exercise
from helpers.exercise import Sealed, answer, check, same


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
    assert out[3] == ("Exercise 2.4: not quite: you said ['a']. Yours misses 1 item of the answer and has 0 extra. "
                      "Hint: which ones?")


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


def test_set_answers_count_missing_and_extra_items_and_labels_ignore_whitespace(capsys):
    right = {"x + 1", "-x", "x.mean()", "x[0]"}
    for expected in (right, Sealed.of("s.1", right)):
        assert same({"x+1", "- x", "X.MEAN()", "x[0]"}, expected)          # whitespace and case only
        assert not same({"x+1", "-x", "x.mean()"}, expected)
        check("s.1", ["x+1", "-x", "x * 3", "x / 2", "x.exp()"], expected, hint="h")
        line = capsys.readouterr().out.strip()
        assert line.endswith("Yours misses 2 items of the answer and has 3 extra. Hint: h"), line
    assert same("x+1", "x + 1") and not same("x+2", "x + 1")


def test_a_sealed_answer_matches_like_the_value_it_seals():
    """The student edition compares against Sealed digests: same verdict as against the value itself,
    for every kind of answer the notebooks use (numbers to 4 significant digits, lists, bools, strings)."""
    cases = [(3, 3.0), (129.5, (128 * 256 + 256) * 4 / 1024 + 0.5), (0.25, 0.25), ("detach()", " Detach() "),
             (True, True), (torch.tensor([1.0, 0.0, 30.0]), [1.0, 0.0, 30.0]), ([10, 20], [10.0, 20.0])]
    for value, given in cases:
        sealed = Sealed.of("k.1", value)
        assert same(given, sealed) and same(given, value), (value, given)
        assert eval(repr(sealed), {"Sealed": Sealed}).matches(given)             # the source a cell holds
    for value, wrong in [(3, 4), (True, 1), (1, True), ("scale", "log_scale"), ([1.0, 2.0], [2.0, 1.0]),
                         (0.25, 0.26), (18.0, -18.0), (0, None)]:
        assert not same(wrong, Sealed.of("k.2", value)) and not same(wrong, value), (value, wrong)
    assert not Sealed.of("k.3", 3).matches(3.01) and Sealed.of("k.3", 1 / 3).matches(0.3333)
    assert Sealed.of("a.1", 3).digests != Sealed.of("a.2", 3).digests                # salted by exercise


def test_the_course_edition_offers_the_answer_after_three_wrong_answers(capsys):
    check("t.1", 1, 3, hint="count", explain="three saved tensors")
    check("t.1", 1, 3, hint="count")                       # the same wrong answer again: still one try
    check("t.1", 2, 3, hint="count")
    answer("t.1")
    assert "answer is offered after 3" in capsys.readouterr().out.splitlines()[-1]
    check("t.1", 4, 3, hint="count", explain="three saved tensors")
    out = capsys.readouterr().out
    assert 'run answer("t.1")' in out
    answer("t.1")
    assert capsys.readouterr().out == "Exercise t.1: the answer is 3. Why: three saved tensors\n"


def test_the_sealed_editions_never_reveal_the_answer(capsys):
    sealed = Sealed.of("u.1", 3)
    for wrong in (1, 2, 4, 5, 6):
        check("u.1", wrong, sealed, hint="count")
    out = capsys.readouterr().out
    assert "answer(" not in out and " 3" not in out.replace("u.1", "")
    answer("u.1")
    assert "never shows one" in capsys.readouterr().out
    assert "u.1" not in exercise._answers
