"""Adapting CLIP with a learnable visual prompt: a frozen CLIP image encoder takes the prompt, and a
CLIP text head, built once, scores the features against class embeddings. Rewritten from
Yunkun-Zhang/CITE#3 ("CLIPTextHead missing 1 required positional argument: 'arch'"): once the config
passed `arch`, training the zero-shot CLIP baseline raised "Trying to backward through the graph a
second time". The head builds its class embeddings under `torch.no_grad()` but its temperature
outside it, `self.logit_scale = model.logit_scale.exp()`, so it keeps a tensor whose graph the first
backward frees. The maintainer acknowledged it ("Thanks for pointing that out. This is ca..."; the
stored reply is cut there), so the fix below, taking the temperature without its graph as the head
does for its class embeddings, follows the head's code rather than a quoted patch.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "Yunkun-Zhang/CITE#3"
CATEGORY = "computed-once"
CULPRIT = "head.logit_scale"
CAUSE = "the text head keeps CLIP's temperature computed once, with its graph, at init"
FIX_KIND = "detach-carried"
ERROR = "second time"
INTENT = ("The classification loss trains only the visual prompt; CLIP's image encoder, the class "
          "embeddings and the temperature of the text head stay fixed.")
GRADS = "backbone.prompt"


class CLIPImageBackbone(nn.Module):
    def __init__(self, visual):
        super().__init__()
        self.visual = visual.requires_grad_(False)
        self.prompt = nn.Parameter(torch.zeros(12))

    def forward(self, x):
        return self.visual(x + self.prompt)


class CLIPTextHead(nn.Module):
    def __init__(self, token_embedding, clip_logit_scale, texts):
        super().__init__()
        with torch.no_grad():
            self.weights = token_embedding(texts)
        self.logit_scale = clip_logit_scale.exp()  # BUG
        # FIX: self.logit_scale = clip_logit_scale.exp().detach()

    def forward(self, x):
        x, weights = x / x.norm(dim=-1, keepdim=True), self.weights / self.weights.norm(dim=-1, keepdim=True)
        return self.logit_scale * x @ weights.t()


torch.manual_seed(0)
clip_visual, clip_text, clip_logit_scale = nn.Linear(12, 8), nn.EmbeddingBag(20, 8), nn.Parameter(torch.tensor(2.659))
backbone = CLIPImageBackbone(clip_visual)
head = CLIPTextHead(clip_text, clip_logit_scale, texts=torch.randint(0, 20, (3, 5)))
optimizer = torch.optim.SGD([backbone.prompt], lr=0.1)
for step in range(2):
    images, labels = torch.randn(4, 12), torch.randint(0, 3, (4,))
    loss = F.cross_entropy(head(backbone(images)), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
