"""ControlNet training in which the UNet is fine-tuned too: the ControlNet turns the conditioning
image into one residual per down-block skip connection, and the UNet adds them to its skip
connections before the mid block and the up blocks.

Rewritten from huggingface/diffusers#2586 ("fix the in-place modification in unet condition when
using controlnet"): UNet2DConditionModel added the ControlNet's residuals with
`down_block_res_sample += down_block_additional_residual`, which "will cause backprop errors when
training the controlnet". A maintainer saw no error while training the ControlNet alone; the
author answered that the error appears "as long as you want to also fine-tune the UNet", since then
the down blocks' outputs are saved for the UNet's own backward (the last one is also the mid
block's input). The merged fix stops writing into the skip connections; the UNet now reads
`down_block_res_sample = down_block_res_sample + down_block_additional_residual`.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "huggingface/diffusers#2586"
CATEGORY = "inplace"
CULPRIT = "down_block_res_sample"
CAUSE = "the UNet adds the ControlNet residuals in place into skip connections its own backward saved"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The denoising loss trains both the ControlNet and the UNet (the report fine-tunes the UNet "
          "together with the ControlNet).")
GRADS = ["controlnet.parameters()", "unet.parameters()"]


class TinyUNet(nn.Module):
    def __init__(self, ch=8):
        super().__init__()
        self.conv_in = nn.Conv2d(4, ch, 3, padding=1)
        self.down_blocks = nn.ModuleList([nn.Conv2d(ch, ch, 3, padding=1), nn.Conv2d(ch, ch, 3, stride=2, padding=1)])
        self.mid_norm, self.mid_conv = nn.GroupNorm(2, ch), nn.Conv2d(ch, ch, 3, padding=1)
        self.up_conv = nn.Conv2d(2 * ch, ch, 3, padding=1)
        self.conv_out = nn.Conv2d(2 * ch, 4, 3, padding=1)

    def forward(self, sample, down_block_additional_residuals=None):
        sample = self.conv_in(sample)
        down_block_res_samples = (sample,)
        for block in self.down_blocks:
            sample = F.silu(block(sample))
            down_block_res_samples += (sample,)
        if down_block_additional_residuals is not None:
            new_down_block_res_samples = ()
            for down_block_res_sample, down_block_additional_residual in zip(
                    down_block_res_samples, down_block_additional_residuals):
                down_block_res_sample += down_block_additional_residual  # BUG
                # FIX: down_block_res_sample = down_block_res_sample + down_block_additional_residual
                new_down_block_res_samples += (down_block_res_sample,)
            down_block_res_samples = new_down_block_res_samples
        sample = self.mid_conv(F.silu(self.mid_norm(sample)))
        sample = F.silu(self.up_conv(torch.cat([sample, down_block_res_samples[2]], 1)))
        sample = F.interpolate(sample, scale_factor=2.0)
        return self.conv_out(torch.cat([sample, down_block_res_samples[0] + down_block_res_samples[1]], 1))


class TinyControlNet(nn.Module):
    def __init__(self, ch=8):
        super().__init__()
        self.cond_embedding = nn.Conv2d(3, ch, 3, padding=1)
        self.blocks = nn.ModuleList([nn.Conv2d(ch, ch, 3, padding=1), nn.Conv2d(ch, ch, 3, padding=1),
                                     nn.Conv2d(ch, ch, 3, stride=2, padding=1)])
        self.zero_convs = nn.ModuleList([nn.Conv2d(ch, ch, 1) for _ in range(3)])

    def forward(self, cond):
        h, residuals = F.silu(self.cond_embedding(cond)), []
        for block, zero_conv in zip(self.blocks, self.zero_convs):
            h = F.silu(block(h))
            residuals.append(zero_conv(h))
        return residuals


torch.manual_seed(0)
unet, controlnet = TinyUNet(), TinyControlNet()
optimizer = torch.optim.AdamW(list(unet.parameters()) + list(controlnet.parameters()), lr=1e-4)
alphas_cumprod = torch.linspace(0.99, 0.1, 10)
for step in range(2):
    latents, cond_image = torch.randn(2, 4, 8, 8), torch.randn(2, 3, 8, 8)
    noise, t = torch.randn_like(latents), torch.randint(0, 10, (2,))
    a = alphas_cumprod[t].view(-1, 1, 1, 1)
    noisy_latents = a.sqrt() * latents + (1 - a).sqrt() * noise
    down_block_res_samples = controlnet(cond_image)
    noise_pred = unet(noisy_latents, down_block_additional_residuals=down_block_res_samples)
    loss = F.mse_loss(noise_pred, noise)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
