"""Predict-then-run exercises that check themselves.

    answer = ...                       # the learner's prediction, in its own cell
    check("0.1", answer, expected=truth_from_a_real_run, hint="Which inputs does mul need?")

A wrong or missing answer gets a hint that points to the concept, never a traceback.
`expected` should come from running the real code in the same cell, not be typed in.
"""
from __future__ import annotations

import math


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


def verdict(name: str, answer, expected, hint: str, explain: str = "") -> str:
    """The feedback line for `answer` (what `check` prints)."""
    if answer is ...:
        return f"Exercise {name}: no answer yet. Replace ... with your prediction and run the cell again."
    if same(answer, expected):
        return f"Exercise {name}: right!" + (f" {explain}" if explain else "")
    return f"Exercise {name}: not quite: you said {answer!r}. Hint: {hint}"


def check(name: str, answer, expected, hint: str, explain: str = "") -> None:
    """Print whether `answer` matches `expected`; on a miss, the hint. Returns nothing (no stray output)."""
    print(verdict(name, answer, expected, hint, explain))
