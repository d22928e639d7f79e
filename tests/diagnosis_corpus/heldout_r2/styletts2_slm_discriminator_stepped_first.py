"""StyleTTS2's SLM adversarial fine-tuning: a frozen speech language model (WavLM) embeds real and
generated speech, a small discriminator head `wd` scores the embeddings, and the generator side
(here the prosody predictor) is trained to fool it. `optimizer` is a MultiOptimizer: one optimizer
per module, `zero_grad()` clears them all, `step(key)` steps one.

Rewritten from yl4579/StyleTTS2#73 ("Finetune also suffers 'one of the variables needed for
gradient computation has been modified by an inplace operation'", raised at
`loss_gen_lm.backward()`; also #72). train_finetune.py backwarded the discriminator loss and ran
`optimizer.step('wd')` before backwarding the generator loss, whose graph had saved wd's weights.
The merged fix (PR #74, "also need order change, slm gen loss then disc loss", and #75, which
moves the generator's steps up) backwards and steps the generator loss first, then the
discriminator loss.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "yl4579/StyleTTS2#73"
CATEGORY = "inplace"
CULPRIT = "wd[2].weight"
CAUSE = "optimizer.step('wd') changes the discriminator before the generator loss's backward"
FIX_KIND = "backward-before-step"
ERROR = "inplace"
INTENT = ("The SLM generator loss trains only the predictor, through the discriminator as it was "
          "when the loss was computed; the SLM discriminator loss trains only the discriminator head wd.")
GRADS = "wd.parameters()"


class MultiOptimizer:
    def __init__(self, optimizers): self.optimizers = optimizers
    def zero_grad(self): [opt.zero_grad() for opt in self.optimizers.values()]
    def step(self, key): self.optimizers[key].step()


torch.manual_seed(0)
predictor = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 48))
wavlm = nn.Sequential(nn.Linear(48, 24), nn.GELU()).requires_grad_(False)
wd = nn.Sequential(nn.Linear(24, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
optimizer = MultiOptimizer({"predictor": torch.optim.AdamW(predictor.parameters(), lr=1e-4),
                            "wd": torch.optim.AdamW(wd.parameters(), lr=2e-4, betas=(0.0, 0.99))})
for i in range(2):
    ref_text, wav = torch.randn(4, 8), torch.randn(4, 48)
    y_pred = predictor(ref_text)
    d_loss_slm = F.softplus(-wd(wavlm(wav))).mean() + F.softplus(wd(wavlm(y_pred.detach()))).mean()
    loss_gen_lm = F.softplus(-wd(wavlm(y_pred))).mean()
    optimizer.zero_grad()
    d_loss_slm.backward(retain_graph=True)  # BUG
    # FIX: loss_gen_lm.backward()
    optimizer.step("wd")  # BUG
    # FIX: optimizer.step("predictor")
    optimizer.zero_grad()
    loss_gen_lm.backward()  # BUG
    # FIX: d_loss_slm.backward(retain_graph=True)
    optimizer.step("predictor")  # BUG
    # FIX: optimizer.step("wd")
