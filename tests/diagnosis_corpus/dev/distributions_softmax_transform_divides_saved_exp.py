"""Variational inference for the weights of a three-component Gaussian mixture: the guide draws
unconstrained logits by reparameterisation and maps them onto the simplex with the library's
softmax transform (`biject_to(constraints.simplex)`), and the negative ELBO is backpropagated.

Rewritten from pytorch/pytorch#5842 ("[distributions] Avoid in-place ops in BoltzmannTransform"):
the transform computed `probs = (logprobs - logprobs.max(-1, True)[0]).exp()` and then normalised
it with `probs /= probs.sum(-1, True)`; fritzo's merged fix "avoids the following error in
`.backward()`: RuntimeError: one of the variables needed for gradient computation has been
modified by an inplace operation" by returning `probs / probs.sum(-1, True)` instead. `exp()` saves
its output for the backward pass, and the in-place division rewrites that very tensor, inside a
library call the user never wrote.
"""
import torch
from torch.distributions import Normal

SOURCE = "pytorch/pytorch#5842"
CATEGORY = "inplace"
CULPRIT = "weights"
CAUSE = "the library's softmax transform divides its saved exp output in place"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The negative ELBO trains the guide's location and log-scale of the mixture logits "
          "and the component means, through the transformed mixture weights.")
GRADS = ["loc", "log_scale", "means"]


class BoltzmannTransform:   # torch.distributions.transforms, March 2018, reduced
    def __call__(self, logprobs):
        probs = (logprobs - logprobs.max(-1, True)[0]).exp()
        probs /= probs.sum(-1, True)  # BUG
        # FIX: probs = probs / probs.sum(-1, True)
        return probs


torch.manual_seed(0)
data = torch.cat([torch.randn(20) - 2, torch.randn(20) + 2])
loc = torch.zeros(3, requires_grad=True)
log_scale = torch.full((3,), -1.0, requires_grad=True)
means = torch.tensor([-1.0, 0.0, 1.0], requires_grad=True)
optimizer = torch.optim.Adam([loc, log_scale, means], lr=0.05)
to_simplex = BoltzmannTransform()
for step in range(3):
    z = loc + log_scale.exp() * torch.randn(3)          # reparameterised draw of the logits
    weights = to_simplex(z)
    log_lik = torch.logsumexp(weights.log() + Normal(means, 1.0).log_prob(data[:, None]), dim=1).sum()
    elbo = log_lik + Normal(0.0, 1.0).log_prob(z).sum() + log_scale.sum()
    loss = -elbo
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
