"""Predict-then-run exercises that check themselves and answer with a hint, never a traceback."""
from __future__ import annotations

import math


class Exercise:
    """One exercise: `ex.check(answer)` says right or wrong, and why.

        ex = Exercise("1.1", expected=True, hint="Which tensors did MulBackward0 save?")
        ex.check(my_answer)
    """

    def __init__(self, name: str, expected, hint: str, explain: str = ""):
        self.name, self.expected, self.hint, self.explain = name, expected, hint, explain

    def is_right(self, answer) -> bool:
        exp = self.expected
        if isinstance(exp, float) or (isinstance(exp, (int, float)) and isinstance(answer, float)):
            try:
                return math.isclose(float(answer), float(exp), rel_tol=1e-3, abs_tol=1e-6)
            except (TypeError, ValueError):
                return False
        if isinstance(exp, str) and isinstance(answer, str):
            return answer.strip().lower() == exp.strip().lower()
        if isinstance(exp, (set, frozenset)):
            try:
                return set(answer) == set(exp)
            except TypeError:
                return False
        if isinstance(exp, (list, tuple)) and isinstance(answer, (list, tuple)):
            return len(exp) == len(answer) and all(
                Exercise("", e, "").is_right(a) for e, a in zip(exp, answer))
        try:
            return bool(answer == exp)
        except Exception:
            return False

    def check(self, answer) -> bool:
        if answer is ...:
            print(f"Exercise {self.name}: no answer yet. Replace ... with your prediction, then run this cell.")
            return False
        if self.is_right(answer):
            print(f"Exercise {self.name}: right." + (f" {self.explain}" if self.explain else ""))
            return True
        print(f"Exercise {self.name}: not quite ({answer!r}). Hint: {self.hint}")
        return False
