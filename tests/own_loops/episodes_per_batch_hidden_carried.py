"""A recurrent policy trained on batches of whole episodes (each batch is collected from fresh
environments, so every sequence in it starts at an episode's first step). The hidden state is
carried from one batch to the next by mistake."""
import torch
import torch.nn as nn
import torch.nn.functional as F

INTENT = ("Each batch's imitation loss trains the GRU and the head on that batch's episodes only, each "
          "episode starting from a zero hidden state.")
GRADS = ["gru.parameters()", "head.parameters()"]
RULE = "carried-across-steps"
KIND = "reset-per-episode"

torch.manual_seed(0)
gru, head = nn.GRU(6, 10, batch_first=True), nn.Linear(10, 3)
opt = torch.optim.Adam([*gru.parameters(), *head.parameters()], lr=1e-3)
hidden = None
for _batch in range(3):
    obs, actions = torch.randn(4, 7, 6), torch.randint(0, 3, (4, 7))
    out, hidden = gru(obs, hidden)  # BUG
    # FIX: out, _ = gru(obs, None)
    loss = F.cross_entropy(head(out).reshape(-1, 3), actions.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
