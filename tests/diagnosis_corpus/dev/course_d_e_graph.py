"""Notebook 01's graph: d and e both computed from c; d.backward() then e.backward().

The course's own example (notebooks/01_shared_graph_retain_graph.ipynb, make_graph), built on the
forum thread "What exactly does `retain_variables=True` in `loss.backward()` do?": d and e share
the part a -> b -> c, so the first backward must keep it (retain_graph=True), or the two are
backwarded in one call.
"""
import torch

SOURCE = "What exactly does `retain_variables=True` in `loss.backward()` do?"
CATEGORY = "course"
CULPRIT = "c"
CAUSE = "d and e share c's graph; d.backward() freed it"
FIX_KIND = "retain-or-sum"
ERROR = "second time"

torch.manual_seed(0)
a = torch.rand(1, 4, requires_grad=True)
b = a ** 2
c = b * 2
d = c.mean()
e = c.sum()
d.backward()  # BUG
# FIX: d.backward(retain_graph=True)
e.backward()
