"""LoRA training of a diffusion backbone, as ComfyUI's training node does it: the text conditions of
the dataset are pre-computed once by the text encoder and kept in a list of dicts
(`cross_attn`, `pooled_output`); each step then noises the latents and trains the LoRA weights on
the noise-prediction loss.

Rewritten from Comfy-Org/ComfyUI#14368 ("[Trainer/bug] Avoid conditions become trainable in training
node", merged): "this PR fixes in some model setup that the conditions become trainable in training
node. As we pre-computed all the conditions (text emb or things like that), in training node they
will get .backward() multiple time and make pytorch unhappy. As in our training node we only wrap the
backbone model, all the other model or tensor should not receive gradients, I directly detach all
the tensors in conditions." Here the setup is a text encoder whose weights still require grad.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "Comfy-Org/ComfyUI#14368"
CATEGORY = "computed-once"
CULPRIT = ["conditions[0]['cross_attn']", "conditions[0]['pooled_output']"]
CAUSE = "the pre-computed text conditions keep the text encoder's graph across steps"
FIX_KIND = "recompute-in-step"
ERROR = "second time"
INTENT = ("The noise-prediction loss trains only the LoRA weights of the backbone; the pre-computed "
          "text conditions are constants and the text encoder is not trained.")
GRADS = ["lora_A", "lora_B"]

torch.manual_seed(0)
text_encoder = nn.Sequential(nn.Embedding(40, 8), nn.Linear(8, 8))   # loaded weights, still requiring grad
W_backbone = torch.randn(8, 8) / 8 ** 0.5                            # frozen backbone weight
lora_A, lora_B = (0.1 * torch.randn(2, 8)).requires_grad_(), torch.zeros(8, 2, requires_grad=True)
optimizer = torch.optim.AdamW([lora_A, lora_B], lr=1e-2)
alphas_cumprod = torch.linspace(0.99, 0.1, 10)

tokens = torch.randint(0, 40, (4, 6))
h = text_encoder(tokens)
conditions = [{"cross_attn": h, "pooled_output": h.mean(1)}]  # BUG
# FIX: conditions = [{k: v.detach() for k, v in {"cross_attn": h, "pooled_output": h.mean(1)}.items()}]


def backbone(x_t, t, cross_attn, pooled_output):
    ctx = torch.softmax(x_t[:, None] @ cross_attn.transpose(1, 2), -1) @ cross_attn
    hidden = x_t + ctx[:, 0] + pooled_output + t[:, None] / 10
    return hidden @ (W_backbone + lora_B @ lora_A).t()


for step in range(3):
    latents, noise, t = torch.randn(4, 8), torch.randn(4, 8), torch.randint(0, 10, (4,))
    a = alphas_cumprod[t][:, None]
    x_t = a.sqrt() * latents + (1 - a).sqrt() * noise
    loss = F.mse_loss(backbone(x_t, t.float(), **conditions[0]), noise)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
