"""The at-a-glance table that ends PyTorch's leaf/non-leaf tutorial, computed instead of typed.

    with at_a_glance({"x": x, "y": y, "loss": loss}) as table:
        loss.backward()
    table          # per tensor: is_leaf, requires_grad, retains_grad, .grad filled before/after

Reading a non-leaf tensor's `.grad` makes torch warn; the table reads it on purpose and
keeps the warning quiet (the notebook shows that warning where it teaches it).
"""
from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass

import torch

from backward_twice.snapshot import GraphInputError
from backward_twice.walk import check_names, not_a_tensor

COLUMNS = ("is_leaf", "requires_grad", "retains_grad", "grad_filled")


@dataclass(frozen=True)
class TensorState:
    is_leaf: bool
    requires_grad: bool
    retains_grad: bool
    grad_filled: bool      # t.grad is not None


def tensor_state(t: torch.Tensor) -> TensorState:
    """The four facts of the table for one tensor, read without the non-leaf .grad warning."""
    if not isinstance(t, torch.Tensor):
        raise GraphInputError(not_a_tensor("tensor_state's argument", t))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")        # "The .grad attribute of a Tensor that is not a leaf..."
        grad = t.grad
    return TensorState(t.is_leaf, t.requires_grad, t.retains_grad, grad is not None)


def _check_names(names) -> dict:
    check_names(names, "at_a_glance's names", "at_a_glance({'x': x, 'loss': loss})")
    if not names:
        raise GraphInputError("at_a_glance needs a dict {name: tensor} with at least one tensor, "
                              "like at_a_glance({'x': x, 'loss': loss}).")
    return dict(names)


def _cell(before, after) -> str:
    return str(before) if before == after else f"{before} → {after}"


class GlanceTable:
    """States of named tensors before and after the `with` block (usually one backward call)."""

    def __init__(self, names: Mapping):
        self.names = _check_names(names)
        self.before = {n: tensor_state(t) for n, t in self.names.items()}
        self.after: dict | None = None

    def __enter__(self) -> GlanceTable:
        self.before = {n: tensor_state(t) for n, t in self.names.items()}
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is None:
            self.after = {n: tensor_state(t) for n, t in self.names.items()}
        return False

    def rows(self) -> list:
        """[(name, {column: (before, after)})], once the `with` block has finished."""
        if self.after is None:
            raise RuntimeError("the table is filled when the `with at_a_glance(...)` block has finished "
                               "without an error; nothing was recorded after it yet.")
        return [(n, {c: (getattr(self.before[n], c), getattr(self.after[n], c)) for c in COLUMNS})
                for n in self.names]

    def _body(self) -> list:
        """One list of cell texts per tensor: a changed flag reads 'False → True'."""
        return [[name] + [_cell(*cols[c]) for c in COLUMNS[:3]]
                + [str(cols["grad_filled"][0]), str(cols["grad_filled"][1])]
                for name, cols in self.rows()]

    def _repr_markdown_(self) -> str | None:
        if self.after is None:
            return None                        # Jupyter falls back to __repr__
        header = ["tensor", "`is_leaf`", "`requires_grad`", "`retains_grad`",
                  "`.grad` filled before", "`.grad` filled after"]
        rows = [header, ["---"] * len(header)] + self._body()
        return "\n".join("| " + " | ".join(r) + " |" for r in rows)

    def __repr__(self) -> str:
        if self.after is None:
            return "<at_a_glance table: the with block has not finished>"
        body = [["tensor", "is_leaf", "requires_grad", "retains_grad", "grad before", "grad after"]]
        body += self._body()
        widths = [max(len(r[i]) for r in body) for i in range(len(body[0]))]
        return "\n".join("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in body)


def at_a_glance(names: Mapping) -> GlanceTable:
    """A table of is_leaf, requires_grad, retains_grad and '.grad filled' for each named tensor,
    recorded when the `with` block starts and when it ends.

    Example (run by tests/test_docstrings.py):

        >>> import torch, backward_twice as bt
        >>> x = torch.ones(2, requires_grad=True)
        >>> with bt.at_a_glance({'x': x}) as table:
        ...     (x * 3).sum().backward()
        >>> print(repr(table))
        tensor  is_leaf  requires_grad  retains_grad  grad before  grad after
        x       True     True           False         False        True
    """
    return GlanceTable(names)
