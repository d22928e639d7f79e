"""Small autograd programs shared by several test files (imported, never collected)."""
import torch


class Square(torch.autograd.Function):
    """x -> x*x as a custom Function that saves its input (grad_fn name: SquareBackward)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


def seed_graph():
    """The graph of seeds 002/004: a -> b = a**2 -> c = b*2 -> d = c.mean(), e = c.sum()."""
    a = torch.tensor([[1.0, 2.0, 3.0, 4.0]], requires_grad=True)
    b = a ** 2
    c = b * 2
    return dict(a=a, b=b, c=c, d=c.mean(), e=c.sum())


def chain(n):
    """x -> x * 1.5 -> ... (n MulBackward0 nodes): (the leaf x, the last tensor)."""
    x = torch.ones(2, requires_grad=True)
    y = x
    for _ in range(n):
        y = y * 1.5
    return x, y


def cat_car():
    """Notebook 02's drawn cat/car net (CatCarNet(channels=2, convs=1, fcs=1) on 4 images), after
    loss_cat.backward(retain_graph=True): (loss_cat, loss_car, names)."""
    import torch.nn.functional as F

    from helpers.multitask import CatCarNet, make_images

    x, y = make_images(8, seed=0)
    torch.manual_seed(0)
    net = CatCarNet(channels=2, convs=1, fcs=1)
    feats = net.trunk(x[:4])
    loss_cat = F.binary_cross_entropy_with_logits(net.cat(feats).squeeze(1), y[:4, 0])
    loss_car = F.binary_cross_entropy_with_logits(net.car(feats).squeeze(1), y[:4, 1])
    names = dict(net.named_parameters()) | {"feats": feats, "loss_cat": loss_cat, "loss_car": loss_car}
    loss_cat.backward(retain_graph=True)
    return loss_cat, loss_car, names


def two_losses():
    """Notebook 03's two losses on one h = tanh(x @ W), after loss1.backward(retain_graph=True):
    (loss1, loss2, names)."""
    x = torch.tensor([[1.0, -0.5, 2.0]])
    W = torch.tensor([[0.2, -0.1], [0.4, 0.3], [-0.3, 0.5]], requires_grad=True)
    a = torch.tensor([1.5, -2.0], requires_grad=True)
    h = (x @ W).tanh()
    loss1, loss2 = (h * a).sum(), (h ** 2).sum()
    loss1.backward(retain_graph=True)
    return loss1, loss2, {"x": x, "W": W, "a": a, "h": h, "loss1": loss1, "loss2": loss2}


def node_places(source: str) -> dict:
    """{node name: (left, top, width, height)} in points, as laid out by backward_twice.render's engine:
    the box's top-left corner measured from the top-left of its innermost cluster, or of the
    picture when it is in none."""
    import json

    from backward_twice import render

    laid = json.loads(render.laid_out(source, "json"))

    def box(bb):
        x0, y0, x1, y1 = (float(v) for v in bb.split(","))
        return x0, y0, x1, y1

    clusters = [(box(o["bb"]), set(o.get("nodes", ()))) for o in laid.get("objects", ())
                if o.get("name", "").startswith("cluster") and "bb" in o]
    places = {}
    for o in laid.get("objects", ()):
        if "pos" not in o:
            continue
        x, y = (float(v) for v in o["pos"].split(","))
        w, h = float(o["width"]) * 72, float(o["height"]) * 72
        inside = [bb for bb, members in clusters if o["_gvid"] in members]
        x0, _, _, y1 = min(inside, key=lambda b: (b[2] - b[0]) * (b[3] - b[1])) if inside else box(laid["bb"])
        places[o["name"]] = (round(x - w / 2 - x0, 1), round(y1 - y - h / 2, 1), round(w, 1), round(h, 1))
    return places
