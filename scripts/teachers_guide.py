"""Write docs/teachers_guide.md: one page a teacher plans a class from.

    python scripts/teachers_guide.py           # rewrite docs/teachers_guide.md
    python scripts/teachers_guide.py --check   # exit 1 if it is out of date (tests/test_teachers_guide.py)

Generated from the notebooks as they are now: each notebook's core-path minutes
(scripts/lengths.py), its learning objectives (its "What you'll learn"), the cells to run live
(the first before/after picture, the first live error and the first exercise on its core path,
found by scripts/skeleton.py) and the suggested session plans, computed from those minutes.
Written by hand, in NOTES below: where learners get stuck (the misconceptions the source
discussions show), two discussion questions with short answers, and the homework exercise.
"""
from __future__ import annotations

import re
import sys

from scripts import ROOT, lengths, nav, skeleton

GUIDE = ROOT / "docs" / "teachers_guide.md"
ACTIVITY_MINUTES = 10     # per notebook in class, on top of its core path: 5 for the exercises, 5 for discussion
OPENING_MINUTES = 5       # per session: what we do today, and the question of the first notebook

# Written by hand, per notebook number. Facts here are the ones the notebooks check.
NOTES = {
    "00": dict(
        stuck=["*\"backward() deletes the graph\"*: it frees the **saved tensors**; the nodes and arrows stay "
               "(section 3 walks them after backward).",
               "*\"every op saves its inputs\"*: `sum` and `+` save nothing, `*` saves both inputs (section 4)."],
        questions=[("After `y.backward()`, can you still walk `y.grad_fn.next_functions`?",
                    "Yes. Only the saved tensors are freed; reading one (`_saved_self`) raises the "
                    "*backward through the graph a second time* error."),
                   ("Why does `x + 2` save nothing while `x * x` saves `x`?",
                    "The gradient of an addition does not depend on the values; the gradient of a product does (2x).")],
        homework="0.3"),
    "01": dict(
        stuck=["*\"retain_graph keeps the gradients\"*: it keeps the saved tensors; `.grad` adds up with or without it.",
               "*\"retain_graph=True once keeps the graph for good\"*: it holds for that call only; the next call "
               "without it frees the saved tensors (the four calls in a row)."],
        questions=[("`d` and `e` share `a`. Why does `e.backward()` fail after `d.backward()`?",
                    "`d`'s pass freed the saved tensors of the shared nodes, and `e`'s pass needs them."),
                   ("What does `retain_graph=True` cost?",
                    "Memory: the saved tensors (activations) stay alive until the graph's last reference goes "
                    "(section 7 measures it).")],
        homework="1.1"),
    "02": dict(
        stuck=["*\"each loss needs `retain_graph=True`\"*: only the backward calls before the last one through the "
               "shared trunk; or sum the losses and backward once.",
               "*\"`optimizer.step()` between the two backward calls is harmless\"*: it changes weights in place that the "
               "retained graph saved (section 6)."],
        questions=[("After only `loss_car.backward()`, which parts have a gradient?",
                    "The trunk and the car head; the cat head's `.grad` stays `None`."),
                   ("Why can `optimizer.step()` between `loss1.backward(retain_graph=True)` and `loss2.backward()` raise?",
                    "The step updates saved weights in place; their version counter changed, so the second backward refuses "
                    "(*modified by an inplace operation*).")],
        homework="2.3"),
    "03": dict(
        stuck=["*\"summed and sequential backward give different gradients\"*: the same, up to rounding; what differs "
               "is the cost (the shared trunk is backwarded once per loss) and how long memory is held."],
        questions=[("Why does the sequential way run the trunk's nodes twice?",
                    "Each backward walks from its own loss to the leaves, and the trunk lies on both paths."),
                   ("When is backwarding each loss on its own the right tool?",
                    "When you need each loss's gradient separately: gradient surgery such as PCGrad, "
                    "or per-task gradient norms.")],
        homework="3.1"),
    "04": dict(
        stuck=["*\"retain_grad() stops the graph from being freed\"*: it only stores one non-leaf's gradient; the saved "
               "tensors are freed as usual, and a second backward still fails.",
               "*\"retain_grad() must come before the ops that use the tensor\"*: anywhere before `backward()` works; "
               "after `backward()` it is silently too late."],
        questions=[("`y.retain_grad()` called after `backward()`: why is `y.grad` `None`, with no warning?",
                    "The flag is set (so no warning), but the gradient was computed and dropped in the pass that already ran."),
                   ("How do you get an intermediate tensor's gradient without storing it in `.grad`?",
                    "A hook (`y.register_hook`) or `torch.autograd.grad(loss, y)`.")],
        homework="4.2"),
    "05": dict(
        stuck=["*\"gradient accumulation needs retain_graph\"*: each micro-batch builds its own graph and is backwarded once.",
               "*\"retain_graph=True is enough for a second derivative\"*: the gradient then has no graph; "
               "`create_graph=True` is needed."],
        questions=[("Why does `x.grad` double after a second backward through a retained graph?",
                    "`backward()` adds into `.grad`; `optimizer.zero_grad()` or `x.grad = None` resets it."),
                   ("Why is each micro-batch's mean loss divided by the number of micro-batches?",
                    "The gradients add up: k micro-batch means give k times the full batch's mean gradient.")],
        homework="5.2"),
    "06": dict(
        stuck=["*\"`y.sum().backward()` gives the derivative of every element\"*: only when each output depends on one "
               "input (elementwise ops); in general it is the vector-Jacobian product with a vector of ones (section 4)."],
        questions=[("Why does `backward()` fail on a tensor with many elements?",
                    "Backward computes a vector-Jacobian product; for a non-scalar output it needs the vector (`gradient=`)."),
                   ("What does `y.backward(gradient=v)` compute?",
                    "vᵀJ: the gradient of the weighted sum `(v * y).sum()` with respect to the inputs.")],
        homework="6.2"),
    "07": dict(
        stuck=["*\"GAN training needs retain_graph\"*: with `fake.detach()` in the D step and a fresh forward of D "
               "in the G step, nothing is backwarded twice.",
               "*\"one forward per saliency class\"*: one forward serves every class; all calls but the last one keep "
               "the graph with `retain_graph=True`."],
        questions=[("Why `fake.detach()` in the discriminator's step?",
                    "D's loss must not reach G: the backward stops at the detached images, so G's graph is left alone."),
                   ("Why does the generator's step need a fresh forward of D?",
                    "D's weights were updated in place by its step; the old D graph saved the old weights.")],
        homework="7.2"),
    "08": dict(
        stuck=["*\"a graph kept alive is never freed\"*: it is freed when its last reference goes (section 2.1).",
               "*\"one `autograd.grad` call per parameter costs the same as one call\"*: each call walks the chain again, "
               "quadratic in depth (section 1)."],
        questions=[("Why is `total += loss` in a training loop a leak?",
                    "`total` keeps every step's graph alive; add `loss.item()` or `loss.detach()` instead."),
                   ("Why is asking for each weight's gradient in its own call quadratic in depth?",
                    "Each call walks the chain from the loss down to that weight: 1 + 2 + ... + L node runs.")],
        homework="8.2"),
    "09": dict(
        stuck=["Popular explanations contradict each other, and many are half right: *\"the graph is freed\"* is true of "
               "the saved tensors and false of the nodes."],
        questions=[("Is \"backward() frees the graph\" true?",
                    "Partly: the saved tensors are freed; the nodes, the edges and the leaves' `.grad` remain."),
                   ("Does the placement of `retain_grad()` change any gradient value?",
                    "No. It only decides whether a non-leaf's gradient is stored in `.grad`.")],
        homework="9.1"),
    "10": dict(
        stuck=["*\"I call backward once per step, so it cannot be a second time\"*: state carried over from the last step "
               "still points into the last step's graph.",
               "*\"`retain_graph=True` fixes it\"*: the error goes away, and the graph and the step time grow every step."],
        questions=[("Where does the \"second time\" come from in a loop with one backward per step?",
                    "A tensor from an earlier step (a hidden state, a module attribute, something computed before the loop, "
                    "a running total) links this step's graph to the last one."),
                   ("When is keeping a graph across steps right?",
                    "Backpropagation through time over a window; the window then ends with `detach()` (truncated BPTT).")],
        homework="10.1"),
    "11": dict(
        stuck=["Mixing up the two things backward touches: saved tensors (what `retain_graph` keeps) and `.grad` "
               "(what `retain_grad()` and `zero_grad()` are about)."],
        questions=[("A loop carrying `h` fails on its second step. Which row of the table fixes it?",
                    "`detach()` at the step boundary; `retain_graph=True` hides the error and lets the graph grow."),
                   ("`retain_graph` or `create_graph`: what is the difference?",
                    "`retain_graph` keeps saved tensors for another pass; `create_graph` records the backward pass so the "
                    "gradient can be differentiated, and implies `retain_graph`.")],
        homework="11.1"),
}


def objectives(nb) -> list:
    """The bullets of the notebook's **What you'll learn**."""
    first = next(c.source for c in nb.cells if c.cell_type == "markdown")
    part = first.split("**What you'll learn**", 1)[-1]
    return [m.group(1).rstrip(";.") for m in re.finditer(r"^- (.+)$", part.split("**Prerequisites", 1)[0], re.M)]


def live_cells(sk) -> list:
    """[(what, section title, the line to point at)]: the first before/after picture (or picture), the
    first live error and the first exercise on the core path (an exercise's check cell may be folded)."""
    def section_title(i):
        h = skeleton.last_heading(sk.nb.cells[sk.section[i]])
        return h[1] if h else "top"

    def first(pred, visible=True):
        for i, cell in enumerate(sk.nb.cells):
            if cell.cell_type == "code" and sk.core(i) and not (visible and lengths.is_hidden(cell)) and pred(i, cell):
                return i
        return None

    def code_lines(i):   # without comments (a '#' inside a string is rare enough in these cells)
        lines = (ln.split("  #")[0].strip() for ln in sk.nb.cells[i].source.splitlines())
        return [ln for ln in lines if ln and not ln.startswith("#")]

    out = []
    picture = first(lambda i, c: "watch(" in c.source or "draw_steps(" in c.source)
    what = "the before/after picture"
    if picture is None:
        picture, what = first(lambda i, c: "draw(" in c.source), "a picture of the graph"
    if picture is not None:
        line = next(ln for ln in code_lines(picture) if re.search(r"\b(watch|draw_steps|draw)\(", ln))
        out.append((what, section_title(picture), f"the cell with `{line}`"))
    error = first(lambda i, c: sk.kind[i] == "raises")
    if error is not None:   # the line that raises is the last one of the cell
        out.append(("the error, live", section_title(error), f"the cell ending `{code_lines(error)[-1]}`"))
    exercise = first(lambda i, c: sk.kind[i] == "check", visible=False)
    if exercise is not None:
        out.append(("predict, then run", section_title(exercise), "its answer cell, then its check cell"))
    return out


def plan(minutes: dict, length: int, sessions: int) -> tuple:
    """Notebooks in course order, each session filled while the core paths plus ACTIVITY_MINUTES each fit
    (after OPENING_MINUTES). Returns ([[(number, minutes in class)]], [numbers left over]).
    A notebook longer than a session on its own gets a session of its own (flagged in the text)."""
    order = [n for n in minutes if n in NOTES]
    plans, i = [], 0
    for _ in range(sessions):
        used, this = OPENING_MINUTES, []
        while i < len(order) and (not this or used + minutes[order[i]] + ACTIVITY_MINUTES <= length):
            this.append((order[i], minutes[order[i]] + ACTIVITY_MINUTES))
            used += minutes[order[i]] + ACTIVITY_MINUTES
            i += 1
        plans.append(this)
    return plans, order[i:]


def session_text(plans, left, length, titles) -> list:
    out = []
    for k, session in enumerate(plans, 1):
        total = OPENING_MINUTES + sum(m for _, m in session)
        parts = " + ".join(f"{titles[n]} ({m} min)" for n, m in session)
        over = f" **Over the period by {total - length} min**: shorten the discussion." if total > length else ""
        out.append(f"- Session {k} ({total} of {length} min): opening ({OPENING_MINUTES} min) + {parts}.{over}")
    if left:
        out.append("- Not in class: " + ", ".join(titles[n] for n in left) + " (reading and homework).")
    return out


def guide() -> str:
    items = []
    for path in nav.notebooks():
        sk = skeleton.read(path)
        items.append((path.name[:2], path, sk, nav.info(path)[1]))
    minutes = {n: lengths.core_minutes(p) for n, p, _, _ in items}
    titles = {n: it["title"] for n, _, _, it in items}
    out = ["# Teacher's guide",
           "",
           "<!-- generated by scripts/teachers_guide.py from the notebooks and its NOTES; edit those, not this file -->",
           "",
           "One page to plan a class. **Core minutes** is the notebook's core path (everything outside its "
           "*Going deeper* sections), read and run: "
           f"{lengths.WORDS_PER_MINUTE} words a minute and {lengths.SECONDS_PER_CODE_LINE} s per visible code line "
           f"(`python scripts/lengths.py`). In class, add about {ACTIVITY_MINUTES} minutes per notebook for its exercises "
           "and the discussion questions.",
           "",
           "To prepare: `bash scripts/student` for the learners' copies (no solutions), `bash scripts/site` for the "
           "projector and the printable handout (`build/site/handout.html`), and `bash scripts/slides` for the "
           "core path as slides (see the README, *Teaching with it*).",
           "",
           "## Suggested sessions",
           "",
           "One 90-minute session:",
           ""]
    out += session_text(*plan(minutes, 90, 1), 90, titles)
    out += ["", "Three 45-minute sessions:", ""]
    out += session_text(*plan(minutes, 45, 3), 45, titles)
    out += ["", "Hand out the printed cheat sheet and summaries (`build/site/handout.html`) at the end of the last session.",
            "", "| Notebook | Core minutes | Homework |", "|---|---:|---|"]
    for n, path, _, it in items:
        note = NOTES.get(n)
        out.append(f"| [{it['title']}](../notebooks/{path.name}) | {minutes[n]} | "
                   f"{'Exercise ' + note['homework'] if note else '-'} |")
    for n, path, sk, it in items:
        note = NOTES.get(n)
        out += ["", f"## [{it['title']}](../notebooks/{path.name})", "",
                f"*{it['question']}* Core path: **{minutes[n]} min**.", "", "**Objectives**"]
        out += [f"- {o}" for o in objectives(sk.nb)]
        out += ["", "**Run live**"]
        out += [f"- {what}: section *{sec}*, {where}" for what, sec, where in live_cells(sk)]
        if note is None:
            out += ["", "*No teaching notes yet: add this notebook to NOTES in scripts/teachers_guide.py.*"]
            continue
        out += ["", "**Where learners get stuck**"] + [f"- {s}" for s in note["stuck"]]
        out += ["", "**Discussion**"]
        out += [f"{k}. {q}  \n   *Answer:* {a}" for k, (q, a) in enumerate(note["questions"], 1)]
        out += ["", f"**Homework:** Exercise {note['homework']} (its check cell says right or gives a hint)."]
    return "\n".join(out) + "\n"


def main(argv) -> int:
    text = guide()
    if "--check" in argv:
        if not GUIDE.is_file() or GUIDE.read_text() != text:
            print(f"out of date: {GUIDE.relative_to(ROOT)} (run: python scripts/teachers_guide.py)")
            return 1
        return 0
    GUIDE.parent.mkdir(exist_ok=True)
    GUIDE.write_text(text)
    print(f"wrote {GUIDE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
