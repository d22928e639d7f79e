"""backward_twice.record: what it records, that it changes nothing, that it stays bounded, and its
four routes (issue 27 §1). The recorded findings and their rules: tests/test_findings.py."""
from __future__ import annotations

import sys
import textwrap

import pytest
import torch
from torch import nn

from backward_twice import recorder as record
from backward_twice.recorder import Recorder, freed_by, made_at


def _line_of(text: str, src: str) -> int:
    return next(i for i, line in enumerate(src.splitlines(), 1) if text in line)


def run_file(tmp_path, src: str, rec: Recorder | None = None, name: str = "prog.py"):
    """Run `src` as a file (its lines readable), under `rec`; (namespace, error or None)."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(src))
    ns = {"__name__": "__prog__"}
    try:
        if rec is None:
            exec(compile(path.read_text(), str(path), "exec"), ns)
        else:
            with rec:
                exec(compile(path.read_text(), str(path), "exec"), ns)
    except RuntimeError as err:
        return ns, err, path
    return ns, None, path


CARRIED = """
import torch
torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
h = torch.zeros(3)
for step in range(3):
    h = torch.tanh(h * w + 1)
    loss = (h ** 2).sum()
    loss.backward()
    opt.step()
"""


def test_it_records_the_line_of_each_node_the_call_that_freed_it_and_the_steps(tmp_path):
    rec = Recorder()
    ns, err, path = run_file(tmp_path, CARRIED, rec)
    src = path.read_text()
    assert err is not None and rec.failed is not None and rec.failed.error is err
    assert rec.failed.site.line == _line_of("loss.backward()", src) and rec.failed.step == 1
    # the node of `h` in this step, and the older one it uses, both made by the line `h = ...`
    fn = ns["h"].grad_fn
    site, step, calls_before, _callers = made_at(fn)
    assert site.file == str(path) and site.line == _line_of("h = torch.tanh", src) and (step, calls_before) == (1, 1)
    assert site.text() == "h = torch.tanh(h * w + 1)"
    old = fn
    while freed_by(old) is None:
        old = next(n for n, _ in old.next_functions if n is not None and type(n).__name__ != "AccumulateGrad")
    first = rec.calls[0]
    assert freed_by(old) is first and first.kind == "backward" and not first.retain_graph and first.released == 3
    assert made_at(old)[1:3] == (0, 0)                    # made in the first step, before any backward
    # the optimizer step: its line, and that it changed w (also seen as a write of w by the step)
    s0 = rec.opt_steps[0]
    assert s0.site.line == _line_of("opt.step()", src) and s0.changed == 1 and s0.params[0]() is ns["w"]
    assert [(x.op, x.optimizer_step, x.before, x.after) for x in rec.writes] == [("add_", True, 0, 1)]


def test_a_write_inside_a_library_call_names_the_library_line_and_the_users(tmp_path, monkeypatch):
    lib = tmp_path / "site-packages" / "somelib"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text("def squash(x):\n    x.mul_(0.5)\n    return x\n")
    monkeypatch.syspath_prepend(str(lib.parent))
    rec = Recorder()
    ns, err, path = run_file(tmp_path, """
        import torch, somelib
        a = torch.ones(3, requires_grad=True)
        b = a.sigmoid()
        somelib.squash(b)
        b.sum().backward()
        """, rec)
    assert err is not None and "inplace" in str(err)
    w = rec.writes[-1]
    assert (w.op, w.before, w.after) == ("mul_", 0, 1)
    assert w.site.file == str(path) and w.site.text() == "somelib.squash(b)"
    assert w.inner is not None and w.inner.file.endswith("somelib/__init__.py") and w.inner.text() == "x.mul_(0.5)"
    sys.modules.pop("somelib", None)


def small_cnn_run(rec=None, steps=3):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                        nn.Linear(4 * 14 * 14, 10))
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    x, y = torch.randn(8, 1, 28, 28), torch.randint(0, 10, (8,))
    ctx = rec if rec is not None else torch.autograd.set_grad_enabled(True)
    with ctx:
        for _ in range(steps):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(net(x), y)
            loss.backward()
            opt.step()
    return [p.detach().clone() for p in net.parameters()], loss.detach()


def test_it_changes_no_result():
    plain, loss = small_cnn_run()
    recorded, loss2 = small_cnn_run(Recorder())
    assert torch.equal(loss, loss2) and all(torch.equal(a, b) for a, b in zip(plain, recorded))


def test_memory_is_bounded_and_it_says_how_much_it_keeps():
    rec = Recorder(keep_steps=2)
    w = torch.ones(4, requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.1)
    with rec:
        for _ in range(30):
            x = torch.randn(4)
            x.add_(1)                                   # one write per step, besides the optimizer's
            (w * x).sum().backward()
            opt.step()
    assert rec.step == 30 and {x.step for x in rec.writes} <= {27, 28, 29}
    assert len(rec.calls) <= 3 and rec.dropped > 0
    assert rec.kept().startswith("the recorder keeps the last 2 optimizer steps") and "older record(s) dropped" in rec.kept()
    with pytest.raises(ValueError, match="keep_steps takes a whole number"):
        Recorder(keep_steps=0)


def test_a_compiled_model_stays_compiled_and_its_donated_buffer_error_still_happens():
    torch.manual_seed(0)
    model = torch.compile(nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 1)), backend="aot_eager")
    x = torch.randn(4, 8)
    with Recorder():
        model(x).sum().backward()
        loss = model(x).sum()
        assert type(loss.grad_fn.next_functions[0][0]).__name__ == "CompiledFunctionBackward"
        with pytest.raises(RuntimeError, match="donated buffers"):
            loss.backward(retain_graph=True)


@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpoints_and_hooks_give_the_same_gradients(reentrant):
    from torch.utils.checkpoint import checkpoint

    def grads(rec):
        torch.manual_seed(0)
        block, head = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 4)), nn.Linear(4, 1)
        seen = []
        head.register_forward_hook(lambda m, i, o: seen.append(o.shape))
        x = torch.randn(3, 4, requires_grad=True)
        with rec:
            y = checkpoint(block, x, use_reentrant=reentrant)
            y.register_hook(lambda g: seen.append(g.norm().item()))
            head(y).pow(2).sum().backward()
        return [p.grad.clone() for p in (*block.parameters(), *head.parameters())] + [x.grad.clone()], seen

    plain, seen_plain = grads(torch.autograd.set_grad_enabled(True))
    recorded, seen_recorded = grads(Recorder())
    assert all(torch.equal(a, b) for a, b in zip(plain, recorded)) and seen_plain == seen_recorded


SCALED_IN_BACKWARD = """
import torch


class Loss(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        grad = x.exp()
        ctx.save_for_backward(grad)
        return grad.sum()

    @staticmethod
    def backward(ctx, g):
        grad, = ctx.saved_tensors
        grad.mul_(g)
        return grad


w = torch.ones(3, requires_grad=True)
loss = Loss.apply(w * 2)
loss.backward(retain_graph=True)
loss.backward()
"""


def test_a_write_made_by_a_custom_functions_backward_is_recorded_with_its_line_and_the_call_it_ran_in(tmp_path):
    from torch.autograd.function import BackwardCFunction

    import backward_twice as bt

    torch_apply = BackwardCFunction.apply
    rec = Recorder()
    ns, err, path = run_file(tmp_path, SCALED_IN_BACKWARD, rec)
    src = path.read_text()
    assert err is not None and "inplace" in str(err)
    assert BackwardCFunction.apply is torch_apply          # torch's own is back once the recorder exits
    [write] = list(rec.writes)
    assert (write.op, write.site.line, write.before, write.after) == ("mul_", _line_of("grad.mul_(g)", src), 0, 1)
    assert write.during is rec.calls[0] and rec.calls[0].site.line == _line_of("retain_graph=True", src)
    found = bt.explain(err, names=ns).finding
    assert found.rule == "inplace-write" and found.confident
    assert "inside `backward`" in found.cause and found.options[0].kind == "out-of-place"
    [edit] = found.options[0].edits
    assert edit.line == write.site.line and edit.lines[0].strip() == "grad = grad.mul(g)"
    # with the write made out of place, as the option says, the program runs
    fixed = src.replace("grad.mul_(g)", "grad = grad.mul(g)")
    assert run_file(tmp_path, fixed, Recorder(), name="fixed.py")[1] is None


def test_a_backward_run_by_a_reentrant_checkpoint_is_not_counted_as_the_users_call():
    from torch.utils.checkpoint import checkpoint

    block = nn.Sequential(nn.Linear(4, 4), nn.Tanh())
    x = torch.randn(2, 4, requires_grad=True)
    with Recorder() as rec:
        checkpoint(block, x, use_reentrant=True).sum().backward()
    assert [c.kind for c in rec.calls] == ["backward"] and rec.n_calls == 1 and not rec._inside


def test_it_records_what_autograd_grad_differentiates_against_and_gradients_read_between_calls(tmp_path):
    src = """
import torch
w = torch.ones(3, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
t = 1 + 2 * torch.rand(3, requires_grad=True)
u = (w * t ** 2).sum()
du = torch.autograd.grad(u, t, create_graph=True)[0]
du.sum().backward(retain_graph=True)
opt.zero_grad()
u.backward(retain_graph=True)
g = w.grad.clone()
opt.step()
"""
    rec = Recorder()
    ns, err, path = run_file(tmp_path, src, rec)
    text = path.read_text()
    assert err is None
    [grad_call] = [c for c in rec.calls if c.kind == "autograd.grad"]
    assert [r() for r in grad_call.wrt] == [ns["t"]]
    # zero_grad's and step's reads of .grad are torch's, not yours: only the line `g = w.grad...` is noted
    assert [(calls, site.line) for calls, site in rec.grad_reads] == [(3, _line_of("g = w.grad", text))]


def test_a_write_is_ordered_among_the_nodes_made_around_it():
    x = torch.ones(3, requires_grad=True)
    with Recorder() as rec:
        a = x * 2
        idx = torch.zeros(3, dtype=torch.long)
        idx[0] = 1
        b = a.exp()
    [write] = list(rec.writes)
    assert a.grad_fn._sequence_nr() <= write.seq < b.grad_fn._sequence_nr()


def test_ddp_on_gloo_gives_the_same_gradients_under_the_recorder():
    from ddp_programs import ddp_step

    from helpers.distributed import run

    plain, recorded = run(ddp_step, world_size=2, recorded=False), run(ddp_step, world_size=2, recorded=True)
    assert all(torch.equal(x, y) for a, b in zip(plain, recorded) for x, y in zip(a, b))


def test_with_record_explains_an_error_raised_inside(tmp_path):
    path = tmp_path / "loop.py"
    path.write_text(CARRIED)
    ns = {}
    with pytest.raises(RuntimeError) as info:
        with record.record() as rec:
            exec(compile(path.read_text(), str(path), "exec"), ns)
    import backward_twice as bt

    d = bt.explain(info.value, names=ns)
    assert d.rule == "carried-across-steps" and d.culprit == "h" and "h = h.detach()" in d.message
    assert record.recorder_for(info.value) is rec


def test_a_saved_tensor_read_after_backward_is_explained_from_the_record(tmp_path):
    src = """
        import torch
        x = torch.ones(3, requires_grad=True)
        y = (x * 2).exp()
        y.sum().backward()
        print(y.grad_fn._saved_result)
        """
    path = tmp_path / "read.py"
    path.write_text(textwrap.dedent(src))
    with pytest.raises(RuntimeError) as info:
        with record.record():
            exec(compile(path.read_text(), str(path), "exec"), ns := {})
    from backward_twice.diagnose import why_backward_failed

    d = why_backward_failed(info.value, names=ns)
    assert d.rule == "read-after-backward", d.message
    assert "The line read.py:6 `print(y.grad_fn._saved_result)` reads the saved tensors of ExpBackward0" in d.message
    assert d.fix_kind == "read-before-backward" and "`y.sum().backward(retain_graph=True)`" in d.message


@pytest.fixture
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    ip.run_line_magic("xmode", "Minimal")
    ip.run_cell("%load_ext backward_twice")
    try:
        yield ip
    finally:
        ip.run_line_magic("why_backward", "off")
        InteractiveShell.clear_instance()


def test_the_cell_magic_runs_the_cell_under_the_recorder_and_explains_it(shell, capsys):
    shell.run_cell("%%why_backward\n" + CARRIED)
    out = capsys.readouterr().out
    assert out.index("RuntimeError") < out.index("why_backward (recorded)")      # the traceback, then the diagnosis
    assert "rule: carried-across-steps" in out and "`h` carries the graph of an earlier step" in out
    assert "made at line 9 of the cell `import torch` `h = torch.tanh(h * w + 1)`" in out and "`h = h.detach()`" in out
    shell.run_cell("%%why_backward\nz = 1 + 1")
    assert "why_backward" not in capsys.readouterr().out                       # nothing failed: nothing said


def test_why_backward_on_records_every_cell_from_then_on(shell, capsys):
    shell.run_cell("%why_backward on")
    assert "recording from the next cell on" in capsys.readouterr().out
    shell.run_cell(textwrap.dedent("""
        import torch
        fake_w = torch.ones(2, requires_grad=True)
        shared = fake_w * 3
        """))                                               # built in an earlier cell: still seen
    shell.run_cell("a = shared.exp().sum(); b = shared.sin().sum(); a.backward(); b.backward()")
    d = shell.run_line_magic("why_backward", "")
    assert d.rule == "shared-graph", d.message
    shell.run_cell("%why_backward off")
    assert "recording stopped" in capsys.readouterr().out
    assert record.active() is None


def test_bad_input_to_the_magic_is_said_plainly(shell):
    d = shell.run_line_magic("why_backward", "1 +")
    assert d.verdict == "bad input" and "or on / off" in d.message


def test_an_in_place_write_into_a_tensor_with_a_graph_is_recorded_at_its_own_line(tmp_path):
    """`bank[idx] = feats` gives `bank` a new node (IndexPutBackward0): its line is that line, not the
    line of the next op that uses `bank` (a new user's memory-bank loop)."""
    rec = Recorder()
    ns, err, path = run_file(tmp_path, """
        import torch
        w = torch.ones(4, requires_grad=True)
        bank = torch.zeros(3, 4)
        bank[0] = w * 2
        out = bank.t().sum()
        """, rec)
    site = made_at(ns["bank"].grad_fn)[0]
    assert ns["bank"].grad_fn.name().endswith("CopySlices") and site.text() == "bank[0] = w * 2"
    assert made_at(ns["out"].grad_fn)[0].text() == "out = bank.t().sum()"


def test_code_the_recorder_cannot_read_runs_as_it_would_without_it():
    """Inference tensors (no version counter), a view made under no_grad then written in place
    (reading its grad_fn raises), sparse and complex tensors: the same results and errors."""
    def program():
        out = []
        with torch.inference_mode():
            t = torch.ones(3)
            t.add_(1)
            out.append(t.sum().item())
        base = torch.ones(4, requires_grad=True).clone()
        with torch.no_grad():
            view = base[:2]
        try:
            view.mul_(2)
            out.append(view.grad_fn)
        except RuntimeError as err:
            out.append(str(err)[:40])
        s = torch.eye(3).to_sparse()
        out.append((s @ torch.ones(3, 1)).sum().item())
        c = torch.ones(2, dtype=torch.complex64, requires_grad=True)
        (c * 1j).abs().sum().backward()
        out.append(c.grad.tolist())
        return out

    plain = program()
    with Recorder():
        recorded = program()
    assert plain == recorded and isinstance(plain[1], str) and plain[1].startswith("A view was created in no_grad")


def test_retain_and_create_graph_are_read_however_they_are_passed():
    """`y.backward(None, True)`, `torch.autograd.backward([y], None, True)` and `autograd.grad(y, w,
    None, True, True)` pass retain_graph (and create_graph) by position: recorded all the same."""
    w = torch.ones(2, requires_grad=True)
    with Recorder() as rec:
        y = (w * 2).exp().sum()
        y.backward(None, True)
        torch.autograd.backward([y], None, True)
        torch.autograd.grad(y, w, None, True, True)
        y.backward()
    assert [(c.kind, c.retain_graph, c.create_graph) for c in rec.calls] == [
        ("backward", True, False), ("backward", True, False), ("autograd.grad", True, True), ("backward", False, False)]
    assert [c.released for c in rec.calls] == [0, 0, 0, 2]


def test_a_warning_torch_raises_under_the_recorder_names_the_users_line_not_the_recorders():
    """torch warns from C++ with the calling frame's line; under the recorder that frame would be the
    recorder's own __torch_function__ (found by a transcript: float(loss) named recorder.py)."""
    import warnings

    y = torch.ones(2, requires_grad=True).sum()
    with warnings.catch_warnings(record=True) as caught, Recorder():
        warnings.simplefilter("always")
        float(y)                                       # torch: "Converting a tensor with requires_grad=True ..."
    assert caught, "torch no longer warns here: pick another warning"
    assert all(w.filename == __file__ for w in caught), [(w.filename, w.lineno) for w in caught]


def test_a_warning_from_another_thread_while_recording_is_shown_and_the_hook_is_undone():
    """The renaming hook is process-wide (warnings are shown by the module): a warning from a thread
    that records nothing is shown as usual, and leaving the recorder puts the module's own back."""
    import threading
    import warnings

    before = warnings._showwarnmsg
    got = []
    with warnings.catch_warnings(record=True) as caught, Recorder():
        warnings.simplefilter("always")
        th = threading.Thread(target=lambda: warnings.warn("from a worker", UserWarning, stacklevel=1))
        th.start()
        th.join()
        got = [str(w.message) for w in caught]
    assert got == ["from a worker"]
    assert warnings._showwarnmsg is before
