"""Prompt tuning against a frozen text encoder, as a user sets it up: the embeddings of the two
fixed prompts are computed once, before the loop, into a dict, and each step reads them. The encoder's
weights still require grad (loaded, never frozen), so the dict keeps the first step's graph."""
import torch
import torch.nn as nn

INTENT = ("The alignment loss trains only the soft prompt; the embeddings of the two fixed prompts are "
          "constants and the text encoder is not trained.")
GRADS = ["soft_prompt"]
RULE = "computed-once"
KIND = "detach-carried"

torch.manual_seed(0)
encoder = nn.Sequential(nn.Embedding(30, 8), nn.Linear(8, 8), nn.Tanh())
soft_prompt = torch.zeros(8, requires_grad=True)
opt = torch.optim.Adam([soft_prompt], lr=0.05)
tok_a, tok_b = torch.randint(0, 30, (5,)), torch.randint(0, 30, (5,))
prompts = {"a": encoder(tok_a).mean(0), "b": encoder(tok_b).mean(0)}  # BUG
# FIX: prompts = {"a": encoder(tok_a).mean(0).detach(), "b": encoder(tok_b).mean(0).detach()}
for _step in range(3):
    x = torch.randn(4, 8) + soft_prompt
    loss = ((x - prompts["a"]) ** 2).mean() - 0.1 * ((x - prompts["b"]) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
