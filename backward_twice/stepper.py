"""Step through a real backward() call, node by node, in the order the engine ran them.

    from backward_twice.stepper import step_through
    step_through(lambda: loss.backward(), loss, names={"a": a, "w": w, "loss": loss})

Nothing is simulated. Hooks on every `grad_fn` node (backward_twice.trace.BackwardTrace)
record, while the real call runs, which node the engine ran, the gradient it received
and the gradients it sent on, and take a snapshot of the graph right after each node
computed. What the engine does between two nodes is read from consecutive snapshots:

- a node's saved tensors are still held inside its own post-hook and are released
  right after it (PyTorch 2.13: `release_variables()` follows the post-hooks), so the
  tensors "released by step k" are those held at step k and freed at step k+1 (or after
  the call, for the last step);
- a leaf's `.grad` changes in the step of its `AccumulateGrad` node (the sum of every
  path into that leaf arrives in one step);
- a tensor that called `retain_grad()` gets its `.grad` in the step of the node that
  made it: the engine fills it just before that node computes.

The result displays as an ipywidgets stepper (previous / next / slider / reset) with a
live kernel, and as a fixed sequence of frames everywhere else: `text/plain` (what nbval
compares) and `text/html` (every frame as an SVG image with its caption, for a static
HTML export or an untrusted notebook; tests/nbval_sanitize.cfg blanks the image data).
"""
from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

from . import render
from .graph import DOT_MIME, dot_record
from .picture.alt_text import grad_words, saved_words
from .picture.palette import FOCUS
from .snapshot import GraphInputError, Role, SavedState, Snapshot, fmt_total, fmt_values
from .trace import BackwardTrace, Step
from .walk import snapshot, snapshot_with_ids

MAX_STEPS = 40

# Keyboard focus on the stepper's buttons and slider handle: a 3 px ring (JupyterLab's own is a
# 1 px line, or none on the slider's handle). A <style> inside an ipywidgets HTML (not sanitised).
FOCUS_STYLE = (f"<style>.bt-stepper .jupyter-button:focus-visible, .bt-stepper .noUi-handle:focus, "
               f".bt-stepper .noUi-handle:focus-visible, .bt-stepper .widget-readout:focus, .bt-stepper input:focus-visible "
               f"{{outline: 3px solid {FOCUS}; outline-offset: 2px;}}</style>")


@dataclass
class Frame:
    """The state of the graph after one node ran (frame 0: before the call)."""

    index: int
    node_id: str | None = None        # snapshot id of the node that ran: 'op3', 'leaf1'
    node_label: str | None = None     # 'op3 ExpBackward0', 'AccumulateGrad of a'
    grads_in: list[str] = field(default_factory=list)    # formatted, one per output of the node
    grads_out: list[tuple[str, str]] = field(default_factory=list)   # (destination, formatted)
    released: list[str] = field(default_factory=list)    # 'op3 ExpBackward0 saved result (2,) ...'
    grad_changes: list[str] = field(default_factory=list)  # 'a.grad: None -> [1, 2]'
    error: str | None = None
    snapshot: Snapshot | None = None


def _first_sentence(err: BaseException) -> str:
    text = str(err).strip().splitlines()[0] if str(err).strip() else ""
    text = re.split(r" \(|\. ", text, maxsplit=1)[0]
    return f"{type(err).__name__}: {text}"


def _fmt_grad(g) -> str:
    return "None" if g is None else fmt_values(g)


class Stepper:
    """Frames of one backward call. Displays as a widget (live kernel) or as static frames."""

    def __init__(self, frames: list[Frame], title: str | None = None, raised: BaseException | None = None,
                 frames_shown: str = "all"):
        self.frames = frames
        self.frames_shown = frames_shown
        self.title = title or "backward, step by step"
        self.raised = raised
        self._svgs: dict[int, str] = {}
        self._layout = None      # (box sizes, legend entries), shared by every frame
        self._widget = None

    # -- facts, for asserts in notebooks ------------------------------------------
    @property
    def steps(self) -> list[Frame]:
        """Frames of the nodes that ran (frame 0, the state before the call, excluded)."""
        return [f for f in self.frames[1:] if f.error is None]

    @property
    def order(self) -> list[str]:
        """Labels of the nodes in the order the engine ran them."""
        return [f.node_label for f in self.steps]

    # -- text -----------------------------------------------------------------------
    def caption(self, i: int) -> str:
        f, n = self.frames[i], len(self.frames) - 1
        snap = f.snapshot
        held = snap.count_by_state()["held"], fmt_total(snap.bytes_by_state()["held"], snap.memory().held_unknown)
        if i == 0:
            lines = [f"before the call: {held[0]} saved tensor(s) held ({held[1]}); no node has run"]
        elif f.error is not None:
            lines = [f"step {i} of {n} · {f.node_label} started and raised {f.error}"]
            op = snap.ops.get(f.node_id) if f.node_id else None
            for s in (op.saved if op is not None else ()):
                if s.is_tensor:   # what the failing node needed, and whether it was still there
                    state = "already FREED" if s.state is SavedState.FREED else "still held"
                    lines.append(f"  it needs its saved {s.describe()}, {state}")
        else:
            lines = [f"step {i} of {n} · {f.node_label} ran"]
            if f.grads_in:
                lines.append("  gradient in:  " + "; ".join(f.grads_in))
            for dest, g in f.grads_out:
                lines.append(f"  gradient out: {g} -> {dest}")
            lines.append("  released after it ran: " + ("; ".join(f.released) or "nothing"))
            for c in f.grad_changes:
                lines.append(f"  {c}")
            if i == n:
                lines.append(f"  after the call: {held[0]} saved tensor(s) held ({held[1]})")
        return "\n".join(lines)

    @property
    def text(self) -> str:
        head = f"{self.title}: {len(self.steps)} node(s) ran, in this order: " + ", ".join(self.order)
        if self.frames_shown == "changes":
            head += (f"\nstatic form: frames {', '.join(map(str, self.changing()))} of 0-{len(self.frames) - 1}"
                     " (the others release nothing and change no .grad)")
        return "\n".join([head] + [self.caption(i) for i in range(len(self.frames))])

    def __repr__(self) -> str:
        return self.text

    # -- pictures -------------------------------------------------------------------
    def _title(self, i: int) -> str:
        f = self.frames[i]
        title = "before the call" if i == 0 else f"step {i}: {f.node_label}"
        if f.error is not None:
            title += f" raised {f.error.split(':', 1)[0]}"
        return title

    def _marks(self, i: int) -> render.Marks:
        node = self.frames[i].node_id
        return render.Marks(highlight=frozenset((node,) if node else ()))

    def dot(self, i: int) -> str:
        """Frame i's DOT. Every frame draws each box at its largest size over all frames and has
        the same legend, so nothing moves from frame to frame but what the step changed."""
        if self._layout is None:
            n = range(len(self.frames))
            pictures = [(self.frames[k].snapshot, self._marks(k)) for k in n]
            running = frozenset().union(*(marks.highlight for _, marks in pictures))
            self._layout = (render.box_sizes(pictures, [self._title(k) for k in n]),
                            render.features([snap for snap, _ in pictures], render.Marks(highlight=running)))
        sizes, entries = self._layout
        return render.to_dot(self.frames[i].snapshot, title=self._title(i), marks=self._marks(i),
                             sizes=sizes, entries=entries)

    def svg(self, i: int) -> str:
        if i not in self._svgs:
            self._svgs[i] = _inline_svg(render.svg_from_dot(self.dot(i)))
        return self._svgs[i]

    def alt(self, i: int) -> str:
        """Frame i's text alternative: what ran (the caption's first line), then the saved
        tensors freed and held and the gradients (picture.alt_text), the caption beside it."""
        f = self.frames[i]
        prev = self.frames[i - 1].snapshot if i else None
        words = [self.caption(i).splitlines()[0] + "."]
        now = set() if prev is None else {(op.id, s.slot) for op, s in f.snapshot.freed_since(prev)}
        words += saved_words(f.snapshot, f.node_label if now else None, now if now else None)
        words.append(grad_words(f.snapshot, prev))
        return " ".join(w for w in words if w)

    def changing(self) -> list[int]:
        """The frames where something changes: the first, every step that released a saved tensor,
        changed a .grad or raised, and the last."""
        last = len(self.frames) - 1
        return [i for i, f in enumerate(self.frames)
                if i in (0, last) or f.released or f.grad_changes or f.error is not None]

    @property
    def html(self) -> str:
        """Every frame (frames_shown='changes': only those where something changes), picture and
        caption: readable with no kernel and no JavaScript."""
        shown = self.changing() if self.frames_shown == "changes" else range(len(self.frames))
        which = (f"{len(shown)} of {len(self.frames)} frames, those where something changes"
                 if self.frames_shown == "changes" else f"{len(self.frames)} frames")
        parts = [f'<div class="bt-stepper-static"><p><b>{html.escape(self.title)}</b>: '
                 f"{which} (run the notebook to step through them one by one)</p>",
                 '<div style="display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start">']
        for i in shown:
            parts.append('<figure class="bt-frame" style="margin:0;border:1px solid #ccc;padding:6px">'
                         + render.svg_img(self.svg(i), self.alt(i)) +
                         '<figcaption><pre style="white-space:pre-wrap;max-width:42em">'
                         f"{html.escape(self.caption(i))}</pre></figcaption></figure>")
        parts.append("</div></div>")
        return "".join(parts)

    # -- the interactive view -------------------------------------------------------
    def widget(self):
        """The ipywidgets stepper (built once)."""
        if self._widget is None:
            import ipywidgets as W

            last = len(self.frames) - 1
            reset = W.Button(description="⏮ reset", layout=W.Layout(width="auto"))
            prev = W.Button(description="◀ previous", layout=W.Layout(width="auto"))
            nxt = W.Button(description="next ▶", layout=W.Layout(width="auto"))
            slider = W.IntSlider(value=0, min=0, max=last, description="step",
                                 continuous_update=True, layout=W.Layout(width="22em"))
            caption, picture = W.HTML(), W.HTML()

            def show(_=None):
                i = slider.value
                # a live region: a screen reader says the new caption after each step (ipywidgets'
                # HTML sets innerHTML as given: JupyterLab's sanitizer, which drops role and aria-*
                # from outputs, does not run on it; tests/test_stepper.py checks that in the bundle)
                caption.value = (f'<div role="status" aria-live="polite" aria-atomic="true">'
                                 f"<pre>{html.escape(self.caption(i))}</pre></div>")
                picture.value = (f'<div role="img" aria-label="{html.escape(self.alt(i), quote=True)}">'
                                 f"{self.svg(i)}</div>")
                prev.disabled = reset.disabled = i == 0
                nxt.disabled = i == last

            slider.observe(show, names="value")
            prev.on_click(lambda _: setattr(slider, "value", max(0, slider.value - 1)))
            nxt.on_click(lambda _: setattr(slider, "value", min(last, slider.value + 1)))
            reset.on_click(lambda _: setattr(slider, "value", 0))
            show()
            box = W.VBox([W.HBox([reset, prev, slider, nxt]), caption, picture, W.HTML(FOCUS_STYLE)])
            box.add_class("bt-stepper")
            self._widget = box
        return self._widget

    def _repr_mimebundle_(self, include=None, exclude=None):
        bundle = {"text/plain": self.text, "text/html": self.html,
                  DOT_MIME: dot_record(*(self.dot(i) for i in range(len(self.frames))))}
        try:
            view = self.widget()._repr_mimebundle_()
        except Exception:   # no ipywidgets, or no kernel to talk to: the static frames remain
            view = None
        key = "application/vnd.jupyter.widget-view+json"
        if view and key in view:
            bundle[key] = view[key]
        return bundle


def _inline_svg(svg: str) -> str:
    """Graphviz SVG without its XML prolog and comments, ready to sit inside HTML."""
    start = svg.find("<svg")
    svg = svg[start:] if start >= 0 else svg
    return re.sub(r"<!--.*?-->", "", svg, flags=re.S).strip()


def step_through(run, *roots, names=None, title=None, expect_error=None,
                 max_nodes=60, max_steps=MAX_STEPS, frames: str = "all") -> Stepper:
    """Run `run()` (a backward call) with hooks on the graph of `roots`; return the frames.

    run: a function of no arguments, e.g. `lambda: loss.backward()`.
    roots: the tensors whose graph the call walks (pass all of them, e.g. `d, e`: only
        nodes reachable from the roots are recorded and drawn).
    names: {"a": a, "loss": loss, ...} as for draw(); named leaves and retained
        intermediates show their .grad in every frame.
    title: the stepper's heading. max_nodes: as in draw(), but 60 by default: a frame per node
        reads only for a small graph (a larger one is refused, saying so, not drawn capped).
    expect_error: an exception type the call must raise (e.g. RuntimeError): the frames
        then end at the node that raised, and `stepper.raised` holds the error. Without
        it an error in `run()` propagates as usual.
    frames: 'all', or 'changes': the static form (no kernel) shows only the frames where
        something changes (a core path's stepper); the live stepper keeps every frame.

    Example (run by tests/test_docstrings.py):

        >>> import torch, backward_twice as bt
        >>> a = torch.tensor([1.0, 2.0], requires_grad=True)
        >>> loss = (a * a).sum()
        >>> frames = bt.step_through(loss.backward, loss, names={'a': a})   # a slider in a notebook
        >>> frames.order
        ['op1 SumBackward0', 'op2 MulBackward0', 'AccumulateGrad of a']
    """
    if frames not in ("all", "changes"):
        raise GraphInputError(f"frames= takes 'all' or 'changes', not {frames!r}.")
    shown = frames
    if not callable(run):
        raise GraphInputError(
            "step_through needs the backward call as a function: "
            "step_through(lambda: loss.backward(), loss, names={...}).")
    if not roots:
        raise GraphInputError("step_through needs the tensors whose graph the call walks, "
                              "e.g. step_through(lambda: loss.backward(), loss).")
    before, ids = snapshot_with_ids(*roots, names=names, max_nodes=max_nodes)
    if before.truncated:
        raise GraphInputError(
            f"this graph has {'more than ' if before.count_capped else ''}{before.total_nodes:,} nodes, "
            f"more than max_nodes={max_nodes}: "
            "step through a smaller example (a stepper frame per node stays readable only for "
            "small graphs), or pass max_nodes=N.")
    def label(fn) -> str:
        nid = ids.get(fn)
        if nid is None:
            return fn.name()
        if before.role(nid) is Role.LEAF:
            return f"AccumulateGrad of {before.tensors[nid].name}"
        return f"{nid} {fn.name()}"

    def dest(fn) -> str:
        nid = ids.get(fn)
        if nid is not None and before.role(nid) is Role.LEAF:
            return f"{before.tensors[nid].name} (its AccumulateGrad)"
        return label(fn)

    after_node: list[tuple[Step, object, Snapshot]] = []    # (step, node, snapshot) taken in each node's post-hook

    def on_step(step, fn):
        if len(after_node) >= max_steps:
            return
        after_node.append((step, fn, snapshot(*roots, names=names, max_nodes=max_nodes)))

    raised = None
    with BackwardTrace(*roots, on_step=on_step) as tr:
        try:
            run()
        except Exception as err:   # re-raised below unless it was expected
            if expect_error is None or not isinstance(err, expect_error):
                raise
            raised = err
    if expect_error is not None and raised is None:
        raise AssertionError(f"expected the call to raise {expect_error.__name__}, but it ran to the end")
    if len(tr.steps) > max_steps:
        raise GraphInputError(
            f"backward ran {len(tr.steps)} nodes, more than max_steps={max_steps}: step through a "
            "smaller example, or pass max_steps=N.")
    final = snapshot(*roots, names=names, max_nodes=max_nodes)

    frames = [Frame(0, snapshot=before)]
    prev = before
    senders: dict[object, int] = {}       # node -> how many earlier steps sent it a gradient
    for k, (step, fn, snap) in enumerate(after_node):
        nxt = after_node[k + 1][2] if k + 1 < len(after_node) else final
        merged = snap.with_saved_from(nxt)   # grads after the node ran; saved tensors after their release
        nid = ids.get(fn)
        released = [(f"its saved {s.describe()}" if op.id == nid else
                     f"{op.id} {merged.ops[op.id].name} saved {s.describe()}")
                    for op, s in nxt.freed_since(snap)]
        changes = snap.grad_changes_since(prev)
        prev = snap
        outs = []
        if step.grad_out is not None:
            for (nf, _), g in zip(fn.next_functions, step.grad_out):
                if nf is not None:
                    outs.append((dest(nf), _fmt_grad(g)))
                    if g is not None:
                        senders[nf] = senders.get(nf, 0) + 1
        grads_in = [_fmt_grad(g) for g in (step.grad_in or ())]
        if senders.get(fn, 0) > 1 and len(grads_in) == 1:   # the engine summed them in its input buffer
            grads_in[0] += f" (the sum of the {senders[fn]} gradients sent to it)"
        frames.append(Frame(len(frames), node_id=nid, node_label=label(fn), grads_in=grads_in,
                            grads_out=outs, released=released, grad_changes=changes,
                            snapshot=merged))
    if raised is not None:
        failing = tr.unfinished
        frames.append(Frame(len(frames), node_id=ids.get(failing) if failing else None,
                            node_label=label(failing) if failing else "a node outside the drawn graph",
                            error=_first_sentence(raised), snapshot=final))
    return Stepper(frames, title=title, raised=raised, frames_shown=shown)
