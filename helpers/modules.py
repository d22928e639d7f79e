"""Which `nn.Module` call made each autograd node: recorded with forward hooks.

    from helpers.modules import record_modules
    with record_modules(model):          # hooks on every submodule, removed at the end
        loss = loss_fn(model(x), y)
    draw(loss, modules=model)            # one cluster per module call, with its saved bytes

`record_modules(model)` also works without `with`: the hooks then stay until
`.remove()`, so every forward pass is recorded (the latest recording of a node wins).

How a node is attributed: a forward pre-hook notes the autograd sequence number reached
when a module call starts (every node gets the next number when it is created); the
forward hook then walks back from the call's outputs over the nodes created since, and
claims those no inner call claimed. Inner calls finish first, so each node belongs to the
innermost module call that made it; the outer ones contain it. Nothing holds a node: the
record is {sequence number: call}, so recording never keeps a graph alive.
"""
from __future__ import annotations

import itertools
import weakref
from dataclasses import dataclass

import torch

from .walk import GraphInputError


@dataclass(frozen=True)
class Call:
    """One call of one module: its dotted path ('layers.0.self_attn', '' for the model itself),
    its class name, and the how-many-th call of that module it was (0 for the first)."""

    path: str
    kind: str
    index: int = 0

    @property
    def label(self) -> str:
        where = self.path or "(model)"
        again = f" call {self.index + 1}" if self.index else ""
        return f"{where}{again}: {self.kind}"

    def parent_path(self) -> str | None:
        if not self.path:
            return None
        return self.path.rsplit(".", 1)[0] if "." in self.path else ""


_RECORDINGS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _next_sequence_nr() -> int:
    """The sequence number the next autograd node will get (it makes one to find out)."""
    with torch.enable_grad():
        probe = torch.empty(0, requires_grad=True).neg()
    return probe.grad_fn._sequence_nr() + 1


def _grad_fns(obj, out, depth=0):
    """The grad_fn of every tensor in a module's output (tensors, tuples, lists, dicts)."""
    if isinstance(obj, torch.Tensor):
        fn = obj.grad_fn
        if fn is not None:
            out.append(fn)
    elif depth < 4 and isinstance(obj, (tuple, list)):
        for o in obj:
            _grad_fns(o, out, depth + 1)
    elif depth < 4 and isinstance(obj, dict):
        for o in obj.values():
            _grad_fns(o, out, depth + 1)
    return out


class ModuleRecording:
    """Forward hooks on every submodule of a model; `owner(fn)` says which call made `fn`.

    Use as a context manager (hooks removed on exit) or keep it and call `.remove()`.
    """

    def __init__(self, model: torch.nn.Module):
        if not isinstance(model, torch.nn.Module):
            raise GraphInputError(f"record_modules needs an nn.Module (the model); got a {type(model).__name__}.")
        self.model = model
        self.by_seq: dict = {}        # sequence number -> Call (innermost)
        self.calls: dict = {}         # path -> how many calls so far
        self.kinds: dict = {}         # path -> class name
        self._starts: list = []       # stack of (path, first sequence number) of open calls
        self._handles = []
        self._counter = itertools.count()
        for path, mod in model.named_modules():
            self.kinds[path] = type(mod).__name__
            self._handles.append(mod.register_forward_pre_hook(self._pre(path)))
            self._handles.append(mod.register_forward_hook(self._post(path), always_call=True))
        _RECORDINGS[model] = self

    def _pre(self, path):
        def hook(module, args):
            if torch.is_grad_enabled():
                self._starts.append((path, _next_sequence_nr()))
        return hook

    def _post(self, path):
        def hook(module, args, output):
            if not self._starts or self._starts[-1][0] != path:
                return          # the call started with grad disabled: it made no nodes
            _, start = self._starts.pop()
            index = self.calls.get(path, 0)
            self.calls[path] = index + 1
            self._claim(Call(path, self.kinds[path], index), start, _grad_fns(output, []))
        return hook

    def _claim(self, call, start, fns):
        seen = set()
        stack = list(fns)
        by_seq = self.by_seq
        while stack:
            fn = stack.pop()
            if fn in seen:
                continue
            seen.add(fn)
            seq = fn._sequence_nr()
            if seq < start or type(fn).__name__ == "AccumulateGrad":
                continue            # made before this call started, or a leaf
            by_seq.setdefault(seq, call)
            stack.extend(n for n, _ in fn.next_functions if n is not None)

    def owner(self, fn) -> Call | None:
        """The innermost module call that created the node `fn`, or None."""
        try:
            return self.by_seq.get(fn._sequence_nr())
        except (AttributeError, RuntimeError):
            return None

    def remove(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False


def record_modules(model: torch.nn.Module) -> ModuleRecording:
    """Start recording which module call makes each autograd node (see the module docstring)."""
    return ModuleRecording(model)


def recording_of(modules) -> ModuleRecording:
    """The recording `draw(..., modules=...)` was given: a ModuleRecording, or a model
    whose forward ran under record_modules(model)."""
    if isinstance(modules, ModuleRecording):
        return modules
    if isinstance(modules, torch.nn.Module):
        rec = _RECORDINGS.get(modules)
        if rec is None:
            raise GraphInputError(
                "draw(..., modules=model) needs to know which module made each node: run the "
                "forward pass inside `with record_modules(model):` (from helpers.modules), "
                "then draw.")
        return rec
    raise GraphInputError(f"modules= takes the model (an nn.Module) whose forward ran under "
                          f"record_modules(model); got a {type(modules).__name__}.")
