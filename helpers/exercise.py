"""Predict-then-run exercises that check themselves.

    answer = ...                       # the learner's prediction, in its own cell
    check("0.1", answer, expected=truth_from_a_real_run, hint="Which inputs does mul need?")

A wrong or missing answer gets a hint that points to the concept, never a traceback; the hint
shows only after a wrong answer (check cells are folded, so the source does not show it either).
A wrong set answer says how many items are missing and how many extra. `expected` should come
from running the real code in the same cell, not be typed in (course edition); the student and
nbgrader editions compare against a `Sealed` digest of it instead, so the right answer is never
left in the learner's kernel (scripts/student.py writes them). In the course edition, after
three different wrong answers, the check offers the answer: `answer("N.M")`.

A check cell run before its answer cell (after a kernel restart, or with the answer cell
deleted) would stop on `NameError: name 'answer_0_1' is not defined`; importing this
module in IPython turns that one error into a sentence saying which cell to run.
"""
from __future__ import annotations

import hashlib
import math
import re
import sys

TRIES_BEFORE_OFFER = 3      # wrong answers before the course edition offers the answer


def _label(text: str) -> str:
    """A string answer as compared: case and whitespace ignored ("x+1" is "X + 1")."""
    return re.sub(r"\s+", "", text).lower()


def _number(value) -> float | None:
    """A plain number (not a bool), or a 0-dim tensor's value; else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor) and value.dim() == 0 and not value.dtype == torch.bool:
        return float(value.item())
    return None


def _numbers(value) -> list | None:
    """A list/tuple of plain numbers, or a 1-D tensor's values; else None."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor) and value.dim() == 1:
        value = value.tolist()
    if isinstance(value, (list, tuple)) and all(_number(v) is not None for v in value):
        return [_number(v) for v in value]
    return None


def canonical(value) -> str:
    """The text a value is compared (and sealed) by: numbers to 4 significant digits, strings
    without case or whitespace, lists in order; True is not 1."""
    if isinstance(value, bool):
        return f"bool:{value}"
    n = _number(value)
    if n is not None:
        return "num:0" if n == 0 else f"num:{n:.4g}"     # -0.0 is 0
    ns = _numbers(value)
    if ns is not None:
        return "list:" + "|".join(canonical(v) for v in ns)
    if isinstance(value, str):
        return "str:" + _label(value)
    if isinstance(value, (list, tuple)):
        return "list:" + "|".join(canonical(v) for v in value)
    return f"other:{_shown(value)}"


def digest(name: str, value) -> str:
    """A short digest of one answer (or one item of a set answer) of exercise `name`."""
    return hashlib.sha256(f"{name}:{canonical(value)}".encode()).hexdigest()[:12]


class Sealed:
    """A right answer that the learner's kernel never holds: its kind, and a digest of it (of each
    item, for a set, so that feedback can count missing and extra items). The student and nbgrader
    editions' check cells compare against one of these instead of computing the answer.
    A digest hides the answer from a glance, not from someone who hashes every guess."""

    def __init__(self, name: str, kind: str, digests):
        self.name, self.kind, self.digests = name, kind, tuple(digests)

    @classmethod
    def of(cls, name: str, value) -> Sealed:
        if isinstance(value, (set, frozenset)):
            return cls(name, "a set", sorted({digest(name, v) for v in value}))
        return cls(name, kind(value), [digest(name, value)])

    def __repr__(self) -> str:          # the source a student notebook's check cell holds
        return f"Sealed({self.name!r}, {self.kind!r}, {self.digests!r})"

    def item_digests(self, answer) -> set | None:
        """The digests of a set answer's items (a list or tuple counts as a set), else None."""
        if self.kind != "a set" or isinstance(answer, (str, bytes)):
            return None
        try:
            return {digest(self.name, v) for v in answer}
        except TypeError:
            return None

    def matches(self, answer) -> bool:
        if self.kind == "a set":
            return self.item_digests(answer) == set(self.digests)
        return digest(self.name, answer) == self.digests[0]


def same(answer, expected) -> bool:
    """Lenient equality for predictions: numbers to 0.1%, strings ignoring case and whitespace,
    sets unordered (their string items likewise); a `Sealed` answer by its digest."""
    if isinstance(expected, Sealed):
        return expected.matches(answer)
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
        return _label(answer) == _label(expected)
    if isinstance(expected, (set, frozenset)):
        missing_extra = set_difference(answer, expected)
        return missing_extra == (0, 0)
    if isinstance(expected, (list, tuple)) and isinstance(answer, (list, tuple)):
        return len(answer) == len(expected) and all(same(a, e) for a, e in zip(answer, expected))
    try:
        return bool(answer == expected)
    except Exception:
        return False


def _set_key(value):
    return _label(value) if isinstance(value, str) else value


def set_difference(answer, expected) -> tuple | None:
    """(how many right items the answer misses, how many of its items are extra), for a set
    answer (a list or tuple counts as a set); None if the answer is no collection."""
    if isinstance(expected, Sealed):
        got = expected.item_digests(answer)
        want = set(expected.digests)
    else:
        if isinstance(answer, (str, bytes)) or not isinstance(answer, (set, frozenset, list, tuple)):
            return None
        try:
            got, want = {_set_key(a) for a in answer}, {_set_key(e) for e in expected}
        except TypeError:
            return None
    if got is None:
        return None
    return len(want - got), len(got - want)


def kind(value) -> str:
    """What sort of answer `value` is, in a learner's words (never the answer itself)."""
    if isinstance(value, Sealed):
        return value.kind
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


def _items(n: int) -> str:
    return f"{n} item" if n == 1 else f"{n} items"


def verdict(name: str, answer, expected, hint: str, explain: str = "") -> str:
    """The feedback line for `answer` (what `check` prints). The hint shows only after a wrong answer."""
    if answer is ...:
        return f"Exercise {name}: no answer yet. Replace ... with your prediction and run the cell again."
    if same(answer, expected):
        return f"Exercise {name}: right!" + (f" {explain}" if explain else "")
    said, wanted = kind(answer), kind(expected)
    sort = ""
    if said != wanted and not (wanted == "a set" and said.startswith("a list")):
        sort = f" That is {said}; the answer is {wanted}."
    elif wanted == "a set":
        diff = set_difference(answer, expected)
        if diff is not None:
            missing, extra = diff
            sort = f" Yours misses {_items(missing)} of the answer and has {extra} extra."
    return f"Exercise {name}: not quite: you said {_shown(answer)}.{sort} Hint: {hint}"


_latest: dict[str, str] = {}
_wrong: dict[str, set] = {}                 # exercise -> the distinct wrong answers given
_answers: dict[str, tuple] = {}             # exercise -> (answer, why): course edition only


def check(name: str, answer, expected, hint: str, explain: str = "") -> None:
    """Print whether `answer` matches `expected`; on a miss, the hint. Returns nothing (no stray output).

    Checking an exercise again (a changed answer, or the cell run twice) replaces its earlier
    result: `results()` holds the latest one per exercise. After TRIES_BEFORE_OFFER different
    wrong answers, the course edition (where `expected` is the real value) offers the answer:
    `answer("N.M")` prints it with its explanation (`explain`, else the hint). A `Sealed`
    expected (student and nbgrader editions) never offers it."""
    right = answer is not ... and same(answer, expected)
    _latest[name] = "no answer" if answer is ... else "right" if right else "not quite"
    line = verdict(name, answer, expected, hint, explain)
    if answer is not ... and not right:
        _wrong.setdefault(name, set()).add(canonical(answer))
        if not isinstance(expected, Sealed):
            _answers[name] = (expected, explain or hint)
            if len(_wrong[name]) >= TRIES_BEFORE_OFFER:
                line += (f"\n{len(_wrong[name])} tries: if you want the answer and why, run "
                         f'answer("{name}") in a new cell.')
    print(line)


def answer(name: str) -> None:
    """Print an exercise's answer and its explanation, once it was offered (course edition only)."""
    tries = len(_wrong.get(name, ()))
    if name not in _answers:
        print(f"Exercise {name}: no answer to show here (the student edition never shows one: ask your teacher).")
    elif tries < TRIES_BEFORE_OFFER:
        print(f"Exercise {name}: {tries} wrong answer(s) so far; the answer is offered after {TRIES_BEFORE_OFFER}. "
              "Read the hint and try again.")
    else:
        value, why = _answers[name]
        print(f"Exercise {name}: the answer is {_shown(value)}. Why: {why}")


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
