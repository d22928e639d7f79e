"""Benchmarks of Backward Twice: the validation suite against its floor, our renderer against
torchviz, and how drawing time grows with depth.  Run with `bash scripts/bench` (see --help).

Everything is measured in one run, on this machine, and reported as ratios measured side
by side, so a busy machine shifts both sides alike.  Results: a table on stdout,
build/bench.json, and build/bench_depth.png.

- floor: for each notebook, start a kernel exactly as nbval does (nbval.kernel.RunningKernel,
  --nbval-current-env) and `import torch` in it. The sum is the least any notebook
  validation can cost.
- where the rest goes, measured in the same run: the same kernel start plus a first
  torch.optim optimizer (whose first use imports torch._dynamo, about a second), once per
  notebook that builds one; the suite without the two browser tests; nbval alone.
- suite: the full validation (`pytest -n 2 --dist loadscope`: unit tests + nbval over every
  notebook), wall time, and per-notebook time from its JUnit report.
- renderer: ours (backward_twice.walk.snapshot + backward_twice.render.to_dot: the "graph description")
  against torchviz.make_dot(..., show_saved=True).source on the same graphs; best of 15 rounds
  each, the two interleaved, in CPU time; layout to SVG (same bundled Graphviz engine for both) reported apart;
  time per node at chain 400 over chain 100 (linear growth: 1); watch() around a backward against
  the backward alone on a fixed 20k-node graph (watch_graph).
- depth: render time over chain depth, with the default cap (300 nodes) and without.
- zoo: every default picture (draw, draw(modules=), the watch pair, its after_view) of each model of
  tests/model_zoo.py, each model in its own subprocess: per picture its seconds (layout included,
  wall time in that process), its smallest text and its height at 860 px (target: 1 s each).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import re
import statistics
import subprocess
import sys
import time
import warnings
import xml.etree.ElementTree as ET
from functools import partial

from scripts import BUILD, ROOT, notebooks

NOTEBOOKS = notebooks()
SUITE_CMD = [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadscope", "-q", "-p", "no:cacheprovider"]


def say(*a):
    print(*a, flush=True)


# ------------------------------------------------------------------------ floor and suite
FIRST_OPTIMIZER = ("import torch\n"
                   "torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)")
BROWSER_TESTS = ["tests/test_lab.py", "tests/test_site.py"]


def optimizer_notebooks() -> list:
    """Notebooks whose code builds a torch.optim optimizer (its first use imports torch._dynamo)."""
    import nbformat

    return [p.name for p in NOTEBOOKS if re.search(r"\boptim\.[A-Z]", "\n".join(
        c.source for c in nbformat.read(p, as_version=4).cells if c.cell_type == "code"))]


def kernel_floor(n: int, code: str = "import torch") -> dict:
    """Start a kernel the way nbval does and import torch in it, n times (one per notebook)."""
    from nbval.kernel import CURRENT_ENV_KERNEL_NAME, RunningKernel

    starts, stops = [], []
    for _ in range(n):
        t0 = time.perf_counter()
        k = RunningKernel(CURRENT_ENV_KERNEL_NAME, cwd=str(ROOT / "notebooks"))
        msg = k.execute_cell_input(code)
        k.await_reply(msg, timeout=300)
        k.await_idle(msg, 300)
        t1 = time.perf_counter()
        k.stop()
        starts.append(t1 - t0)
        stops.append(time.perf_counter() - t1)
    return {"runs": n, "each_s": starts, "total_s": sum(starts), "median_s": statistics.median(starts),
            "shutdown_each_s": stops}


def run_suite(extra=(), label="suite") -> dict:
    """The full validation, as scripts/test runs it; wall time, outcome, per-notebook times."""
    BUILD.mkdir(exist_ok=True)
    junit = BUILD / f"bench-{label}.xml"
    cmd = [*SUITE_CMD, f"--junitxml={junit}", *extra]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    tail = [ln for ln in done.stdout.strip().splitlines() if ln.strip()][-1:] or [""]
    per_file, per_test_file, unit_total, fails = {}, {}, 0.0, []
    if junit.exists():
        for case in ET.parse(junit).getroot().iter("testcase"):
            cls, t = case.get("classname", ""), float(case.get("time", 0))
            if cls.startswith("notebooks."):
                key = cls[len("notebooks."):]
                per_file[key] = per_file.get(key, 0.0) + t
            else:
                unit_total += t
                key = ".".join(cls.split(".")[:2]).replace(".", "/") + ".py"
                per_test_file[key] = per_test_file.get(key, 0.0) + t
            if case.find("failure") is not None or case.find("error") is not None:
                fails.append(f"{cls}::{case.get('name')}")
    return {"cmd": " ".join(cmd[1:]), "wall_s": wall, "exit": done.returncode, "summary": tail[0],
            "unit_tests_s": unit_total, "notebook_s": dict(sorted(per_file.items(), key=lambda kv: -kv[1])),
            "test_file_s": dict(sorted(per_test_file.items(), key=lambda kv: -kv[1])),
            "failures": fails[:20]}


# ------------------------------------------------------------------------ renderer
def _best(fn, repeat=7, min_time=0.2):
    """Best time of `repeat` rounds; each round runs fn enough times to last ~min_time/repeat."""
    fn()  # warm-up (caches, first-walk metadata)
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-6)
    loops = max(1, int(min_time / repeat / one))
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(loops):
            fn()
        best = min(best, (time.perf_counter() - t0) / loops)
    return best


def _best_pair(fn, other, repeat=15, min_time=0.4, clock=time.process_time):
    """(best time of fn, best time of other), their rounds interleaved (fn, other, fn, ...): on a
    shared machine a busy moment slows both sides alike, and the best round of each is the least
    disturbed. Each round runs its function enough times to last ~min_time / repeat / 2.
    clock: CPU time of this process by default (both sides are single-threaded Python: on a machine
    shared with other work, wall time swung the same ratio from 1.0 to 2.5)."""
    fn(), other()       # warm-up
    loops = []
    for f in (fn, other):
        t0 = time.perf_counter()
        f()
        loops.append(max(1, int(min_time / repeat / 2 / max(time.perf_counter() - t0, 1e-6))))
    best = [float("inf"), float("inf")]
    for _ in range(repeat):
        for k, f in enumerate((fn, other)):
            t0 = clock()
            for _ in range(loops[k]):
                f()
            best[k] = min(best[k], (clock() - t0) / loops[k])
    return best[0], best[1]


def build_cases():
    import torch

    def chain(n):
        def make():
            x = torch.randn(4, 8, requires_grad=True)
            w = torch.randn(8, 8, requires_grad=True)
            y = x
            for _ in range(n):
                y = torch.tanh(y @ w)
            return y.sum(), {"x": x, "w": w}
        return make

    def cnn():
        torch.manual_seed(0)
        net = torch.nn.Sequential(
            torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(4, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Flatten(), torch.nn.Linear(8 * 7 * 7, 10))
        x = torch.randn(2, 1, 28, 28)
        loss = torch.nn.functional.cross_entropy(net(x), torch.tensor([1, 2]))
        return loss, dict(net.named_parameters())

    def rnn(steps=20):
        def make():
            torch.manual_seed(0)
            cell = torch.nn.RNNCell(8, 16)
            h = torch.zeros(3, 16)
            xs = torch.randn(steps, 3, 8)
            for t in range(steps):
                h = cell(xs[t], h)
            return h.pow(2).mean(), dict(cell.named_parameters())
        return make

    return [("chain 10 (tanh(y@w))", chain(10)), ("chain 100", chain(100)), ("chain 400", chain(400)),
            ("small CNN (2 conv, 1 fc)", cnn), ("RNN cell, 20 steps unrolled", rnn(20))]


def _ours(root, names, max_nodes=20_000):
    from backward_twice.render import to_dot
    from backward_twice.walk import snapshot

    return to_dot(snapshot(root, names=names, max_nodes=max_nodes))


def _torchviz(root, names):
    from torchviz import make_dot

    return make_dot(root, params=names, show_saved=True).source


LAYOUT_TIMEOUT_S = 60
_LAYOUT_CODE = """
import sys, time, os
src = sys.stdin.read()
os.dup2(os.open(os.devnull, os.O_WRONLY), 2)   # the bundled fontconfig warns on fd 2
import pygraphviz
g = pygraphviz.AGraph(string=src)
t0 = time.perf_counter()
g.draw(format="svg", prog="dot")
print(time.perf_counter() - t0)
"""


def _layout_ms(source, timeout=LAYOUT_TIMEOUT_S, repeat=1):
    """Layout + SVG time with the bundled Graphviz engine, in a subprocess with a time limit
    (a big graph can take minutes); None when it did not finish in time. repeat: the best of
    that many runs (for differences of a few tens of ms on a shared machine)."""
    best = None
    for _ in range(repeat):
        try:
            done = subprocess.run([sys.executable, "-c", _LAYOUT_CODE], input=source, text=True,
                                  capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        if done.returncode != 0:
            return None
        ms = float(done.stdout.strip()) * 1e3
        best = ms if best is None else min(best, ms)
    return best


def what_each_shows(root, names):
    """(ours, theirs): what each picture of the same graph contains, counted.

    ours: ops, leaves, saved (saved tensors, each with slot, shape, dtype, bytes, held/freed),
    saved_bytes, values (non-tensor saved values), named (named non-leaf tensors).
    theirs: nodes, saved (saved-tensor nodes, with name and shape only), leaves."""
    from backward_twice.snapshot import Role
    from backward_twice.walk import snapshot

    snap = snapshot(root, names=names, max_nodes=20_000)
    saved = list(snap.saved_tensors())
    ours = {"ops": len(snap.ops), "leaves": snap.leaf_count, "saved": len(saved),
            "saved_bytes": sum(s.nbytes or 0 for _, s in saved),
            "values": sum(1 for op in snap.ops.values() for s in op.saved if not s.is_tensor),
            "named": sum(t.role is not Role.LEAF for t in snap.tensors.values())}
    src = _torchviz(root, names)
    theirs = {"nodes": len(re.findall(r"^\t\S+ \[label=", src, re.M)),
              "saved": len(re.findall(r"fillcolor=orange", src)),
              "leaves": len(re.findall(r"fillcolor=lightblue", src))}
    return ours, theirs


def renderer_bench(repeat=7) -> dict:
    import torch

    warnings.simplefilter("ignore")   # torchviz imports distutils (deprecated)
    out = []
    for label, make in build_cases():
        root, names = make()
        ours_t, tv_t = _best_pair(partial(_ours, root, names), partial(_torchviz, root, names))
        ours_lay, tv_lay = _layout_ms(_ours(root, names)), _layout_ms(_torchviz(root, names))
        shows_ours, shows_tv = what_each_shows(root, names)
        out.append({"case": label, "ours_ms": ours_t * 1e3, "torchviz_ms": tv_t * 1e3,
                    "ratio": ours_t / tv_t, "ours_layout_ms": ours_lay,
                    "torchviz_layout_ms": tv_lay, "ours_shows": shows_ours, "torchviz_shows": shows_tv})
        say(f"  {label:30} ours {ours_t * 1e3:8.2f} ms  torchviz {tv_t * 1e3:8.2f} ms  "
            f"ratio {ours_t / tv_t:4.2f}")

    # After backward: the saved tensors are freed. torchviz reads them and raises; we mark them.
    root, names = build_cases()[1][1]()
    from backward_twice.walk import snapshot

    before = snapshot(root, names=names, max_nodes=20_000)
    root.backward()
    t = _best(lambda: _ours(root, names), repeat)
    after = snapshot(root, names=names, max_nodes=20_000)
    try:
        _torchviz(root, names)
        tv = "drew it"
    except Exception as err:   # we report whatever it raises
        tv = f"{type(err).__name__}: {str(err).splitlines()[0][:90]}"
    special = [{"case": "chain 100, after backward()", "ours_ms": t * 1e3,
                "ours": f"{after.count_by_state()['freed']} saved tensors marked freed "
                        f"({after.bytes_by_state()['freed']:,} B, sizes from the walk before: "
                        f"{before.bytes_by_state()['held']:,} B held then)",
                "torchviz": tv}]

    # Deep chains: torchviz recurses once per node (default recursion limit 1000).
    for depth in (1000, 5000):
        x = torch.ones(2, requires_grad=True)
        y = x
        for _ in range(depth):
            y = y * 1.5
        t = _best(partial(_ours, y, {"x": x}, 300), 3)
        t_full = _best(partial(_ours, y, {"x": x}, 20_000), 3)
        try:
            _torchviz(y, {"x": x})
            tv = "drew it"
        except RecursionError as err:
            tv = f"RecursionError: {err}"
        except Exception as err:
            tv = f"{type(err).__name__}: {str(err)[:80]}"
        special.append({"case": f"chain of {depth:,} muls", "ours_ms": t * 1e3, "ours_uncapped_ms": t_full * 1e3,
                        "ours": "draws 300 nodes + 'N more nodes not drawn' (default cap); "
                                f"uncapped description {t_full * 1e3:.0f} ms", "torchviz": tv})
    return {"cases": out, "special": special, "growth": per_node_growth(out)}


def per_node_growth(cases: list[dict], small: str = "chain 100", large: str = "chain 400") -> float | None:
    """Our time per node at `large` over our time per node at `small` (1.0: the description grows
    linearly with the graph; target <= 1.2). Nodes: ops + leaves drawn (what_each_shows)."""
    by = {c["case"]: c for c in cases}
    if small not in by or large not in by:
        return None

    def per_node(c):
        return c["ours_ms"] / (c["ours_shows"]["ops"] + c["ours_shows"]["leaves"])
    return per_node(by[large]) / per_node(by[small])


# The watch() graph: fixed sizes, since the ratio depends on them (the bigger the tensors, the more
# of the time is backward's arithmetic). tanh(h @ w) x 9,990 on a (16, 32) batch: 19,983 nodes (under
# walk.COUNT_LIMIT, so every node is hooked), a plain backward of about 0.2 s on the 2-core machine.
WATCH_STEPS, WATCH_BATCH, WATCH_WIDTH = 9_990, 16, 32


def watch_graph():
    import torch

    torch.manual_seed(0)
    x = torch.randn(WATCH_BATCH, WATCH_WIDTH, requires_grad=True)
    w = torch.randn(WATCH_WIDTH, WATCH_WIDTH, requires_grad=True)
    y = x
    for _ in range(WATCH_STEPS):
        y = torch.tanh(y @ w)
    return y.sum(), {"x": x, "w": w}


def watch_bench(repeat=3) -> dict:
    """watch(...) around a backward call against the same backward alone, on watch_graph() (each
    run on a fresh graph, built untimed), alternating, best of `repeat` each: the with-block, that is
    the two snapshots, the node hooks and the ran marks. What showing the pair makes first (its text
    form, its DOT with the box sizes measured by a layout) is timed apart (`shown_ms`)."""
    import gc

    from backward_twice.graph import watch

    plain, watched, shown = [], [], []
    for _ in range(repeat):
        root, _ = watch_graph()
        gc.collect()
        t0 = time.perf_counter()
        root.backward()
        plain.append(time.perf_counter() - t0)
        del root
        root, names = watch_graph()
        gc.collect()
        t0 = time.perf_counter()
        with watch(root, names=names) as w:
            root.backward()
        watched.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        _ = w.picture.text, w.picture.dot      # what showing it makes first (its layout to SVG apart)
        shown.append(time.perf_counter() - t0)
        nodes = w.after.total_nodes
        del root, names, w
    return {"nodes": nodes, "sizes": f"({WATCH_BATCH}, {WATCH_WIDTH}) @ ({WATCH_WIDTH}, {WATCH_WIDTH})",
            "backward_ms": min(plain) * 1e3, "watch_ms": min(watched) * 1e3, "shown_ms": min(shown) * 1e3,
            "ratio": min(watched) / min(plain)}


# ------------------------------------------------------------------------ layout (issue 12)
def layout_cases():
    """The graphs of issue 12's layout table, plus a weight-tied language model (embedding and
    output layer share one matrix): (label, make() -> (root, names)) with the default cap."""
    import torch
    from torch import nn

    def transformer():
        torch.manual_seed(0)
        enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True),
                                    2, enable_nested_tensor=False)
        return enc(torch.randn(2, 5, 64)).pow(2).mean(), dict(enc.named_parameters())

    def convnet():
        torch.manual_seed(0)
        mods = [nn.Conv2d(1, 4, 3, padding=1)]
        for _ in range(50):
            mods += [nn.Conv2d(4, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU()]
        net = nn.Sequential(*mods)
        return net(torch.randn(2, 1, 8, 8)).mean(), dict(net.named_parameters())

    def chain(n):
        def make():
            torch.manual_seed(0)
            x, w = torch.randn(4, 8, requires_grad=True), torch.randn(8, 8, requires_grad=True)
            y = x
            for _ in range(n):
                y = torch.tanh(y @ w)
            return y.sum(), {"x": x, "w": w}
        return make

    class TiedLM(nn.Module):
        def __init__(self, vocab=50, d=32):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.body = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, 4, 64, dropout=0.0, batch_first=True),
                                              2, enable_nested_tensor=False)
            self.out = nn.Linear(d, vocab, bias=False)
            self.out.weight = self.emb.weight          # weight tying: one matrix, two uses

        def forward(self, tok):
            return self.out(self.body(self.emb(tok)))

    def tied():
        torch.manual_seed(0)
        m, tok = TiedLM(), torch.randint(0, 50, (2, 6))
        loss = nn.functional.cross_entropy(m(tok).reshape(-1, 50), tok.reshape(-1))
        return loss, dict(m.named_parameters())

    return [("2-layer TransformerEncoder (d=64)", transformer, 300),
            ("conv net, 50 conv/BN/ReLU blocks", convnet, 300),
            ("RNN cell unrolled 20 steps", _rnn(20), 300),
            ("RNN cell unrolled 50 steps", _rnn(50), 300),
            ("RNN cell unrolled 100 steps", _rnn(100), 300),
            ("chain of 400 tanh(h @ w), uncapped", chain(400), 20_000),
            ("chain of 400 tanh(h @ w)", chain(400), 300),
            ("chain of 5,000 tanh(h @ w)", chain(5000), 300),
            ("weight-tied language model", tied, 300)]


def _rnn(steps):
    def make():
        import torch

        torch.manual_seed(0)
        cell = torch.nn.RNNCell(8, 16)
        h, xs = torch.zeros(3, 16), torch.randn(steps, 3, 8)
        for t in range(steps):
            h = cell(xs[t], h)
        return h.pow(2).mean(), dict(cell.named_parameters())
    return make


BEFORE_TIMEOUT_S = 20


def layout_bench() -> dict:
    """Layout + SVG time (bundled Graphviz, in a subprocess) of each graph of layout_cases():
    before (every use of a shared leaf an edge from its one box, every TBackward0 a box: what
    issue 12 measured), after (far uses drawn as reference boxes, a Linear weight's transpose an
    edge), after with every TBackward0 a box, and torchviz's DOT of the whole graph."""
    from backward_twice.render import far_leaf_uses, folded_transposes, to_dot
    from backward_twice.walk import snapshot

    warnings.simplefilter("ignore")
    rows = []
    for label, make, cap in layout_cases():
        root, names = make()
        snap = snapshot(root, names=names, max_nodes=cap)
        nodes = len(snap.ops) + snap.leaf_count
        after = _layout_ms(to_dot(snap), repeat=5)
        unfolded = _layout_ms(to_dot(snap, fold=False), repeat=5)
        before = _layout_ms(to_dot(snap, refs=False, fold=False), timeout=BEFORE_TIMEOUT_S)
        try:
            tv = _layout_ms(_torchviz(root, names), timeout=BEFORE_TIMEOUT_S)
        except RecursionError:     # torchviz recurses once per node
            tv = "RecursionError"
        refs = len(far_leaf_uses(snap))
        rows.append({"case": label, "nodes": nodes, "capped": snap.truncated, "refs": refs,
                     "before_ms": before, "after_ms": after, "torchviz_ms": tv,
                     "unfolded_ms": unfolded, "folded": len(folded_transposes(snap))})
        say(f"  {label:38} {nodes:4} nodes  before {_ms(before, BEFORE_TIMEOUT_S):>8}  "
            f"after {_ms(after):>6} ms  torchviz {_ms(tv, BEFORE_TIMEOUT_S):>8}")
    return {"rows": rows}


def robust_cases():
    """Issue 18 §4's graphs, drawn the way a learner draws them: (label, make() -> show), where
    make builds the graph (not timed) and show() draws it (timed, with .svg: what the learner
    waits for). Each is laid out by backward_twice.layout (measured cost: in-process, simplified in a
    child process with a time limit, or refused with a reason)."""
    import torch
    from torch import nn

    from backward_twice.graph import draw
    from backward_twice.modules import record_modules

    def attention(steps):
        def make():
            torch.manual_seed(0)
            w = torch.randn(4, 4, requires_grad=True)
            h = torch.randn(1, 4, requires_grad=True)
            states = [h]
            for _ in range(steps):
                H = torch.cat(states)
                a = torch.softmax(h @ H.T, dim=-1)
                h = torch.tanh((a @ H) @ w)
                states.append(h)
            loss = h.sum()
            return lambda: draw(loss, names={"w": w})
        return make

    def dense(layers, concatenated):
        """Every earlier output feeds the next layer: summed (issue 18's "40 layers with dense
        skips", tests/test_scene.py) or concatenated, DenseNet style (h = lin(cat(outs)))."""
        def make():
            torch.manual_seed(0)
            outs = [torch.randn(1, 4)]
            for _ in range(layers):
                if concatenated:
                    outs.append(torch.relu(nn.Linear(4 * len(outs), 4)(torch.cat(outs, dim=1))))
                else:
                    outs.append(torch.relu(nn.Linear(4, 4)(sum(outs))))
            loss = outs[-1].sum()
            return lambda: draw(loss)
        return make

    def checkpointed():
        from torch.utils.checkpoint import checkpoint

        torch.manual_seed(0)
        layers = [nn.Linear(16, 16) for _ in range(3)]
        h = torch.randn(4, 16, requires_grad=True)
        for layer in layers:
            h = checkpoint(lambda t, m=layer: torch.relu(m(t)), h, use_reentrant=False)
        loss = h.sum()
        return lambda: draw(loss)

    def convnet_modules():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                              nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                              nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                              nn.Flatten(), nn.Linear(64, 10))
        with record_modules(model):
            loss = model(torch.randn(2, 3, 16, 16)).logsumexp(1).mean()
        return lambda: draw(loss, modules=model)

    def complex_leaf():
        z = torch.tensor([1 + 2j, 3 - 1j], requires_grad=True)
        loss = (z.abs() ** 2).sum()
        loss.backward()
        y = z * 1
        return lambda: draw(y, names={"z": z})

    def sparse_embedding():
        torch.manual_seed(0)
        emb = nn.Embedding(4, 2, sparse=True)
        loss = emb(torch.tensor([0, 1, 1])).sum()
        loss.backward()
        return lambda: draw(loss, names={"w": emb.weight})

    return [("attention over every earlier state, 10 steps", attention(10)),
            ("attention over every earlier state, 40 steps", attention(40)),
            ("40 layers with dense skips (summed)", dense(40, False)),
            ("dense skips by concatenation, 15 layers", dense(15, True)),
            ("dense skips by concatenation, 20 layers", dense(20, True)),
            ("dense skips by concatenation, 40 layers", dense(40, True)),
            ("3 checkpointed Linear+ReLU (non-reentrant)", checkpointed),
            ("conv net (3 conv/BN/ReLU), modules=", convnet_modules),
            ("complex leaf, after backward", complex_leaf),
            ("nn.Embedding(sparse=True), after backward", sparse_embedding)]


def robust_bench() -> dict:
    """What the learner waits for, through backward_twice.layout (best of 3, in this process): draw()
    and then its .svg, which lays the picture out, and any simpler picture tried when it does not
    read at notebook width (the graph itself is built once, untimed). For each graph of
    layout_cases() and robust_cases(): the picture drawn (its measured cost decides how it is
    laid out), whether a simpler one was drawn, and its smallest text at 860 px."""
    from backward_twice import layout
    from backward_twice.graph import draw
    from backward_twice.picture.layout import refused, smallest_text_px

    warnings.simplefilter("ignore")
    def drawn(make, cap):
        root, names = make()
        return lambda: draw(root, names=names, max_nodes=cap)

    cases = [(label, partial(drawn, make, cap)) for label, make, cap in layout_cases() if cap <= 300]
    rows = []
    for label, make in cases + robust_cases():
        show = make()
        times = []
        for _ in range(3):      # a shared machine: the best of 3
            t0 = time.perf_counter()
            pic = show()
            svg = pic.svg
            times.append(time.perf_counter() - t0)
        ms = min(times) * 1e3
        cost = layout.measure(pic.dot)     # the picture drawn (a simpler one, when one was)
        how = ("refused" if refused(svg) else
               "in-process" if cost.total <= layout.IN_PROCESS_COST else "simplified, child process")
        px = None if refused(svg) else smallest_text_px(svg)
        rows.append({"case": label, "boxes": cost.nodes, "arrows": cost.edges, "cost": cost.total,
                     "how": how, "simpler": pic.simplified, "px": px, "ms": ms})
        say(f"  {label:48} cost {cost.total:6,}  {how:26} simpler #{pic.simplified}  "
            f"{'-' if px is None else f'{px:.1f}':>5} px {ms:7.0f} ms")
    return {"rows": rows, "in_process_cost": layout.IN_PROCESS_COST, "refuse_cost": layout.REFUSE_COST,
            "timeout_s": layout.TIMEOUT_S}


def pair_cases():
    """Related pictures drawn as one set: (label, make() -> [(snapshot, marks)], kind, titles);
    kind 'pair' (side by side, and stacked when too wide, as ComparePicture does) or 'frames'."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    from backward_twice.graph import watch
    from backward_twice.render import Marks
    from backward_twice.stepper import step_through
    from helpers.multitask import CatCarNet, make_images

    def cat_car():
        x, y = make_images(8, seed=0)
        torch.manual_seed(0)
        net = CatCarNet(channels=2, convs=1, fcs=1)
        feats = net.trunk(x[:4])
        loss_cat = F.binary_cross_entropy_with_logits(net.cat(feats).squeeze(1), y[:4, 0])
        loss_car = F.binary_cross_entropy_with_logits(net.car(feats).squeeze(1), y[:4, 1])
        loss_cat.backward(retain_graph=True)
        return loss_cat, loss_car, dict(net.named_parameters()) | {"feats": feats}

    def pair(w):
        return [(w.before, Marks()), (w.after, Marks(ran=w.picture.ran))]

    def nb02():
        loss_cat, loss_car, names = cat_car()
        with watch(loss_cat, loss_car, names=names) as w:
            loss_car.backward()
        return pair(w)

    def nb03():
        x = torch.tensor([[1.0, -0.5, 2.0]])
        W = torch.tensor([[0.2, -0.1], [0.4, 0.3], [-0.3, 0.5]], requires_grad=True)
        a = torch.tensor([1.5, -2.0], requires_grad=True)
        h = (x @ W).tanh()
        loss1, loss2 = (h * a).sum(), (h ** 2).sum()
        loss1.backward(retain_graph=True)
        with watch(loss1, loss2, names={"W": W, "a": a, "h": h}) as w:
            loss2.backward()
        return pair(w)

    def stepper02():
        loss_cat, loss_car, names = cat_car()
        s = step_through(lambda: loss_car.backward(), loss_cat, loss_car, names=names)
        return [(f.snapshot, Marks(highlight=frozenset({f.node_id} if f.node_id else ()))) for f in s.frames]

    def transformer():
        torch.manual_seed(0)
        enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True),
                                    2, enable_nested_tensor=False)
        loss = enc(torch.randn(2, 5, 64)).pow(2).mean()
        with watch(loss, names=dict(enc.named_parameters())) as w:
            loss.backward()
        return pair(w)

    return [("02 cat/car pair, after loss_car.backward()", nb02, "pair"),
            ("03 pair, after loss2.backward()", nb03, "pair"),
            ("02 stepper over loss_car.backward()", stepper02, "frames"),
            ("2-layer TransformerEncoder pair", transformer, "pair")]


def pair_bench(repeat=7) -> dict:
    """The cost of one size per node across related pictures (in-process, render.engine()):
    every picture of the set laid out to SVG with its own sizes, vs the same plus the one
    measuring layout of every box alone (render.box_sizes) and the pictures with shared sizes.
    Also whether the nodes then stay in place (the largest move of a node between pictures)."""
    from backward_twice import render

    def svgs(pictures, kind, sizes):
        if kind == "frames":
            return [render.svg_from_dot(render.to_dot(s, title=f"frame {i}", marks=m, sizes=sizes))
                    for i, (s, m) in enumerate(pictures)]
        (a, _), (b, m) = pictures
        out = [render.svg_from_dot(render.pair_dot(a, b, marks=m, sizes=sizes))]
        return out + [render.svg_from_dot(d) for d in render.stacked_dots(a, b, marks=m, sizes=sizes)]

    def shared(pictures, kind):
        if kind == "pair":
            (a, _), (b, m) = pictures
            return render.pair_sizes(a, b, marks=m)
        return render.box_sizes(pictures, [f"frame {i}" for i in range(len(pictures))])

    warnings.simplefilter("ignore")
    rows = []
    for label, make, kind in pair_cases():
        pictures = make()
        own = _best(partial(svgs, pictures, kind, None), repeat, 0.5)
        measure = _best(partial(shared, pictures, kind), repeat, 0.5)
        sizes = shared(pictures, kind)
        alike = _best(partial(svgs, pictures, kind, sizes), repeat, 0.5)
        nodes = len(pictures[0][0].ops) + len(pictures[0][0].tensors)
        rows.append({"case": label, "pictures": len(pictures) + (2 if kind == "pair" else 0), "nodes": nodes,
                     "own_ms": own * 1e3, "measure_ms": measure * 1e3, "alike_ms": alike * 1e3,
                     "ratio": (measure + alike) / own})
        say(f"  {label:44} own sizes {own * 1e3:7.0f} ms   shared: measure {measure * 1e3:5.0f} ms "
            f"+ layouts {alike * 1e3:7.0f} ms   ratio {(measure + alike) / own:4.2f}")
    return {"rows": rows, "engine": render.engine()}


# ------------------------------------------------------------------------ depth scaling
def depth_bench(plot: pathlib.Path) -> dict:
    import torch

    warnings.simplefilter("ignore")
    depths = [10, 30, 100, 300, 1000, 3000, 10_000, 30_000]
    rows = []
    for d in depths:
        x = torch.ones(2, requires_grad=True)
        y = x
        for _ in range(d):
            y = y * 1.5
        capped = _best(partial(_ours, y, {}, 300), 3, 0.1)
        full = _best(partial(_ours, y, {}, 20_000), 3, 0.1) if d <= 20_000 else None
        layout = _layout_ms(_ours(y, {}, 300))
        try:
            tv = _best(partial(_torchviz, y, {"x": x}), 3, 0.1)
        except RecursionError:
            tv = None
        rows.append({"depth": d, "capped_ms": capped * 1e3, "uncapped_ms": None if full is None else full * 1e3,
                     "capped_layout_ms": layout, "torchviz_ms": None if tv is None else tv * 1e3})
        del y, x
    _plot_depth(rows, plot)
    return {"rows": rows, "plot": str(plot.relative_to(ROOT))}


def _plot_depth(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.5), dpi=110)
    d = [r["depth"] for r in rows]
    ax.plot(d, [r["capped_ms"] for r in rows], "o-", color="#1e6b30",
            label="ours, default cap (300 nodes drawn, rest counted)")
    ax.plot(d, [r["capped_ms"] + (r["capped_layout_ms"] or float("nan")) for r in rows], "o:",
            color="#1e6b30", alpha=0.6, label="ours, default cap, + layout to SVG (Graphviz)")
    unc = [(r["depth"], r["uncapped_ms"]) for r in rows if r["uncapped_ms"] is not None]
    ax.plot([u[0] for u in unc], [u[1] for u in unc], "s--", color="#4a90d9",
            label="ours, no cap (description only)")
    tv = [(r["depth"], r["torchviz_ms"]) for r in rows if r["torchviz_ms"] is not None]
    ax.plot([t[0] for t in tv], [t[1] for t in tv], "^-", color="#c0392b", label="torchviz make_dot(show_saved)")
    failed = [r["depth"] for r in rows if r["torchviz_ms"] is None]
    if failed:
        ymax = max(r["capped_ms"] for r in rows)
        ax.plot(failed, [ymax] * len(failed), "x", color="#c0392b", markersize=10, mew=2,
                label="torchviz: RecursionError")
    ax.axvline(300, color="#999999", lw=0.8, ls=":")
    ax.annotate("default cap: 300 nodes drawn", (300, ax.get_ylim()[1]), xytext=(4, -12),
                textcoords="offset points", fontsize=8, color="#666666")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("chain depth (ops)")
    ax.set_ylabel("time (ms), best of 3")
    ax.set_title("Drawing a chain: the cap keeps the picture (and its cost) bounded", fontsize=11)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right", framealpha=0.95)
    fig.tight_layout()
    path.parent.mkdir(exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


# ------------------------------------------------------------------------ repeatability
def repeat_suite(n: int) -> dict:
    """Run the full suite n times under xdist and once serially; outputs must not change."""
    def digest():
        import hashlib

        return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()[:16] for p in NOTEBOOKS}

    before = digest()
    runs = []
    for i in range(n):
        r = run_suite(label=f"repeat{i + 1}")
        runs.append({"run": i + 1, "mode": "xdist -n 2 --dist loadscope", "exit": r["exit"],
                     "wall_s": r["wall_s"], "summary": r["summary"], "failures": r["failures"]})
        say(f"  run {i + 1} (xdist): exit {r['exit']}  {r['summary']}  {r['wall_s']:.1f} s")
    serial_cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"]
    t0 = time.perf_counter()
    done = subprocess.run(serial_cmd, cwd=ROOT, capture_output=True, text=True)
    tail = [ln for ln in done.stdout.strip().splitlines() if ln.strip()][-1:] or [""]
    runs.append({"run": n + 1, "mode": "serial (no xdist)", "exit": done.returncode,
                 "wall_s": time.perf_counter() - t0, "summary": tail[0]})
    say(f"  run {n + 1} (serial): exit {done.returncode}  {tail[0]}  {runs[-1]['wall_s']:.1f} s")
    unchanged = digest() == before
    return {"runs": runs, "all_passed": all(r["exit"] == 0 for r in runs),
            "committed_notebooks_unchanged": unchanged}


# ------------------------------------------------------------------------ zoo
ZOO_HANG_GUARD_S = 600      # a hang guard for one model's process, not a budget
ZOO_TARGET_S = 1.0          # issue 28 §4: every picture of the zoo, layout included


def zoo_bench(models=None) -> dict:
    """Each model of tests/model_zoo.py in its own subprocess (`python tests/model_zoo.py NAME`),
    one row per default picture: seconds (what the learner waits for, layout included), smallest
    text px and height px at 860 px, nodes, which simpler picture was drawn (0: as first drawn)."""
    from tests.model_zoo import ZOO

    rows = []
    for name in models or ZOO:
        t0 = time.perf_counter()
        try:
            done = subprocess.run([sys.executable, str(ROOT / "tests" / "model_zoo.py"), name], capture_output=True,
                                  text=True, timeout=ZOO_HANG_GUARD_S, cwd=ROOT,
                                  env={**os.environ, "PYTHONPATH": str(ROOT)})
        except subprocess.TimeoutExpired:
            rows.append({"model": name, "picture": "*", "error": f"no answer in {ZOO_HANG_GUARD_S} s"})
            continue
        got = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        if done.returncode != 0:
            rows.append({"model": name, "picture": "*", "error": done.stderr.strip().splitlines()[-1:]})
        for r in got:
            rows.append({k: r.get(k) for k in ("model", "picture", "nodes", "seconds", "cpu_s", "backward_s",
                                               "text_px", "height_px", "simplified", "refused")})
        say(f"  {name:12} " + "  ".join(f"{r['picture']} {r['seconds']:.2f} s" for r in got)
            + f"  (process {time.perf_counter() - t0:.1f} s)")
    timed = [r for r in rows if "seconds" in r]
    return {"rows": rows, "target_s": ZOO_TARGET_S,
            "over": [f"{r['model']} {r['picture']}" for r in timed if r["seconds"] > ZOO_TARGET_S],
            "over_cpu": [f"{r['model']} {r['picture']}" for r in timed if (r["cpu_s"] or 0) > ZOO_TARGET_S],
            "slowest_s": max((r["seconds"] for r in timed), default=None)}


# ------------------------------------------------------------------------ report
def _ms(v, limit=LAYOUT_TIMEOUT_S):
    if isinstance(v, str):
        return v
    return f"> {limit * 1000:,}" if v is None else f"{v:,.0f}"


def table(rows, headers):
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(headers)]

    def line(cells):
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"

    return "\n".join([line(headers), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)])


def floor_with_optim(res) -> float:
    """The floor plus, for each notebook that builds a torch.optim optimizer, the extra time of
    its first use (it imports torch._dynamo): the least those notebooks can cost."""
    f, o = res["floor"], res["optim_floor"]
    return f["total_s"] + max(0.0, o["median_s"] - f["median_s"]) * len(o["notebooks"])


def report(res) -> str:
    parts = []
    if "floor" in res and "suite" in res:
        f, s = res["floor"], res["suite"]
        parts.append(f"Suite vs floor ({len(NOTEBOOKS)} notebook(s), {os.cpu_count()} cores)")
        rows = [["floor: kernel start + import torch, once per notebook", f"{f['total_s']:.1f} s",
                 f"{f['runs']} x {f['median_s']:.2f} s (median)"],
                ["full validation: unit tests + nbval, -n 2 --dist loadscope", f"{s['wall_s']:.1f} s",
                 f"exit {s['exit']}: {s['summary']}"],
                ["ratio suite / floor (reported; its 1.5 x target is withdrawn, issue 12)",
                 f"{s['wall_s'] / f['total_s']:.2f} x", ""]]
        if "optim_floor" in res:
            o = res["optim_floor"]
            extra = (o["median_s"] - f["median_s"]) * len(o["notebooks"])
            rows += [[f"+ first torch.optim optimizer (imports torch._dynamo), in {len(o['notebooks'])} notebooks",
                      f"+{extra:.1f} s", f"{o['median_s']:.2f} s vs {f['median_s']:.2f} s a kernel (median)"],
                     ["ratio suite / (floor + that)", f"{s['wall_s'] / (f['total_s'] + extra):.2f} x", ""]]
        if "no_browser" in res:
            b = res["no_browser"]
            rows += [["without the browser tests (test_lab, test_site), same options", f"{b['wall_s']:.1f} s",
                      f"exit {b['exit']}: {b['summary']}"],
                     ["ratio without browser tests / floor", f"{b['wall_s'] / f['total_s']:.2f} x", ""]]
        if "nbval_only" in res:
            n = res["nbval_only"]
            rows += [["nbval only (pytest ... notebooks), same options", f"{n['wall_s']:.1f} s",
                      f"exit {n['exit']}: {n['summary']}"],
                     ["ratio nbval only / floor", f"{n['wall_s'] / f['total_s']:.2f} x", ""]]
            if "optim_floor" in res:
                rows.append(["ratio nbval only / (floor + first torch.optim import) (target <= 1.5)",
                             f"{n['wall_s'] / floor_with_optim(res):.2f} x",
                             f"floor incl. optimizer imports: {floor_with_optim(res):.1f} s"])
        if "unit_only" in res:
            u = res["unit_only"]
            rows += [["unit tests without the browser tests (pytest tests --ignore ...)",
                      f"{u['wall_s']:.1f} s", f"exit {u['exit']}: {u['summary']}"]]
        parts.append(table(rows, ["what", "time", "detail"]))
        nb = [[k, f"{v:.1f} s"] for k, v in s["notebook_s"].items()]
        nb.append(["all notebooks", f"{sum(s['notebook_s'].values()):.1f} s"])
        parts.append(table(nb, ["notebook (its cells' times summed, incl. kernel start)", "time"]))
        tf = [[k, f"{v:.1f} s"] for k, v in list(s["test_file_s"].items())[:10]]
        tf.append(["all unit tests", f"{s['unit_tests_s']:.1f} s"])
        parts.append(table(tf, ["slowest unit-test files (times summed)", "time"]))
    if "renderer" in res:
        r = res["renderer"]
        rows = [[c["case"], f"{c['ours_ms']:.2f}", f"{c['torchviz_ms']:.2f}", f"{c['ratio']:.2f} x",
                 f"{_ms(c['ours_layout_ms'])} / {_ms(c['torchviz_layout_ms'])}",
                 f"{c['ours_shows']['ops']} ops, {c['ours_shows']['leaves']} leaves, "
                 f"{c['ours_shows']['saved']} saved ({c['ours_shows']['saved_bytes']:,} B), "
                 f"{c['ours_shows']['values']} values",
                 f"{c['torchviz_shows']['nodes']} nodes, "
                 f"{c['torchviz_shows']['saved']} saved (no bytes, no state)"]
                for c in r["cases"]]
        parts.append("Renderer: graph description, ours (snapshot + to_dot) vs torchviz make_dot(show_saved=True), "
                     "best of 15 interleaved rounds, CPU time")
        parts.append(table(rows, ["graph", "ours ms", "torchviz ms", "ratio", "layout ms ours/tv",
                                  "ours shows", "torchviz shows"]))
        rows = [[c["case"], f"{c['ours_ms']:.1f} ms", c["ours"], c["torchviz"]] for c in r["special"]]
        parts.append(table(rows, ["case", "ours", "ours shows", "torchviz"]))
        if r.get("growth") is not None:
            parts.append(f"Time per node, chain 400 / chain 100: {r['growth']:.2f} x (target <= 1.2: linear)")
    if "watch" in res:
        w = res["watch"]
        parts.append(f"watch() around a backward, {w['nodes']:,} nodes, tensors {w['sizes']}: backward "
                     f"{w['backward_ms']:.0f} ms, watch {w['watch_ms']:.0f} ms, ratio {w['ratio']:.2f} x "
                     f"(target <= 2); the pair's DOT when shown: {w['shown_ms']:.0f} ms")
    if "layout" in res:
        rows = [[r["case"], f"{r['nodes']}{' (capped)' if r['capped'] else ''}",
                 _ms(r["before_ms"], BEFORE_TIMEOUT_S), _ms(r["after_ms"]),
                 (f"> {BEFORE_TIMEOUT_S * 1000 / r['after_ms']:.0f} x" if r["before_ms"] is None
                  else f"{r['before_ms'] / r['after_ms']:.1f} x") if r["after_ms"] else "-",
                 str(r["refs"]), _ms(r["torchviz_ms"], BEFORE_TIMEOUT_S)]
                for r in res["layout"]["rows"]]
        parts.append("Layout + SVG (bundled Graphviz, ms): before = a shared leaf's every use an edge from its "
                     "one box; after = far uses drawn as reference boxes; torchviz = its DOT of the whole graph")
        parts.append(table(rows, ["graph", "nodes drawn", "before", "after", "speed-up",
                                  "reference boxes", "torchviz"]))
        rows = [[r["case"], str(r["folded"]), _ms(r["unfolded_ms"]), _ms(r["after_ms"])]
                for r in res["layout"]["rows"] if "unfolded_ms" in r]
        parts.append("Folding a Linear weight's TBackward0 into a '.T' edge (layout + SVG, ms, best of 5)")
        parts.append(table(rows, ["graph", "TBackward0 folded", "every TBackward0 a box", "folded (after)"]))
    if "robust" in res:
        r = res["robust"]
        rows = [[x["case"], str(x["boxes"]), str(x["arrows"]), f"{x['cost']:,}", x["how"],
                 str(x.get("simpler", "")), "-" if x.get("px") is None else f"{x['px']:.1f}", f"{x['ms']:.0f}"]
                for x in r["rows"]]
        parts.append(f"draw() + .svg through backward_twice.layout, what the learner waits for, best of 3 (ms): "
                     f"cost = arrows + ranks they skip, of the picture drawn; <= {r['in_process_cost']:,} laid "
                     f"out as drawn, <= {r['refuse_cost']:,} simplified in a child process killed after "
                     f"{r['timeout_s']:g} s, beyond: refused, saying why; simpler: which fewer-nodes picture "
                     "was drawn to read at notebook width (0: the first); px: smallest text at 860 px")
        parts.append(table(rows, ["graph", "boxes", "arrows", "cost", "laid out", "simpler", "px", "ms"]))
    if "pairs" in res:
        p = res["pairs"]
        rows = [[r["case"], str(r["pictures"]), str(r["nodes"]), f"{r['own_ms']:.0f}",
                 f"{r['measure_ms']:.0f}", f"{r['alike_ms']:.0f}", f"{r['ratio']:.2f} x"] for r in p["rows"]]
        parts.append(f"Same size, same place ({p['engine']}, in-process, ms): every picture of a set laid out "
                     "with its own box sizes, vs measuring every box once (box_sizes) + the pictures "
                     "with shared sizes")
        parts.append(table(rows, ["pictures of one set", "layouts", "nodes", "own sizes", "measure",
                                  "shared sizes", "ratio"]))
    if "depth" in res:
        rows = [[f"{d['depth']:,}", f"{d['capped_ms']:.2f}", _ms(d['capped_layout_ms']),
                 "-" if d["uncapped_ms"] is None else f"{d['uncapped_ms']:.1f}",
                 "RecursionError" if d["torchviz_ms"] is None else f"{d['torchviz_ms']:.1f}"]
                for d in res["depth"]["rows"]]
        parts.append(f"Depth scaling (plot: {res['depth']['plot']})")
        parts.append(table(rows, ["depth", "ours capped ms", "+ layout ms", "ours uncapped ms", "torchviz ms"]))
    if "zoo" in res:
        z = res["zoo"]
        rows = [[r["model"], r["picture"], str(r.get("nodes", "")), "" if r.get("text_px") is None else
                 f"{r['text_px']:.1f}", str(r.get("height_px", "")), str(r.get("simplified", "")),
                 r["error"] if "error" in r else f"{r['seconds']:.2f}",
                 "" if r.get("cpu_s") is None else f"{r['cpu_s']:.2f}",
                 "" if r.get("backward_s") is None else f"{r['backward_s']:.2f}"] for r in z["rows"]]
        parts.append(f"Zoo (tests/model_zoo.py, one process a model): every default picture, seconds with layout "
                     f"(target <= {z['target_s']:g} s): wall, and CPU (the process and its layout processes); "
                     "the pair's include the model's own backward under watch (backward s); px: smallest text at "
                     "860 px; simpler: which simpler picture was drawn (0: as first drawn)")
        parts.append(table(rows, ["model", "picture", "nodes", "px", "height px", "simpler", "seconds", "CPU s",
                                  "backward s"]))
        parts.append(f"Over {z['target_s']:g} s: {len(z['over'])} of {len(z['rows'])} pictures in wall time"
                     + (f" ({', '.join(z['over'])})" if z["over"] else "")
                     + f", {len(z['over_cpu'])} in CPU time" + (f" ({', '.join(z['over_cpu'])})" if z["over_cpu"] else ""))
    if "repeat" in res:
        rp = res["repeat"]
        rows = [[r["run"], r["mode"], r["exit"], f"{r['wall_s']:.1f} s", r["summary"]] for r in rp["runs"]]
        parts.append(f"Repeatability: all passed: {rp['all_passed']}; committed notebooks unchanged: "
                     f"{rp['committed_notebooks_unchanged']}")
        parts.append(table(rows, ["run", "mode", "exit", "wall", "summary"]))
    return "\n\n".join(parts)


def ratio_problems(res) -> list:
    """The renderer's targets (issue 28 §4), with a 50 % margin: the description <= 1.0 x torchviz on
    every bench graph, its time per node at chain 400 <= 1.2 x that at chain 100, and watch() <= 2 x
    a plain backward on the bench's 20k-node graph."""
    problems = []
    if "renderer" in res:
        for c in res["renderer"]["cases"]:
            if c["ratio"] > 1.5:
                problems.append(f"renderer {c['case']}: {c['ratio']:.2f} x torchviz (> 1.5, target 1.0)")
        growth = res["renderer"].get("growth")
        if growth is not None and growth > 1.2 * 1.5:
            problems.append(f"renderer: time per node grows {growth:.2f} x from chain 100 to 400 (target 1.2)")
    if "zoo" in res:
        problems += [f"zoo {r['model']}: {r['error']}" for r in res["zoo"]["rows"] if "error" in r]
        problems += [f"zoo {r['model']} {r['picture']}: {r['seconds']:.2f} s (target {ZOO_TARGET_S:g} s)"
                     for r in res["zoo"]["rows"] if r.get("seconds", 0) > ZOO_TARGET_S * 1.5]
    if "watch" in res and res["watch"]["ratio"] > 2 * 1.5:
        problems.append(f"watch: {res['watch']['ratio']:.2f} x a plain backward (target 2)")
    return problems


def check(res) -> list:
    """Generous assertions on the ratios we control (targets: nbval <= 1.5 x floor, renderer
    <= 1.0 x torchviz). The full suite's ratio is reported, not asserted: it includes the
    browser tests (JupyterLab and the site in Chromium), whose cost does not scale with notebooks."""
    problems = []
    if "recorder" in res:
        from scripts import bench_recorder

        problems += bench_recorder.check(res["recorder"])
    if "suite" in res:
        if res["suite"]["exit"] != 0:
            problems.append(f"the suite failed: {res['suite']['summary']}")
        ratio = res["suite"]["wall_s"] / res["floor"]["total_s"]
        if ratio > 1.5:
            say(f"note: full suite / floor = {ratio:.2f} x (target 1.5; not asserted, see the table)")
    if "nbval_only" in res:
        ratio = res["nbval_only"]["wall_s"] / res["floor"]["total_s"]
        if res["nbval_only"]["exit"] != 0 or ratio > 2.25:
            problems.append(f"nbval only / floor = {ratio:.2f} (> 2.25 = 1.5 x target), exit "
                            f"{res['nbval_only']['exit']}")
    if "nbval_only" in res and "optim_floor" in res:
        ratio = res["nbval_only"]["wall_s"] / floor_with_optim(res)
        if ratio > 1.5 * 1.2:
            problems.append(f"nbval only / (floor + optimizer imports) = {ratio:.2f} (target 1.5, margin 20 %)")
    if "layout" in res:
        for r in res["layout"]["rows"]:
            # issue 12's targets (300 ms up to 100 nodes, with a 50 % margin), and never over
            # issue 18's 1 s for any graph
            limit = 300 if r["nodes"] <= 100 else 1000
            if r["after_ms"] is None or r["after_ms"] > min(1.5 * limit, 1000):
                problems.append(f"layout {r['case']}: {_ms(r['after_ms'])} ms (target {limit} ms)")
    if "robust" in res:
        for r in res["robust"]["rows"]:
            if r["ms"] > 1000:                      # issue 18: every graph in <= 1 s, draw() to SVG
                problems.append(f"draw + layout {r['case']}: {r['ms']:.0f} ms through backward_twice.layout "
                                "(target 1000 ms)")
    problems += ratio_problems(res)
    if "repeat" in res and not (res["repeat"]["all_passed"] and res["repeat"]["committed_notebooks_unchanged"]):
        problems.append("repeat runs: not all passed, or committed outputs changed")
    return problems


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", choices=["suite", "renderer", "layout", "depth", "recorder", "zoo"], action="append",
                    help="run only these parts (repeatable); default: all three")
    ap.add_argument("--repeat", type=int, metavar="N", default=0,
                    help="also run the full suite N times under xdist and once serially")
    ap.add_argument("--zoo", action="append", metavar="MODEL", help="with --only zoo: only these models")
    ap.add_argument("--check", action="store_true", help="exit 1 when a ratio misses its target by a wide margin")
    ap.add_argument("--json", default=str(BUILD / "bench.json"))
    args = ap.parse_args(argv)
    parts = args.only or (["suite", "renderer", "layout", "depth"] if not args.repeat else [])
    res = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                       "load_before": os.getloadavg()[0] if hasattr(os, "getloadavg") else None},
           "started": time.strftime("%Y-%m-%d %H:%M:%S")}
    if "suite" in parts:
        say(f"floor: {len(NOTEBOOKS)} kernel start(s) + import torch ...")
        res["floor"] = kernel_floor(max(1, len(NOTEBOOKS)))
        say(f"  {res['floor']['total_s']:.1f} s")
        uses = optimizer_notebooks()
        say(f"same, plus a first torch.optim optimizer ({len(uses)} notebooks build one) ...")
        res["optim_floor"] = {**kernel_floor(max(1, len(uses)), FIRST_OPTIMIZER), "notebooks": uses}
        say(f"  {res['optim_floor']['total_s']:.1f} s")
        say("suite: " + " ".join(SUITE_CMD[1:]) + " ...")
        res["suite"] = run_suite()
        say(f"  {res['suite']['wall_s']:.1f} s, exit {res['suite']['exit']}: {res['suite']['summary']}")
        say("without the browser tests ...")
        res["no_browser"] = run_suite([f"--ignore={t}" for t in BROWSER_TESTS], label="nobrowser")
        say(f"  {res['no_browser']['wall_s']:.1f} s, exit {res['no_browser']['exit']}")
        say("unit tests only, without the browser tests ...")
        res["unit_only"] = run_suite(["tests", *[f"--ignore={t}" for t in BROWSER_TESTS]], label="unit")
        say(f"  {res['unit_only']['wall_s']:.1f} s, exit {res['unit_only']['exit']}")
        say("nbval only: " + " ".join(SUITE_CMD[1:]) + " notebooks ...")
        res["nbval_only"] = run_suite(["notebooks"], label="nbval")
        say(f"  {res['nbval_only']['wall_s']:.1f} s, exit {res['nbval_only']['exit']}")
    if "renderer" in parts or "depth" in parts or "layout" in parts:
        import torch


        res["machine"]["torch"] = torch.__version__
    if "recorder" in parts:
        from scripts import bench_recorder

        say("the recorder's cost per training step (plain / do-nothing mode / recorder / anomaly mode) ...")
        res["recorder"] = bench_recorder.recorder_bench()
        say(bench_recorder.report(res["recorder"]))
    if "renderer" in parts:
        say("renderer vs torchviz ...")
        res["renderer"] = renderer_bench()
        say("watch() vs a plain backward, 20k nodes ...")
        res["watch"] = watch_bench()
        say(f"  ratio {res['watch']['ratio']:.2f}")
    if "layout" in parts:
        say("layout + SVG, before / after / torchviz ...")
        res["layout"] = layout_bench()
        say("draw + layout through backward_twice.layout (time-limited), issue 18's graphs ...")
        res["robust"] = robust_bench()
        say("pairs and stepper frames: own sizes vs shared sizes ...")
        res["pairs"] = pair_bench()
    if "zoo" in parts:
        say("zoo: every default picture of each model, one process a model ...")
        res["zoo"] = zoo_bench(args.zoo)
    if "depth" in parts:
        say("depth scaling ...")
        res["depth"] = depth_bench(BUILD / "bench_depth.png")
    if args.repeat:
        say(f"repeatability: {args.repeat} x xdist + 1 x serial ...")
        res["repeat"] = repeat_suite(args.repeat)
    res["machine"]["load_after"] = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    text = report(res)
    say("\n" + text)
    path = pathlib.Path(args.json)
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(res, indent=1, default=str))
    say(f"\nsaved {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    if args.check:
        problems = check(res)
        for p in problems:
            say("CHECK FAILED: " + p)
        return 1 if problems else 0
    if "repeat" in res and not res["repeat"]["all_passed"]:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
