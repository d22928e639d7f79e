"""docs/teachers_guide.md is generated (scripts/teachers_guide.py, data in scripts/lesson_plans.toml):
in sync with the notebooks; every notebook has a 45-minute plan with no unplanned minute, a predict
question (with the committed error as its expected answer) before each live error, an answer key
that explains every exercise, questions students ask, homework that is not done in class; the 01
plan points to 10 §1. The counter-intuitive facts the guide states are run here on torch."""
import pathlib
import re

import nbformat
import pytest
import torch

from scripts import handout, lengths, nav, skeleton
from scripts import teachers_guide as tg

PLANS = tg.load_plans()
NOTEBOOKS = {p.name[:2]: p for p in nav.notebooks()}


def test_guide_is_in_sync():
    assert tg.GUIDE.read_text() == tg.guide(), "out of date: run python scripts/teachers_guide.py"


@pytest.mark.parametrize("n", sorted(NOTEBOOKS))
def test_every_notebook_has_a_plan_that_fits_its_notebook(n):
    data = PLANS.get(n)
    assert data is not None, f"notebook {n}: no plan in scripts/lesson_plans.toml"
    nb = nbformat.read(NOTEBOOKS[n], as_version=4)
    exercises = skeleton.classify(nb).exercise_names()
    assert set(data["in_class"]) <= set(exercises) and data["in_class"], (n, data["in_class"])
    if "homework" in data:                       # homework: not what the class did together
        assert data["homework"] in exercises and data["homework"] not in data["in_class"], n
    else:
        assert data["homework_task"].strip() and set(data["in_class"]) == set(exercises), n
    assert sorted(data["answers"]) == sorted(exercises), f"{n}: every exercise needs its explanation"
    assert data["asked"] and all(x["q"] and x["a"] for x in data["asked"]) and data["stuck"]
    keys = {s.key for s in tg.sections(nb)} | {"Summary"}
    assert set(data.get("say", {})) <= keys, (n, set(data.get("say", {})) - keys)
    errors = {sub for s in tg.sections(nb) for kind, detail in s.live if kind == "error" for sub in tg.parent_keys(detail[0])}
    assert set(data.get("predict", {})) <= errors, (n, set(data.get("predict", {})) - errors)


@pytest.mark.parametrize("n", sorted(NOTEBOOKS))
def test_every_section_has_talking_points_and_every_live_error_a_why(n):
    """Each core section (and the Summary) has its own `say`, so no row falls back to the
    notebook's first sentence; each live error's predict question has a why in its answer."""
    nb = nbformat.read(NOTEBOOKS[n], as_version=4)
    say = PLANS[n].get("say", {})
    missing = [s.key for s in tg.sections(nb) if not say.get(s.key, "").strip()]
    assert not missing, f"notebook {n}: no `say` in scripts/lesson_plans.toml for section(s) {missing}"
    assert say.get("Summary", "").strip(), f"notebook {n}: no `say` for the Summary"
    rows, _ = tg.plan_rows(NOTEBOOKS[n], PLANS[n])
    assert not [r.what for r in rows if "(from the notebook)" in r.say]
    errors = [detail for s in tg.sections(nb) for kind, detail in s.live if kind == "error"]
    no_why = [sub for sub, err in errors if " Why: " not in tg.predict_text(PLANS[n], sub, err)[1]]
    assert not no_why, f"notebook {n}: no `predict` why in scripts/lesson_plans.toml for section(s) {no_why}"


def test_the_fallback_is_a_whole_sentence():
    """Without a `say`, a row shows the section's first sentence, whole: never cut at a colon,
    an abbreviation, a dotted name or a length."""
    md = ("## 1. Title\n\nThe article *What is retain_graph in PyTorch: Explanation and Usage* shows it, "
          "e.g. with `x.grad` at 0.5, word for word. Before running it, decide.\n\nNext paragraph.")
    assert tg.first_sentence(md) == ("The article *What is retain_graph in PyTorch: Explanation and Usage* "
                                     "shows it, e.g. with `x.grad` at 0.5, word for word.")
    long = "It asks this of Theano: " + "is it *\"intelligent enough\"* " * 20 + "to avoid it? We cannot run it."
    assert tg.first_sentence(long) == long.removesuffix(" We cannot run it.")
    assert tg.first_sentence("Two micro-batches of 4, no scaling:") == "Two micro-batches of 4, no scaling:"
    assert tg.first_sentence('He said *"it works."* Then it failed.') == 'He said *"it works."*'


@pytest.mark.parametrize("n", sorted(NOTEBOOKS))
def test_every_plan_fills_the_period_minute_by_minute(n):
    rows, _ = tg.plan_rows(NOTEBOOKS[n], PLANS[n])
    assert rows[0].start == 0 and all(a.start + a.minutes == b.start for a, b in zip(rows, rows[1:]))
    assert rows[-1].start + rows[-1].minutes == tg.PERIOD and all(r.minutes >= 1 for r in rows)
    assert [r.what for r in rows[-2:]] == ["Questions students ask", "Wrap-up"]
    assert tg.MIN_QUESTIONS <= rows[-2].minutes <= tg.MAX_QUESTIONS


def test_sessions_are_whole_plans_with_no_unplanned_minute():
    text = tg.guide()
    for length, sessions in tg.SESSIONS.items():
        for session in sessions:
            assert tg.PERIOD * len(session) == length, (length, session)
            assert all(n in PLANS for n in session)
    assert re.findall(r"^- Session \d \((\d+) of (\d+) min\)", text, re.M) == \
        [(str(tg.PERIOD * len(s)), str(length)) for length, ss in tg.SESSIONS.items() for s in ss]


@pytest.mark.parametrize("n", sorted(NOTEBOOKS))
def test_each_live_error_gets_a_predict_question_and_its_real_error(n):
    """One predict line per error a core-path cell shows (its committed output, checked by nbval),
    with that error's type and first sentence as the expected answer."""
    path = NOTEBOOKS[n]
    nb = nbformat.read(path, as_version=4)
    sk = skeleton.classify(nb)
    live = [tg.error_of(c) for i, c in enumerate(nb.cells) if c.cell_type == "code" and sk.core(i)
            and not lengths.is_hidden(c) and tg.error_of(c) is not None and sk.kind[sk.section[i]] != "title"]
    rows, _ = tg.plan_rows(path, PLANS[n])
    predicts = [line for r in rows for line in r.live if line.startswith("**Predict this**")]
    assert len(predicts) == len(live), (n, len(predicts), len(live))
    for line, err in zip(predicts, live):
        assert f"It raises `{err['ename']}: " in line and tg.error_line(err).split(": ", 1)[1][:40] in line


def test_minutes_are_the_length_scripts(monkeypatch):
    """The guide reads each notebook's core and exercise minutes from scripts/lengths.py when it is
    generated, and states the model's rate in lengths.RATE's own words."""
    fake = {p.name[:2]: 31 + 2 * k for k, p in enumerate(nav.notebooks())}     # made up: 31, 33, ... minutes
    fake_ex = {n: 50 + m for n, m in fake.items()}                                # made up: 81, 83, ...
    monkeypatch.setattr(lengths, "core_minutes", lambda path: fake[pathlib.Path(path).name[:2]])
    monkeypatch.setattr(lengths, "exercise_minutes", lambda path: fake_ex[pathlib.Path(path).name[:2]])
    text = tg.guide()
    rows = re.findall(r"^\| \[(\d\d) · [^\]]+\]\([^)]+\) \| (\d+) \| (\d+) \|", text, re.M)
    assert rows == [(n, str(fake[n]), str(fake_ex[n])) for n in fake]
    heads = re.findall(r"Core path: \*\*(\d+) min\*\*; exercises: \*\*(\d+) min\*\*", text)
    assert heads == [(str(fake[n]), str(fake_ex[n])) for n in fake]
    assert lengths.RATE in text and "6 s per visible code line" not in text


@pytest.mark.parametrize("n", sorted(NOTEBOOKS))
def test_an_exercise_in_class_gets_its_model_minutes_plus_the_stated_margin(n):
    rows, _ = tg.plan_rows(NOTEBOOKS[n], PLANS[n])
    exercise_rows = [r for r in rows if r.what.startswith("Exercise ")]
    assert [r.what for r in exercise_rows] == [f"Exercise {x}" for x in PLANS[n]["in_class"]]
    assert tg.EXERCISE_MINUTES == lengths.MINUTES_PER_EXERCISE + tg.EXERCISE_MARGIN
    assert all(r.minutes == tg.EXERCISE_MINUTES for r in exercise_rows)
    assert all(f"({lengths.MINUTES_PER_EXERCISE} min" in r.say and f"({tg.EXERCISE_MARGIN} min margin)" in r.say
               for r in exercise_rows)


def test_the_plan_for_01_points_to_10_section_1():
    rows, _ = tg.plan_rows(NOTEBOOKS["01"], PLANS["01"])
    links = re.findall(r"\]\(\.\./notebooks/(10_[^)#]+)#([^)]+)\)", " ".join(r.say for r in rows))
    assert links, "no link to notebook 10 in 01's plan"
    (file, frag), = links
    ten = nbformat.read(nav.NB_DIR / file, as_version=4)
    assert frag in skeleton.anchors(ten) and frag.startswith("1.-")


def test_guide_is_a_site_page_with_page_links():
    pages = {name: text for name, _, text in handout.pages([nav.info(p) for p in nav.notebooks()])}
    assert "](../notebooks/" not in pages["teachers_guide.html"]
    assert f"]({nav.notebooks()[0].name})" in pages["teachers_guide.html"]


# ---- the counter-intuitive facts of the answer key, run on this torch --------------------------

def saved_tensors(fn):
    return [getattr(fn, a) for a in dir(fn) if a.startswith("_saved_") and isinstance(getattr(fn, a), torch.Tensor)]


def test_answer_1_3_x_times_x_keeps_0_bytes_and_an_intermediate_keeps_some():
    """1.3: y = x * x saves the leaf x twice, itself, not a copy; retain_graph then keeps 0 extra
    bytes. A graph that saves an intermediate result keeps some."""
    from backward_twice.memory import LiveSaved

    x = torch.tensor(2.0, requires_grad=True)
    y = x * x
    assert [t.data_ptr() for t in saved_tensors(y.grad_fn)] == [x.data_ptr(), x.data_ptr()]

    def alive_after(make, retain):          # as notebook 01's check cell measures it
        x = torch.tensor(2.0, requires_grad=True)
        with LiveSaved() as st:
            y = make(x)
        y.backward(retain_graph=retain)
        return st.alive_nbytes

    assert alive_after(lambda x: x * x, True) - alive_after(lambda x: x * x, False) == 0
    assert alive_after(lambda x: (x * 2).exp().sum(), True) - alive_after(lambda x: (x * 2).exp().sum(), False) > 0


def test_answer_1_2_which_ops_save_a_tensor():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    saves = {label: bool(saved_tensors(f(x).grad_fn)) for label, f in [
        ("x + 1", lambda x: x + 1), ("-x", lambda x: -x), ("x.mean()", lambda x: x.mean()), ("x[0]", lambda x: x[0]),
        ("x * 3", lambda x: x * 3), ("x / 2", lambda x: x / 2), ("x.exp()", lambda x: x.exp()),
        ("x.relu()", lambda x: x.relu())]}
    assert {k for k, v in saves.items() if not v} == {"x + 1", "-x", "x.mean()", "x[0]"}
    assert hasattr((x * 3).grad_fn, "_saved_other") and hasattr((x / 2).grad_fn, "_saved_other")
    assert hasattr(x.exp().grad_fn, "_saved_result") and hasattr(x.relu().grad_fn, "_saved_result")


def test_answer_0_1_and_0_3_what_sin_times_x_and_exp_times_x_save():
    x = torch.tensor([0.5, 1.0], requires_grad=True)
    y = (x.sin() * x).sum()
    mul = y.grad_fn.next_functions[0][0]
    sin = mul.next_functions[0][0]
    assert not saved_tensors(y.grad_fn) and len(saved_tensors(mul)) == 2 and len(saved_tensors(sin)) == 1


def test_answers_2_3_4_2_4_3_5_3_run():
    p = torch.nn.Parameter(torch.ones(2))               # 2.3: SGD skips a parameter without .grad
    version = p._version
    torch.optim.SGD([p], lr=0.5).step()
    assert p._version == version and torch.equal(p, torch.ones(2))

    def hooked():                                       # 4.2 and 4.3
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y.retain_grad()
        seen = []
        y.register_hook(lambda g: seen.append(g.tolist()))
        y.mul_(5)
        ((y * y).sum() / 2).backward()
        return y.grad.tolist(), seen
    grad, seen = hooked()
    assert grad == [10.0, 20.0] and seen == [[50.0, 100.0]]

    x = torch.tensor(3.0, requires_grad=True)          # 5.3
    with pytest.warns(UserWarning, match="reference cycle"):   # the leak warning 05 teaches
        (x ** 3).backward(create_graph=True)
    assert x.grad.item() == 27 and x.grad.grad_fn is not None
    x.grad.backward()
    assert x.grad.item() == 45


# ---- notebook 12: checkpointing (cheap, no compile; the compiled cases run in the notebook itself) ----

def starts_of_a_checkpointed_block(use_reentrant, backwards):
    """How many times a checkpointed block starts (a forward pre-hook, as notebook 12 counts) when
    `backwards` is run on (out, loss1, loss2)."""
    from torch.utils.checkpoint import checkpoint

    torch.manual_seed(0)
    block = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2), torch.nn.Tanh())
    starts = []
    block.register_forward_pre_hook(lambda *_: starts.append(1))
    out = checkpoint(block, torch.randn(2, 3, requires_grad=True), use_reentrant=use_reentrant)
    backwards(out, out.pow(2).sum(), out.abs().sum())
    return len(starts)


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_answer_12_1_and_the_homework_every_backward_through_a_checkpoint_recomputes(use_reentrant):
    def three_retained(out, loss1, loss2):
        for _ in range(3):
            loss1.backward(retain_graph=True)

    def sequential(out, loss1, loss2):
        loss1.backward(retain_graph=True)
        loss2.backward()

    def summed(out, loss1, loss2):
        (loss1 + loss2).backward()

    assert starts_of_a_checkpointed_block(use_reentrant, three_retained) == 4      # 12.1: 1 + 3
    assert starts_of_a_checkpointed_block(use_reentrant, sequential) == 3          # homework: 1 + 2
    assert starts_of_a_checkpointed_block(use_reentrant, summed) == 2              # 1 + 1


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_predict_12_section_3_the_second_backward_stops_at_pow_above_the_checkpoint(use_reentrant):
    from torch.utils.checkpoint import checkpoint

    block = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh())
    loss = checkpoint(block, torch.randn(2, 3, requires_grad=True), use_reentrant=use_reentrant).pow(2).sum()
    pow_node = loss.grad_fn.next_functions[0][0]
    assert pow_node.name() == "PowBackward0"
    loss.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        _ = pow_node._saved_self           # reading the freed saved tensor raises
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()


def test_12_section_2_two_segments_save_the_most_and_one_layer_segments_nothing():
    """The plan's section 2 claim, on a narrower copy of the notebook's MLP (7 Linear + ReLU layers)."""
    from torch.utils.checkpoint import checkpoint_sequential

    from backward_twice.memory import LiveSaved

    torch.manual_seed(0)
    hidden = torch.nn.Sequential(*[m for _ in range(7) for m in (torch.nn.Linear(32, 32), torch.nn.ReLU())])
    h = torch.randn(64, 32, requires_grad=True)
    saved = {}
    for segments in (0, 2, 4, 7):
        with LiveSaved(exclude=list(hidden.parameters())) as live:
            out = checkpoint_sequential(hidden, segments, h, use_reentrant=True) if segments else hidden(h)
        saved[segments] = live.nbytes
        out.sum().backward()
    assert saved[2] < saved[4] < saved[0] == saved[7], saved


# ---- notebook 13: the arithmetic of its answers, in one process (DDP runs are in the notebook) ----

def test_answer_13_2_and_section_1_bytes_are_4_per_parameter():
    from helpers import ddp_steps

    one, two = ddp_steps.TwoHeads(heads=1), ddp_steps.TwoHeads(heads=2)
    assert sum(p.numel() for p in one.parameters()) == 49 and sum(p.numel() for p in two.parameters()) == 58
    assert {p.dtype for p in two.parameters()} == {torch.float32} and torch.float32.itemsize == 4
    assert 49 * 4 == 196 and 58 * 4 == 232


def test_answer_13_3_each_rank_adds_its_own_loss2_gradient_and_those_differ():
    """13.3's explanation: a rank holds loss1's averaged gradient (the same on both) plus its own
    loss2 gradient (notebook 13 checks that identity with real DDP); the own parts differ, so
    heads.0.bias differs between the ranks."""
    from helpers import ddp_steps

    avg1 = ddp_steps.reference(2, heads=1, losses=(1,))
    held = [{k: avg1[k] + g for k, g in ddp_steps.reference(2, heads=1, losses=(2,), ranks=[r]).items()}
            for r in (0, 1)]
    assert not torch.allclose(held[0]["heads.0.bias"], held[1]["heads.0.bias"])
