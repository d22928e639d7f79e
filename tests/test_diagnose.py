"""helpers.diagnose on training loops it has never seen: six bug shapes, the bad-input table,
and the promise that it only reads (graph, freed state, namespace) and never re-runs a step.

Each loop runs in its own namespace dict (what a notebook's user namespace is) until its
step-2 backward fails. That backward runs under helpers.trace.where_backward_stops, which
watches the real engine: the diagnosis, which runs nothing, must name the same stop."""
import re
import sys
import textwrap

import pytest
import torch

from helpers.diagnose import StepClock, draw_steps, why_backward_failed
from helpers.trace import where_backward_stops

PRELUDE = """
import torch
import torch.nn as nn
import torch.nn.functional as F
torch.manual_seed(0)
"""

LOOPS = {
    "lstm_tuple": """
lstm = nn.LSTM(3, 4)
head = nn.Linear(4, 1)
opt = torch.optim.SGD([*lstm.parameters(), *head.parameters()], lr=0.1)
hidden = (torch.zeros(1, 1, 4), torch.zeros(1, 1, 4))
for step in range(3):
    x, y = torch.randn(5, 1, 3), torch.randn(1, 1)
    out, hidden = lstm(x, hidden)
    loss = F.mse_loss(head(out[-1]), y)
    opt.zero_grad()
    backward(loss)
    opt.step()
""",
    "module_state": """
class Cell(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(3, 4)
        self.rec = nn.Linear(4, 4, bias=False)
        self.hidden = torch.zeros(1, 4)
    def forward(self, x):
        self.hidden = torch.tanh(self.inp(x) + self.rec(self.hidden))
        return self.hidden
model = Cell()
head = nn.Linear(4, 1)
opt = torch.optim.SGD([*model.parameters(), *head.parameters()], lr=0.1)
for step in range(3):
    x, y = torch.randn(1, 3), torch.randn(1, 1)
    loss = ((head(model(x)) - y) ** 2).mean()
    opt.zero_grad()
    backward(loss)
    opt.step()
""",
    "reset_not_called": """
class LIF(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.reset()
    def reset(self):
        self.v = torch.zeros(1, 4)
    def forward(self, x):
        self.v = 0.9 * self.v + self.fc(x)
        return torch.sigmoid(self.v - 1.0)
neuron = LIF()
opt = torch.optim.SGD(neuron.parameters(), lr=0.1)
for step in range(3):
    x, target = torch.randn(1, 3), torch.rand(1, 4)
    spikes = neuron(x)
    loss = ((spikes - target) ** 2).sum()
    opt.zero_grad()
    backward(loss)
    opt.step()
""",
    "frozen_encoder": """
encoder = nn.Sequential(nn.Linear(3, 8), nn.ReLU())
head = nn.Linear(8, 1)
opt = torch.optim.SGD(head.parameters(), lr=0.1)   # only the head trains
X, Y = torch.randn(16, 3), torch.randn(16, 1)
feats = encoder(X)
for step in range(3):
    loss = F.mse_loss(head(feats), Y)
    opt.zero_grad()
    backward(loss)
    opt.step()
""",
    "running_total": """
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
total = torch.zeros(())
for step in range(3):
    x, y = torch.randn(4, 3), torch.randn(4, 1)
    loss = F.mse_loss(model(x), y)
    total = total + loss
    opt.zero_grad()
    backward(total)
    opt.step()
""",
    "derived_weight": """
w = torch.randn(3, 1, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
w_unit = w / w.norm()
for step in range(3):
    x, y = torch.randn(4, 3), torch.randn(4, 1)
    loss = ((x @ w_unit - y) ** 2).mean()
    opt.zero_grad()
    backward(loss)
    opt.step()
""",
    "rnn_plain_state": """
W, U = torch.randn(3, 4, requires_grad=True), torch.randn(4, 4, requires_grad=True)
opt = torch.optim.SGD([W, U], lr=0.01)
h = torch.zeros(1, 4)
for step in range(3):
    x = torch.randn(1, 3)
    h = torch.tanh(x @ W + h @ U)
    loss = h.pow(2).sum()
    opt.zero_grad()
    backward(loss)
    opt.step()
""",
    "rnn_cell_30_time_steps": """
cell, head = nn.RNNCell(3, 8), nn.Linear(8, 1)
opt = torch.optim.SGD([*cell.parameters(), *head.parameters()], lr=0.01)
h = torch.zeros(1, 8)
for step in range(3):
    xs, y = torch.randn(30, 1, 3), torch.randn(1, 1)
    for x in xs:                    # 30 time steps per batch; h goes on to the next batch
        h = cell(x, h)
    loss = F.mse_loss(head(h), y)
    opt.zero_grad()
    backward(loss)
    opt.step()
""",
    "stacked_lstm_list": """
cells = nn.ModuleList([nn.LSTMCell(3, 4), nn.LSTMCell(4, 4)])
opt = torch.optim.SGD(cells.parameters(), lr=0.1)
states = [(torch.zeros(1, 4), torch.zeros(1, 4)) for _ in cells]
for step in range(3):
    inp = torch.randn(1, 3)
    for i, cell in enumerate(cells):
        states[i] = cell(inp, states[i])
        inp = states[i][0]
    loss = inp.sum()
    opt.zero_grad()
    backward(loss)
    opt.step()
""",
}

# culprit name, pattern, a regex the fix sentence must match
EXPECTED = {
    "lstm_tuple": ("hidden[0]", "state tuple", r"hidden = tuple\(s\.detach\(\) for s in hidden\)"),
    "module_state": ("model.hidden", "state stored on a module", r"model\.hidden = model\.hidden\.detach\(\)"),
    "reset_not_called": ("neuron.v", "reset not called", r"Call `neuron\.reset\(\)` at the start of each step"),
    "frozen_encoder": ("feats", "before the loop", r"`feats` was computed by `encoder`.*torch\.no_grad\(\)"),
    "running_total": ("total", "running total", r"total \+= loss\.item\(\)"),
    "derived_weight": ("w_unit", "before the loop", r"built from `w`.*Recompute it inside the loop"),
    "rnn_plain_state": ("h", "state carried", r"`h = h\.detach\(\)`"),
    "rnn_cell_30_time_steps": ("h", "state carried", r"`h = h\.detach\(\)`"),
    "stacked_lstm_list": ("states[1][0]", "state tuple",
                          r"states = \[tuple\(s\.detach\(\) for s in st\) for st in states\]"),
}


def failing(name):
    ns, watched = {}, []

    def backward(t):
        with where_backward_stops(t) as stop:
            watched.append(stop)
            t.backward()

    ns["backward"] = backward
    try:
        exec(PRELUDE + textwrap.dedent(LOOPS[name]), ns)
    except RuntimeError as err:
        assert "backward through the graph a second time" in str(err)
        assert ns["step"] == 1, f"{name} failed on step {ns['step'] + 1}, not step 2"
        return ns, err, watched[-1]
    raise AssertionError(f"{name}: the loop did not fail")


@pytest.mark.parametrize("name", sorted(LOOPS))
def test_names_the_culprit_the_stop_and_the_fix(name):
    ns, err, stop = failing(name)
    d = why_backward_failed(err, names=ns)
    culprit, pattern, fix = EXPECTED[name]
    assert d.verdict == "stopped", d.message
    assert d.culprits and d.culprits[0] == culprit, (d.culprits, d.message)
    assert pattern in d.pattern, d.pattern
    assert re.search(fix, d.fix), d.fix
    # the stop it works out without running anything is where the real engine stopped
    assert d.stopped_at == stop.stopped_in, (d.stopped_at, stop)
    assert d.path[-1] == d.stopped_at and d.path[0] == ns["loss" if name != "running_total" else "total"].grad_fn.name()
    assert d.freed and "carried by: " + culprit in d.message
    assert "retain_graph=True" in d.message          # says why not the usual forum answer
    assert "the path from the loss" in d.picture.dot and "penwidth=3" in d.picture.dot


def test_outside_ipython_it_works_and_says_names_are_unavailable():
    ns, err, stop = failing("rnn_plain_state")
    d = why_backward_failed(err)                      # no names=, and pytest is not IPython
    assert d.verdict == "stopped" and d.stopped_at == stop.stopped_in == "TanhBackward0"
    assert not d.names_available and d.culprits == []
    assert "names unavailable" in d.message
    assert d.pattern == "state carried across steps" or "detach" in d.fix


def test_the_tensor_itself_can_be_passed():
    ns, err, stop = failing("derived_weight")
    d = why_backward_failed(ns["loss"], names=ns)
    assert d.stopped_at == stop.stopped_in == "DivBackward0" and d.culprits[0] == "w_unit"


def _state(ns, root):
    """Everything the helper may read: graph structure, freed states, grads, versions, names."""
    from helpers.graph import describe
    from helpers.walk import snapshot

    snap = snapshot(root, max_nodes=2_000)
    grads = {n: (None if t.grad is None else t.grad.clone()) for n, t in ns.items()
             if isinstance(t, torch.Tensor) and t.is_leaf}
    versions = {n: t._version for n, t in ns.items() if isinstance(t, torch.Tensor)}
    params = [(p._version, None if p.grad is None else p.grad.clone())
              for m in ns.values() if isinstance(m, torch.nn.Module) for p in m.parameters()]
    module_attrs = {n: dict(vars(m)) for n, m in ns.items() if isinstance(m, torch.nn.Module)}
    return describe(snap), dict(ns), grads, versions, params, module_attrs


def test_reads_only_and_never_reruns_the_step(monkeypatch):
    ns, err, _ = failing("module_state")
    forward_calls = []
    ns["model"].register_forward_pre_hook(lambda *a: forward_calls.append(1))
    before = _state(ns, ns["loss"])
    ran_backward = []
    for owner, attr in ((torch.Tensor, "backward"), (torch.autograd, "backward"), (torch.autograd, "grad")):
        real = getattr(owner, attr)
        monkeypatch.setattr(owner, attr, lambda *a, _real=real, **k: (ran_backward.append(1), _real(*a, **k))[1])
    d = why_backward_failed(err, names=ns)
    d._repr_mimebundle_()                                  # drawing too
    after = _state(ns, ns["loss"])
    assert d.verdict == "stopped"
    assert forward_calls == [] and ran_backward == []
    assert before[0] == after[0]                           # same nodes, same freed/held states
    assert before[1].keys() == after[1].keys() and all(before[1][k] is after[1][k] for k in before[1])
    for k, g in before[2].items():
        assert (g is None and after[2][k] is None) or torch.equal(g, after[2][k])
    assert before[3] == after[3]
    assert [v for v, _ in before[4]] == [v for v, _ in after[4]]
    assert all((a is None and b is None) or torch.equal(a, b) for (_, a), (_, b) in zip(before[4], after[4]))
    assert before[5].keys() == after[5].keys()
    for name, attrs in before[5].items():
        assert all(after[5][name][k] is v for k, v in attrs.items())


# -- the bad-input table -------------------------------------------------------------
def test_backward_would_succeed():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    loss = (x * x).sum()
    d = why_backward_failed(loss)
    assert d.verdict == "would succeed" and "would succeed" in d.message
    loss.backward()                                         # and it really does
    assert x.grad.tolist() == [2.0, 4.0]


def test_leaf_would_succeed():
    d = why_backward_failed(torch.ones(1, requires_grad=True))
    assert d.verdict == "would succeed"


def test_no_graph():
    d = why_backward_failed(torch.ones(3))
    assert d.verdict == "no graph" and "no autograd graph" in d.message


def test_unrelated_exception():
    try:
        torch.ones(2, 3) @ torch.ones(2, 3)
    except RuntimeError as err:
        d = why_backward_failed(err)
    assert d.verdict == "unrelated" and "not \"Trying to backward" in d.message
    assert why_backward_failed(ValueError("bad batch")).verdict == "unrelated"


def test_no_error_happened(monkeypatch):
    monkeypatch.setattr(sys, "last_value", None, raising=False)
    d = why_backward_failed()
    assert d.verdict == "no error" and "no error has happened" in d.message


def test_last_error_is_read_when_nothing_is_passed(monkeypatch):
    ns, err, stop = failing("running_total")
    monkeypatch.setattr(sys, "last_value", err, raising=False)
    d = why_backward_failed(names=ns)
    assert d.stopped_at == stop.stopped_in and d.culprits == ["total"]


@pytest.mark.parametrize("bad", [3.5, None, "loss", [torch.ones(1)]])
def test_not_a_tensor(bad):
    d = why_backward_failed(bad) if bad is not None else why_backward_failed(torch.nn.Linear(2, 2))
    assert d.verdict == "bad input" and "expected the tensor" in d.message


def test_bad_max_nodes():
    assert why_backward_failed(torch.ones(1), max_nodes=0).verdict == "bad input"


def test_a_tiny_cap_still_draws_the_stop_and_counts_the_rest():
    ns, err, stop = failing("lstm_tuple")
    d = why_backward_failed(err, names=ns, max_nodes=3)
    assert _stop_box(stop.stopped_in) in d.picture.dot          # drawn, in the stop's colour
    drawn = re.findall(r"^\t(?:op|leaf|t_)\w* \[label=", d.picture.dot, re.M)
    assert len(drawn) <= 3
    assert d.picture.text.startswith("focus on ") and "NOT DRAWN" in d.picture.text


def _stop_box(name):
    from helpers.diagnose import STOP_FILL
    return f'<TD BGCOLOR="{STOP_FILL}"><B>{name}</B>'


@pytest.mark.parametrize("name", sorted(LOOPS))
def test_every_loop_picture_reads_at_notebook_width_and_shows_the_stop(name):
    from test_readability import MIN_TEXT_PX, svg_text_px

    ns, err, stop = failing(name)
    d = why_backward_failed(err, names=ns)
    px, shown = svg_text_px(d.picture.svg)
    assert px >= MIN_TEXT_PX, f"{name}: {px:.1f} px text at {shown:.0f} px wide"
    assert _stop_box(stop.stopped_in) in d.picture.dot    # the node the engine stopped in, orange


def test_a_long_loop_is_drawn_around_the_stop_a_short_one_whole():
    from test_readability import svg_text_px

    ns, err, stop = failing("rnn_cell_30_time_steps")
    d = why_backward_failed(err, names=ns)
    assert len(d.path) > 80                                  # 30 time steps from the loss to the stop
    first = d.picture.text.splitlines()[0]
    assert re.fullmatch(r"focus on (\w+): NOT DRAWN: (\d+) nodes from \1 to loss, (\d+) beside them \(.*\)", first), first
    assert int(re.search(r"(\d+) nodes from", first).group(1)) == len(d.path) - 1 - 3   # 3 nodes above the stop drawn
    assert "the graph around it" in d.picture.dot and '-> above [color="' in d.picture.dot   # the path goes on, thick
    # the graph drawn from the loss op by op, as the diagnosis drew it before (60 nodes): too wide
    # to read (draw() itself now folds the repeated steps; here they are drawn one by one)
    from helpers import render
    from helpers.walk import snapshot
    assert svg_text_px(render.svg_from_dot(render.to_dot(snapshot(ns["loss"], max_nodes=60))))[0] < 7
    ns, err, _ = failing("rnn_plain_state")                 # one time step per batch: drawn whole
    short = why_backward_failed(err, names=ns)
    assert not short.picture.text.startswith("focus on") and "NOT DRAWN" not in short.picture.text


def test_same_graph_twice_is_not_called_a_loop():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    loss = (x.exp() * 2).sum()
    loss.backward()
    try:
        loss.backward()
    except RuntimeError as err:
        d = why_backward_failed(err, names={"x": x, "loss": loss})
    assert d.verdict == "stopped" and d.pattern == "same graph backwarded twice"
    with pytest.raises(RuntimeError):
        with where_backward_stops(loss) as stop:
            loss.backward()
    assert d.stopped_at == stop.stopped_in


# -- the IPython magic ------------------------------------------------------------------
def test_magic_in_a_real_ipython_shell():
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    try:
        ip.run_cell(PRELUDE + textwrap.dedent(LOOPS["reset_not_called"]).replace("backward(loss)", "loss.backward()"))
        assert "backward through the graph a second time" in str(sys.last_value)
        ip.run_cell("%load_ext helpers.diagnose")
        d = ip.run_cell("%why_backward").result
        assert d.verdict == "stopped" and d.culprits[0] == "neuron.v"
        assert "neuron.reset()" in d.fix and "names unavailable" not in d.message
        named = ip.run_cell("%why_backward loss").result
        assert named.stopped_at == d.stopped_at
        assert ip.run_cell("%why_backward no_such_name").result.verdict == "bad input"
    finally:
        InteractiveShell.clear_instance()


# -- step colours ------------------------------------------------------------------------
def two_clocked_steps(backward_first_step=False):
    """h = tanh(w * h + w) twice, each step ticked on a StepClock; optionally step 1 backwarded."""
    clock = StepClock()
    w = torch.ones(2, requires_grad=True)
    h = torch.zeros(2)
    for step in range(2):
        clock.tick()
        h = torch.tanh(w * h + w)
        if backward_first_step and step == 0:
            h.sum().backward()
    return h, clock


def test_draw_steps_colours_each_step():
    h, clock = two_clocked_steps()
    pic = draw_steps(h.sum(), clock=clock)
    lines = pic.text.splitlines()
    step1 = next(line for line in lines if line.startswith("step 1:"))
    step2 = next(line for line in lines if line.startswith("step 2:"))
    assert step1.count("Backward") == 3 and step2.count("Backward") == 4   # mul, add, tanh (+ sum)
    assert "#f6c8c0" in pic.dot and "#fff0a8" in pic.dot


def test_render_marks_fills_path_and_legend_are_additive():
    from helpers import render
    from helpers.walk import snapshot

    x = torch.ones(2, requires_grad=True)
    snap = snapshot((x * 2).exp().sum())
    plain = render.to_dot(snap)
    edge = next((a, b) for a, b in snap.edges if a.startswith("op") and b.startswith("op"))
    marked = render.to_dot(snap, marks=render.Marks(fills={"op2": "#123456"}, path=frozenset({edge}),
                                                     legend=(("#654321", "a group of my own"),)))
    assert "#123456" not in plain and "penwidth" not in plain and "a group of my own" not in plain
    assert marked.count('BGCOLOR="#123456"') == 1
    assert f"{edge[0]} -> {edge[1]} [color=\"{render.STOP}\" penwidth=3]" in marked
    assert 'BGCOLOR="#654321"' in marked and "a group of my own" in marked
    assert render.to_dot(snap, marks=render.Marks()) == plain


def test_step_picture_counts_by_step():
    h, clock = two_clocked_steps(backward_first_step=True)
    pic = draw_steps(h.sum(), clock=clock)
    by = pic.saved_states_by_step()
    assert by[1]["freed"] > 0 and by[1]["held"] == 0 and by[2]["freed"] == 0 and by[2]["held"] > 0


def test_before_backward_it_says_where_it_will_stop():
    w = torch.ones(2, requires_grad=True)
    h = torch.zeros(2)
    for step in range(2):
        h = torch.tanh(w * h + w)
        loss = h.sum()
        if step == 0:
            loss.backward()
    d = why_backward_failed(loss, names={"w": w, "h": h, "loss": loss})   # step 2, before backward
    assert d.not_yet_run and d.message.startswith("why backward will fail:")
    assert "will stop in: TanhBackward0" in d.message and d.culprits == ["h"]
    with pytest.raises(RuntimeError):
        with where_backward_stops(loss) as stop:
            loss.backward()
    assert stop.stopped_in == d.stopped_at
    after = why_backward_failed(loss, names={"w": w, "h": h, "loss": loss})
    assert not after.not_yet_run and after.stopped_at == d.stopped_at


def rnn_cell_two_batches(time_steps=30):
    """An RNNCell over `time_steps` per batch, h carried into batch 2 without detach; each batch
    ticked on a StepClock; batch 1 backwarded. (batch 2's loss, the clock, its namespace)"""
    torch.manual_seed(0)
    cell, head = torch.nn.RNNCell(3, 8), torch.nn.Linear(8, 1)
    clock, h = StepClock(), torch.zeros(1, 8)
    for step in range(2):
        clock.tick()
        for x in torch.randn(time_steps, 1, 3):
            h = cell(x, h)
        loss = (head(h) - 1).pow(2).sum()
        if step == 0:
            loss.backward()
    return loss, clock, {"cell": cell, "head": head, "h": h, "loss": loss}


def test_draw_steps_of_a_long_loop_is_drawn_where_the_steps_meet_and_reads():
    from test_readability import MIN_TEXT_PX, svg_text_px

    loss, clock, ns = rnn_cell_two_batches()
    pic = draw_steps(loss, clock=clock, names=ns)
    assert svg_text_px(pic.svg)[0] >= MIN_TEXT_PX
    assert pic.text.startswith("where step 2 uses step 1's graph (made by step 1: salmon, made by step 2: yellow).")
    snap = pic.snapshot
    assert snap.above is not None and snap.above.roots == ("loss",)
    # a node of step 1 feeds a node of step 2 in the picture: the place the steps meet
    assert any(pic.steps.get(a) == 1 and pic.steps.get(b) == 2 for a, b in snap.edges)
    assert pic.saved_states_by_step()[1]["freed"] > 0 and pic.saved_states_by_step()[2]["freed"] == 0
    # the graph drawn whole, as before: unreadable at notebook width, its text too small or the
    # picture taller than two screens (modules.SCREEN_PX), where the focused one is neither
    from helpers.modules import SCREEN_PX

    def shown_height_px(svg):
        px, shown = svg_text_px(svg)
        w, h = (float(v) for v in re.search(r'<svg width="([\d.]+)pt" height="([\d.]+)pt"', svg).groups())
        return px, h * 4 / 3 * shown / (w * 4 / 3)

    whole = draw_steps(loss, clock=clock, names=ns, focus=loss)
    px, tall = shown_height_px(whole.svg)
    assert whole.snapshot.above is None and (px < MIN_TEXT_PX or tall > SCREEN_PX)
    assert shown_height_px(pic.svg)[1] <= SCREEN_PX


def test_draw_steps_takes_a_focus_and_draws_small_graphs_whole():
    loss, clock, ns = rnn_cell_two_batches(time_steps=1)
    assert "focus on" not in draw_steps(loss, clock=clock, names=ns).text     # small: whole, as before
    pic = draw_steps(loss, clock=clock, names=ns, focus=ns["h"])
    assert pic.text.splitlines()[1].startswith(
        "focus on h: NOT DRAWN: 4 nodes from h to loss, 3 beside them")   # head Addmm, Sub, Pow, Sum; T, 2 leaves
    assert set(pic.steps.values()) == {1, 2}


def test_path_words_writes_a_repeated_block_once_with_its_count():
    from helpers.diagnose import path_words

    step = ["AddBackward0", "AddmmBackward0", "TanhBackward0"]
    path = ["MseLossBackward0", "AddmmBackward0", "TanhBackward0"] + step * 29
    words = path_words(path)
    assert words == ("MseLossBackward0 -> (AddmmBackward0 -> TanhBackward0 -> AddBackward0) x29 "
                     "-> AddmmBackward0 -> TanhBackward0")
    # nothing lost: expanding the counts gives the path back
    expanded = re.sub(r"\(([^()]*)\) x(\d+)", lambda m: " -> ".join([m.group(1)] * int(m.group(2))), words)
    assert expanded.split(" -> ") == path
    assert path_words(["A", "B", "C"]) == "A -> B -> C"           # no repeat: unchanged
    assert path_words(["A", "A", "B"]) == "A -> A -> B"           # a pair of one name stays as is
    assert path_words(["S", "Add", "Add", "Add", "M"]) == "S -> Add x3 -> M"
