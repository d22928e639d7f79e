"""Filling a preallocated buffer by index assignment from a tensor that requires grad, then backwarding through the
buffer twice (the gradients of two passes accumulate in b.grad).
Rewritten from pytorch/pytorch#21469 ("RuntimeError when trying to reuse a buffer"): `c = torch.zeros(3);
c[[1,2]] = b[[1,1]]; c.sum().backward()  # ok; c.sum().backward()  # fail` ("I'm trying to see if I could reuse a
buffer"; torch then failed with an internal assert). The maintainer's answer: "Don't we need to pass `retain_graph=True`
to backward if we want to compute the derivative again? This solves the error for me", and the error to expect is the
usual one, "Trying to backward through the graph a second time" (which torch 2 raises). The first backward frees the
indexing nodes' saved indices that the second needs; the buffer must not be detached (b would get no gradient).
"""
import torch

SOURCE = "pytorch/pytorch#21469"
CATEGORY = "two-backwards"
CULPRIT = "c"
CAUSE = "the first backward through the filled buffer frees the indexing nodes' saved indices"
FIX_KIND = "keep-graph"
ERROR = "second time"
INTENT = "Both backward passes through the buffer c train b: its gradient accumulates twice; c itself holds no parameters."
GRADS = "b"

torch.manual_seed(0)
b = torch.randn(3, requires_grad=True)
c = torch.zeros(3)
c[[1, 2]] = b[[1, 1]]
c.sum().backward()  # BUG
# FIX: c.sum().backward(retain_graph=True)
c.sum().backward()
