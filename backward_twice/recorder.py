"""Record what happened, so that a diagnosis states facts instead of inferring them.

    with backward_twice.record() as rec:     # or %%why_backward, %why_backward on, python -m backward_twice
        train()
    # if train() raised one of the two errors: print(backward_twice.explain(err))

While active, the recorder notes, for the last few steps:
- for each autograd node made by your code, the line that made it (the first frame outside torch
  and backward_twice), and the step it was made in;
- each in-place write to a tensor: the op, the line (and the library frame that wrote, when the
  write happened inside a library call), the version before and after;
- each `backward()` / `torch.autograd.grad()` call: its line, `retain_graph`, `create_graph`, how
  many nodes' saved tensors it released, and the call that failed with its error;
- each `optimizer.step()`: its line, and how many parameters it changed.

How (the mechanism, and why): a `torch.overrides.TorchFunctionMode` sees each outermost torch
call made from Python (an op, a Tensor method, `x[i] = v`, `Tensor.backward`, `autograd.grad`, an
optimizer's `_foreach_*` ops). The line that made a node is stored on the node itself
(`grad_fn.metadata`), so it lives exactly as long as the graph. A write is seen by comparing the
version counters of the call's tensor arguments before and after it; that also catches writes
made deep inside a library function (its outermost call is seen). Compiled code stays compiled:
Dynamo treats the mode as a pass-through (tests/test_record.py checks that a compiled model's
donated-buffer error still happens under the recorder). Backward code written in Python (a custom
`autograd.Function`'s backward) runs while the mode is popped for the `backward()` call itself: while
a recorder is active, torch's `BackwardCFunction.apply` is wrapped (and restored on exit) to push it
again around that code, so its writes are recorded too. What it cannot see: ops made from C++
without a Python call (those nodes take the line of the call that made them), and writes to
tensors that are not arguments of any outermost call. Cost and memory: docs/diagnosis.md.
"""
from __future__ import annotations

import contextlib
import linecache
import os
import sys
import sysconfig
import threading
import warnings
import weakref
from collections import deque
from dataclasses import dataclass, field

import torch
from torch.overrides import TorchFunctionMode

from .walk import is_leaf_node

KEEP_STEPS = 4           # the records of this many recent steps are kept; older ones are dropped
MAX_RECORDS = 512        # and never more than this many writes (or calls) in all
META = "backward_twice"  # the key of a node's metadata that holds (the Site that made it, step)

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_OWN_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_LIB_DIRS = tuple(sorted({p + os.sep for k in ("stdlib", "platstdlib", "purelib", "platlib")
                          if (p := sysconfig.get_paths().get(k))}, key=len, reverse=True))
_RUNNERS = {"<frozen runpy>", getattr(sys.modules.get("runpy"), "__file__", "runpy.py")}


@dataclass(frozen=True)
class Site:
    """A line of source: where something was made, written or called."""

    file: str
    line: int
    function: str

    def text(self) -> str:
        """The line's source text, stripped ('' when it cannot be read)."""
        return linecache.getline(self.file, self.line).strip()

    def code(self) -> str:
        """The line's code without a trailing comment."""
        import io
        import tokenize

        text = self.text()
        try:
            for tok in tokenize.generate_tokens(io.StringIO(text).readline):
                if tok.type == tokenize.COMMENT:
                    return text[:tok.start[1]].rstrip()
        except (tokenize.TokenError, IndentationError, SyntaxError):
            pass
        return text

    def short(self) -> str:
        name = self.file
        if name.startswith("<ipython-input-") or "ipykernel_" in name:
            first = next((t.strip() for t in linecache.getlines(name) if t.strip() and not t.startswith("#")), "")
            first = first if len(first) <= 40 else first[:37] + "..."
            return f"line {self.line} of the cell `{first}`" if first else f"line {self.line} of the cell"
        return f"{os.path.basename(name)}:{self.line}"

    def __str__(self) -> str:
        text = self.code()
        return f"{self.short()} `{text}`" if text else self.short()


@dataclass
class Call:
    """One backward() / autograd.grad() call."""

    index: int
    kind: str                 # 'backward' or 'autograd.grad'
    site: Site
    retain_graph: bool
    create_graph: bool
    step: int                 # optimizer steps completed before it
    released: int = 0         # nodes whose saved tensors it released
    error: BaseException | None = None
    roots: tuple = ()         # weak references to the tensors it was called on
    outer: tuple = ()         # the user's lines that called the line of the call (a wrapper's caller)
    wrt: tuple = ()           # autograd.grad: weak references to the tensors it differentiated against
    in_step: Site | None = None   # the optimizer.step() line it ran inside (a closure: L-BFGS), or None

    def words(self) -> str:
        what = "backward()" if self.kind == "backward" else "torch.autograd.grad()"
        return f"the {what} call at {self.site}"


@dataclass
class Write:
    """An in-place write seen through a tensor's version counter."""

    op: str
    site: Site                # the user's line
    inner: Site | None        # the library line that wrote, when the write happened inside a library
    before: int
    after: int
    step: int
    storage: int
    shape: tuple
    tensor: weakref.ref | None
    optimizer_step: bool = False
    calls: int = 0            # backward()/autograd.grad() calls made before it
    outer: tuple = ()         # the user's lines that called the line that wrote (innermost first)
    during: Call | None = None  # the backward call whose backward code (a custom Function's) wrote
    seq: int = -1             # the sequence number of the last node made before the write (-1: none seen)


@dataclass
class OptStep:
    index: int
    site: Site
    optimizer: str
    changed: int
    step: int = 0
    params: tuple = ()        # weak references to the parameters it changed
    outer: tuple = ()         # the user's lines that called the line of the step (a wrapper's caller)


@dataclass
class Facts:
    """What the recorder saw: the raw material of a recorded diagnosis."""

    calls: list = field(default_factory=list)
    writes: list = field(default_factory=list)
    steps: list = field(default_factory=list)
    failed: Call | None = None


def _kind_of(filename: str) -> int:
    """0: torch's, ours or a runner's frame (skipped); 1: a library's; 2: the user's."""
    if filename.startswith(_TORCH_DIR) or filename.startswith(_OWN_DIR) or filename in _RUNNERS:
        return 0
    if filename.startswith("<frozen") or filename.startswith(_LIB_DIRS) or "site-packages" in filename:
        return 1
    return 2


_KINDS: dict = {}
_RELEASES: dict = {}     # node class -> whether a plain backward releases what it saved (read once)
_SITES: dict = {}


def _site(frame) -> Site:
    key = (frame.f_code, frame.f_lineno)
    s = _SITES.get(key)
    if s is None:
        if len(_SITES) > 100_000:
            _SITES.clear()
        s = _SITES[key] = Site(frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)
    return s


_WARNINGS = {"recorders": 0, "shown_by": None}      # across threads: recorders active, warnings' own show
_WARNINGS_LOCK = threading.Lock()


def _showwarnmsg_at_user_line(msg) -> None:
    """torch warns from C++ naming the innermost Python frame, which under the recorder is its own
    __torch_function__: name the user's line instead (the line that made the call, as without it).
    Runs only when a warning is shown, so it costs nothing per call; any thread may show one."""
    if msg.filename == __file__:
        site, _ = caller_sites(1)
        if site is not None:
            msg.filename, msg.lineno, msg.line = site.file, site.line, None
    (_WARNINGS["shown_by"] or warnings._showwarnmsg_impl)(msg)


def _warnings_named_at_user_lines(on: bool) -> None:
    with _WARNINGS_LOCK:
        if on:
            if _WARNINGS["recorders"] == 0 and warnings._showwarnmsg is not _showwarnmsg_at_user_line:
                _WARNINGS["shown_by"], warnings._showwarnmsg = warnings._showwarnmsg, _showwarnmsg_at_user_line
            _WARNINGS["recorders"] += 1
        else:
            _WARNINGS["recorders"] = max(0, _WARNINGS["recorders"] - 1)
            if _WARNINGS["recorders"] == 0 and _WARNINGS["shown_by"] is not None:
                warnings._showwarnmsg, _WARNINGS["shown_by"] = _WARNINGS["shown_by"], None


def caller_sites(depth: int = 2) -> tuple[Site | None, Site | None]:
    """(the user's line, the first library line above it or None): the first frame outside torch
    and backward_twice, and the first frame that is the user's own."""
    frame = sys._getframe(depth)
    inner = None
    while frame is not None:
        name = frame.f_code.co_filename
        kind = _KINDS.get(name)
        if kind is None:
            kind = _KINDS[name] = _kind_of(name)
        if kind == 2:
            return _site(frame), inner
        if kind == 1 and inner is None:
            inner = _site(frame)
        frame = frame.f_back
    return inner, None


def outer_sites(limit: int = 4) -> tuple:
    """The user's lines that called the user's line of this op (a module's forward is called from
    `emb = Embedder()(texts)`): up to `limit`, innermost first, for naming where a value was
    assigned."""
    frame, out, seen_user, budget = sys._getframe(2), [], False, 24
    while frame is not None and len(out) < limit and budget > 0:
        budget -= 1
        name = frame.f_code.co_filename
        kind = _KINDS.get(name)
        if kind is None:
            kind = _KINDS[name] = _kind_of(name)
        if kind == 2:
            if seen_user:
                out.append(_site(frame))
            seen_user = True
            if frame.f_code.co_name == "<module>":
                break             # the program's (or the cell's) top level: what runs it is not the user's
        frame = frame.f_back
    return tuple(out)


_BACKWARDS = {torch.Tensor.backward: "backward", torch.autograd.backward: "backward",
              torch.autograd.grad: "autograd.grad"}
_PASS = {torch.Tensor.grad.__get__, torch.Tensor._version.__get__, torch.Tensor.requires_grad.__get__,
         torch.Tensor.grad_fn.__get__, torch.Tensor.data.__get__, torch.Tensor.shape.__get__,
         torch.Tensor.dtype.__get__, torch.Tensor.device.__get__, torch.Tensor.is_leaf.__get__}
_SIGNATURES: dict = {}


def _bound(func, args, kwargs) -> dict:
    """The arguments of a backward()/autograd.backward()/autograd.grad() call by name."""
    import inspect

    sig = _SIGNATURES.get(func)
    if sig is None:
        sig = _SIGNATURES[func] = inspect.signature(func)
    try:
        return dict(sig.bind_partial(*args, **kwargs).arguments)
    except TypeError:        # torch will say what is wrong with the call
        return {}


_ACTIVE = threading.local()
_compiling = torch.compiler.is_compiling
_GRAD_GET = torch.Tensor.grad.__get__
_OVERRIDES = torch.overrides.__file__
_ALL: weakref.WeakSet[Recorder] = weakref.WeakSet()


def _tensor_args(args, kwargs):
    for a in args:
        if isinstance(a, torch.Tensor):
            yield a
        elif isinstance(a, (list, tuple)):
            for b in a:
                if isinstance(b, torch.Tensor):
                    yield b
    out = kwargs.get("out") if kwargs else None
    if isinstance(out, torch.Tensor):
        yield out


def _version(t):
    """A tensor's version counter, or None (an inference tensor has none: reading it raises)."""
    try:
        return t._version
    except Exception:
        return None


def _storage(t) -> int:
    try:
        return t.untyped_storage().data_ptr()
    except Exception:     # a tensor without storage (meta, functional, sparse)
        return 0


def _tag(fn, fact, budget: int = 4096) -> None:
    """Mark `fn` and the untagged nodes under it (made by the same outermost call) with `fact`."""
    todo = [fn]
    while todo and budget > 0:
        f = todo.pop()
        budget -= 1
        try:
            meta = f.metadata
        except Exception:     # AccumulateGrad and friends may refuse; nothing to tag
            continue
        if META in meta:
            continue
        meta[META] = fact
        for n, _ in f.next_functions:
            if n is not None and not is_leaf_node(n):
                todo.append(n)


def made_at(fn):
    """(the Site that made node `fn`, the optimizer steps before, the backward calls before, the
    user's lines that called that line) as the recorder stored it, or None."""
    try:
        return fn.metadata.get(META)
    except Exception:
        return None


def freed_by(fn):
    """The Call that released node `fn`'s saved tensors, as recorded, or None."""
    try:
        return fn.metadata.get(META + ".freed")
    except Exception:
        return None


def _has_saved(fn) -> bool:
    from .walk import _saved_attr_names

    return bool(_saved_attr_names(fn))


def _released_now(fn) -> bool:
    """Whether backward released what node `fn` saved (read without unpacking a hook's packing)."""
    from .walk import saved_slots

    for _slot, how, value in saved_slots(fn):
        if how == "packed" and value is None:
            return True
        if how == "error" and isinstance(value, RuntimeError) and (
                "freed" in str(value) or "a second time" in str(value)):
            return True
    return False


def _graph_nodes(roots, limit: int = 50_000) -> list:
    seen, out, todo = set(), [], [r.grad_fn for r in roots if isinstance(r, torch.Tensor) and r.grad_fn is not None]
    while todo and len(out) < limit:
        fn = todo.pop()
        if fn in seen:
            continue
        seen.add(fn)
        out.append(fn)
        todo.extend(n for n, _ in fn.next_functions if n is not None and n not in seen)
    return out


class Recorder(TorchFunctionMode):
    """Record the facts a diagnosis needs (see the module's docstring). Use `record()`, or enter it
    yourself (`with Recorder() as rec:`); `%why_backward on` keeps one across notebook cells.

    Example (run by tests/test_docstrings.py):

        >>> import torch, backward_twice as bt
        >>> w = torch.ones(2, requires_grad=True)
        >>> with bt.Recorder() as rec:
        ...     (w * 2).sum().backward()
        >>> rec.calls[0].kind, rec.calls[0].retain_graph
        ('backward', False)
    """

    def __init__(self, keep_steps: int = KEEP_STEPS):
        super().__init__()
        if not isinstance(keep_steps, int) or keep_steps < 1:
            raise ValueError(f"record: keep_steps takes a whole number >= 1; got {keep_steps!r}")
        self.keep_steps = keep_steps
        self.calls: deque = deque(maxlen=MAX_RECORDS)
        self.writes: deque = deque(maxlen=MAX_RECORDS)
        self.opt_steps: deque = deque(maxlen=MAX_RECORDS)
        self.grad_reads: deque = deque(maxlen=MAX_RECORDS)   # (backward calls before it, Site): a .grad read
        self.step = 0              # optimizer steps completed
        self.n_calls = 0
        self.dropped = 0           # records dropped for age
        self.failed: Call | None = None
        self.in_optimizer: Site | None = None
        self._hooks = []
        self._inside = False       # True while Python backward code runs under this recorder
        self.last_seq = -1         # the sequence number of the last node it tagged (writes are ordered by it)
        _ALL.add(self)

    # ---- the mode
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if _compiling() or func in _PASS:      # Dynamo traces through: compiled code stays compiled
            if func == _GRAD_GET and self.n_calls and (not self.grad_reads or self.grad_reads[-1][0] != self.n_calls):
                self._grad_read()
            return func(*args, **kwargs)
        kind = _BACKWARDS.get(func)
        if kind is not None:
            return self._backward(kind, func, args, kwargs)
        tensors = list(_tensor_args(args, kwargs))
        before = [_version(t) for t in tensors]
        out = func(*args, **kwargs)
        site = None
        for t, v in zip(tensors, before):
            now = _version(t) if v is not None else None
            if now != v:
                if site is None:
                    site, inner = caller_sites()
                self._write(func, t, v, now, site, inner)
                # an in-place op on a tensor with a graph gives it a new node here. Not read on a
                # view: reading a view's grad_fn can raise (a view made under no_grad) or rebuild it
                if t.requires_grad and not t._is_view() and torch.is_grad_enabled():
                    fn = t.grad_fn
                    if fn is not None:
                        _tag(fn, (site, self.step, self.n_calls, outer_sites()))
        if torch.is_grad_enabled():
            outs = out if isinstance(out, (tuple, list)) else (out,)
            for o in outs:
                if isinstance(o, torch.Tensor):
                    fn = o.grad_fn
                    if fn is not None:
                        try:
                            meta = fn.metadata
                        except Exception:
                            continue
                        if META not in meta:
                            if site is None:
                                site, inner = caller_sites()
                            _tag(fn, (site, self.step, self.n_calls, outer_sites()))
                            self.last_seq = fn._sequence_nr()
        return out

    def _grad_read(self) -> None:
        """Note the first `.grad` read by your own code (not by an optimizer's step or zero_grad) after a
        backward call: the gradient of that call is used before the next one."""
        frame = sys._getframe(2)
        while frame is not None and (frame.f_code.co_filename.startswith(_OWN_DIR)
                                     or frame.f_code.co_filename == _OVERRIDES):
            frame = frame.f_back
        if frame is not None and _kind_of(frame.f_code.co_filename) == 2:
            self.grad_reads.append((self.n_calls, _site(frame)))

    def _write(self, func, t, before, after, site, inner) -> None:
        if self.in_optimizer is not None:
            site, inner = self.in_optimizer, None
        op = getattr(func, "__name__", str(func))
        try:
            ref = weakref.ref(t)
        except TypeError:
            ref = None
        outer = outer_sites(3) if self.in_optimizer is None else getattr(self, "_step_outer", ())
        self.writes.append(Write(op, site, inner if inner != site else None, before, after, self.step,
                                 _storage(t), tuple(t.shape), ref, self.in_optimizer is not None, self.n_calls,
                                 outer, self.calls[-1] if self._inside and self.calls else None, self.last_seq))
        self._age()

    def _backward(self, kind, func, args, kwargs):
        if self._inside:       # a backward run by backward code (reentrant checkpointing): not the user's call
            return func(*args, **kwargs)
        site, _ = caller_sites()
        given = _bound(func, args, kwargs)          # positional or keyword, as the user wrote it
        retain, create = given.get("retain_graph"), bool(given.get("create_graph", False))
        first = given.get("self", given.get("tensors", given.get("outputs")))
        roots = list(first) if isinstance(first, (list, tuple)) else [first]
        inputs = given.get("inputs")
        if retain is None:
            retain = create
        self.n_calls += 1
        call = Call(self.n_calls, kind, site, bool(retain), create, self.step,
                    roots=tuple(weakref.ref(r) for r in roots if isinstance(r, torch.Tensor)), outer=outer_sites(3),
                    in_step=self.in_optimizer)
        if kind == "autograd.grad":
            wrt = given.get("inputs")
            wrt = wrt if isinstance(wrt, (list, tuple)) else (wrt,)
            call.wrt = tuple(weakref.ref(t) for t in wrt if isinstance(t, torch.Tensor))
        self.calls.append(call)
        nodes = [] if retain else [fn for fn in _graph_nodes(roots) if _has_saved(fn) and freed_by(fn) is None]
        try:
            out = func(*args, **kwargs)
        except BaseException as err:
            call.error = err
            call.roots = tuple(roots)        # kept alive: the diagnosis reads this graph
            self.failed = call
            raise
        everything = kind == "backward" and inputs is None
        for fn in nodes:
            cls = type(fn)
            known = _RELEASES.get(cls) if everything else None
            if known is None:
                known = _released_now(fn)
                if everything:       # a plain backward runs every node: a class releases, or never does
                    _RELEASES[cls] = known
            if known:
                try:
                    fn.metadata[META + ".freed"] = call
                except Exception:
                    continue
                call.released += 1
        if create and kind == "autograd.grad":
            for o in (out if isinstance(out, (tuple, list)) else (out,)):
                if isinstance(o, torch.Tensor) and o.grad_fn is not None:
                    _tag(o.grad_fn, (site, self.step, self.n_calls, ()), budget=10_000)
        self._age()
        return out

    def _age(self) -> None:
        oldest = self.step - self.keep_steps
        for q in (self.writes, self.calls, self.opt_steps):
            while q and getattr(q[0], "step", oldest + 1) < oldest and q[0] is not self.failed:
                q.popleft()
                self.dropped += 1

    # ---- optimizers (torch's global step hooks)
    def _pre_step(self, optimizer, args, kwargs):
        site, _ = caller_sites(3)
        self.in_optimizer = site
        self._step_outer = outer_sites(3)
        self._versions = [(p, p._version) for g in optimizer.param_groups for p in g["params"]]

    def _post_step(self, optimizer, args, kwargs):
        site = self.in_optimizer
        self.in_optimizer = None
        changed = [weakref.ref(p) for p, v in getattr(self, "_versions", ()) if p._version != v]
        self._versions = []
        self.opt_steps.append(OptStep(self.step + 1, site, type(optimizer).__name__, len(changed), self.step,
                                      tuple(changed), getattr(self, "_step_outer", ())))
        self.step += 1
        self._age()

    def __enter__(self):
        from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

        self._hooks = [register_optimizer_step_pre_hook(self._pre_step),
                       register_optimizer_step_post_hook(self._post_step)]
        stack = getattr(_ACTIVE, "stack", None)
        if stack is None:
            stack = _ACTIVE.stack = []
        stack.append(self)
        _warnings_named_at_user_lines(True)
        _see_backward_code(True)
        return super().__enter__()

    def __exit__(self, *exc):
        for h in self._hooks:
            h.remove()
        self._hooks = []
        self.in_optimizer = None
        _ACTIVE.stack.remove(self)
        _warnings_named_at_user_lines(False)
        _see_backward_code(False)
        return super().__exit__(*exc)

    # ---- what it kept
    def kept(self) -> str:
        """How much is kept, in words."""
        return (f"the recorder keeps the last {self.keep_steps} optimizer steps: {len(self.calls)} backward "
                f"call(s), {len(self.writes)} in-place write(s), {len(self.opt_steps)} optimizer step(s)"
                + (f"; {self.dropped} older record(s) dropped" if self.dropped else ""))

    def facts_for(self, err: BaseException) -> Facts | None:
        """The facts behind `err`, when this recorder saw the call that raised it (else None)."""
        failed = self.failed if self.failed is not None and self.failed.error is err else None
        if failed is None and not self._saw(err):
            return None
        return Facts(list(self.calls), list(self.writes), list(self.opt_steps), failed)

    def _saw(self, err) -> bool:
        """Whether `err` was raised while this recorder was recording (a saved tensor read after
        backward, outside any backward call)."""
        return getattr(err, "_backward_twice_recorder", None) is self


_mode_stack = getattr(torch.overrides, "_get_current_function_mode_stack", list)
_SEEING = [0, None]     # how many recorders are active; the original BackwardCFunction.apply


def _apply_seen(ctx, *args):
    """BackwardCFunction.apply while a recorder is active: the engine runs a custom Function's
    backward (Python code) with every torch-function mode popped, since it runs inside the
    recorder's own handler of `backward()`. Pushing the recorder again around that code records an
    in-place write made there (a loss's backward scaling its saved gradient with `mul_`) with its
    line, like any other write."""
    rec = active()
    if rec is None or rec._inside or rec in _mode_stack():
        return _SEEING[1](ctx, *args)
    rec._inside = True
    TorchFunctionMode.__enter__(rec)
    try:
        return _SEEING[1](ctx, *args)
    finally:
        TorchFunctionMode.__exit__(rec, None, None, None)
        rec._inside = False


def _see_backward_code(on: bool) -> None:
    """Install `_apply_seen` while any recorder is active (counted); restore torch's own after."""
    from torch.autograd.function import BackwardCFunction

    if on:
        if _SEEING[0] == 0:
            _SEEING[1] = BackwardCFunction.apply
            BackwardCFunction.apply = _apply_seen
        _SEEING[0] += 1
    elif _SEEING[0] > 0:
        _SEEING[0] -= 1
        if _SEEING[0] == 0:
            BackwardCFunction.apply = _SEEING[1]


def active() -> Recorder | None:
    stack = getattr(_ACTIVE, "stack", None)
    return stack[-1] if stack else None


def recorder_for(err: BaseException) -> Recorder | None:
    """The recorder that saw `err` raised (the most recent one), or None."""
    for rec in list(_ALL):
        if rec.failed is not None and rec.failed.error is err:
            return rec
    return getattr(err, "_backward_twice_recorder", None)


@contextlib.contextmanager
def record(keep_steps: int = KEEP_STEPS):
    """Record what backward() needs to be explained exactly, for the code inside the `with`.

        with backward_twice.record() as rec:
            train()                       # if it raises: backward_twice.explain(err) says what happened

    An error raised inside is re-raised as it was; `backward_twice.explain(err)` (or `%why_backward`)
    then finds and reads the record. keep_steps: how many recent optimizer
    steps of records to keep (older ones are dropped; `rec.kept()` says how many).

    Example (run by tests/test_docstrings.py):

        >>> import torch, backward_twice as bt
        >>> w = torch.ones(2, requires_grad=True)
        >>> try:
        ...     with bt.record() as rec:
        ...         y = (w * 3).exp().sum()
        ...         y.backward()
        ...         y.backward()
        ... except RuntimeError as err:
        ...     d = bt.explain(err)
        >>> d.rule
        'shared-graph'
    """
    rec = Recorder(keep_steps)
    with rec:
        try:
            yield rec
        except BaseException as err:
            if rec.failed is None or rec.failed.error is not err:
                try:
                    err._backward_twice_recorder = rec
                except Exception:
                    pass
            raise
