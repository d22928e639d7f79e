"""Exact accounting of the tensors autograd saves for backward."""
from __future__ import annotations

import contextlib

import torch


class SavedBytes:
    """Counts every tensor saved for backward while the block runs (`saved_tensors_hooks`).

        with SavedBytes() as sb:
            loss = model(x).sum()
        sb.count, sb.nbytes        # what the graph holds until backward frees it

    A tensor saved twice (by two ops) is counted twice: that is how many references
    the graph holds; `unique_nbytes` counts each storage once.
    """

    def __init__(self):
        self.count = 0
        self.nbytes = 0
        self._storages = {}

    def _pack(self, t: torch.Tensor):
        self.count += 1
        n = t.numel() * t.element_size()
        self.nbytes += n
        try:
            key = t.untyped_storage().data_ptr()
            self._storages[key] = max(self._storages.get(key, 0), t.untyped_storage().nbytes())
        except Exception:
            pass
        # A detached alias, not `t`: a saved output would otherwise hold its own grad_fn
        # and the cycle would keep a retained graph alive after its tensors are deleted.
        return t.detach()

    @property
    def unique_nbytes(self) -> int:
        return sum(self._storages.values())

    def __enter__(self):
        self._ctx = torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t)
        self._ctx.__enter__()
        return self

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)
