"""A linear regression fitted with torch.optim.LBFGS, whose step() calls the closure several times
per step to re-evaluate the loss and its gradient along the search direction.

Rewritten from pytorch/pytorch#111369 ("torch.optim.LBFGS error"): the poster computes
`pred = model(x)` once, before `def closure(): optimizer.zero_grad(); loss = criterion(pred, y...);
loss.backward(); return loss`, and `optimizer.step(closure)` fails with the "backward through the
graph a second time" error; asked for runnable code by a maintainer, the poster then reports "I
solved the problem as ..." (the stored thread is cut there). The fix written here is the one the
optimizer's documentation gives for closures: a closure "should clear the gradients, compute the
loss, and return it", recomputing the model (`output = model(input)` inside `def closure()`). LBFGS
evaluates the closure several times per step; the second evaluation reuses the first one's graph,
freed by its backward, and would see stale weights even with retain_graph.
"""
import torch
import torch.nn as nn

SOURCE = "pytorch/pytorch#111369"
CATEGORY = "computed-once"
CULPRIT = "pred"
CAUSE = "the prediction is computed once outside the closure that LBFGS evaluates several times per step"
FIX_KIND = "recompute-in-step"
ERROR = "second time"
INTENT = ("The mean-squared error trains the regression's weight and bias; every evaluation of the "
          "closure must compute the loss from the weights LBFGS has just set.")
GRADS = "model.parameters()"

torch.manual_seed(0)
x = torch.rand(100, 10)
y = torch.rand(100, 1)
model = nn.Linear(x.size(1), 1)          # the report's LinearRegression module: one nn.Linear(p, 1)
optimizer = torch.optim.LBFGS(model.parameters(), max_iter=5)
criterion = nn.MSELoss()

pred = model(x)


def closure():
    optimizer.zero_grad()
    loss = criterion(pred, y.view(pred.shape))  # BUG
    # FIX: loss = criterion(model(x), y.view(pred.shape))
    loss.backward()
    return loss


optimizer.step(closure)
