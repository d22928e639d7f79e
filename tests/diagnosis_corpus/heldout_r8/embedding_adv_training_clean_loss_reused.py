"""Adversarial training of a span-prediction (QA) network on word embeddings: the perturbation is the normalised gradient
of the clean loss on the embedding matrix; the step minimises F(x) + F(x + r). Rewritten from the PyTorch forum thread
"Adversarial Training implementation in pytorch": `adversarial_loss` calls `loss.backward(retain_graph=True)` to read
`embedding.weight.grad` ("I retained the graph for total_loss"), then `update` runs `loss_total = loss + loss_adv;
loss_total.backward()`. The clean loss is backwarded twice in one step, so its first backward must keep the graph;
detaching it instead would stop it training the network."""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "Adversarial Training implementation in pytorch"
CATEGORY = "two-backwards"
CULPRIT = "loss"
CAUSE = "the clean loss is backwarded for the perturbation, then again inside loss_total"
FIX_KIND = "keep-graph"
ERROR = "second time"
INTENT = ("The clean loss and the adversarial loss both train the whole network (embeddings included); "
          "the clean loss's gradient on the embedding matrix also gives the perturbation.")
GRADS = "network.parameters()"


class SpanNet(nn.Module):
    def __init__(self, vocab=50, dim=16, hidden=32):
        super().__init__()
        self.embedding, self.encoder = nn.Embedding(vocab, dim), nn.Sequential(nn.Linear(dim, hidden), nn.Tanh())
        self.start, self.end = nn.Linear(hidden, 1), nn.Linear(hidden, 1)

    def forward(self, tokens):
        h = self.encoder(self.embedding(tokens))
        return self.start(h).squeeze(-1), self.end(h).squeeze(-1)


def adversarial_loss(network, optimizer, tokens, loss, y):
    optimizer.zero_grad()
    loss.backward()  # BUG
    # FIX: loss.backward(retain_graph=True)
    grad = network.embedding.weight.grad.detach()
    perturb = F.normalize(grad, p=2, dim=1) * 5.0
    original_emb = network.embedding.weight.data
    network.embedding.weight.data = (network.embedding.weight + perturb).data
    adv_start, adv_end = network(tokens)
    network.embedding.weight.data = original_emb
    return F.cross_entropy(adv_start, y[0]) + F.cross_entropy(adv_end, y[1])


torch.manual_seed(0)
network = SpanNet()
optimizer = torch.optim.Adamax(network.parameters(), lr=2e-3)
for step in range(2):
    tokens = torch.randint(0, 50, (4, 12))
    y = torch.randint(0, 12, (4,)), torch.randint(0, 12, (4,))
    start, end = network(tokens)
    loss = F.cross_entropy(start, y[0]) + F.cross_entropy(end, y[1])
    loss_adv = adversarial_loss(network, optimizer, tokens, loss, y)
    loss_total = loss + loss_adv
    optimizer.zero_grad()
    loss_total.backward()
    optimizer.step()
