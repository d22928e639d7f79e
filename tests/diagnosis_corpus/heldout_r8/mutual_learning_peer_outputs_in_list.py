"""Deep Mutual Learning: a cohort of small classifiers trained together, each with its own
optimizer; every network's loss is its cross-entropy plus the KL divergence from its peers'
predicted distributions, and the networks are updated one after the other in each step.

Rewritten from chxy95/Deep-Mutual-Learning#5 ("Trying to backward through the graph a second time,
but the buffers have already been freed"): asked whether `loss.backward(retain_graph=True)` is
needed when updating the sub networks, the thread settles on detaching: "check whether the teacher
model's output is detached from the graph `teacher_out = teacher_out.detach()`", "if we have more
than one teacher models, putting their outputs into a list is better", and "u should use detach,
because your gridient will be freed the first time you use kl and backward". The first network's
backward runs through its peers' outputs in the KL term and frees their graphs; retaining them
instead would send the KL gradient into the peers and then meet weights changed by their steps.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "chxy95/Deep-Mutual-Learning#5"
CATEGORY = "two-backwards"
CULPRIT = "outputs"
CAUSE = "each network's KL term backwards through its peers' outputs and frees their graphs"
FIX_KIND = "detach-at-use"
ERROR = "second time"
INTENT = ("Each network's loss trains only that network: its peers' predicted distributions are fixed "
          "targets for its KL term and must not be trained by it.")
GRADS = ["models[0].parameters()", "models[1].parameters()", "models[2].parameters()"]

torch.manual_seed(0)
num_models = 3
models = [nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 5)) for _ in range(num_models)]
optimizers = [torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in models]
criterion_CE, criterion_KLD = nn.CrossEntropyLoss(), nn.KLDivLoss(reduction="batchmean")
for step in range(2):
    images, labels = torch.randn(8, 16), torch.randint(0, 5, (8,))
    outputs = [model(images) for model in models]
    for i in range(num_models):
        ce_loss = criterion_CE(outputs[i], labels)
        kl_loss = 0
        for j in range(num_models):
            if i != j:
                kl_loss += criterion_KLD(F.log_softmax(outputs[i], dim=1), F.softmax(outputs[j], dim=1))  # BUG
                # FIX: kl_loss += criterion_KLD(F.log_softmax(outputs[i], dim=1), F.softmax(outputs[j].detach(), dim=1))
        loss = ce_loss + kl_loss / (num_models - 1)
        optimizers[i].zero_grad()
        loss.backward()
        optimizers[i].step()
