"""A compiled function whose outputs are views (unbind); one backward per output.

Rewritten from pytorch/pytorch#118739 ("Getting 'RuntimeError: Trying to backward through the
graph a second time' when calling backward on compiled unbind / split ops"): in eager mode each
output's backward works (UnbindBackward saves nothing), but compiled, all outputs share one
CompiledFunctionBackward that the first backward frees. Still raised by torch 2.13.0 with the
"aot_eager" backend. Workaround (as for any graph shared by several losses): one backward on the
sum, or retain_graph=True on all but the last.
"""
import torch

SOURCE = "pytorch/pytorch#118739"
CATEGORY = "checkpoint-compile"
CULPRIT = None
CAUSE = "all outputs of the compiled function share one backward node"
FIX_KIND = "retain-or-sum"
ERROR = "second time"


def split_rows(x):
    return x.unbind(0)


compiled = torch.compile(split_rows, backend="aot_eager")
torch.manual_seed(0)
x = torch.randn(3, 4, requires_grad=True)
first, second, third = compiled(x)
first.sum().backward()  # BUG
# FIX: first.sum().backward(retain_graph=True)
second.sum().backward()  # BUG
# FIX: second.sum().backward(retain_graph=True)
third.sum().backward()
