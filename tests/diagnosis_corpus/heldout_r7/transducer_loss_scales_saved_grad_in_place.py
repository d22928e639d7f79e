"""A speech recognizer trained with a transducer (RNN-T) loss whose library computes the logits'
gradient in forward, saves it, and scales it by the incoming gradient in backward. The encoder and
the prediction network have separate optimizers: two backwards (retain_graph=True), one per group.

Rewritten from k2-fsa/k2#1106 ("Removing inplace grad multiplication to allow `retain_graph` in
backprop"): "it is not possible to use `loss.backward(retain_graph=True)` with any of the rnn-t
losses (which is useful when training with multiple optimizers). It fails because of the in-place
multiplication on gradients", raising "one of the variables needed for gradient computation has
been modified by an inplace operation". The merged fix multiplies out of place in backward.
"""
import torch
import torch.nn as nn

SOURCE = "k2-fsa/k2#1106"
CATEGORY = "inplace"
CULPRIT = None
CAUSE = "the loss's backward scales its saved gradient in place, so a second backward finds it changed"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The transducer loss trains the encoder through one backward and the prediction network "
          "and joiner through the other, each parameter group stepped by its own optimizer.")
GRADS = ["encoder.parameters()", "predictor.parameters()", "joiner.parameters()"]


class AlignedTransducerLoss(torch.autograd.Function):
    """-log p(alignment) summed over the (t, u) lattice cells of a fixed alignment; the gradient
    (softmax - one_hot) is computed in forward, as the transducer kernels do."""
    @staticmethod
    def forward(ctx, logits, targets):
        log_probs = logits.log_softmax(-1)
        grad = log_probs.exp() - nn.functional.one_hot(targets, logits.shape[-1]).to(logits.dtype)
        ctx.save_for_backward(grad)
        return -log_probs.gather(-1, targets[..., None]).sum()

    @staticmethod
    def backward(ctx, loss_grad):
        grad, = ctx.saved_tensors
        grad.mul_(loss_grad)  # BUG
        # FIX: grad = grad * loss_grad
        return grad, None


torch.manual_seed(0)
n_mels, vocab, dim = 20, 12, 16
encoder = nn.GRU(n_mels, dim, batch_first=True)
predictor = nn.Embedding(vocab, dim)
joiner = nn.Linear(dim, vocab)
enc_opt = torch.optim.Adam(encoder.parameters(), lr=1e-3)
dec_opt = torch.optim.Adam([*predictor.parameters(), *joiner.parameters()], lr=1e-3)
for step in range(2):
    enc, tokens = encoder(torch.randn(2, 10, n_mels))[0], torch.randint(1, vocab, (2, 4))
    pred = predictor(nn.functional.pad(tokens, (1, 0)))  # blank-prefixed
    logits = joiner(torch.tanh(enc[:, :, None] + pred[:, None]))  # (B, T, U+1, V)
    alignment = torch.randint(0, vocab, logits.shape[:-1])
    loss = AlignedTransducerLoss.apply(logits, alignment)
    enc_opt.zero_grad(), dec_opt.zero_grad()
    loss.backward(retain_graph=True, inputs=list(encoder.parameters()))
    loss.backward(inputs=[*predictor.parameters(), *joiner.parameters()])
    enc_opt.step(), dec_opt.step()
