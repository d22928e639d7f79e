"""Learning the mask of a lensless camera through a differentiable far-field simulator: the scene
is convolved with the mask's point spread function (FFT convolution), the image plane is scaled to
the sensor's range, and an L2 loss against the measured image trains the mask.

Rewritten from ebezzam/waveprop#11 ("Update simulation.py for autograd", merged): "Inplace
operation `/=` and `*=` break autograd". FarFieldSimulator.propagate scaled the simulated
measurement with `image_plane /= image_plane.max()` and `image_plane *= self.max_val`; the merged
fix writes them out of place, `image_plane = image_plane / image_plane.max()` and
`image_plane = image_plane * self.max_val`. The division writes into the tensor that `max()` saved
for its backward.
"""
import torch

SOURCE = "ebezzam/waveprop#11"
CATEGORY = "inplace"
CULPRIT = "image_plane"
CAUSE = "the sensor normalization divides the image plane in place after max() saved it"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = "The measurement loss trains the mask's heights; the scenes and the measured images are data."
GRADS = "mask_heights"


class FarFieldSimulator:
    def __init__(self, psf_shape, max_val=255):
        self.fft_shape = [2 * n - 1 for n in psf_shape]
        self.max_val = max_val

    def propagate(self, obj, psf):
        H = torch.fft.rfft2(psf, s=self.fft_shape)
        image_plane = torch.fft.irfft2(torch.fft.rfft2(obj, s=self.fft_shape) * H, s=self.fft_shape)
        h, w = psf.shape[-2:]
        image_plane = image_plane[..., h // 2:h // 2 + h, w // 2:w // 2 + w]
        image_plane /= image_plane.max()  # BUG
        # FIX: image_plane = image_plane / image_plane.max()
        image_plane *= self.max_val  # BUG
        # FIX: image_plane = image_plane * self.max_val
        return image_plane


torch.manual_seed(0)
mask_heights = torch.rand(16, 16, requires_grad=True)       # learnable phase-mask profile
optimizer = torch.optim.Adam([mask_heights], lr=1e-2)
simulator = FarFieldSimulator((16, 16))
scenes = torch.rand(4, 16, 16)
measured = torch.rand(4, 16, 16) * 255
for step in range(2):
    psf = torch.fft.ifft2(torch.exp(1j * 2 * torch.pi * mask_heights)).abs() ** 2   # mask -> PSF
    psf = psf / psf.sum()
    image_plane = simulator.propagate(scenes, psf)
    loss = ((image_plane - measured) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
