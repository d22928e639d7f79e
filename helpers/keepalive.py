"""What autograd graphs keep alive, measured at the moment you ask.

    live = LiveSaved(exclude=model.parameters())
    with live:                       # record forward passes inside the block
        loss = model(x).pow(2).mean()
    live.nbytes                      # bytes the graph's saved tensors hold right now
    loss.backward()                  # backward frees them ...
    live.nbytes                      # ... 0
    # with retain_graph=True they stay until the last reference to the graph goes:
    # `del loss` (or rebinding `loss`) frees them then.

Every tensor saved for backward inside the block is wrapped in a small holder
(`torch.autograd.graph.saved_tensors_hooks`). The holder is dropped exactly when
autograd drops the saved tensor: when a backward without `retain_graph=True` frees
it, or when the graph node that saved it is destroyed (its last reference gone).
CPython frees it at once (reference counting), so the numbers are exact and
deterministic: no allocator statistics, no timing, no garbage-collector guesswork.

Counting is by storage: a tensor saved by two ops, or a view and its base, counts
once; storages of `exclude` tensors (parameters, which live on anyway) count zero.
The holder keeps a detached alias of the tensor, so it adds no reference cycle.

Note: autograd skips its own "modified by an inplace operation" check for tensors
that went through saved-tensor hooks (true of any `saved_tensors_hooks`, including
`helpers.memory.SavedBytes`). LiveSaved does that check itself on unpack, with the
same message, so a graph recorded under it fails the same way as without it.
"""
from __future__ import annotations

import torch


def _key(t: torch.Tensor):
    try:
        s = t.untyped_storage()
        return s.data_ptr(), s.nbytes()
    except Exception:  # storage-less tensors (sparse, ...): count by their own size
        return ("id", id(t)), t.numel() * t.element_size()


INPLACE_MESSAGE = ("one of the variables needed for gradient computation has been modified by an "
                   "inplace operation: a saved {shape} tensor is at version {now}; expected version "
                   "{then} instead (checked by helpers.keepalive.LiveSaved)")


class _Held:
    __slots__ = ("tensor", "owner", "key", "version")

    def __init__(self, owner, tensor: torch.Tensor):
        self.owner = owner
        self.tensor = tensor.detach()          # shares storage and version counter
        self.version = tensor._version
        self.key = owner._add(self.tensor)

    def unpack(self) -> torch.Tensor:
        now = self.tensor._version
        if now != self.version:
            raise RuntimeError(INPLACE_MESSAGE.format(shape=list(self.tensor.shape), now=now,
                                                      then=self.version))
        return self.tensor

    def __del__(self):
        self.owner._remove(self.key)


class LiveSaved:
    """Saved tensors of graphs recorded inside `with live:` that are still alive.

    `nbytes`: bytes of their distinct storages (minus `exclude`d ones), right now.
    `refs`:   how many saved-tensor references autograd still holds (all of them).
    `recorded`: how many tensors were saved in all, ever (a running total).
    """

    def __init__(self, exclude=()):
        self._excluded = {_key(t)[0] for t in exclude}
        self._storages: dict = {}   # storage key -> [references, nbytes]
        self.refs = 0
        self.recorded = 0
        self._ctx = None

    # -- bookkeeping, called by the holders ----------------------------------------
    def _add(self, t):
        ptr, size = _key(t)
        self.refs += 1
        self.recorded += 1
        entry = self._storages.setdefault(ptr, [0, size])
        entry[0] += 1
        return ptr

    def _remove(self, ptr):
        self.refs -= 1
        entry = self._storages.get(ptr)
        if entry is not None:
            entry[0] -= 1
            if entry[0] == 0:
                del self._storages[ptr]

    @property
    def nbytes(self) -> int:
        return sum(size for ptr, (_, size) in self._storages.items() if ptr not in self._excluded)

    # -- context manager --------------------------------------------------------------
    def __enter__(self):
        if self._ctx is not None:
            raise RuntimeError("LiveSaved is already recording (nested `with` on the same object)")
        self._ctx = torch.autograd.graph.saved_tensors_hooks(
            lambda t: _Held(self, t), _Held.unpack)
        self._ctx.__enter__()
        return self

    def __exit__(self, *exc):
        ctx, self._ctx = self._ctx, None
        return ctx.__exit__(*exc)

    def __repr__(self) -> str:
        return f"LiveSaved(nbytes={self.nbytes}, refs={self.refs})"
