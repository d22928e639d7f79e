"""ControlNet training with the UNet fine-tuned too: the ControlNet turns the conditioning image
into one residual per skip connection, which the UNet adds to its down blocks' outputs before the
mid block and the up blocks.

Rewritten from huggingface/diffusers#2586 ("fix the in-place modification in unet condition when
using controlnet"): UNet2DConditionModel did `down_block_res_sample += down_block_additional_residual`,
which "will cause backprop errors when training the controlnet". A maintainer saw no error training
the ControlNet alone; the author: the error appears "as long as you want to also fine-tune the
UNet", since then the down blocks' outputs are saved for the UNet's own backward. The merged PR
("Just adding a clone operation") stops writing into them; diffusers' UNet now reads
`down_block_res_sample = down_block_res_sample + down_block_additional_residual`.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "huggingface/diffusers#2586"
CATEGORY = "inplace"
CULPRIT = "down_block_res_sample"
CAUSE = "the UNet adds the ControlNet residuals in place into skip connections its backward saved"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The denoising loss trains both the ControlNet and the UNet (the report fine-tunes the UNet "
          "together with the ControlNet).")
GRADS = ["controlnet.parameters()", "unet.parameters()"]

torch.manual_seed(0)
unet = nn.ModuleDict(dict(conv_in=nn.Conv2d(4, 8, 3, padding=1), down=nn.Conv2d(8, 8, 3, stride=2, padding=1),
                          mid_norm=nn.GroupNorm(2, 8), mid=nn.Conv2d(8, 8, 3, padding=1), out=nn.Conv2d(16, 4, 3, padding=1)))
controlnet = nn.ModuleDict(dict(cond=nn.Conv2d(3, 8, 3, padding=1), down=nn.Conv2d(8, 8, 3, stride=2, padding=1),
                                zero0=nn.Conv2d(8, 8, 1), zero1=nn.Conv2d(8, 8, 1)))
optimizer = torch.optim.AdamW([*unet.parameters(), *controlnet.parameters()], lr=1e-4)
alphas_cumprod = torch.linspace(0.99, 0.1, 10)
for step in range(2):
    latents, cond_image, noise = torch.randn(2, 4, 8, 8), torch.randn(2, 3, 8, 8), torch.randn(2, 4, 8, 8)
    a = alphas_cumprod[torch.randint(0, 10, (2,))].view(-1, 1, 1, 1)
    noisy_latents = a.sqrt() * latents + (1 - a).sqrt() * noise
    h = F.silu(controlnet["cond"](cond_image))                     # ControlNet: one residual per skip
    down_block_additional_residuals = [controlnet["zero0"](h), controlnet["zero1"](F.silu(controlnet["down"](h)))]
    sample = unet["conv_in"](noisy_latents)                       # UNet2DConditionModel.forward
    down_block_res_samples = (sample, F.silu(unet["down"](sample)))
    new_down_block_res_samples = ()
    for down_block_res_sample, down_block_additional_residual in zip(down_block_res_samples, down_block_additional_residuals):
        down_block_res_sample += down_block_additional_residual  # BUG
        # FIX: down_block_res_sample = down_block_res_sample + down_block_additional_residual
        new_down_block_res_samples += (down_block_res_sample,)
    skip, sample = new_down_block_res_samples
    sample = unet["mid"](F.silu(unet["mid_norm"](sample)))
    noise_pred = unet["out"](torch.cat([F.interpolate(sample, scale_factor=2.0), skip], dim=1))
    loss = F.mse_loss(noise_pred, noise)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
