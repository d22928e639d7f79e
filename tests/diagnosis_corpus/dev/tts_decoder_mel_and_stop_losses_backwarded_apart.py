"""A Tacotron-style decoder trained with teacher forcing: each step predicts the next mel frame and a
stop token from the previous ground-truth frame and the encoded text; the mel loss and the stop-token
loss are backwarded one after the other before a single optimizer step.

Rewritten from the post "[Solved] RuntimeError: Trying to backward through the graph a second time…"
(programmerah.com), whose second case is "when there are two losses in a network that need to be
backwarded respectively: loss1.backward(), loss2.backward()"; its "Correct code" keeps the graph on the
first: `loss1.backward(retain_graph=True) #Keep the intermediate arguments after backward`, then
`loss2.backward()` and `optimizer.step()`. Here loss1 and loss2 are the mel and stop-token losses,
which share the decoder's graph.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SOURCE = "[Solved] RuntimeError: Trying to backward through the graph a second time…"
CATEGORY = "two-backwards"
CULPRIT = "decoder_outputs"
CAUSE = "the mel loss's backward frees the decoder graph the stop-token loss shares"
FIX_KIND = "retain-or-sum"
ERROR = "second time"
INTENT = ("The mel loss and the stop-token loss both train the text encoder, the decoder and their own "
          "projection in the same optimizer step.")
GRADS = ["encoder.parameters()", "decoder.parameters()", "mel_proj.parameters()", "stopnet.parameters()"]

torch.manual_seed(0)
n_mels, hidden = 8, 16
encoder = nn.Embedding(20, hidden)
decoder = nn.GRUCell(n_mels + hidden, hidden)
mel_proj, stopnet = nn.Linear(hidden, n_mels), nn.Linear(hidden, 1)
params = [p for m in (encoder, decoder, mel_proj, stopnet) for p in m.parameters()]
optimizer = torch.optim.Adam(params, lr=1e-3)
for step in range(2):
    text, mels = torch.randint(0, 20, (2, 5)), torch.randn(2, 6, n_mels)
    stop_targets = torch.zeros(2, 6)
    stop_targets[:, -1] = 1.0
    context = encoder(text).mean(dim=1)
    h, prev, outputs = torch.zeros(2, hidden), torch.zeros(2, n_mels), []
    for t in range(mels.shape[1]):                 # teacher forcing: feed the ground-truth frame
        h = decoder(torch.cat([prev, context], dim=1), h)
        outputs.append(h)
        prev = mels[:, t]
    decoder_outputs = torch.stack(outputs, dim=1)
    mel_loss = F.l1_loss(mel_proj(decoder_outputs), mels)
    stop_loss = F.binary_cross_entropy_with_logits(stopnet(decoder_outputs).squeeze(-1), stop_targets)
    optimizer.zero_grad()
    mel_loss.backward()  # BUG
    # FIX: mel_loss.backward(retain_graph=True)
    stop_loss.backward()
    optimizer.step()
