"""Predict-then-run exercises that check themselves.

    answer = ...                       # the learner's prediction, in its own cell
    check("0.1", answer, expected=truth_from_a_real_run, hint="Which inputs does mul need?")

A wrong or missing answer gets a hint that points to the concept, never a traceback.
`expected` should come from running the real code in the same cell, not be typed in.

A check cell run before its answer cell (after a kernel restart, or with the answer cell
deleted) would stop on `NameError: name 'answer_0_1' is not defined`; importing this
module in IPython turns that one error into a sentence saying which cell to run.
"""
from __future__ import annotations

import math
import re
import sys


def same(answer, expected) -> bool:
    """Lenient equality for predictions: numbers to 0.1%, strings ignoring case, sets unordered."""
    try:
        import torch

        if isinstance(expected, torch.Tensor):
            return torch.allclose(torch.as_tensor(answer, dtype=expected.dtype), expected,
                                  rtol=1e-3, atol=1e-6)
    except (TypeError, ValueError, RuntimeError):
        return False
    if isinstance(expected, bool) or isinstance(answer, bool):
        return isinstance(answer, bool) and isinstance(expected, bool) and answer == expected
    if isinstance(expected, (int, float)) and isinstance(answer, (int, float)):
        return math.isclose(answer, expected, rel_tol=1e-3, abs_tol=1e-6)
    if isinstance(expected, str) and isinstance(answer, str):
        return answer.strip().lower() == expected.strip().lower()
    if isinstance(expected, (set, frozenset)):
        try:
            return {a.lower() if isinstance(a, str) else a for a in answer} == {
                e.lower() if isinstance(e, str) else e for e in expected}
        except TypeError:
            return False
    if isinstance(expected, (list, tuple)) and isinstance(answer, (list, tuple)):
        return len(answer) == len(expected) and all(same(a, e) for a, e in zip(answer, expected))
    try:
        return bool(answer == expected)
    except Exception:
        return False


def kind(value) -> str:
    """What sort of answer `value` is, in a learner's words (never the answer itself)."""
    try:
        import torch

        if isinstance(value, torch.Tensor):
            return "a number" if value.dim() == 0 else "a list of numbers"
    except ImportError:
        pass
    if isinstance(value, bool):
        return "True or False"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (set, frozenset)):
        return "a set"
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            return "a list of numbers"
        return "a list"
    if value is None:
        return "None"
    return f"a {type(value).__name__}"


def _shown(answer) -> str:
    try:
        text = repr(answer)
    except Exception:  # a broken __repr__ must not turn feedback into a traceback
        text = f"<a {type(answer).__name__}>"
    return text if len(text) <= 80 else text[:77] + "..."


def verdict(name: str, answer, expected, hint: str, explain: str = "") -> str:
    """The feedback line for `answer` (what `check` prints)."""
    if answer is ...:
        return f"Exercise {name}: no answer yet. Replace ... with your prediction and run the cell again."
    if same(answer, expected):
        return f"Exercise {name}: right!" + (f" {explain}" if explain else "")
    said, wanted = kind(answer), kind(expected)
    sort = ""
    if said != wanted and not (wanted == "a set" and said.startswith("a list")):
        sort = f" That is {said}; the answer is {wanted}."
    return f"Exercise {name}: not quite: you said {_shown(answer)}.{sort} Hint: {hint}"


_latest: dict[str, str] = {}


def check(name: str, answer, expected, hint: str, explain: str = "") -> None:
    """Print whether `answer` matches `expected`; on a miss, the hint. Returns nothing (no stray output).

    Checking an exercise again (a changed answer, or the cell run twice) replaces its earlier
    result: `results()` holds the latest one per exercise."""
    _latest[name] = ("no answer" if answer is ... else
                     "right" if same(answer, expected) else "not quite")
    print(verdict(name, answer, expected, hint, explain))


def results() -> dict[str, str]:
    """The latest result of every exercise checked in this kernel, in the order first checked:
    {"0.1": "right", "0.2": "not quite", "0.3": "no answer"}."""
    return dict(_latest)


# --------------------------------------------------------------------------------
# A check cell run before its answer cell: a sentence instead of a traceback.
ANSWER_NAME = re.compile(r"answer_\w+")


def missing_answer_message(err: NameError) -> str | None:
    """The sentence for a NameError about an `answer_...` variable, else None."""
    name = getattr(err, "name", None)
    if name is None:
        m = re.search(r"name '(\w+)' is not defined", str(err))
        name = m.group(1) if m else None
    if name is None or not ANSWER_NAME.fullmatch(name):
        return None
    return (f"{name} is not defined yet: run the cell `{name} = ...` above this one first "
            "(after a kernel restart, run the cells above it too: Run > Run All Above Selected Cell).")


def _name_error_handler(shell, etype, value, tb, tb_offset=None):
    # IPython ignores what a custom handler returns when code raises: show it ourselves.
    message = missing_answer_message(value)
    if message is None:   # any other NameError: IPython's usual traceback
        shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
        return None
    sys.last_type, sys.last_value, sys.last_traceback = etype, value, tb
    shell._showtraceback(etype, value, [f"NameError: {message}"])   # the cell still fails, in one sentence
    return None


def install_answer_hint(shell=None) -> bool:
    """Register the handler with IPython (once; never over another custom handler)."""
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return False
        shell = get_ipython()
    if shell is None or not hasattr(shell, "set_custom_exc"):
        return False
    if getattr(shell, "_backward_twice_answer_hint", False):
        return True
    if shell.custom_exceptions:  # someone else's handler: leave it alone
        return False
    shell.set_custom_exc((NameError,), _name_error_handler)
    shell._backward_twice_answer_hint = True
    return True


install_answer_hint()
