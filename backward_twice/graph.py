"""The public drawing API used by the notebooks.

    from backward_twice.graph import draw, compare, watch

    pic = draw(d, e, names={"a": a, "b": b, "c": c, "d": d, "e": e})
    with watch(d, e, names=...) as w:    # before/after pair around a backward call
        d.backward()
    w                                     # displays both, side by side

Every picture displays as SVG in JupyterLab and has a deterministic text form
(`text/plain`) that nbval compares: no memory addresses, stable node ids.
"""
from __future__ import annotations

import contextlib
import dataclasses

from . import render
from .modules import (
    WALK_LIMIT,
    drill_from,
    folded_pictures,
    grouped_picture,
    module_focus,
    recording_covering,
    recording_of,
    with_focus_next,
)
from .picture import cap as capping
from .picture import repeats
from .picture.alt_text import alt_of, call_of, pair_alt
from .picture.figure import DOT_MIME, FIT_MAX_BOXES, Picture, cannot_fit, dot_record  # noqa: F401 (re-exported)
from .picture.layout import (  # noqa: F401
    CORE_MAX_HEIGHT_PX,
    MIN_TEXT_PX,
    OUTPUT_PX,
    READABLE_WIDTH_PT,
    fits,
    shown_px,
    smallest_text_px,
    svg_width_pt,
)
from .picture.text_form import STATE_WORDS, describe  # noqa: F401 (re-exported)
from .snapshot import DrawOptions, GraphInputError, Role, Snapshot, fmt_total
from .trace import BackwardTrace
from .walk import node_key, snapshot, snapshot_with_ids

SIMPLIFIED_NOTE = "picture: simplified to read at notebook width"      # Picture.text's note
BY_MODULE_NOTE = ("picture: simplified to read at notebook width (simpler picture {k}): one box per module call, "
                  "each with the saved tensors of the ops inside it; the lines above list every op.")


class GraphPicture(Picture):
    """One snapshot of a graph (grouped by module calls when `grouping` is given). A long run of
    identical blocks of ops (an unrolled RNN) is drawn as its first block and one 'xN' box
    (backward_twice.picture.repeats), titled so, and the text form's last line says so. simpler: as
    for Picture; fold_notes: {number of a simpler picture: what it folded}, said in the text when drawn."""

    def __init__(self, snap: Snapshot, title: str | None = None, highlight=(),
                 grouping: render.Grouping | None = None, text: str | None = None, simpler=None,
                 compact: bool = False, fold_from: Snapshot | None = None, fold: bool = True):
        """compact: when the picture does not fit, first try it compact (Marks.compact: a module drawn
        by path: each chain of ops that saved no tensor one box, parameters on one line).
        fold_from: a snapshot of the same graph walked further than `snap` (beyond its max_nodes),
        whose repeated blocks are folded instead, then drawn up to max_nodes (repeats.cut).
        fold=False: nothing folded (draw(expand=True))."""
        self.snapshot = snap
        head = f"{title}\n" if title else ""
        text = head + (describe(snap) if text is None else text)
        folded = None if grouping is not None or not fold else repeats.fold(snap if fold_from is None else fold_from)
        if folded is not None and fold_from is not None and snap.options is not None:
            folded = repeats.cut(folded, snap.options.max_nodes)
            if not folded.boxes:         # the repeats lie beyond max_nodes: those within it
                folded = repeats.fold(snap)
        self.folded = None
        if folded is not None and folded.eager:
            grouping, self.folded = folded.grouping, folded
            snap, text, title = folded.snap, text + "\npicture: " + folded.words, folded.title(title)
        self.fold_notes: dict[int, str] = {}
        super().__init__(render.to_dot(snap, title, highlight, grouping=grouping), text, simpler=simpler,
                         alt=alt_of(self.snapshot, title))
        self._compact = None if not compact else (
            lambda: render.to_dot(snap, title, highlight, grouping=grouping, marks=render.Marks(compact=True)))
        self.compact = False    # drawn compact (Marks.compact)
        self.drill = None       # a recorded model: the module path to focus next (modules.next_focus)
        self.by_module_at = None    # which simpler picture is one box per module call
        self.focused = False    # drawn with focus= a module path: where to go next is always said

    @property
    def text(self) -> str:
        """Picture's text; for a recorded model drawn with a module focus, or simplified to read (one
        box per call, fewer nodes), a last line says which module path to focus next."""
        words = Picture.text.fget(self)
        note = self.fold_notes.get(self.simplified)
        if note:
            words = f"{words}\npicture: {note}"
        if self.simplified and self.simplified == self.by_module_at:    # no node left out: each call is a box
            words = "\n".join(BY_MODULE_NOTE.format(k=self.simplified) if line.startswith(SIMPLIFIED_NOTE) else line
                              for line in words.split("\n"))
        if self.compact:
            words += ("\npicture: compact, to read at notebook width: each chain of ops that saved no tensor is "
                      "drawn as one box naming its ops, settings are left out (the lines above list each op)")
        if self.drill and (self.focused or self.simplified):
            words = with_focus_next(words, self.drill)
        return words

    @text.setter
    def text(self, value: str) -> None:
        self._text = value

    def _drawn_svg(self) -> str:
        """Picture's; when it does not fit and compact= was asked, the picture compact, if that one fits."""
        svg = Picture._drawn_svg(self)
        if self._compact is not None and not fits(svg):
            dot = self._compact()
            other = render.svg_from_dot(dot)
            if fits(other):
                self.dot, svg, self.compact = dot, other, True
        return svg


class ComparePicture(Picture):
    """Two snapshots side by side (stacked when that is too wide), with what changed between
    them. ran: {node id of `after`: (k, ...)}, the nodes the backward call in between ran."""

    def __init__(self, before: Snapshot, after: Snapshot, titles=("before", "after"), ran=None,
                 ran_text: str | None = None):
        self.before, self.after = before, after
        self.ran = dict(ran or {})
        self.titles, self.ran_text = titles, ran_text
        self.by_module = None     # Watch: title -> the after picture by module call (a recorded model)
        text = (f"== {titles[0]} ==\n{describe(before)}\n== {titles[1]} ==\n{describe(after)}\n"
                f"== change ==\n{changes(before, after)}" + (f"\n{ran_text}" if ran_text else ""))
        self._marks = render.Marks(ran=self.ran, changed=changed_grads(before, after))
        self._dots = None
        super().__init__(None, text, simpler=lambda: self._cut_pairs(self._marks),
                         alt=pair_alt(before, after, titles, self.ran))
        nodes = max(len(before.ops) + before.leaf_count, len(after.ops) + after.leaf_count)
        self.card_head = f"{titles[0]} and {titles[1]}: a graph of {nodes:,} nodes"

    # The pair's DOT (and the layout that measures its boxes) is made when first asked for: when
    # the picture is shown, not when watch() takes its snapshots around the backward call.
    def _pair_dots(self):
        if self._dots is None:
            b, a, t, m = self.before, self.after, self.titles, self._marks
            if self.held_to_rule and sum(len(s.ops) + len(s.tensors) for s in (b, a)) > FIT_MAX_BOXES:
                whole = render.pair_dot(b, a, t, m)
                if cannot_fit(whole):      # never drawn whole: no layout to measure its boxes
                    self._dots = [whole, render.stacked_dots(b, a, t, m)]
                    return self._dots
            sizes = render.pair_sizes(b, a, t, m)   # a node: same size, same place
            self._dots = [render.pair_dot(b, a, t, m, sizes=sizes), render.stacked_dots(b, a, t, m, sizes=sizes)]
        return self._dots

    @property
    def dot(self) -> str:
        return self._pair_dots()[0]

    @dot.setter
    def dot(self, value) -> None:
        if value is not None:       # Picture sets what it drew (the stacked pictures)
            self._pair_dots()[0] = value

    @property
    def alternative(self):
        return self._pair_dots()[1]

    @alternative.setter
    def alternative(self, value) -> None:
        if value is not None:
            self._pair_dots()[1] = value

    def _cut_pairs(self, marks):
        """When the pair does not fit at notebook width: the pair with its repeated blocks folded; then
        the after view (every node of 'after', the changes marked: a core path shows 'after' when the
        pair does not fit, notebook conventions) and its simpler pictures (its changed region, one box
        per module call, then fewer nodes). The text keeps both."""
        yield from self._folded_pairs(marks)
        view = self.after_view(note="the pair does not fit at notebook width: 'after' only")
        yield view.dot
        yield from view.simpler()

    def _folded_pairs(self, marks, cuts=0):
        """The pair with the same repeated blocks folded in both halves (the runs found in 'before',
        where every block still holds its tensors), stacked: whole, then cut to fewer nodes (`cuts`
        pictures: none by default, each costs a layout of three pictures, and the after view's
        folded pictures, tried next, read better when the pair is too large)."""
        from .picture import dot_writer
        from .picture.build import scene_of
        from .picture.legend import columns, features
        from .picture.palette import entries
        runs = repeats.find_runs(self.before)
        fb, fa = repeats.fold(self.before, runs), repeats.fold(self.after, runs)
        if fb is None or fa is None:
            return
        caps = list(render.caps(max(len(x.snap.ops) + x.snap.leaf_count for x in (fb, fa))))[:cuts]
        for n in (None, *caps):
            cb, ca = (fb, fa) if n is None else (repeats.cut(fb, n), repeats.cut(fa, n))
            if not (cb.boxes and ca.boxes):
                return
            titles = [t if n is None else render.short_cut_title(t, n) for t in self.titles]
            titles = [titles[0], ca.title(titles[1])]
            sizes = render.pair_sizes(cb.snap, ca.snap, titles, marks)
            dots = []
            for f, t, m in ((cb, titles[0], render.NO_MARKS), (ca, titles[1], marks)):
                scene = scene_of(f.snap, marks=m, sizes=sizes, legend=False, grouping=f.grouping)
                scene.title, scene.title_on_top = t, True
                scene.title_width = sizes.get("title", (None,))[0]
                dots.append(dot_writer.write(scene))
            legend = entries(features([cb.snap, ca.snap], marks, ca.grouping), marks.legend)
            yield (*dots, dot_writer.write_legend(legend, columns(legend)))

    def after_view(self, spotlight=None, note=None) -> Picture:
        """Only the 'after' picture, with the changes marked and every unchanged box faded: the
        .grad values that changed, the nodes the call ran, the ops whose saved tensors were freed or modified in place
        (a core path shows this one; the full pair stays folded below it). Its text is the pair's.
        spotlight: names of tensors to keep bright instead (['y']: only y's box draws the eye).
        Taller than a core path allows (CORE_MAX_HEIGHT_PX at notebook width), it draws only the
        changed region: the changed boxes and those one edge away, the rest counted in one box."""
        b, a = self.before, self.after
        spot = (changed_grads(b, a) | {op.id for op, _ in [*a.freed_since(b), *a.modified_since(b)]}
                | set(self.ran))     # a node the call ran changed too (a checkpoint's recomputed slots)
        if spotlight is not None:
            known = {t.name: t.id for t in a.tensors.values()}
            missing = [n for n in spotlight if n not in known]
            if missing:
                raise GraphInputError(f"after_view(spotlight=...): no tensor named {missing} in the picture; "
                                      f"named: {sorted(known)}.")
            spot = {known[n] for n in spotlight}
        marks = render.Marks(ran=self.ran, changed=changed_grads(b, a), spotlight=frozenset(spot))
        title = f"{self.titles[1]}: what changed (unchanged boxes faded)"
        if note:
            title = f"{self.titles[1]} ({note}): what changed"

        titles: list[str] = []      # the title of each simpler picture, in order: the text's first line

        def simpler():
            # too tall or too small for a core path: repeated blocks folded; the changed region, its
            # neighbours faded, the rest counted (none when everything ran or nothing changed); then
            # the part nearest the output, fewer nodes each time (each picture says what it left out)
            folded = repeats.fold(a)
            fold_title = f"{self.titles[1]}: what changed"     # cut pictures: short (a wide title shrinks the text)
            whole_title = f"{fold_title} (faded: unchanged)"
            for dot in folded_pictures(a, whole_title, marks, folded=folded, cuts=0):
                titles.append(folded.title(whole_title))
                yield dot
            region_title = f"{self.titles[1]}: what changed, and its neighbours (faded)"
            dot = render.region_dot(a, region_title, marks)
            if dot is not None:
                titles.append(region_title)
                yield dot
            if self.by_module is not None:      # one box per module call: each layer's saved tensors, FREED
                by_module = self.by_module(f"{self.titles[1]}{f' ({note})' if note else ''}: by module call, "
                                           "what backward freed")
                if by_module.drawn_fits() or by_module.whole:   # every call drawn (identical ones folded), not cut
                    titles.append(by_module.text.splitlines()[0])
                    if by_module.drill and not self.drills_said(view):   # where to look next
                        view.drills[len(titles)] = by_module.drill
                    yield by_module.dot
            fold_notes: list[str] = []
            for dot in folded_pictures(a, fold_title, marks, folded=folded, whole=False, notes=fold_notes):
                titles.append(f"{fold_title}: {fold_notes[-1]}")
                yield dot
            for n in render.caps(len(a.ops) + a.leaf_count):
                titles.append(render.short_cut_title(self.titles[1], n))
                yield render.to_dot(capping.cut(a, n), titles[-1], marks=marks)

        alt = alt_of(a, title, b, self.ran, call_of(self.titles[1]))
        view = _AfterView(render.to_dot(a, title, marks=marks), f"{title}\n{self._text}", simpler=simpler, alt=alt)
        view.simpler_titles = titles
        return view

    @staticmethod
    def drills_said(view) -> bool:
        """Whether the view's own text says where to focus next already (a module focused on: watch's)."""
        return "\nfocus next: " in view._text


class _AfterView(Picture):
    """An after view: when the picture drawn is one box per module call (a recorded model), its text
    says which module path to focus on next, as a module overview's does."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.drills: dict[int, str] = {}     # simpler picture k -> the path to focus next

    @property
    def text(self) -> str:
        words = Picture.text.fget(self)
        drill = self.drills.get(self.simplified)
        return words if drill is None else with_focus_next(words, drill)

    @text.setter
    def text(self, value: str) -> None:
        self._text = value


def changed_grads(before: Snapshot, after: Snapshot) -> frozenset:
    """Ids in `after` of the leaves and retained tensors whose .grad differs from `before`'s."""
    was = {t.name: t.grad for t in before.tensors.values()}
    return frozenset(t.id for t in after.tensors.values()
                     if (t.role is Role.LEAF or t.retains_grad) and t.grad != was.get(t.name))


def changes(before: Snapshot, after: Snapshot) -> str:
    """What backward freed and which gradients changed, in words."""
    lines = []
    freed = after.freed_since(before)
    if freed:
        biggest: dict = {}        # a buffer several freed slots held counts once
        for i, (_, sv) in enumerate(freed):
            key = sv.storage if sv.storage is not None else i
            if sv.nbytes is not None:     # an unknown size is never added as 0 B
                biggest[key] = max(biggest.get(key, 0), sv.nbytes)
        unknown = sum(1 for _, sv in freed if sv.nbytes is None)
        lines.append(f"freed {len(freed)} saved tensor(s), {fmt_total(sum(biggest.values()), unknown)}: "
                     + ", ".join(f"{op.name}.{s.slot}" for op, s in freed))
    else:
        lines.append("freed nothing")
    stale = after.modified_since(before)
    if stale:
        lines.append(f"modified in place since saved: {len(stale)} saved tensor(s): "
                     + ", ".join(f"{op.name}.{s.slot} ({s.modified})" for op, s in stale))
    lines.extend(after.grad_changes_since(before))
    return "\n".join(lines)


def draw(*roots, names=None, title=None, max_nodes=300, modules=None, focus=None,
         expand=None, hide_params=False) -> GraphPicture:
    """A picture of the autograd graph behind `roots` (one or more tensors).

    The options compose: any of them with any other (focus= with modules= too). The one refusal
    is expand= a list of module paths without modules= (there are no module calls to open).
    names: {"a": a, "loss": loss, ...} labels leaves, outputs and intermediates
    (named intermediates that call retain_grad() show their grad).
    title: a line above the picture (and the first line of its text form).
    max_nodes: at most this many boxes are drawn; the rest is counted in one dashed box (the same
        meaning in watch, draw_steps, step_through and why_backward_failed; their defaults differ,
        each saying why). 300: a graph of a few layers draws whole. Every picture fits notebook
        width (picture.layout.fits: text at least 11 px, at most 900 px tall, at 860 px): a graph
        that does not is drawn with its repeated blocks folded, then (a model recorded with
        record_modules) one box per module call, then with fewer boxes, each picture saying so;
        the text form always lists every node. A recorded model's parameters are named by path.
    modules: the model whose forward ran under `backward_twice.modules.record_modules(model)`: nodes
        are grouped by the module call that made them, each group with its saved bytes, and
        runs of identical blocks beyond max_nodes are collapsed into one box each. When that
        picture does not read on about two screens at notebook width (its smallest text under
        9 px there: picture.layout.reads_at, or taller than modules.SCREEN_PX), each call inside the model is
        drawn as one box instead: what each of its layers saved, held or freed; when that does not
        fit (11 px, 900 px), each call's name and totals only; then fewer nodes, as above.
    focus: a tensor the roots were computed from (or a list of them): only the part of the
        graph under it (what feeds it) is drawn; what lies between it and the roots is one
        box, "14 nodes from h to loss", and the text form says what it left out. A module path
        ('h.3.attn', or 'model.h.3.attn', of a model recorded with record_modules) draws that module:
        the ops its calls made and the parameters they use; what comes into it from outside is one
        box ("input from h.3.ln_1 (LayerNorm), and 187 nodes before it"), what lies above it another.
        Too large to read, it is drawn compact (each chain of ops that saved no tensor one box), then
        its calls as boxes. Its text, and that of a module picture too large to draw whole, ends
        with the path to focus on next ("focus next: h.3.attn.c_attn": the call that saved the most).
    expand: True draws every op, no repeated block folded (with modules=: in module clusters),
        however wide; with modules=, a list of module paths (['cat']) draws the one-box-per-call
        picture with those calls op by op (expand= draws as asked, however large: the one picture
        not held to the 11 px rule).
    hide_params: True leaves out the leaves (parameters, their AccumulateGrad boxes), except a leaf
        given as a root or a focus; the text form names them and says how to draw them. They take
        no room under max_nodes (snapshot.DrawOptions: the one visibility rule).

    Example (run by tests/test_docstrings.py):

        >>> import torch, backward_twice as bt
        >>> a = torch.tensor([1.0, 2.0], requires_grad=True)
        >>> loss = (a * a).sum()
        >>> pic = bt.draw(loss, names={'a': a, 'loss': loss})   # shows as SVG in a notebook
        >>> print(pic.text.splitlines()[3])                     # its text form: what nbval compares
        op2 MulBackward0(a, a)
    """
    if expand is not None and expand is not True and modules is None:
        raise GraphInputError("expand= opens module calls: it needs modules=model too (expand=True alone "
                              "draws every op, no repeated block folded).")
    if not (expand is None or expand is True or isinstance(expand, str)
            or (isinstance(expand, (list, tuple)) and all(isinstance(e, str) for e in expand))):
        raise GraphInputError(f"expand= takes True (every op) or module paths such as ['cat'], "
                              f"not {type(expand).__name__} {expand!r}.")
    options = draw_options(roots, focus, max_nodes, hide_params, modules)
    if modules is not None:
        return grouped_picture(roots, names=names, title=title, max_nodes=max_nodes, modules=modules,
                               expand=expand, focus=options.focus, options=options)
    names = with_parameter_names(roots, names)
    snap, ids = snapshot_with_ids(*roots, names=names, options=options)
    drill = None if options.within is None else drill_from(roots, names, options, snap, ids)
    del ids
    if expand is True:          # every op, nothing folded: drawn as asked, however large
        pic = GraphPicture(snap, title, fold=False)
        pic.held_to_rule = False
        return pic
    wide = None         # a graph beyond max_nodes: its repeats are found further (then drawn up to max_nodes)
    if snap.truncated and max_nodes < FOLD_WALK:
        wide = snapshot(*roots, names=names, options=dataclasses.replace(options, max_nodes=FOLD_WALK))

    notes: list[str] = []       # what each simpler picture folded ('' : nothing)

    def simpler():
        # until the picture fits at notebook width (each says what it left out): repeated blocks
        # folded (when draw did not fold them already), a box per module call (a recorded model, or a
        # module drawn by path: its calls), the folded picture cut to fewer nodes, then fewer nodes
        folded = pic.folded or repeats.fold(snap)
        if pic.folded is None:
            yield from folded_pictures(snap, title, folded=folded, notes=notes, cuts=0)
        rec = recording_covering(roots) if focus is None else None if options.within is None else options.within.rec
        if rec is not None and len(rec.calls) > 1 and snap.total_nodes <= WALK_LIMIT:   # every call can be summed
            by_module = grouped_picture(roots, names=names, title=_by_module_title(title, options.within),
                                        max_nodes=max_nodes, modules=rec, focus=options.focus, options=options)
            pic.drill = by_module.drill
            if by_module.drawn_fits() or by_module.whole:   # every call drawn (identical ones folded), not cut
                notes.append("")
                pic.by_module_at = len(notes)
                yield by_module.dot
        yield from folded_pictures(snap, title, folded=folded, notes=notes, whole=False)
        for cap in render.caps(len(snap.ops) + len(snap.tensors)):
            small = snapshot(*roots, names=names, options=dataclasses.replace(options, max_nodes=cap))
            notes.append("")
            yield GraphPicture(small, render.cut_title(title, cap)).dot

    pic = GraphPicture(snap, title, simpler=simpler, compact=options.within is not None, fold_from=wide)
    pic.fold_notes = _Notes(notes)
    pic.drill, pic.focused = drill, options.within is not None
    return pic


def draw_options(roots, focus, max_nodes, hide_params, modules=None) -> DrawOptions:
    """The DrawOptions of draw() and watch(). A module path as focus ('h.3.attn', or 'model.h.3.attn',
    of the model that made the roots, recorded with record_modules; or of `modules`) becomes the nodes
    that carry its calls' outputs, and its scope (DrawOptions.within): the walk draws the ops made
    inside the module, what comes into it from outside counted in one box (Snapshot.outside)."""
    within = None
    if isinstance(focus, str):
        rec = recording_of(modules) if modules is not None else recording_covering(roots)
        if rec is None:
            raise GraphInputError(f"focus={focus!r} names a module path: draw it with modules=model, the model "
                                  "whose forward ran under record_modules(model).")
        focus, within = module_focus(roots, rec, focus)
    return DrawOptions(max_nodes=max_nodes, focus=focus, hide_params=hide_params, within=within)


class _Notes(dict):
    """{simpler picture number: fold words} read from the list simpler() fills as it goes."""

    def __init__(self, notes: list):
        super().__init__()
        self.notes = notes

    def get(self, k, default=None):
        return (self.notes[k - 1] or default) if 0 < k <= len(self.notes) else default


SIMPLEST_CAP = render.SIMPLEST_CAP
FOLD_WALK = 5_000       # draw() walks a graph beyond max_nodes this far to find its repeated blocks


def with_parameter_names(roots, names):
    """`names`, plus the parameters of a model recorded with record_modules whose forward made the
    roots, by their path ('h.3.attn.c_attn.weight'), so they are not 'leaf 1...': the names given win."""
    rec = recording_covering(roots)
    if rec is None:
        return names
    given = dict(names or {})
    taken = {id(v) for v in given.values()}
    return {**{n: p for n, p in rec.model.named_parameters() if id(p) not in taken and n not in given}, **given}


def _by_module_title(title, within=None) -> str:
    note = "by module call, to read at notebook width (modules=model draws it; print(pic) lists every op)"
    if within is not None:      # a module drawn by path: the calls inside it as boxes
        note = f"{within.path} by module call, to read at notebook width (print(pic) lists every op)"
    return f"{title}: {note}" if title else note


def compare(before: GraphPicture | Snapshot, after: GraphPicture | Snapshot,
            titles=("before", "after"), trace: BackwardTrace | None = None) -> ComparePicture:
    # titles: one per picture (the pair's own word for draw's title); no max_nodes: the pictures
    # given were already drawn with theirs
    """Two snapshots side by side (stacked when too wide), with what changed between them: two
    different graphs, or one graph at two moments.

    trace: a `backward_twice.trace.BackwardTrace` that was a context manager around the backward call
    in between: the nodes it ran are marked 'ran #k' in `after`, as `watch(...)` marks them.
    `after` must be a picture of the graph the trace hooked (drawn from the same tensors, with
    or without focus= or a cap); another graph is a GraphInputError, never wrong marks.

        before = draw(loss, names=...)
        with BackwardTrace(loss) as tr:
            loss.backward()
        compare(before, draw(loss, names=...), trace=tr)

    Example (run by tests/test_docstrings.py):

        >>> import torch, backward_twice as bt
        >>> a = torch.tensor([1.0, 2.0], requires_grad=True)
        >>> loss = (a * a).sum()
        >>> before = bt.take_snapshot(loss, names={'a': a, 'loss': loss})
        >>> loss.backward()
        >>> after = bt.take_snapshot(loss, names={'a': a, 'loss': loss})
        >>> print(bt.compare(before, after).text.splitlines()[-2])
        freed 2 saved tensor(s), 8 B: MulBackward0.other, MulBackward0.self
    """
    b = before.snapshot if isinstance(before, GraphPicture) else before
    a = after.snapshot if isinstance(after, GraphPicture) else after
    ran, text = {}, None
    if trace is not None:
        ran, text = ran_marks(trace, trace_ids(trace, a), a)
    return ComparePicture(b, a, titles, ran=ran, ran_text=text)


def trace_ids(trace: BackwardTrace, snap: Snapshot) -> dict:
    """{node the trace hooked: its id in `snap`}, matched by walk.node_key (an op's creation
    number, a leaf's identity: not by position, so the order of the roots does not matter).
    A GraphInputError when `snap` shows a node the trace did not hook (another graph)."""
    if not isinstance(trace, BackwardTrace):
        raise GraphInputError(f"trace= takes a backward_twice.trace.BackwardTrace used around the backward call "
                              f"(with BackwardTrace(loss) as tr: loss.backward()); got a {type(trace).__name__}.")
    if trace.recording:
        raise GraphInputError("trace= is still recording (compare() was called inside its with-block): "
                              "call compare after the block, once the backward call has finished.")
    drawn = dict(snap.node_keys)
    if snap.ops and not drawn:
        raise GraphInputError("trace= needs `after` as drawn from a live graph (draw(...) or "
                              "backward_twice.walk.snapshot), not a Snapshot built by hand.")
    by_key = {key: nid for nid, key in drawn.items()}
    ids = {fn: by_key[k] for fn in trace.nodes if (k := node_key(fn)) in by_key}
    matched = set(ids.values())
    missing = [i for i in drawn if i not in matched]
    if missing:
        shown = ", ".join(f"{i} {snap.ops[i].name}" if i in snap.ops else f"{i} ({snap.tensors[i].name})"
                          for i in missing[:4]) + (", ..." if len(missing) > 4 else "")
        raise GraphInputError(
            f"trace= recorded a backward through another graph than `after`: {len(missing)} of the "
            f"{len(drawn)} nodes drawn in `after` are not in it ({shown}). Draw `after` from the "
            "tensors the BackwardTrace hooked, e.g. BackwardTrace(loss) and draw(loss, ...), "
            "after the call.")
    return ids


MODULE_SIZES_READ = 5_000    # nodes whose saved tensors watch reads before backward, on a recorded model only


class Watch:
    """Result of `watch(...)`: displays the before/after pair once the block ends, the nodes
    the block's backward call(s) ran marked with their order (recorded with node hooks)."""

    def __init__(self, roots, names, max_nodes, label, focus=None, hide_params=False):
        self.roots, self.names, self.max_nodes, self.focus = roots, names, max_nodes, focus
        self.options = draw_options(roots, focus, max_nodes, hide_params)
        self.label = label
        self.before, drawn = snapshot_with_ids(*roots, names=names, options=self.options)
        if self.before.truncated and self._by_module_recording() is not None:
            # the after view may draw one box per module call (by_module): what backward frees past the
            # max_nodes drawn (sizes, who else holds each buffer) is read now, while it is held: one walk
            # of MODULE_SIZES_READ nodes, each node keeping its own record (walk._read_saved)
            snapshot(*roots, names=names, options=dataclasses.replace(self.options, max_nodes=MODULE_SIZES_READ))
        self.after = None
        self.raised = None
        try:       # the drawn nodes hooked; the engine's plan read for the others (BackwardTrace)
            self.trace = BackwardTrace(*roots, keep_grads=False, starts=False, hooked=drawn)
        except GraphInputError:      # too big to hook node by node: no ran marks
            self.trace = None

    def _finish(self, exc):
        self.raised = exc
        self.after, ids = snapshot_with_ids(*self.roots, names=self.names, options=self.options,
                                            earlier=self.before)
        after = f"after {self.label}" if self.label else "after"
        if exc is not None:
            after += f" (raised {type(exc).__name__})"
        before = f"before {self.label}" if self.label else "before"
        ran, text = {}, None
        if self.trace is not None:
            ran, text = ran_marks(self.trace, ids, self.after, raised=exc is not None)
            self.trace = None        # holds the nodes: keep it no longer than needed
        within = self.options.within
        drill = None if within is None else drill_from(self.roots, self.names, self.options, self.after, ids)
        self.picture = ComparePicture(self.before, self.after, (before, after), ran=ran, ran_text=text)
        if drill is not None:
            self.picture.text = with_focus_next(self.picture._text, drill)
        rec = self._by_module_recording()
        if rec is not None:   # a model with parts: after views may draw a box per call
            roots, names, options = self.roots, self.names, self.options   # (a module focused on: its calls)
            self.picture.by_module = lambda title: grouped_picture(roots, names=names, title=title, modules=rec,
                                                                   focus=options.focus, options=options)

    def _by_module_recording(self):
        """The module recording whose calls an after view may draw as boxes, or None: none for a graph
        larger than modules.WALK_LIMIT nodes, whose calls cannot all be walked and summed."""
        if self.before.total_nodes > WALK_LIMIT:
            return None
        within = self.options.within
        rec = recording_covering(self.roots) if self.focus is None else None if within is None else within.rec
        return rec if rec is not None and len(rec.calls) > 1 else None

    def after_view(self, spotlight=None, note=None) -> Picture:
        """The 'after' picture with the changes marked, unchanged boxes faded (ComparePicture.after_view)."""
        if self.after is None:
            raise GraphInputError("watch(...).after_view(): the with-block has not finished yet.")
        return self.picture.after_view(spotlight)

    def _repr_mimebundle_(self, include=None, exclude=None):
        if self.after is None:
            return {"text/plain": "watch(...): the block has not finished yet"}
        return self.picture._repr_mimebundle_(include, exclude)

    def __repr__(self):
        return self.picture.text if self.after is not None else "watch(...) in progress"


RAN_LISTED = 12


def ran_marks(trace: BackwardTrace, ids: dict, snap: Snapshot, raised: bool = False) -> tuple[dict, str]:
    """({node id: (k, ...)}, 'backward ran 5 node(s): ...') from a finished trace; `ids` maps
    the graph's nodes to `snap`'s ids (walk.snapshot_with_ids). A trace that hooked only the
    drawn nodes numbers them among themselves, and counts the others from the engine's plan."""
    ran: dict[str, tuple[int, ...]] = {}
    words = []
    order = trace.ran_order()
    for k, i in enumerate(order, 1):
        fn = trace.nodes[i]
        nid = ids.get(fn)
        if nid is not None:
            ran[nid] = ran.get(nid, ()) + (k,)
        if len(words) < RAN_LISTED:       # only these are named (a backward of 20k nodes: 12)
            t = None if nid is None else snap.tensors.get(nid)
            words.append(f"{fn.name()} (not drawn)" if nid is None else
                         f"{nid} {fn.name()}" if t is None else f"AccumulateGrad of {t.name}")
    listed = ", ".join(words) + (f", ... ({len(order) - RAN_LISTED} more)" if len(order) > RAN_LISTED else "")
    if trace.hooked is None:
        if not order:
            return ran, "backward ran no node of this graph"
        return ran, f"backward ran {len(order)} node(s), in this order: {listed}"
    more = trace.planned
    if not order:
        return ran, ("backward ran no node this picture draws (the nodes not drawn are not hooked: "
                     "whether it ran some of them is not recorded)")
    drawn = f"{len(order)} drawn node(s), in this order: {listed}"
    if not more:
        return ran, f"backward ran {drawn}; none of the nodes not drawn"
    if raised:
        return ran, (f"backward ran {drawn}; it had {more:,} node(s) not drawn to run, and raised: "
                     "which of those ran before it stopped was not recorded")
    return ran, f"backward ran {len(order) + more:,} node(s): {drawn}; and {more:,} not drawn"


@contextlib.contextmanager
def watch(*roots, names=None, title=None, max_nodes=300, focus=None, label=None, hide_params=False):
    """Snapshot the graph, run the block, snapshot again; show both side by side.
    names, max_nodes (300, as draw), focus, hide_params: as in draw(); both pictures show the same part.
    title: the pair's titles read 'before <title>' and 'after <title>'. label: its old name.

    Hooks on the drawn nodes record which of them the block's backward call ran, and in which
    order: the 'after' picture marks them ('ran #k', k among the drawn). The nodes not drawn are
    counted from the engine's plan for the call. The hooks are removed at the end.
    An exception in the block is re-raised after the 'after' picture is taken,
    so a cell that fails live still leaves its pictures behind in `w`.

    Example (run by tests/test_docstrings.py):

        >>> import torch, backward_twice as bt
        >>> a = torch.tensor([1.0, 2.0], requires_grad=True)
        >>> loss = (a * a).sum()
        >>> with bt.watch(loss, names={'a': a, 'loss': loss}) as pic:
        ...     loss.backward()
        >>> print(repr(pic).splitlines()[-3])
        freed 2 saved tensor(s), 8 B: MulBackward0.other, MulBackward0.self
    """
    if title is not None and label is not None and title != label:
        raise GraphInputError("watch(title=..., label=...): label is the old name of title; give one.")
    w = Watch(roots, with_parameter_names(roots, names), max_nodes, title if title is not None else label, focus,
              hide_params)
    hooks = w.trace if w.trace is not None else contextlib.nullcontext()
    try:
        with hooks:
            yield w
    except BaseException as exc:
        w._finish(exc)
        raise
    w._finish(None)
