"""backward_twice.diagnose on training loops it has never seen: six bug shapes, the bad-input table,
and the promise that it only reads (graph, freed state, namespace) and never re-runs a step.

Each loop runs in its own namespace dict (what a notebook's user namespace is) until its
step-2 backward fails. That backward runs under backward_twice.trace.where_backward_stops, which
watches the real engine: the diagnosis, which runs nothing, must name the same stop."""
import re
import sys
import textwrap

import pytest
import torch

from backward_twice.diagnose import FREED_TEXT, StepClock, draw_steps, why_backward_failed
from backward_twice.trace import where_backward_stops

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


def test_outside_ipython_it_reads_the_tracebacks_frame_and_says_how_to_pass_names():
    ns, err, stop = failing("rnn_plain_state")
    d = why_backward_failed(err)                      # no names=, and pytest is not IPython
    assert d.verdict == "stopped" and d.stopped_at == stop.stopped_in == "TanhBackward0"
    assert d.culprit == "h" and d.fix_kind == "detach-carried"       # found in the loop's own frame
    assert "names were read from the variables of the module in the traceback" in d.message
    err.__traceback__ = None                          # no frame to read: says so, still finds the stop
    d = why_backward_failed(ns["loss"])
    assert not d.names_available and d.culprits == [] and d.stopped_at == "TanhBackward0"
    assert "names unavailable" in d.message and "names=locals()" in d.message


def test_the_tensor_itself_can_be_passed():
    ns, err, stop = failing("derived_weight")
    d = why_backward_failed(ns["loss"], names=ns)
    assert d.stopped_at == stop.stopped_in == "DivBackward0" and d.culprits[0] == "w_unit"


def _state(ns, root):
    """Everything the helper may read: graph structure, freed states, grads, versions, names."""
    from backward_twice.graph import describe
    from backward_twice.walk import snapshot

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
    assert d.verdict == "unrelated" and "this is another error" in d.message
    assert "(2x3 and 2x3)" in d.message                  # the error's sentence whole, not cut
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
    drawn = re.findall(r"^\t+(?:op|leaf|t_)\w* \[label=", d.picture.dot, re.M)
    assert len(drawn) <= 3
    assert d.picture.text.startswith("focus on ") and "NOT DRAWN" in d.picture.text


def _stop_box(name):
    from backward_twice.diagnose import STOP_FILL
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
    # the path goes on, thick
    assert "the graph around it" in d.picture.dot and re.search(r"-> above \[[^\n]*\bcolor=\"", d.picture.dot)
    # the graph drawn from the loss op by op, as the diagnosis drew it before (60 nodes): too wide
    # to read (draw() itself now folds the repeated steps; here they are drawn one by one)
    from backward_twice import render
    from backward_twice.walk import snapshot
    assert svg_text_px(render.svg_from_dot(render.to_dot(snapshot(ns["loss"], max_nodes=60))))[0] < 7
    from backward_twice.diagnosis_picture import fits
    assert fits(d.picture)
    ns, err, _ = failing("frozen_encoder")                  # a short graph that fits one screen: drawn whole
    short = why_backward_failed(err, names=ns)
    assert not short.picture.text.startswith("focus on") and "NOT DRAWN" not in short.picture.text
    assert fits(short.picture)
    # one time step per batch: drawn whole it is taller than one screen as drawn (900 px at 860 px
    # wide, the core-path limit), but its text (13 px) is larger than the rule's 11 px: shown smaller
    # than drawn (layout.at_shown_size), whole, not around the stop
    ns, err, _ = failing("rnn_plain_state")
    tall = why_backward_failed(err, names=ns)
    svg = tall.picture.svg
    assert not tall.picture.text.startswith("focus on") and fits(tall.picture)
    drawn = float(re.search(r'viewBox="[\d.]+ [\d.]+ ([\d.]+)', svg).group(1))
    from backward_twice.picture.layout import shown_px, smallest_text_px, svg_width_pt
    assert svg_width_pt(svg) < drawn                     # shown smaller than drawn
    assert shown_px(svg)[1] <= 900 and 11 <= smallest_text_px(svg) < 13


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
        ip.run_cell("%load_ext backward_twice")
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
    from backward_twice import render
    from backward_twice.walk import snapshot

    x = torch.ones(2, requires_grad=True)
    snap = snapshot((x * 2).exp().sum())
    plain = render.to_dot(snap)
    edge = next((a, b) for a, b in snap.edges if a.startswith("op") and b.startswith("op"))
    marked = render.to_dot(snap, marks=render.Marks(fills={"op2": "#123456"}, path=frozenset({edge}),
                                                     legend=(("#654321", "a group of my own"),)))
    assert "#123456" not in plain and "penwidth" not in plain and "a group of my own" not in plain
    assert marked.count('BGCOLOR="#123456"') == 1
    # thick, its arrowhead kept at the usual size (Graphviz grows it with the pen)
    assert f"{edge[0]} -> {edge[1]} [arrowsize=0.3 color=\"{render.STOP}\" penwidth=3]" in marked   # sorted
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
    from backward_twice.modules import SCREEN_PX

    def shown_height_px(svg):
        px, shown = svg_text_px(svg)
        w, h = (float(v) for v in re.search(r'<svg width="([\d.]+)pt" height="([\d.]+)pt"', svg).groups())
        return px, h * 4 / 3 * shown / (w * 4 / 3)

    from backward_twice import render
    whole = draw_steps(loss, clock=clock, names=ns, focus=loss)
    px, tall = shown_height_px(render.svg_from_dot(whole.dot))
    assert whole.snapshot.above is None and (px < MIN_TEXT_PX or tall > SCREEN_PX)
    # and as drawn (issue 28: every picture fits 11 px and 900 px), the part nearest the loss
    assert "nodes nearest the output" in whole.svg and whole.simplified
    assert shown_height_px(pic.svg)[1] <= SCREEN_PX


def test_draw_steps_takes_a_focus_and_draws_small_graphs_whole():
    from backward_twice.diagnosis_picture import fits
    torch.manual_seed(0)                  # notebook 10 section 1's loop: small, fits one screen whole
    W, U = torch.randn(3, 4, requires_grad=True), torch.randn(4, 4, requires_grad=True)
    small_clock, h = StepClock(), torch.zeros(1, 4)
    for step in range(2):
        small_clock.tick()
        h = torch.tanh(torch.randn(1, 3) @ W + h @ U)
        small = h.pow(2).sum()
        if step == 0:
            small.backward()
    whole = draw_steps(small, clock=small_clock, names={"W": W, "U": U, "h": h, "loss": small})
    assert "focus on" not in whole.text and fits(whole)
    loss, clock, ns = rnn_cell_two_batches(time_steps=1)
    assert fits(draw_steps(loss, clock=clock, names=ns))
    pic = draw_steps(loss, clock=clock, names=ns, focus=ns["h"])
    assert pic.text.splitlines()[1].startswith(
        "focus on h: NOT DRAWN: 4 nodes from h to loss, 3 beside them")   # head Addmm, Sub, Pow, Sum; T, 2 leaves
    assert set(pic.steps.values()) == {1, 2}


def test_path_words_writes_a_repeated_block_once_with_its_count():
    from backward_twice.diagnose import path_words

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


# ======================================================================================
# Issue 19: evidence before advice, where people keep tensors, the in-place error.
# The corpus programs (tests/diagnosis_corpus/dev, rewritten from public reports by the corpus
# developer) are loaded from their files; the loops below are this file's own, each rewritten
# from the public report named with it.
from tests.diagnosis_corpus import harness  # noqa: E402

DEV = harness.HERE / "dev"


def corpus(name):
    """(namespace, error, labels) of a dev program, run as a notebook cell would."""
    path = DEV / f"{name}.py"
    ns, err = harness.run(path)
    labels = harness.constants(path)
    assert err is not None and str(err).startswith(harness.ERRORS[labels["ERROR"]]), (name, err)
    return ns, err, labels


# failure mode -> the dev program it is built from
FAILURE_MODES = {
    "two backwards in one step (01's d/e)": "course_d_e_graph",
    "GAN: D(fake) without detach (07)": "course_gan_no_detach",
    "shared body, two losses backwarded one by one": "a3c_shared_body_two_backwards",
    "two critics, two optimizers, one batch of actions": "two_critics_shared_actions",
    "a tuple of losses backwarded one by one": "trainer_tuple_of_losses",
    "loss = loss + term inside a chunk, memory_bank reused": "truncated_decoder_memory_bank",
    "state in a dict": "compressive_memory_dict",
    "private module attribute": "gru_private_hidden",
    "module state with a reset()": "snn_membrane_not_reset",
    "preallocated output written each step": "preallocated_output_buffer",
    "in-place: optimizer step between backwards": "factorvae_step_before_d_loss",
    "in-place: indexed assignment on a saved output": "index_assign_on_sigmoid",
    "in-place: write through .detach()": "mask_through_detach",
    "in-place: modules set inplace=True": "modules_set_inplace",
}


@pytest.mark.parametrize("mode", sorted(FAILURE_MODES))
def test_each_failure_mode_of_issue_19_on_its_corpus_program(mode):
    ns, err, labels = corpus(FAILURE_MODES[mode])
    d = why_backward_failed(err, names=ns)
    assert d.fix_kind == labels["FIX_KIND"], (mode, d.fix_kind, d.message)
    want = labels["CULPRIT"]
    assert (d.culprit is None) if want is None else (d.culprit == want or d.culprit.startswith(want + "[")), \
        (mode, d.culprit, d.message)
    assert d.evidence and all(s.endswith((".", ")", ":")) or "anomaly" in s for s in d.evidence)
    assert "will fail" not in d.message                      # it has failed: no "will"
    if d.confident:
        assert f"cause: {d.pattern}" in d.message and f"fix: {d.fix}" in d.message
    else:
        assert "candidates" in d.message and d.candidates[0][0] == d.fix_kind


def test_two_backwards_in_one_step_says_retain_graph_is_right_and_shows_the_earlier_backward():
    ns, err, _ = corpus("course_d_e_graph")
    d = why_backward_failed(err, names=ns)
    # after the fact: whether an optimizer step ran between the two calls is gone, so not certain
    assert not d.confident and d.when == "this step" and d.fix_kind == "retain-or-sum"
    assert any("the earlier backward, on `d`, freed the part both share (`c`)" in e for e in d.evidence)
    assert "Not recorded: which call freed these buffers" in d.message and "grow with every step" not in d.message
    assert "before the loop" not in d.message
    # the stop it names is where the real engine stops
    with pytest.raises(RuntimeError):
        with where_backward_stops(ns["e"]) as stop:
            ns["e"].backward()
    assert d.stopped_at == stop.stopped_in


def test_the_earlier_loss_splits_the_graph_where_the_engine_really_stops():
    """The a3c program's shape (a shared body, the actor's loss backwarded first, the critic's
    second), watched by where_backward_stops: the gap in creation numbers alone would call the
    critic head 'older' and name a node the engine ran without trouble."""
    torch.manual_seed(0)
    body, actor, critic = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ELU()), torch.nn.Linear(8, 3), torch.nn.Linear(8, 1)
    x = body(torch.randn(5, 6))
    logits, value = actor(x), critic(x).squeeze(1)
    advantage = torch.randn(5) - value
    policy_loss = -(logits.log_softmax(-1)[:, 0] * advantage.detach()).mean()
    value_loss = advantage.pow(2).mean()
    policy_loss.backward()
    with pytest.raises(RuntimeError) as info:
        with where_backward_stops(value_loss) as stop:
            value_loss.backward()
    d = why_backward_failed(info.value, names={"body": body, "actor": actor, "critic": critic, "x": x,
                                               "policy_loss": policy_loss, "value_loss": value_loss})
    assert d.stopped_at == stop.stopped_in == "EluBackward0" and d.culprit == "x"
    assert d.fix_kind == "retain-or-sum" and not d.confident and "`policy_loss`" in d.fix


def test_gan_names_the_generator_output_and_advises_detach_not_retain_graph():
    ns, err, _ = corpus("course_gan_no_detach")
    d = why_backward_failed(err, names=ns)
    assert not d.confident and d.fix_kind == "detach-input" and d.culprit == "fake"   # intent: after the fact
    assert "fake.detach()" in d.fix and "made by `G`" in d.fix and "`d_loss`" in d.fix
    assert "once, before the loop" not in d.message


def test_a_loss_summed_over_a_chunk_is_not_a_running_total():
    ns, err, _ = corpus("truncated_decoder_memory_bank")
    d = why_backward_failed(err, names=ns)
    assert d.pattern != "running total" and "loss.item()" not in d.message
    assert d.culprit == "memory_bank" and not d.confident       # before the loop, or this step? it lists both
    assert [k for k, _, _ in d.candidates][:3] == ["recompute-in-step", "detach-carried", "retain-or-sum"]
    assert d.check and "StepClock" in d.check


# A new-user trial (no public report of this shape was found): each step's loss is kept in a
# list and the list's average is backwarded. sum() makes its adds in this step, after this
# step's loss, so it is not a running total: the list carries the earlier steps' graphs.
def loss_log_loop(keep: str, combine: str) -> str:
    """A training loop that keeps each step's loss (`keep`, one line) and backwards what
    `combine` (one line) makes of them: the shapes of a loss log, summed or smoothed."""
    return f"""
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(16, 3), torch.randn(16, 1)
history, total = [], 0
for step in range(4):
    loss = F.mse_loss(model(x), y)
    {keep}
    {combine}
    opt.zero_grad()
    smoothed.backward()
    opt.step()
"""


LOSS_LOGS = {
    "sum_over_list": (loss_log_loop("history.append(loss)", "smoothed = sum(history) / len(history)  # a smoother curve"),
                      ("history", "accumulate-number", False)),
    "stack_mean": (loss_log_loop("history.append(loss)", "smoothed = torch.stack(history).mean()"),
                   ("history", "accumulate-number", False)),
    # each entry weighted before the sum: a loss log, or a one-entry episode's log-prob? hedged
    "weighted_sum": (loss_log_loop("history.append(loss)",
                                   "smoothed = sum(0.9 ** i * l for i, l in enumerate(reversed(history)))"),
                     ("history", "reset-per-episode", False)),
    # the true running total still reads as one
    "running_total_plain": (loss_log_loop("total = total + loss", "smoothed = total"),
                            ("total", "accumulate-number", False)),
}


def diagnosed_as_labelled(src, label):
    """Run a failing loop (PRELUDE + src), diagnose it with its namespace, and check the
    (culprit, fix kind, confident) it was labelled with; the diagnosis."""
    ns = {}
    with pytest.raises(RuntimeError, match=FREED_TEXT) as info:
        exec(PRELUDE + textwrap.dedent(src), ns)
    d = why_backward_failed(info.value, names=ns)
    assert (d.culprit, d.fix_kind, d.confident) == label, d.message
    return d


@pytest.mark.parametrize("name", sorted(LOSS_LOGS))
def test_a_list_of_losses_is_not_a_running_total(name):
    d = diagnosed_as_labelled(*LOSS_LOGS[name])
    if name == "running_total_plain":
        assert d.pattern == "running total" and "`total += loss.item()`" in d.fix
        return
    assert d.pattern != "running total" and "a step earlier" not in d.message, d.message
    assert "carried by: history" in d.message
    if d.fix_kind == "accumulate-number":     # likeliest, never confident after the fact (nothing recorded)
        assert "`history.append(loss.item())`" in d.fix and "`loss.backward()`" in d.fix
        assert "retain_graph=True" in d.fix and "cannot work" in d.fix and "Not recorded" in d.message
    else:
        assert d.check and [k for k, _, _ in d.candidates][:2] == ["reset-per-episode", "accumulate-number"]


def test_a_clock_makes_before_the_first_step_certain():
    """Opt-in: the same frozen-encoder loop, with a StepClock ticked each step."""
    torch.manual_seed(0)
    clock = StepClock()
    encoder, head = torch.nn.Linear(3, 8), torch.nn.Linear(8, 1)
    feats = encoder(torch.randn(16, 3))
    try:
        for _step in range(2):
            clock.tick()
            loss = (head(feats) - 1).pow(2).mean()
            loss.backward()
    except RuntimeError as err:
        ns = {"encoder": encoder, "head": head, "feats": feats, "loss": loss}
        plain, sharp = why_backward_failed(err, names=ns), why_backward_failed(err, names=ns, clock=clock)
        assert why_backward_failed(err, names=ns, clock="not a clock").verdict == "bad input"
    assert not plain.confident and plain.fix_kind == "recompute-in-step"
    assert sharp.confident and sharp.when == "before the first step" and sharp.culprit == "feats"


def test_anomaly_mode_lets_it_quote_the_forward_line():
    torch.manual_seed(0)
    w = torch.randn(3, requires_grad=True)
    h = torch.zeros(3)
    with torch.autograd.set_detect_anomaly(True), pytest.warns(UserWarning, match="Error detected in TanhBackward0"):
        try:
            for _step in range(2):
                h = torch.tanh(w * h + w)            # the state, carried
                (h.sum()).backward()
        except RuntimeError as err:
            d = why_backward_failed(err, names={"w": w, "h": h})
    line = next(e for e in d.evidence if e.startswith("anomaly mode recorded"))
    assert "h = torch.tanh(w * h + w)" in line and "test_diagnose.py" in line


# -- loops of this file's own, from public reports -----------------------------------------
OWN_LOOPS = {
    # CuriousAI/mean-teacher#29 ("Gradients because of ema being dependent upon student
    # variables"): "the teacher updates happen between training steps and gradients don't flow
    # across training steps". Here the update runs with gradients on, into a dict on a plain object.
    "ema_shadow_dict": ("""
class EMA:
    def __init__(self, model, decay=0.9):
        self.decay = torch.tensor(decay)
        self.shadow = {n: p.clone() for n, p in model.named_parameters()}
    def update(self, model):
        for n, p in model.named_parameters():
            self.shadow[n] = self.decay * self.shadow[n] + (1 - self.decay) * p   # BUG: not under no_grad
student = nn.Linear(4, 2)
ema = EMA(student)
opt = torch.optim.SGD(student.parameters(), lr=0.1)
for step in range(4):
    x = torch.randn(8, 4)
    teacher = torch.tanh(F.linear(x, ema.shadow['weight'], ema.shadow['bias']))
    loss = F.mse_loss(student(x), teacher)
    opt.zero_grad()
    loss.backward()
    opt.step()
    ema.update(student)
""", "ema.shadow", "detach-carried", False),   # detach, or start fresh? the graph cannot tell
    # pytorch/examples#151: REINFORCE's saved experience used by more than one finish_episode();
    # reinforce.py clears it after each episode (`del policy.saved_log_probs[:]`). 30 steps an
    # episode: the list holds 60 entries when the second episode's backward fails.
    "reinforce_saved_log_probs": ("""
class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self.saved_log_probs = []
    def forward(self, s):
        return F.softmax(self.fc(s), -1)
policy = Policy()
opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
for episode in range(3):
    for t in range(30):
        m = torch.distributions.Categorical(policy(torch.randn(4)))
        policy.saved_log_probs.append(m.log_prob(m.sample()))
    returns = torch.randn(len(policy.saved_log_probs))
    loss = torch.stack([-lp * R for lp, R in zip(policy.saved_log_probs, returns)]).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
""", "policy.saved_log_probs", "reset-per-episode", False),
    # dragen1860/MAML-Pytorch#54 ("something about Computational Graph": which graph loss_q is in):
    # each task's fast weights start from the meta-parameters (meta.py); here they are not reset.
    "maml_fast_weights": ("""
w = torch.randn(3, 1, requires_grad=True)          # the meta-parameter
meta_opt = torch.optim.SGD([w], lr=0.01)
fast = [w]
for task in range(3):
    xs, ys, xq, yq = torch.randn(5, 3), torch.randn(5, 1), torch.randn(5, 3), torch.randn(5, 1)
    for inner in range(2):
        inner_loss = ((xs @ fast[0] - ys) ** 2).mean()
        g, = torch.autograd.grad(inner_loss, fast, create_graph=True)
        fast = [fast[0] - 0.1 * g]
    meta_loss = ((xq @ fast[0] - yq) ** 2).mean()
    meta_opt.zero_grad()
    meta_loss.backward()
    meta_opt.step()
""", "fast", "reset-per-episode", False),
}


def run_own(name):
    src = OWN_LOOPS[name][0]
    ns = {}
    try:
        exec(PRELUDE + textwrap.dedent(src), ns)
    except RuntimeError as err:
        return ns, err
    raise AssertionError(f"{name} did not fail")


@pytest.mark.parametrize("name", sorted(OWN_LOOPS))
def test_own_loops_from_public_reports(name):
    ns, err = run_own(name)
    assert FREED_TEXT in str(err)
    _, culprit, kind, confident = OWN_LOOPS[name]
    d = why_backward_failed(err, names=ns)
    assert (d.culprit == culprit or d.culprit.startswith(culprit + "[")), d.message
    assert (d.fix_kind, d.confident) == (kind, confident), d.message
    assert d.culprit in d.message


def test_a_long_list_is_searched_newest_first():
    """The REINFORCE list holds 60 entries: the old ones it uses are still found by name."""
    ns, err = run_own("reinforce_saved_log_probs")
    assert len(ns["policy"].saved_log_probs) == 60
    d = why_backward_failed(err, names=ns)
    assert "del policy.saved_log_probs[:]" in d.fix


def test_maml_advice_is_to_restart_from_the_meta_parameters_and_detach_would_fail():
    ns, err = run_own("maml_fast_weights")
    d = why_backward_failed(err, names=ns)
    assert "Restart every task from the meta-parameters" in d.fix and "Do not detach" in d.fix
    src = OWN_LOOPS["maml_fast_weights"][0]
    detached = src.replace("for task in range(3):\n", "for task in range(3):\n    fast = [f.detach() for f in fast]\n")
    with pytest.raises(RuntimeError, match="does not require grad"):     # the advice we do not give
        exec(PRELUDE + textwrap.dedent(detached), {})
    reset = src.replace("for task in range(3):\n", "for task in range(3):\n    fast = [w]\n")
    exec(PRELUDE + textwrap.dedent(reset), {})                           # the advice we give: runs clean


def test_the_ema_fix_runs_clean():
    src = OWN_LOOPS["ema_shadow_dict"][0].replace(
        "        for n, p in model.named_parameters():\n            self.shadow[n]",
        "        for n, p in model.named_parameters():\n          with torch.no_grad():\n            self.shadow[n]")
    exec(PRELUDE + textwrap.dedent(src), {})


def test_script_form_inside_a_function_says_pass_locals():
    src = """
def train():
    cell = nn.RNNCell(3, 4)
    opt = torch.optim.SGD(cell.parameters(), lr=0.1)
    h = torch.zeros(1, 4)
    for step in range(3):
        h = cell(torch.randn(1, 3), h)
        loss = h.pow(2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
"""
    ns = {}
    exec(PRELUDE + textwrap.dedent(src), ns)
    try:
        ns["train"]()
    except RuntimeError as err:
        d = why_backward_failed(err, names=ns)             # the README's names=globals(), inside train()
    assert "pass names=locals() there" in d.message and "`train()`" in d.message
    assert d.culprit == "h" and d.fix_kind == "detach-carried"


# -- the in-place error: pytorch/pytorch#39141 (opt_D.step() between D's and G's backward) -----
GAN_STEP_BETWEEN = """
G = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 8))
D = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1), nn.Sigmoid())
opt_D = torch.optim.Adam(D.parameters(), lr=1e-4)
opt_G = torch.optim.Adam(G.parameters(), lr=1e-4)
for step in range(2):
    real = torch.randn(4, 8)
    fake = G(torch.randn(4, 5))
    prob_real, prob_fake = D(real), D(fake)
    D_loss = -torch.mean(torch.log(prob_real) + torch.log(1 - prob_fake))
    G_loss = torch.mean(torch.log(1 - prob_fake))
    opt_D.zero_grad()
    D_loss.backward(retain_graph=True)
    opt_D.step()
    opt_G.zero_grad()
    G_loss.backward()
    opt_G.step()
"""


def test_inplace_error_after_an_optimizer_step():
    ns = {}
    with pytest.raises(RuntimeError, match="modified by an inplace operation") as info:
        exec(PRELUDE + textwrap.dedent(GAN_STEP_BETWEEN), ns)
    d = why_backward_failed(info.value, names=ns)
    assert d.verdict == "modified" and not d.confident      # the writer is inferred, not recorded
    assert d.fix_kind == "backward-before-step" and d.culprit == "D[2].weight"
    assert "Not recorded: which line wrote in place" in d.message
    assert "`opt_D.step()` ran between" in d.fix
    assert re.search(r"saved `\w+` \(shape \(\d+, \d+\)\) at version \d+; it is at version \d+ now", d.message)
    assert "(saved as a view of it, e.g. its transpose)" in d.message
    assert "not the error this helper explains" not in d.message
    # the fix the issue's maintainers gave: both backwards before the step
    fixed = GAN_STEP_BETWEEN.replace("    opt_D.step()\n    opt_G.zero_grad()\n", "    opt_G.zero_grad()\n")
    fixed = fixed.replace("    opt_G.step()\n", "    opt_G.step()\n    opt_D.step()\n")
    exec(PRELUDE + textwrap.dedent(fixed), {})


def test_inplace_plus_equals_on_a_saved_tensor():
    w = torch.randn(3, requires_grad=True)
    h = torch.sigmoid(w * 2)
    out = (h * w).sum()
    h += 1                                   # MulBackward0 saved h (self) for w's gradient
    try:
        out.backward()
    except RuntimeError as err:
        d = why_backward_failed(err, names={"w": w, "h": h, "out": out})
    assert (d.culprit, d.fix_kind, d.confident) == ("h", "out-of-place", False)
    assert "`h = h + ...` instead of `h += ...`" in d.fix and "AddBackward0" in d.message


def test_inplace_diagnosis_reads_only(monkeypatch):
    ns = {}
    with pytest.raises(RuntimeError) as info:
        exec(PRELUDE + textwrap.dedent(GAN_STEP_BETWEEN), ns)
    versions = [p._version for p in ns["D"].parameters()]
    ran = []
    for owner, attr in ((torch.Tensor, "backward"), (torch.autograd, "backward"), (torch.autograd, "grad")):
        real = getattr(owner, attr)
        monkeypatch.setattr(owner, attr, lambda *a, _real=real, **k: (ran.append(1), _real(*a, **k))[1])
    calls = []
    ns["D"].register_forward_pre_hook(lambda *a: calls.append(1))
    ns["G"].register_forward_pre_hook(lambda *a: calls.append(1))
    d = why_backward_failed(info.value, names=ns)
    assert d.verdict == "modified" and ran == [] and calls == []
    assert [p._version for p in ns["D"].parameters()] == versions


def test_same_step_diagnosis_reads_only(monkeypatch):
    ns, err, _ = corpus("course_gan_no_detach")
    ran = []
    for owner, attr in ((torch.Tensor, "backward"), (torch.autograd, "backward"), (torch.autograd, "grad")):
        real = getattr(owner, attr)
        monkeypatch.setattr(owner, attr, lambda *a, _real=real, **k: (ran.append(1), _real(*a, **k))[1])
    calls = []
    for m in (ns["G"], ns["D"]):
        m.register_forward_pre_hook(lambda *a: calls.append(1))
    before = _state(ns, ns["g_loss"])
    d = why_backward_failed(err, names=ns)
    assert d.fix_kind == "detach-input" and ran == [] and calls == []
    assert before[0] == _state(ns, ns["g_loss"])[0]


# -- measured, not assumed --------------------------------------------------------------------
def _node_count(t):
    from backward_twice.trace import reachable_nodes
    return len(reachable_nodes(t))


def test_two_backwards_of_one_step_keep_the_graph_the_same_size_for_200_steps():
    """retain_graph=True on the first of two losses sharing one step's graph: each step builds and
    drops its own graph, so the count of nodes stays the same; carried state is what grows."""
    torch.manual_seed(0)
    trunk, head1, head2 = torch.nn.Linear(4, 8), torch.nn.Linear(8, 1), torch.nn.Linear(8, 1)
    counts = []
    for _step in range(200):
        z = torch.relu(trunk(torch.randn(2, 4)))
        l1, l2 = head1(z).pow(2).mean(), head2(z).pow(2).mean()
        l1.backward(retain_graph=True)
        l2.backward()
        counts.append(_node_count(l2))
    assert len(set(counts)) == 1
    h, w, grows = torch.zeros(1, 4), torch.randn(4, 4, requires_grad=True), []
    for _step in range(20):
        h = torch.tanh(h @ w)
        h.sum().backward(retain_graph=True)
        grows.append(_node_count(h))
    assert grows == sorted(grows) and grows[-1] > grows[0]


def test_large_graph_and_namespace_answer_and_report_the_time():
    """A 5,000-node graph and a namespace of 5,000 names with a 100,000-entry deque: measured
    (printed with -s), never asserted; the answer must still be right."""
    import collections
    import time

    torch.manual_seed(0)
    w = torch.randn(4, requires_grad=True)
    h = torch.zeros(4)
    ns = {f"v{i}": torch.zeros(1) for i in range(5_000)}
    ns["buffer"] = collections.deque((torch.zeros(1), torch.zeros(1)) for _ in range(100_000))
    try:
        for _step in range(2):
            for _t in range(1_250):                      # 2 nodes per time step, 2 steps: ~5,000 nodes
                h = torch.tanh(h * w)
            loss = h.sum()
            loss.backward()
    except RuntimeError as err:
        ns.update(w=w, h=h, loss=loss)
        start = time.perf_counter()
        d = why_backward_failed(err, names=ns)
        seconds = time.perf_counter() - start
    assert _node_count(loss) >= 5_000
    assert d.culprit == "h" and d.fix_kind == "detach-carried"
    print(f"\n5,000-node graph, 5,000 names + a 100,000-entry deque: {seconds:.2f} s")


# -- more shapes from issue 19's list, each run as written and diagnosed --------------------------
PROBES = {
    # pytorch/examples#584 (DCGAN's main.py): errD_real and errD_fake backwarded one by one, the D step
    # on netD(fake) without detach, then errG on netD(fake) again.
    "dcgan": ("""
netG = nn.Sequential(nn.Linear(4, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 8), nn.Tanh())
netD = nn.Sequential(nn.Linear(8, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1), nn.Sigmoid())
criterion = nn.BCELoss()
optimizerD = torch.optim.Adam(netD.parameters(), lr=2e-4)
optimizerG = torch.optim.Adam(netG.parameters(), lr=2e-4)
for i in range(2):
    netD.zero_grad()
    errD_real = criterion(netD(torch.randn(16, 8)).view(-1), torch.ones(16))
    errD_real.backward()
    fake = netG(torch.randn(16, 4))
    errD_fake = criterion(netD(fake).view(-1), torch.zeros(16))
    errD_fake.backward()
    optimizerD.step()
    netG.zero_grad()
    errG = criterion(netD(fake).view(-1), torch.ones(16))
    errG.backward()
    optimizerG.step()
""", ("fake", "detach-input", False)),
    # notebook 02's two heads on a shared trunk, backwarded one by one in one step
    "two_heads": ("""
trunk = nn.Sequential(nn.Linear(5, 8), nn.ReLU())
head_a, head_b = nn.Linear(8, 1), nn.Linear(8, 3)
features = trunk(torch.randn(4, 5))
loss_a = F.mse_loss(head_a(features), torch.randn(4, 1))
loss_b = F.cross_entropy(head_b(features), torch.tensor([0, 1, 2, 0]))
loss_a.backward()
loss_b.backward()
""", ("features", "retain-or-sum", False)),
    # issue 19's Kalman filter: P carried across windows while the loss sums each window's terms
    "kalman_P": ("""
q = torch.zeros(2, requires_grad=True)
opt = torch.optim.Adam([q], lr=1e-2)
Fm, H, R = torch.tensor([[1., 1.], [0., 1.]]), torch.tensor([[1., 0.]]), torch.tensor([[0.1]])
x, P, ys = torch.zeros(2, 1), torch.eye(2), torch.randn(30, 1, 1)
for w in range(3):
    loss = 0
    for t in range(10):
        y = ys[w * 10 + t]
        x, P = Fm @ x, Fm @ P @ Fm.T + torch.diag(F.softplus(q))
        K = P @ H.T / (H @ P @ H.T + R)
        x, P = x + K @ (y - H @ x), (torch.eye(2) - K @ H) @ P
        loss = loss + ((y - H @ x) ** 2).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    x = x.detach()
""", ("P", "detach-carried", False)),
    # the PyTorch DQN tutorial's ReplayMemory (a deque of transitions), here filled with encoder
    # outputs that keep their graph
    "dqn_deque": ("""
import collections, random
random.seed(0)
encoder, qnet = nn.Linear(6, 4), nn.Linear(4, 2)
opt = torch.optim.Adam([*encoder.parameters(), *qnet.parameters()], lr=1e-3)
memory = collections.deque(maxlen=1000)
for step in range(40):
    state = encoder(torch.randn(1, 6))
    memory.append((state, qnet(state).argmax().item(), 1.0))
    if len(memory) >= 8:
        batch = random.sample(memory, 8)
        loss = ((qnet(torch.cat([b[0] for b in batch]))[:, 0] - 1.0) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
""", ("memory", "detach-carried", False)),
    # the same tutorial's ReplayMemory class and its Transition namedtuple: the batch sampled from
    # `memory.memory` holds the same transitions; the buffer is named, not the sample
    "dqn_replay_memory_class": ("""
import collections, random
random.seed(0)
Transition = collections.namedtuple("Transition", ("state", "action", "next_state", "reward"))
class ReplayMemory:
    def __init__(self, capacity):
        self.memory = collections.deque([], maxlen=capacity)
    def push(self, *args):
        self.memory.append(Transition(*args))
    def sample(self, n):
        return random.sample(self.memory, n)
encoder, qnet = nn.Linear(6, 4), nn.Linear(4, 2)
opt = torch.optim.Adam([*encoder.parameters(), *qnet.parameters()], lr=1e-3)
memory = ReplayMemory(1000)
for step in range(30):
    s = encoder(torch.randn(1, 6))
    memory.push(s, 0, s, 1.0)
    if len(memory.memory) >= 8:
        transitions = memory.sample(8)
        batch = Transition(*zip(*transitions))
        loss = qnet(torch.cat(batch.state)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
""", ("memory.memory", "detach-carried", False)),
    # pytorch/pytorch#6017's FAQ note on a running total kept as a tensor, averaged before backward
    "running_average": ("""
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loss_sum = torch.zeros(())
for i in range(3):
    loss = ((model(torch.randn(4, 3)) - 1) ** 2).mean()
    loss_sum = loss_sum + loss
    opt.zero_grad()
    (loss_sum / (i + 1)).backward()
    opt.step()
""", ("loss_sum", "accumulate-number", False)),
}


@pytest.mark.parametrize("name", sorted(PROBES))
def test_more_shapes_from_issue_19(name):
    d = diagnosed_as_labelled(*PROBES[name])
    if not d.confident:        # after the fact: what is unknown is said, with how to record it
        assert "Not recorded" in d.message and "%why_backward on" in d.message


def test_an_unnamed_inplace_op_is_found_from_the_graph():
    """`out += x` inside a forward: no name reaches it, the graph still shows the op."""
    torch.manual_seed(0)
    fc = torch.nn.Linear(4, 4)
    x = torch.randn(2, 4)
    out = torch.tanh(fc(x))
    out += x
    with pytest.raises(RuntimeError, match="inplace") as info:
        out.sum().backward()
    d = why_backward_failed(info.value, names={"fc": fc})
    assert (d.fix_kind, d.confident, d.culprit) == ("out-of-place", False, None)
    assert "AddBackward0" in d.message and "+= / add_" in d.fix


# the audit's program C: `preds = probs` then `preds += 0.5`; the tool said "`probs = probs + ...`
# instead of `probs += ...`", a line the user never wrote
ALIASED_INPLACE = """
model = nn.Linear(6, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x, y = torch.randn(16, 6), torch.randint(0, 2, (16, 1)).float()
    probs = torch.sigmoid(model(x))
    loss = F.binary_cross_entropy(probs, y)
    preds = probs
    preds += 0.5                      # round by floor(p + 0.5)
    acc = (preds.floor() == y).float().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_inplace_through_an_alias_names_the_name_the_code_writes_into(tmp_path):
    """With the source at hand (a file, a notebook cell): the line that writes is quoted, and the
    fix is on its name; `preds = preds + 0.5` is the fix that runs clean."""
    prog = tmp_path / "aliased.py"
    prog.write_text(PRELUDE + ALIASED_INPLACE)
    ns = {}
    with pytest.raises(RuntimeError, match="inplace") as info:
        exec(compile(prog.read_text(), str(prog), "exec"), ns)
    d = why_backward_failed(info.value, names=ns)
    assert (d.culprit, d.fix_kind, d.confident) == ("preds", "out-of-place", False), d.message
    assert "`preds = preds + ...` instead of `preds += ...`" in d.fix and "probs +=" not in d.message, d.message
    assert "also named `preds`" in d.message and "`preds += 0.5`" in d.message
    exec(PRELUDE + ALIASED_INPLACE.replace("preds += 0.5", "preds = preds + 0.5"), {})


def test_inplace_through_an_alias_without_source_names_every_name():
    """No source (exec of a string): which name the line uses is unknown, so the fix names them
    all and invents no line."""
    ns = {}
    with pytest.raises(RuntimeError, match="inplace") as info:
        exec(PRELUDE + ALIASED_INPLACE, ns)
    d = why_backward_failed(info.value, names=ns)
    assert d.fix_kind == "out-of-place" and set(d.culprits) >= {"probs", "preds"}, d.message
    assert "`probs` and `preds`" in d.fix and "`x = x + ...` instead of `x += ...`" in d.fix, d.fix
    assert "probs +=" not in d.message and "preds +=" not in d.message, d.message


# -- backward_twice.names: where people keep tensors --------------------------------------------------
def test_names_are_found_in_containers_objects_and_private_attributes_within_bounds():
    import collections

    from backward_twice import names

    class Box:
        def __init__(self):
            self.shadow = {"w": torch.ones(1)}
            self._hidden = torch.ones(2)
            self.me = self                                       # a cycle: visited once

        @property
        def boom(self):                                          # never run
            raise AssertionError("a property ran")

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.Sequential(torch.nn.Linear(2, 2))
            self._state = torch.zeros(3)

    long = collections.deque(torch.full((1,), float(i)) for i in range(names.MAX_ITEMS + 50))
    ns = {"ema": Box(), "net": Net(), "memory": [(torch.ones(1), torch.ones(1))], "buf": long, "_9": torch.ones(1)}
    found = dict(names.named_tensors(ns))
    for path in ("ema.shadow['w']", "ema._hidden", "net._state", "net.layers[0].weight", "memory[0][1]"):
        assert path in found, (path, sorted(found))
    last = len(long) - 1
    assert f"buf[{last}]" in found and found[f"buf[{last}]"] is long[-1]      # the newest are seen
    assert f"buf[{last - names.MAX_ITEMS}]" not in found and "buf[0]" not in found   # bounded
    assert "_9" not in found                                    # IPython's output history is skipped
    both = names.named_tensors({"a": long[-1], "buf": long}, every_path=True)
    assert [p for p, t in both if t is long[-1]] == ["a", f"buf[{last}]"]   # a tensor kept twice: both paths


# --- diag-fix: one test per rule changed after reading the held-out misses (docs/diagnosis.md) ---
# (program, the tool's culprit, fix kind, confident, a phrase of the evidence that the rule rests on)
DIAG_FIX_CASES = {
    "heldout/compile_unbind_outputs": (None, "retain-or-sum", False, "cannot be read"),
    "heldout/kv_cache_without_no_grad": ("attn.cache_k", "detach-carried", False, "a buffer registered on `attn`"),
    "heldout/lif_state_script_form": ("s", "detach-carried", False, "same kind of node"),
    "heldout/maml_fast_weights_not_reset": ("fast_weights", "reset-per-episode", False, "still holds the previous task"),
    "heldout/pg_replay_sampled_twice": ("memory", "recompute-in-step", False, "without a gradient"),
    "heldout/reinforce_log_probs_kept": ("policy.saved_log_probs", "reset-per-episode", False, "the first 20 entries"),
    "heldout/sam_loss_not_restarted": ("loss", "reset-per-episode", False, "2 separate forward passes"),
    "heldout/value_computed_before_loop": ("y", "recompute-in-step", False, "it was not rebound"),
    "dev/tsan_out_is_x_plus_equals": ("y", "out-of-place", False, "a module of your own class `Block`"),
}


@pytest.mark.parametrize("name", sorted(DIAG_FIX_CASES))
def test_diag_fix_rule_on_its_program(name):
    from diagnosis_corpus import harness
    path = harness.HERE / f"{name}.py"
    ns, err = harness.run(path)
    culprit, kind, confident, phrase = DIAG_FIX_CASES[name]
    d = why_backward_failed(err, names=ns)
    assert (d.culprit, d.fix_kind, d.confident) == (culprit, kind, confident), d.message
    assert phrase in d.message, d.message
    if not confident:          # not confident: candidates and what to check, or what was not recorded
        assert (len(d.candidates) >= 2 and d.check) or "Not recorded" in d.message, d.message


def test_diag_fix_maml_fix_names_the_meta_parameters():
    from diagnosis_corpus import harness
    ns, err = harness.run(harness.HERE / "heldout" / "maml_fast_weights_not_reset.py")
    d = why_backward_failed(err, names=ns)
    assert "`fast_weights = [w, b]`" in d.fix and "Do not detach" in d.fix, d.fix


def test_diag_fix_reinforce_premise_only_the_stale_entries_fail():
    """The stale-list rule's premise on its program: the loss read the list's first (stale) entries;
    reading this episode's own (the last len(returns)) instead runs clean, list uncleared or not."""
    src = (harness_path := __import__("diagnosis_corpus.harness", fromlist=["HERE"]).HERE /
           "heldout" / "reinforce_log_probs_kept.py").read_text()
    src = src.replace("zip(policy.saved_log_probs, returns)", "zip(policy.saved_log_probs[-len(returns):], returns)")
    ns = {"__name__": "__corpus__"}
    exec(compile(src, str(harness_path), "exec"), ns)       # only this episode's entries: no error
    assert len(ns["policy"].saved_log_probs) == 60


def _rnn_loop_error(extra_line: str):
    """An RNN cell whose h is carried with its graph, with one extra line in the loop; (ns, err)."""
    src = f"""
cell = nn.RNNCell(3, 4)
opt = torch.optim.SGD(cell.parameters(), lr=0.1)
h, hs = torch.zeros(1, 4), []
for step in range(3):
    prev = h
    h = cell(torch.randn(1, 3), h)
    {extra_line}
    loss = h.pow(2).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""
    ns = {}
    with pytest.raises(RuntimeError, match=FREED_TEXT) as info:
        exec(PRELUDE + textwrap.dedent(src), ns)
    return ns, info.value


@pytest.mark.parametrize("extra", ["hs.append(h)", "pass"])
def test_diag_fix_a_logged_or_aliased_state_is_still_the_carried_state(extra):
    """Guards of the diag-fix rules against their own false positives: `hs.append(h)` logs the state
    (hs[1] is made from hs[0]: not a list to clear), and `prev = h` keeps the old state under a name
    (the same computation repeats: still a rebound state, not a value made once)."""
    ns, err = _rnn_loop_error(extra)
    d = why_backward_failed(err, names=ns)
    assert (d.culprit, d.fix_kind) == ("h", "detach-carried"), d.message
    assert not d.confident, d.message


@pytest.mark.parametrize("name, code", [
    ("dev/course_d_e_graph", "`(d + e).backward()`"),                        # the user's two names
    ("dev/a3c_shared_body_two_backwards", "`(policy_loss + this_loss).backward()`"),   # (0.5 * value_loss)
    ("dev/running_total_backwarded", "`total_loss += loss.item()`")])
def test_fix_code_uses_the_users_names_or_a_neutral_word(name, code):
    """The code a fix shows is written in the user's own names when the namespace has them (the
    audit's actor-critic read `(critic_loss + loss).backward()` for its `actor_loss`); a loss with
    no name of its own is `this_loss`, never a name the user may have for something else."""
    from diagnosis_corpus import harness
    ns, err = harness.run(harness.HERE / f"{name}.py")
    d = why_backward_failed(err, names=ns)
    assert code in d.fix, d.fix


# -- notebook 12's checkpoint and compile errors (issue 22, section 4) ---------------------------
def _nb12_block(calls):
    """Notebook 12's block, with a forward pre-hook that counts its starts (a re-run would show)."""
    torch.manual_seed(0)
    block = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2), torch.nn.Tanh())
    block.register_forward_pre_hook(lambda *_: calls.append(1))
    return block


@pytest.mark.parametrize("use_reentrant, stop_in", [(True, "CheckpointFunctionBackward"), (False, "TanhBackward0")])
def test_checkpoint_backwarded_twice_is_diagnosed_where_the_engine_stops(use_reentrant, stop_in):
    """Notebook 12: checkpoint(block, x) then .sum(), backward, backward again. A reentrant
    checkpoint keeps the block's inputs in ctx.saved_tensors (no `_saved_*` slot): this was
    answered "would succeed now ... the graph was rebuilt since", while the second backward
    raises. Now: stopped where the real engine stops, nothing re-run, for the error and the tensor."""
    from torch.utils.checkpoint import checkpoint

    calls = []
    block = _nb12_block(calls)
    x = torch.randn(2, 3, requires_grad=True)
    loss = checkpoint(block, x, use_reentrant=use_reentrant).sum()
    loss.backward()
    with pytest.raises(RuntimeError, match=FREED_TEXT) as info:
        with where_backward_stops(loss) as stop:
            loss.backward()
    assert stop.stopped_in == stop_in
    ran = len(calls)
    for what in (info.value, loss):
        d = why_backward_failed(what, names={"x": x, "loss": loss, "block": block})
        assert d.verdict == "stopped" and "would succeed" not in d.message, d.message
        assert d.stopped_at == stop_in and d.path == ["SumBackward0", stop_in], d.message
        assert d.fix_kind == "retain-or-sum" and d.culprits[0] == "loss", d.message
        assert d.picture is not None
    assert len(calls) == ran                              # read only: the block never ran again
    if use_reentrant:
        assert "inputs (a reentrant checkpoint's ctx.saved_tensors)" in d.message


def test_compiled_graph_backwarded_twice_is_diagnosed_where_the_engine_stops():
    """loss = compiled(x).sum() (SumBackward0 saves no tensor): the only state is the compiled
    node's ctx.saved_tensors, which the first backward released."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    loss = torch.compile(model, backend="aot_eager")(torch.randn(2, 3)).sum()
    loss.backward()
    with pytest.raises(RuntimeError, match=FREED_TEXT) as info:
        with where_backward_stops(loss) as stop:
            loss.backward()
    d = why_backward_failed(info.value, names={"loss": loss})
    assert d.verdict == "stopped" and d.stopped_at == stop.stopped_in == "CompiledFunctionBackward", d.message
    assert d.fix_kind == "retain-or-sum", d.message


def test_compiled_donated_buffers_error_is_named_and_not_called_a_freed_graph():
    """Notebook 12 section 4.1: retain_graph=True after an ordinary compiled backward. Another error
    than the freed graph: said so, with what it means; the graph still runs a plain backward, as
    the message says; the tensor form says the graph cannot show it."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    compiled, xs = torch.compile(model, backend="aot_eager"), torch.randn(2, 3)
    compiled(xs).pow(2).mean().backward()
    loss = compiled(xs).pow(2).mean()
    with pytest.raises(RuntimeError, match="non-empty donated buffers") as info:
        loss.backward(retain_graph=True)
    d = why_backward_failed(info.value, names={"loss": loss})
    assert d.verdict == "unrelated" and "nothing for it to diagnose" in d.message, d.message
    assert "donated buffers" in d.message and "retain_graph=True on the first backward" in d.message
    t = why_backward_failed(loss, names={"loss": loss})
    assert t.verdict == "would succeed" and "rebuilt since" not in t.message, t.message
    assert "compiled with non-empty donated buffers" in t.message and "4 tensors" in t.message, t.message
    loss.backward()                                        # "the error frees nothing": it runs


def test_a_released_custom_function_is_not_called_fine_nor_a_stop():
    """A custom autograd.Function that saved nothing and whose backward reads no ctx.saved_tensors:
    once backwarded, its state reads as released, like a checkpoint's, yet a second backward
    through it runs. Neither 'would succeed' nor a stop can be read from the graph: said so."""
    class Twice(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return 2 * x

        @staticmethod
        def backward(ctx, g):
            return 2 * g

    x = torch.ones(3, requires_grad=True)
    loss = Twice.apply(x).sum()
    loss.backward()
    d = why_backward_failed(loss, names={"x": x, "loss": loss})
    assert d.verdict == "cannot tell" and "TwiceBackward" in d.message, d.message
    assert "would succeed" not in d.message
    loss.backward()                                        # and indeed it runs again
    assert x.grad.tolist() == [4.0, 4.0, 4.0]
