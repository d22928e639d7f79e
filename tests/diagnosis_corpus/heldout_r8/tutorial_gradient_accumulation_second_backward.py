"""A tutorial cell on gradient accumulation: the same small graph y = (w + x) * (w + 1) is
backwarded twice to show that .grad adds up (w.grad goes from 5 to 10) unless it is zeroed.

Rewritten from TingsongYu/PyTorch-Tutorial-2nd#33 ("是不是应该再添加一个“autograd相关的知识点”：
计算图会自动清除", should the autograd section add that the graph is freed automatically): running
the chapter 2.6 example ends in "RuntimeError: Trying to backward through the graph a second time
(or directly access saved tensors after they have already been freed)". The maintainer's answer
points at backward's `retain_graph` argument: "如果需要多次求导，则在执行backward()时，
retain_graph=True" (if you need to differentiate several times, pass retain_graph=True to
backward()), as the chapter's own example does. Both backwards are wanted here, so keeping the
graph on the first one is the fix.
"""
import torch

SOURCE = "TingsongYu/PyTorch-Tutorial-2nd#33"
CATEGORY = "two-backwards"
CULPRIT = "y"
CAUSE = "the first y.backward() frees the graph the second y.backward() needs"
FIX_KIND = "keep-graph"
ERROR = "second time"
INTENT = ("Both backward calls of y train w and x: their gradients are meant to accumulate in w.grad "
          "and x.grad, so nothing is detached or zeroed between them.")
GRADS = ["w", "x"]

torch.manual_seed(0)
w = torch.tensor([1.], requires_grad=True)
x = torch.tensor([2.], requires_grad=True)
a = torch.add(w, x)
b = torch.add(w, 1)
y = torch.mul(a, b)

y.backward()  # BUG
# FIX: y.backward(retain_graph=True)
print(w.grad)        # tensor([5.])
y.backward()
print(w.grad)        # tensor([10.]): gradients accumulate
