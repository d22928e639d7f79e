"""A vocoder-free TTS back end: a small network maps a mel spectrogram to a linear magnitude
spectrogram, torchaudio's Griffin-Lim turns it into a waveform, and the loss compares waveforms,
so the gradient has to flow back through every Griffin-Lim iteration.

Rewritten from pytorch/audio#729 ("torchaudio.transforms.GriffinLim does not allow
backpropagation"): "I cannot backpropagate through GriffinLim due to in-place operations being
used", with "modified by an inplace operation: [torch.FloatTensor [1, 257, 101, 2]], which is
output 0 of SubBackward0". The library's loop normalised its phase estimate with
`angles.div_(complex_norm(angles)...)` after `complex_norm` had saved `angles`, and rescaled the
previous iterate with `tprev.mul_(...)`. The maintainers' fix, PR #730 "Remove in-place operations
from GriffinLim for backprop", writes both out of place. stft/istft are fixed linear maps here.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "pytorch/audio#729"
CATEGORY = "inplace"
CULPRIT = None
CAUSE = "Griffin-Lim divides its phase estimate in place after complex_norm saved it"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The waveform loss trains the mel-to-linear network through every Griffin-Lim iteration; "
          "the phase estimate inside Griffin-Lim is an intermediate, not a trained tensor.")
GRADS = "model.parameters()"


def complex_norm(x):               # torchaudio 0.5: [..., 2] holds real and imaginary parts
    return x.pow(2.).sum(-1).pow(0.5)


def griffinlim(specgram, stft_m, istft_m, n_iter=4, momentum=0.99):
    angles = torch.randn(*specgram.shape, 2)          # rand_init
    rebuilt = torch.tensor(0.)
    for _ in range(n_iter):
        tprev = rebuilt
        inverse = (specgram.unsqueeze(-1) * angles).flatten(1) @ istft_m
        rebuilt = (inverse @ stft_m).view_as(angles)
        angles = rebuilt - tprev.mul_(momentum / (1 + momentum))  # BUG
        # FIX: angles = rebuilt - tprev * (momentum / (1 + momentum))
        angles = angles.div_(complex_norm(angles).add_(1e-16).unsqueeze(-1).expand_as(angles))  # BUG
        # FIX: angles = angles / (complex_norm(angles) + 1e-16).unsqueeze(-1)
    return (specgram.unsqueeze(-1) * angles).flatten(1) @ istft_m


torch.manual_seed(0)
n_mels, n_freq, n_frames, n_samples = 8, 12, 5, 40
model = nn.Sequential(nn.Linear(n_mels, 16), nn.ReLU(), nn.Linear(16, n_freq), nn.Softplus())
stft_m = torch.randn(n_samples, n_freq * n_frames * 2) / 8
istft_m = torch.randn(n_freq * n_frames * 2, n_samples) / 8
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(2):
    mel, target_wav = torch.rand(2, n_frames, n_mels), torch.randn(2, n_samples)
    specgram = model(mel).transpose(1, 2)              # (batch, freq, frames)
    wav = griffinlim(specgram, stft_m, istft_m)
    loss = F.mse_loss(wav, target_wav)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
