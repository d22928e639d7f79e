"""helpers.memory.SavedBytes: exact counts, and it must not keep a retained graph alive."""
import gc
import weakref

import torch

from helpers.memory import SavedBytes


def test_counts_references_and_unique_storages():
    x = torch.rand(10, requires_grad=True)
    with SavedBytes() as sb:
        y = (x * x).sum()              # mul saves x twice
    assert sb.count == 2 and sb.nbytes == 80 and sb.unique_nbytes == 40
    y.backward()
    assert torch.allclose(x.grad, 2 * x.detach())


def test_retained_graph_is_released_when_its_tensors_are_deleted():
    x = torch.rand(1000, requires_grad=True)
    with SavedBytes():
        h = x.exp()                    # exp saves its own output
        loss = h.sum()
    alive = weakref.ref(h.untyped_storage())
    loss.backward(retain_graph=True)
    del h, loss
    gc.collect()
    assert alive() is None
