"""Exact accounting of the tensors autograd saves for backward.

    with SavedBytes() as sb:                  # what a forward saves
        loss = model(x).sum()
    sb.count, sb.nbytes, sb.unique_nbytes

    live = LiveSaved(exclude=model.parameters())
    with live:                                # what the graphs recorded here hold *now*
        loss = model(x).sum()
    live.nbytes                               # held right after the forward
    with live.during(loss):                   # a sample each time the engine starts a node
        loss.backward()
    live.samples, live.nbytes                 # [(node name, bytes held), ...], then 0

Both use `torch.autograd.graph.saved_tensors_hooks`: every tensor an op saves inside the
`with` block is handed to a pack hook, which wraps it in a small holder. Sizes come from
shapes and storages, never from allocator statistics or timings, so the numbers are exact
and deterministic.

What the hooks do not see (and `backward_twice.walk.snapshot` does):
- a Python number an op saves as a wrapped 0-d tensor: `x * 2` saves the 2 for
  `MulBackward0.other`, without calling the pack hook;
- anything a custom `autograd.Function` keeps as a plain `ctx` attribute (not
  `ctx.save_for_backward`).

Two more facts about the hooks themselves:
- They do not nest: inside another `saved_tensors_hooks` block (yours, or
  `torch.utils.checkpoint`'s) only the innermost pair is called.
- With a pack hook installed, autograd skips its own "modified by an inplace operation"
  check for that saved tensor (it cannot know what the hook returned). The holders here
  record the tensor's version when it is saved and redo the check when autograd unpacks
  it, raising a RuntimeError in autograd's words, so a graph recorded under these classes
  fails exactly where it would fail without them. The error is a
  `backward_twice.walk.SavedTensorModified` carrying both versions, which `backward_twice.walk` reads to
  report the tensor as modified in place, as it does without hooks.
"""
from __future__ import annotations

import contextlib
import weakref

import torch

from .trace import BackwardTrace
from .walk import SAFE_UNPACK_HOOKS, SavedTensorModified

INPLACE_MESSAGE = ("one of the variables needed for gradient computation has been modified by an "
                   "inplace operation: a saved {shape} tensor is at version {now}; expected version "
                   "{then} instead (checked by backward_twice.memory, whose saved-tensor hooks turn off "
                   "autograd's own check)")


def tensor_nbytes(t: torch.Tensor) -> int:
    """Bytes of the tensor's own elements (a view counts its elements, not its base's)."""
    return t.numel() * t.element_size()


class _Held:
    """What the graph holds instead of a saved tensor. It dies exactly when autograd drops
    the saved tensor: a backward without retain_graph, or the node that saved it going away."""

    __slots__ = ("tensor", "version", "owner", "token")

    def __init__(self, owner, tensor: torch.Tensor):
        # A detached alias: same storage and version counter, but no grad_fn. A saved
        # *output* would otherwise hold its own node, and that reference cycle would keep
        # a graph alive after its last tensor is deleted.
        self.tensor = tensor.detach()
        self.version = tensor._version
        self.owner = owner
        self.token = owner._on_save(self.tensor)

    def unpack(self) -> torch.Tensor:
        now = self.tensor._version
        if now != self.version:
            raise SavedTensorModified(INPLACE_MESSAGE.format(shape=list(self.tensor.shape), now=now,
                                                             then=self.version),
                                      saved_version=self.version, now_version=now)
        return self.tensor

    def __del__(self):
        self.owner._on_release(self.token)


SAFE_UNPACK_HOOKS.add(_Held.unpack)   # runs no user code: the walk may unpack through it


class _Hooks:
    """`with self:` packs every tensor saved for backward in a `_Held` that reports to self."""

    _ctx = None

    def _on_save(self, t: torch.Tensor):
        raise NotImplementedError

    def _on_release(self, token) -> None:
        pass

    def __enter__(self):
        if self._ctx is not None:
            raise RuntimeError(f"{type(self).__name__} is already recording (nested `with` on the same object)")
        self._ctx = torch.autograd.graph.saved_tensors_hooks(lambda t: _Held(self, t), _Held.unpack)
        self._ctx.__enter__()
        return self

    def __exit__(self, *exc):
        ctx, self._ctx = self._ctx, None
        return ctx.__exit__(*exc)


class _Storage:
    """One distinct storage of saved tensors."""

    __slots__ = ("ref", "nbytes", "excluded", "held")

    def __init__(self, ref, nbytes: int, excluded: bool):
        self.ref = ref              # weak reference to the storage (None: storage-less tensor)
        self.nbytes = nbytes
        self.excluded = excluded
        self.held = 0               # saved-tensor references to it that graphs hold now

    @property
    def alive(self) -> bool:
        return self.held > 0 if self.ref is None else self.ref() is not None


class _Storages:
    """Every distinct storage saved, in order: one entry per storage, however many saved
    tensors (views, or the same tensor saved by two ops) share it. Storages are told apart
    by identity through weak references, so a dead storage's id or address, reused by a new
    one, is not mistaken for it; and nothing is kept alive."""

    def __init__(self, exclude=()):
        self._excluded: dict[int, weakref.ref] = {}   # id(storage) -> weak reference to it
        for t in exclude:
            try:
                s = t.untyped_storage()
            except Exception:  # storage-less: nothing of it is ever counted by storage
                continue
            self._excluded[id(s)] = weakref.ref(s)
        self._by_id: dict[int, _Storage] = {}       # id(storage) -> its latest _Storage
        self.entries: list[_Storage] = []

    def entry(self, t: torch.Tensor):
        """(the _Storage of t's storage, whether it is new)."""
        try:
            s = t.untyped_storage()
        except Exception:  # storage-less tensors (sparse, ...): one entry per saved tensor
            entry = _Storage(None, tensor_nbytes(t), excluded=False)
        else:
            entry = self._by_id.get(id(s))
            if entry is not None and entry.ref() is s:
                return entry, False
            ex = self._excluded.get(id(s))
            entry = _Storage(weakref.ref(s), s.nbytes(), excluded=ex is not None and ex() is s)
            self._by_id[id(s)] = entry
        self.entries.append(entry)
        return entry, True

    def nbytes(self) -> int:
        return sum(e.nbytes for e in self.entries if not e.excluded)


class SavedBytes(_Hooks):
    """Counts every tensor saved for backward while the block runs.

        with SavedBytes() as sb:
            loss = model(x).sum()
        sb.count, sb.nbytes        # what the graph holds until backward frees it

    `count` and `nbytes` are per reference: a tensor saved by two ops counts twice (that is
    how many references the graph holds), a view counts its own elements.
    `unique_nbytes` counts each storage once, at its full size. Running totals: releases
    are not subtracted (for that, see `LiveSaved`).

    It misses what the hooks miss (module docstring): a Python number saved as a wrapped
    0-d tensor (`x * 2`) is not counted; `backward_twice.walk.snapshot` lists it.

    Example (run by tests/test_docstrings.py):

        >>> import torch, backward_twice as bt
        >>> x = torch.ones(3, requires_grad=True)
        >>> with bt.SavedBytes() as saved:
        ...     z = (x.exp() * x).sum()
        >>> saved
        SavedBytes(count=3, nbytes=36, unique_nbytes=24)
    """

    def __init__(self):
        self.count = 0
        self.nbytes = 0
        self._storages = _Storages()

    def _on_save(self, t):
        self.count += 1
        self.nbytes += tensor_nbytes(t)
        self._storages.entry(t)

    @property
    def unique_nbytes(self) -> int:
        return self._storages.nbytes()

    def __repr__(self) -> str:
        return f"SavedBytes(count={self.count}, nbytes={self.nbytes}, unique_nbytes={self.unique_nbytes})"


class LiveSaved(_Hooks):
    """Saved tensors of the graphs recorded inside `with live:`, as they are now.

    The count goes down exactly when autograd drops a saved tensor: when a backward without
    `retain_graph=True` runs the node that saved it, or when that node is destroyed (the last
    reference to its graph gone). CPython frees at once (reference counting), so no garbage
    collection is needed, and the holders add no reference cycle.

    per: how bytes are counted (`nbytes`, `peak`, `total`, `samples`).
      "storage"   (default) memory: each distinct storage once, at its full size, while at
                  least one saved tensor refers to it. A ReLU output saved by the ReLU and by
                  the next Linear is one buffer; `W.t()` saved by a Linear is W's storage.
      "reference" what the graph refers to: each saved tensor at its own size, a tensor
                  saved by two ops twice (equal to `SavedBytes.nbytes` after a forward).
    exclude: tensors whose storages count zero bytes (parameters, targets: memory that lives
      on anyway). Their saves still count in `count` and `recorded`.

    Now:  `count` saved-tensor references held, `nbytes` their bytes (per `per`).
    Ever: `recorded` saved-tensor references, `total` bytes (per `per`), `peak` most bytes
          held at once, `storages` distinct storages saved.
    Memory: `alive_count` / `alive_nbytes`: saved storages still in memory now, held by a
          graph *or by anything else* (a parameter, your variable): weak references, which
          keep nothing alive. After a backward (`nbytes` 0), `alive_nbytes` is what the graph
          let go of that stayed in memory anyway, because someone else holds it.
    Timeline: `mark(label)` appends (label, nbytes) to `samples`; `with live.during(*roots)`
          marks each node of the roots' graph as the engine starts it.

    Example (run by tests/test_docstrings.py):

        >>> import torch, backward_twice as bt
        >>> x = torch.ones(3, requires_grad=True)
        >>> with bt.LiveSaved() as live:
        ...     z = (x.exp() * x).sum()
        >>> live.alive_nbytes
        24
        >>> z.backward()
        >>> live.alive_nbytes
        12
    """

    def __init__(self, per: str = "storage", exclude=()):
        if per not in ("storage", "reference"):
            raise ValueError(f"per must be 'storage' or 'reference', not {per!r}")
        self.per = per
        self._storages = _Storages(exclude)
        self.count = 0
        self.nbytes = 0
        self.recorded = 0
        self.total = 0
        self.peak = 0
        self.samples: list[tuple[str, int]] = []   # (label, bytes held)

    # -- bookkeeping, called by the holders ------------------------------------------
    def _on_save(self, t):
        entry, new = self._storages.entry(t)
        entry.held += 1
        self.count += 1
        self.recorded += 1
        if entry.excluded:
            size = 0
        elif self.per == "reference":
            size = tensor_nbytes(t)
            self.total += size
        else:
            size = entry.nbytes if entry.held == 1 else 0
            self.total += entry.nbytes if new else 0
        self.nbytes += size
        self.peak = max(self.peak, self.nbytes)
        return entry, size

    def _on_release(self, token) -> None:
        entry, size = token
        entry.held -= 1
        self.count -= 1
        if self.per == "reference":
            self.nbytes -= size
        elif entry.held == 0 and not entry.excluded:
            self.nbytes -= entry.nbytes

    # -- what is in memory -----------------------------------------------------------
    @property
    def storages(self) -> int:
        """Distinct storages saved inside the block(s), ever."""
        return len(self._storages.entries)

    @property
    def alive_count(self) -> int:
        """Saved storages still in memory now (held by a graph or by anything else)."""
        return sum(e.alive for e in self._storages.entries)

    @property
    def alive_nbytes(self) -> int:
        """Their bytes (storages of `exclude`d tensors count zero)."""
        return sum(e.nbytes for e in self._storages.entries if e.alive and not e.excluded)

    # -- timeline ----------------------------------------------------------------------
    def mark(self, label: str) -> int:
        """Record (label, bytes held now) in `samples`; returns the bytes."""
        self.samples.append((label, self.nbytes))
        return self.nbytes

    @contextlib.contextmanager
    def during(self, *roots):
        """Mark the bytes held each time the engine is about to run a node of `roots`' graph.

        A node's saved tensors are released right after it runs (without retain_graph),
        so the sample at node k shows what nodes 0..k-1 freed. The hooks are removed on
        exit: left in place they would keep the graph (and its saved tensors) alive.
        """
        with BackwardTrace(*roots, keep_grads=False, on_start=lambda fn: self.mark(fn.name())):
            yield self

    def __repr__(self) -> str:
        return (f"LiveSaved(per={self.per!r}, count={self.count}, nbytes={self.nbytes}, "
                f"peak={self.peak}, alive_nbytes={self.alive_nbytes})")
