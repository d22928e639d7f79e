"""FedSAM, federated learning with sharpness-aware local training: every client runs SAM on its own data
(an ascent step to the worst nearby weights, then the descent step with the gradient taken there), and
the server averages the clients' models. Rewritten from debcaldarola/fedsam#6 ("question"): "how to keep
back propagation twice without reporting errors?" The reporter solved it: "The error is pred =
model(image). When I calculate the loss, using pred directly will report that the secondary back
propagation cannot be carried out. Later, I expressed pred as model(x), and the error was solved." SAM's
second gradient must come from a second forward pass at the perturbed weights (the repository's client
does two forward-backward passes); reusing the first prediction backwards through the first pass's
graph, which the ascent step's backward already freed.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "debcaldarola/fedsam#6"
CATEGORY = "two-backwards"
CULPRIT = "pred"
CAUSE = "the SAM descent loss reuses the prediction whose graph the ascent step freed"
FIX_KIND = "recompute-in-step"
ERROR = "second time"
INTENT = ("On each client, the loss at the SAM-perturbed weights trains the local model (its gradient updates "
          "the unperturbed weights); the first backward only finds the perturbation.")
GRADS = "model.parameters()"

class SAM:
    def __init__(self, params, base_optimizer, rho=0.05):
        self.params, self.base, self.rho, self.e_w = list(params), base_optimizer, rho, {}

    @torch.no_grad()
    def ascent_step(self):
        norm = torch.norm(torch.stack([p.grad.norm() for p in self.params]))
        for p in self.params:
            self.e_w[p] = p.grad * self.rho / (norm + 1e-12)
            p.add_(self.e_w[p])
        self.base.zero_grad()

    @torch.no_grad()
    def descent_step(self):
        for p in self.params:
            p.sub_(self.e_w[p])
        self.base.step()

torch.manual_seed(0)
global_model = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 3))
client_data = [(torch.randn(8, 10), torch.randint(0, 3, (8,))) for _ in range(2)]
model = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 3))
client_states = []
for client, (image, target) in enumerate(client_data):
    model.load_state_dict(global_model.state_dict())
    minimizer = SAM(model.parameters(), torch.optim.SGD(model.parameters(), lr=0.1))
    pred = model(image)
    F.cross_entropy(pred, target).backward()
    minimizer.ascent_step()
    F.cross_entropy(pred, target).backward()  # BUG
    # FIX: F.cross_entropy(model(image), target).backward()
    minimizer.descent_step()
    client_states.append({k: v.clone() for k, v in model.state_dict().items()})
global_model.load_state_dict({k: torch.stack([s[k] for s in client_states]).mean(0) for k in client_states[0]})
