"""A zoo of real architectures (issue 28, "Done when"), written here: no downloads, no transformers
package. Each entry builds a model, runs its forward (under record_modules) and returns a Case: the
loss, the model and names. The large ones (GPT-2 small, ViT-B/16, a 16-block Llama-style stack,
ResNet-50) are built at full size on the meta device: the graph exists, no memory is allocated.

`python -m tests.model_zoo NAME` (or tests/test_zoo.py, one subprocess per model) draws every default
picture of the model: draw, draw(modules=), the watch pair and its after_view, and prints one JSON
line per picture: its smallest text and height at 860 px, and the seconds it took (layout included).
"""
from __future__ import annotations

import dataclasses
import json
import math
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

META = torch.device("meta")


@dataclasses.dataclass
class Case:
    loss: torch.Tensor
    model: nn.Module
    names: dict
    backward: object = None     # how to run backward (default loss.backward())


def _run(model, fn):
    from backward_twice.modules import record_modules
    with record_modules(model):
        return fn()


# ---- transformers at full size, on the meta device -----------------------------------------
class GPT2Block(nn.Module):
    def __init__(self, d=768, heads=12):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, heads)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class CausalSelfAttention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class GPT2(nn.Module):
    def __init__(self, vocab=50257, ctx=1024, d=768, layers=12, heads=12):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.h = nn.ModuleList(GPT2Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def _language_model(make, tokens: int) -> Case:
    """A language model on the meta device, its next-token loss over `tokens` token ids."""
    with META:
        model = make()
        idx = torch.zeros(1, tokens, dtype=torch.long)
    logits = _run(model, lambda: model(idx))
    loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), idx.view(-1))
    return Case(loss, model, {"idx": idx, "loss": loss})


def gpt2():
    return _language_model(GPT2, 1024)


class ViT(nn.Module):
    def __init__(self, image=224, patch=16, d=768, layers=12, heads=12, classes=1000):
        super().__init__()
        self.patch = nn.Conv2d(3, d, patch, stride=patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, d))
        self.pos = nn.Parameter(torch.zeros(1, (image // patch) ** 2 + 1, d))
        layer = nn.TransformerEncoderLayer(d, heads, 4 * d, activation="gelu", batch_first=True, norm_first=True,
                                           dropout=0.0)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, classes)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        return self.head(self.norm(self.encoder(x))[:, 0])


def vit_b16():
    with META:
        model = ViT()
        x, y = torch.zeros(2, 3, 224, 224), torch.zeros(2, dtype=torch.long)
    out = _run(model, lambda: model(x))
    loss = F.cross_entropy(out, y)
    return Case(loss, model, {"x": x, "loss": loss})


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(d)), eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotary(x, cos, sin):
    x1, x2 = x[..., ::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


class LlamaBlock(nn.Module):
    def __init__(self, d=512, heads=8, hidden=1376):
        super().__init__()
        self.heads = heads
        self.attn_norm, self.ffn_norm = RMSNorm(d), RMSNorm(d)
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(d, d, bias=False) for _ in range(4))
        self.w1, self.w3 = nn.Linear(d, hidden, bias=False), nn.Linear(d, hidden, bias=False)
        self.w2 = nn.Linear(hidden, d, bias=False)

    def forward(self, x, cos, sin):
        B, T, C = x.shape
        h = self.attn_norm(x)
        q, k, v = (w(h).view(B, T, self.heads, C // self.heads).transpose(1, 2) for w in (self.wq, self.wk, self.wv))
        q, k = rotary(q, cos, sin), rotary(k, cos, sin)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, C)
        x = x + self.wo(y)
        h = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class Llama(nn.Module):
    def __init__(self, vocab=32000, d=512, layers=16, heads=8):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(LlamaBlock(d, heads) for _ in range(layers))
        self.norm, self.out = RMSNorm(d), nn.Linear(d, vocab, bias=False)
        self.heads = heads

    def forward(self, idx):
        T, half = idx.shape[1], self.embed.embedding_dim // self.heads // 2
        freqs = torch.outer(torch.arange(T, device=idx.device).float(),
                            1.0 / 10000 ** (torch.arange(half, device=idx.device).float() / half))
        cos, sin = freqs.cos(), freqs.sin()
        x = self.embed(idx)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.out(self.norm(x))


def llama16():
    return _language_model(Llama, 512)


class Bottleneck(nn.Module):
    def __init__(self, cin, mid, stride=1):
        super().__init__()
        cout = 4 * mid
        self.conv1, self.bn1 = nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid)
        self.conv2, self.bn2 = nn.Conv2d(mid, mid, 3, stride, 1, bias=False), nn.BatchNorm2d(mid)
        self.conv3, self.bn3 = nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout)
        self.down = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                     if stride != 1 or cin != cout else None)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return F.relu(out + (x if self.down is None else self.down(x)))


class ResNet50(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        layers, cin = [], 64
        for mid, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            stage = []
            for i in range(blocks):
                stage.append(Bottleneck(cin, mid, stride if i == 0 else 1))
                cin = 4 * mid
            layers.append(nn.Sequential(*stage))
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.fc = nn.Linear(2048, classes)

    def forward(self, x):
        x = self.stem(x)
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(x.mean((2, 3)))


def resnet50():
    with META:
        model = ResNet50()
        x, y = torch.zeros(2, 3, 224, 224), torch.zeros(2, dtype=torch.long)
    out = _run(model, lambda: model(x))
    return Case(F.cross_entropy(out, y), model, {"x": x})


# ---- small models on the CPU ----------------------------------------------------------------
def _conv(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.GroupNorm(4, cout), nn.SiLU(),
                         nn.Conv2d(cout, cout, 3, padding=1), nn.GroupNorm(4, cout), nn.SiLU())


class UNet(nn.Module):
    """4 levels down, 4 up, each up step concatenating the skip from its level."""

    def __init__(self, c=8, levels=4):
        super().__init__()
        chans = [c * 2 ** i for i in range(levels + 1)]
        self.inc = _conv(1, chans[0])
        self.down = nn.ModuleList(_conv(chans[i], chans[i + 1]) for i in range(levels))
        self.up = nn.ModuleList(nn.ConvTranspose2d(chans[i + 1], chans[i], 2, stride=2) for i in reversed(range(levels)))
        self.dec = nn.ModuleList(_conv(2 * chans[i], chans[i]) for i in reversed(range(levels)))
        self.out = nn.Conv2d(chans[0], 1, 1)

    def forward(self, x):
        skips = [self.inc(x)]
        for d in self.down:
            skips.append(d(F.max_pool2d(skips[-1], 2)))
        x = skips.pop()
        for up, dec in zip(self.up, self.dec):
            x = dec(torch.cat([up(x), skips.pop()], dim=1))
        return self.out(x)


def unet():
    torch.manual_seed(0)
    model, x = UNet(), torch.randn(1, 1, 32, 32)
    out = _run(model, lambda: model(x))
    loss = (out - x).pow(2).mean()
    return Case(loss, model, {"x": x, "loss": loss})


class PackedLSTM(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm, self.head = nn.LSTM(8, 16, num_layers=2, batch_first=True), nn.Linear(16, 3)

    def forward(self, x, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        _, (h, _) = self.lstm(packed)
        return self.head(h[-1])


def lstm2():
    torch.manual_seed(0)
    model, x = PackedLSTM(), torch.randn(4, 12, 8)
    out = _run(model, lambda: model(x, torch.tensor([12, 9, 7, 3])))
    return Case(F.cross_entropy(out, torch.tensor([0, 1, 2, 0])), model, {"x": x})


class MyGRU(nn.Module):
    """A user's own GRU cell, written out, run over 10 time steps."""

    def __init__(self, n_in=4, n_h=8):
        super().__init__()
        self.W_z, self.U_z = nn.Parameter(torch.randn(n_in, n_h) * 0.3), nn.Parameter(torch.randn(n_h, n_h) * 0.3)
        self.W_r, self.U_r = nn.Parameter(torch.randn(n_in, n_h) * 0.3), nn.Parameter(torch.randn(n_h, n_h) * 0.3)
        self.W_h, self.U_h = nn.Parameter(torch.randn(n_in, n_h) * 0.3), nn.Parameter(torch.randn(n_h, n_h) * 0.3)
        self.n_h = n_h

    def forward(self, xs):
        h = torch.zeros(xs.shape[0], self.n_h)
        for t in range(xs.shape[1]):
            x = xs[:, t]
            z = torch.sigmoid(x @ self.W_z + h @ self.U_z)
            r = torch.sigmoid(x @ self.W_r + h @ self.U_r)
            cand = torch.tanh(x @ self.W_h + (r * h) @ self.U_h)
            h = (1 - z) * h + z * cand
        return h


def gru_user():
    torch.manual_seed(0)
    model, xs = MyGRU(), torch.randn(3, 10, 4)
    h = _run(model, lambda: model(xs))
    loss = h.pow(2).sum()
    return Case(loss, model, {"xs": xs, "loss": loss})


class MoE(nn.Module):
    """Top-2 routing over 4 expert MLPs."""

    def __init__(self, d=16, experts=4):
        super().__init__()
        self.gate = nn.Linear(d, experts)
        self.experts = nn.ModuleList(nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
                                     for _ in range(experts))

    def forward(self, x):
        weights, chosen = self.gate(x).softmax(-1).topk(2, dim=-1)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            rows, slot = (chosen == e).nonzero(as_tuple=True)
            out = out.index_add(0, rows, expert(x[rows]) * weights[rows, slot, None])
        return out


def moe_top2():
    torch.manual_seed(0)
    model, x = nn.Sequential(nn.Linear(16, 16), MoE(), nn.Linear(16, 4)), torch.randn(32, 16)
    out = _run(model, lambda: model(x))
    return Case(out.pow(2).mean(), model, {"x": x})


def wgan_gp():
    torch.manual_seed(0)
    critic = nn.Sequential(nn.Linear(8, 32), nn.LeakyReLU(0.2), nn.Linear(32, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
    real, fake = torch.randn(16, 8), torch.randn(16, 8)

    def forward():
        eps = torch.rand(16, 1)
        mixed = (eps * real + (1 - eps) * fake).requires_grad_(True)
        score = critic(mixed)
        grad, = torch.autograd.grad(score.sum(), mixed, create_graph=True)
        penalty = ((grad.norm(2, dim=1) - 1) ** 2).mean()
        return critic(fake).mean() - critic(real).mean() + 10 * penalty

    loss = _run(critic, forward)
    return Case(loss, critic, {"real": real, "fake": fake, "loss": loss})


class Denoiser(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d + 1, 32), nn.SiLU(), nn.Linear(32, 32), nn.SiLU(), nn.Linear(32, d))

    def forward(self, x, t):
        return self.net(torch.cat([x, t.expand(x.shape[0], 1)], dim=1))


def diffusion():
    """A sampler loop differentiated end to end: 2,000 steps of a small denoiser, over 20,000 nodes."""
    torch.manual_seed(0)
    model, x = Denoiser(), torch.randn(4, 16)

    def sample():
        z = x
        for i in range(2000):
            t = torch.full((1, 1), 1 - i / 2000)
            z = z - 0.0005 * model(z, t)
        return z

    z = _run(model, sample)
    return Case(z.pow(2).mean(), model, {"x": x})


def bert():
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
    model = nn.Sequential(nn.Embedding(100, 32), nn.TransformerEncoder(layer, 4, enable_nested_tensor=False),
                          nn.Linear(32, 2))
    idx = torch.randint(0, 100, (2, 10))
    out = _run(model, lambda: model(idx))
    return Case(F.cross_entropy(out[:, 0], torch.tensor([0, 1])), model, {"idx": idx})


class GCN(nn.Module):
    def __init__(self, d=8, layers=3):
        super().__init__()
        self.lins = nn.ModuleList(nn.Linear(d, d) for _ in range(layers))

    def forward(self, x, src, dst):
        deg = torch.zeros(x.shape[0]).index_add(0, dst, torch.ones(dst.shape[0])).clamp(min=1)
        for lin in self.lins:
            msg = lin(x)[src]
            x = torch.relu(torch.zeros_like(x).index_add(0, dst, msg) / deg[:, None])
        return x


def gnn():
    torch.manual_seed(0)
    model, x = GCN(), torch.randn(10, 8)
    src, dst = torch.randint(0, 10, (30,)), torch.randint(0, 10, (30,))
    out = _run(model, lambda: model(x, src, dst))
    return Case(out.sum(), model, {"x": x})


class VAE(nn.Module):
    def __init__(self, d=16, z=4):
        super().__init__()
        self.enc, self.mu, self.logvar = nn.Linear(d, 32), nn.Linear(32, z), nn.Linear(32, z)
        self.dec = nn.Sequential(nn.Linear(z, 32), nn.ReLU(), nn.Linear(32, d))

    def forward(self, x):
        h = torch.relu(self.enc(x))
        mu, logvar = self.mu(h), self.logvar(h)
        zs = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        recon = self.dec(zs)
        kl = -0.5 * torch.mean(1 + logvar - mu.pow(2) - logvar.exp())
        return F.mse_loss(recon, x) + kl


def vae():
    torch.manual_seed(0)
    model, x = VAE(), torch.randn(8, 16)
    loss = _run(model, lambda: model(x))
    return Case(loss, model, {"x": x, "loss": loss})


class ConvLSTM(nn.Module):
    def __init__(self, cin=2, ch=4):
        super().__init__()
        self.gates, self.ch = nn.Conv2d(cin + ch, 4 * ch, 3, padding=1), ch

    def forward(self, xs):
        B, T, _, H, W = xs.shape
        h = c = torch.zeros(B, self.ch, H, W)
        for t in range(T):
            i, f, o, g = self.gates(torch.cat([xs[:, t], h], 1)).chunk(4, 1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
        return h


def conv_lstm():
    torch.manual_seed(0)
    model, xs = ConvLSTM(), torch.randn(2, 6, 2, 8, 8)
    h = _run(model, lambda: model(xs))
    return Case(h.mean(), model, {"xs": xs})


class MambaLike(nn.Module):
    """A selective scan: input-dependent decay and input gates, a sequential loop over time."""

    def __init__(self, d=8, n=4):
        super().__init__()
        self.in_proj, self.dt, self.B, self.C = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, n), nn.Linear(d, n)
        self.A = nn.Parameter(-torch.rand(d, n))
        self.out = nn.Linear(d, d)

    def forward(self, x):
        u = F.silu(self.in_proj(x))
        dt, Bm, Cm = F.softplus(self.dt(u)), self.B(u), self.C(u)
        s = torch.zeros(x.shape[0], x.shape[2], self.A.shape[1])
        ys = []
        for t in range(x.shape[1]):
            s = torch.exp(dt[:, t, :, None] * self.A) * s + dt[:, t, :, None] * Bm[:, t, None] * u[:, t, :, None]
            ys.append((s * Cm[:, t, None]).sum(-1))
        return self.out(torch.stack(ys, 1))


def mamba():
    torch.manual_seed(0)
    model, x = MambaLike(), torch.randn(2, 16, 8)
    out = _run(model, lambda: model(x))
    return Case(out.pow(2).mean(), model, {"x": x})


class DenseBlock(nn.Module):
    def __init__(self, cin=8, growth=4, layers=6):
        super().__init__()
        self.layers = nn.ModuleList(nn.Sequential(nn.BatchNorm2d(cin + i * growth), nn.ReLU(),
                                                  nn.Conv2d(cin + i * growth, growth, 3, padding=1, bias=False))
                                    for i in range(layers))

    def forward(self, x):
        feats = [x]
        for layer in self.layers:
            feats.append(layer(torch.cat(feats, 1)))
        return torch.cat(feats, 1)


def densenet():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), DenseBlock(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(32, 10))
    x = torch.randn(2, 3, 8, 8)
    out = _run(model, lambda: model(x))
    return Case(F.cross_entropy(out, torch.tensor([1, 2])), model, {"x": x})


def bf16_block():
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True).to(torch.bfloat16)
    x = torch.randn(2, 8, 32, dtype=torch.bfloat16)
    out = _run(layer, lambda: layer(x))
    return Case(out.float().pow(2).mean(), layer, {"x": x})


ZOO = {"gpt2": gpt2, "vit_b16": vit_b16, "llama16": llama16, "resnet50": resnet50, "unet": unet,
       "lstm2": lstm2, "gru_user": gru_user, "moe_top2": moe_top2, "wgan_gp": wgan_gp, "diffusion": diffusion,
       "bert": bert, "gnn": gnn, "vae": vae, "conv_lstm": conv_lstm, "mamba": mamba, "densenet": densenet,
       "bf16_block": bf16_block}
# the default pictures every zoo model is drawn with
PICTURES = ("draw", "modules", "pair", "after_view")


def measure(svg: str) -> dict:
    from backward_twice.picture.layout import shown_px, smallest_text_px
    px = smallest_text_px(svg)
    return {"text_px": round(px, 1) if math.isfinite(px) else None, "height_px": round(shown_px(svg)[1])}


def pictures(name: str, save_to: str | None = None):
    """Yield {"model", "picture", "nodes", "text_px", "height_px", "seconds", "cpu_s", "backward_s", "folded",
    "first_line", ...} for each default picture: seconds, wall time, layout included; cpu_s, the CPU time
    of it (this process and its layout processes); backward_s, for the pair, the model's own backward under
    watch (in both); folded, whether the picture drawn shows repeated blocks folded."""
    import warnings

    import backward_twice as bt
    warnings.simplefilter("ignore")
    case = ZOO[name]()
    nodes = bt.draw(case.loss, names=case.names).snapshot.total_nodes
    made = {
        "draw": lambda: bt.draw(case.loss, names=case.names),
        "modules": lambda: bt.draw(case.loss, names=case.names, modules=case.model),
    }
    for pic_name in ("draw", "modules"):
        t, cpu = time.perf_counter(), _cpu_s()
        pic = made[pic_name]()
        svg = pic.svg
        yield _row(name, pic_name, nodes, svg, time.perf_counter() - t, pic, save_to, _cpu_s() - cpu)
    t, cpu = time.perf_counter(), _cpu_s()
    with bt.watch(case.loss, names=case.names) as w:
        started = time.perf_counter()
        case.loss.backward()
        backward_s = time.perf_counter() - started     # the model's own backward, hooked: in `seconds` too
    svg = w.picture.svg
    yield _row(name, "pair", nodes, svg, time.perf_counter() - t, w.picture, save_to, _cpu_s() - cpu, backward_s)
    t, cpu = time.perf_counter(), _cpu_s()
    view = w.after_view()
    svg = view.svg
    yield _row(name, "after_view", nodes, svg, time.perf_counter() - t, view, save_to, _cpu_s() - cpu)


def folds(dot: str) -> bool:
    """Whether a picture drawn shows repeated blocks folded: ops (picture.repeats: 'xN more of the
    block below', '... like the branch beside') or module calls (modules.collapse: 'h.1 ... h.11, the
    same ops each')."""
    return any(words in dot for words in ("more of the block below", "more like the branch beside",
                                          "the same ops each"))


def _cpu_s() -> float:
    """CPU seconds of this process and of the layout processes it waited for (a loaded machine
    stretches wall time, not this)."""
    import resource
    return time.process_time() + resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime \
        + resource.getrusage(resource.RUSAGE_CHILDREN).ru_stime


def _row(model, picture, nodes, svg, seconds, pic, save_to, cpu_s=None, backward_s=None):
    if save_to:
        with open(f"{save_to}/{model}.{picture}.svg", "w", encoding="utf-8") as f:
            f.write(svg)
    from backward_twice.layout import refused
    return {"model": model, "picture": picture, "nodes": nodes, **measure(svg), "seconds": round(seconds, 2),
            "cpu_s": None if cpu_s is None else round(cpu_s, 2),
            "backward_s": None if backward_s is None else round(backward_s, 2),
            "refused": refused(svg), "simplified": getattr(pic, "simplified", 0), "folded": folds(pic.dot),
            "form": getattr(pic, "_form", None), "first_line": pic.text.splitlines()[0][:120],
            "text_tail": pic.text.splitlines()[-1][:300]}


if __name__ == "__main__":
    for row in pictures(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None):
        print(json.dumps(row), flush=True)
