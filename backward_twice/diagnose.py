"""Why did my backward() fail? A diagnosis for a learner's own training loop, evidence first.

    loss.backward()            # RuntimeError: Trying to backward through the graph a second time
    %load_ext backward_twice # once per session (or: from backward_twice.diagnose import why_backward_failed)
    %why_backward              # in the next cell: what the graph shows, the cause and its fix when
                               # the evidence singles one out (else the candidates), and a picture

`why_backward_failed()` does the same as a function: with no argument it reads the last error
(`sys.last_value`), or pass the exception or the tensor whose backward failed. It explains two
errors: "Trying to backward through the graph a second time" and its sibling "one of the
variables needed for gradient computation has been modified by an inplace operation".

What it reads (it never calls backward and never re-runs your step; tested):
- the graph behind the failed tensor: each node's creation number (autograd's `sequence_nr`),
  which saved tensors are freed (a reentrant checkpoint's or a compiled graph's ctx.saved_tensors
  too), and which were changed in place since saved (their versions);
- where you keep tensors (backward_twice.names): your variables, lists, tuples, deques, dicts and the
  attributes of your objects and modules, as paths like `ema.shadow['w']` or `memory[3][0]`
  (in IPython the user namespace; else `names=`; else the locals of the function in the
  traceback that called backward());
- optional, sharper evidence you opt into before the loop:
  * a `StepClock` ticked at the top of each step, passed as `clock=`: it then says in which step
    each part was made (this step, step k, before the first step) instead of inferring it;
  * `torch.autograd.set_detect_anomaly(True)`: autograd then records the forward line that made
    each node, and the diagnosis quotes the line that made the node it names.

How it finds the stop without running anything: after a failed backward the part of the graph
it ran is freed too, so "freed" alone cannot say where it stopped. But the CPU engine runs nodes
newest first (by creation number), so it runs all of this step's nodes and stops at the newest
*older* node that saved a tensor. What is older is read from the graph: a running total chains
one `AddBackward0` per step (and its steps share no node); otherwise the previous step's loss,
never reachable from this step's, leaves a gap in the creation numbers.

Evidence before advice: a `Diagnosis` is `confident` only when the evidence singles out one
cause and one fix (a running total; a list of each step's losses added up; a state rebound each
step; two losses of one step where the earlier one is still in your namespace; a list that keeps
last episode's entries; the in-place error with the changed tensor found). Otherwise it says what
the graph shows and lists the candidate causes (`candidates`), each with its evidence, and what to
check.

The seam with the picture engine: this module owns the analysis; backward_twice.diagnosis_picture owns
the pictures (`stop_picture`, and `StepClock`/`draw_steps`, re-exported here); backward_twice.names owns
where names are looked for.
"""
from __future__ import annotations

import dis
import html
import linecache
import re
import sys
import types
from collections import deque

import torch

from . import render
from ._ipython import shell
from .diagnosis_picture import (  # noqa: F401 (re-exported)
    STOP_FILL,
    StepClock,
    StopRequest,
    draw_steps,
    is_leaf_node,
    seq,
    stop_picture,
)
from .findings import RESET_METHODS
from .names import named_tensors
from .snapshot import GraphInputError
from .walk import COUNT_LIMIT, check_max_nodes, nodes_under, raw_saved_tensor, saved_slots

FREED_TEXT = "Trying to backward through the graph a second time"
INPLACE_TEXT = "modified by an inplace operation"
DONATED_TEXT = "compiled with non-empty donated buffers"   # torch.compile's (AOTAutograd's), torch 2.13


# The kinds of fix the diagnosis (and the corpus of failing programs) speaks of.
FIX_KINDS = {
    "detach-carried": "a tensor kept from an earlier step (a state, an attribute, a buffer entry) still "
                      "holds that step's graph: detach it where it is kept",
    "recompute-in-step": "a tensor computed once (before the loop) is reused by every step: compute it "
                         "inside the step (or under torch.no_grad() if it should not train)",
    "retain-or-sum": "two losses of the same step share a graph: one backward on their sum, or "
                     "retain_graph=True on the first backward",
    "detach-input": "one network's output feeds a loss that should not train that network (a GAN's "
                    "fake fed to D): pass it .detach()ed there",
    "accumulate-number": "a running total of losses is backwarded: keep the total as a number, "
                         "total += loss.item()",
    "reset-per-episode": "state that should start fresh each episode, sequence or task is not reset: "
                         "clear it, call reset(), or restart from the meta-parameters",
    "backward-before-step": "optimizer.step() changed weights a later backward still needs: run the "
                            "backward before the step (or recompute the forward after it)",
    "out-of-place": "an in-place op (relu_, inplace=True, +=, x[i] = ...) changed a tensor the graph "
                    "saved: use the out-of-place op",
    "no-data-write": "a write autograd does not record (through .data, .detach() or under no_grad) "
                     "changed a tensor the graph saved: write into a copy, or after the backward",
}

# an in-place op's node -> how it is written
_INPLACE_OPS = {"Relu": "relu_ / nn.ReLU(inplace=True)", "LeakyRelu": "leaky_relu_ / nn.LeakyReLU(inplace=True)",
                "Add": "+= / add_", "Sub": "-= / sub_", "Mul": "*= / mul_", "Div": "/= / div_",
                "CopySlices": "an indexed assignment x[...] = ...", "Clamp": "clamp_",
                "Sigmoid": "sigmoid_", "Tanh": "tanh_", "Exp": "exp_", "Hardtanh": "nn.ReLU6/Hardtanh(inplace=True)",
                "Elu": "nn.ELU(inplace=True)", "Threshold": "threshold_", "MaskedFill": "masked_fill_",
                "IndexPut": "index_put_ / x[mask] = ...", "Copy": "copy_", "Fill": "fill_", "Dropout": "dropout(inplace=True)"}


# --------------------------------------------------------------------------------
# Reading the graph: creation order, and which part is older than the step that failed
def _step_start(root_fn, ops: list, graph):
    """(creation number where this step's part of the graph begins or None, running total?).

    ops: every non-leaf node reachable from the root. Two signs, in this order:
    a running total (the root is an add whose input is the same add a step earlier, and the
    two share no node: a loss summed over one step's time steps shares their state), then
    the largest gap in creation numbers (the previous step's loss and whatever else it made
    after the carried tensor is not reachable from this step's loss).
    A step earlier is read from creation order: the inner add must be older than every node of
    the term added onto it (`total = total + loss`: the total is last step's, the whole loss this
    step's). sum(losses) makes its adds after the terms, the newest included (((0 + l0) + l1) + l2):
    its inner add is newer than the term, made in this step, so it is not a running total; nor
    is a sum whose term holds an older loss (sum(w * l for ...) over a list of losses).
    """
    root_fn = _total_node(root_fn)
    chain = [n for n, _ in root_fn.next_functions if n is not None and n.name() == root_fn.name()
             and not is_leaf_node(n)]
    if root_fn.name().startswith("AddBackward") and chain:
        prev = max(chain, key=seq)
        others = [n for n, _ in root_fn.next_functions if n is not None and n is not prev and not is_leaf_node(n)]
        shared = {fn for fn in graph.under([prev]) & graph.under(others) if not is_leaf_node(fn)}
        term = [fn for fn in graph.under(others) if not is_leaf_node(fn)]
        if others and not shared and seq(prev) < min(seq(fn) for fn in term):
            return seq(prev) + 1, True
    seqs = sorted({seq(f) for f in ops})
    gaps = [(b - a, b) for a, b in zip(seqs, seqs[1:]) if b - a > 1]
    if not gaps:
        return None, False
    return _widest_gaps(gaps)[-1], False


def _widest_gaps(gaps) -> list:
    """The starts of the widest gaps in creation numbers, earliest first. A gap as wide as the
    step boundary can come from a tensor this step made but the loss does not use (an RNN cell's
    returned state, made after its output), so ties are tried earliest first (see _explain)."""
    widest = max(g for g, _ in gaps)
    return sorted(b for g, b in gaps if g == widest)


def _tied_starts(ops: list) -> list:
    seqs = sorted({seq(f) for f in ops})
    gaps = [(b - a, b) for a, b in zip(seqs, seqs[1:]) if b - a > 1]
    return _widest_gaps(gaps) if gaps else []


def _total_node(fn):
    """The node a running total would be: `fn` itself, or, for (total / n).backward(), the node
    under up to three ops that each take one tensor."""
    for _ in range(3):
        inputs = [n for n, _ in fn.next_functions if n is not None and not is_leaf_node(n)]
        if fn.name().startswith("AddBackward") or len(inputs) != 1:
            break
        fn = inputs[0]
    return fn


def _saved_states(fn) -> list:
    """[(slot, state, versions)] of the tensors live node `fn` saved (its `_saved_*` slots): state
    'freed', 'held' or 'modified' (then versions = (saved at, now)). Read by backward_twice.walk's one
    reader, which never unpacks what a saved-tensor hook packed (a non-reentrant checkpoint's
    unpack re-runs the user's forward): a checkpoint's placeholder counts as held (backward has
    not run), None as freed."""
    out = []
    for slot, how, value in saved_slots(fn, functions=False):
        if how == "error":
            text = str(value) if isinstance(value, RuntimeError) else ""
            m = _VERSIONS.search(text) if INPLACE_TEXT in text else None
            if m:
                out.append((slot, "modified", (int(m.group(2)), int(m.group(1)))))
            elif FREED_TEXT in text or "freed" in text:
                out.append((slot, "freed", None))
        elif how == "packed":
            out.append((slot, "freed" if value is None else "held", None))
        elif isinstance(value, torch.Tensor) or (isinstance(value, (tuple, list)) and any(
                isinstance(v, torch.Tensor) for v in value)):
            out.append((slot, "held", None))
    return out


_VERSIONS = re.compile(r"is at version (\d+); expected version (\d+)")

# autograd.Function nodes whose backward always reads what the Function saved (ctx.saved_tensors):
# once a backward released that state, a second backward through them raises the freed-graph
# error. Read from torch 2.13: torch.utils.checkpoint.CheckpointFunction.backward (a reentrant
# checkpoint) and AOTAutograd's CompiledFunction.backward (torch.compile with aot_eager or
# inductor), which reads its saved tensors even when it saved none.
READS_ITS_STATE = ("CheckpointFunctionBackward", "CompiledFunctionBackward")


def _released(fn) -> bool:
    """Whether `fn` is an autograd.Function node (a custom Function, a reentrant checkpoint, a
    compiled graph) whose saved state an earlier backward released. Its saved tensors are not
    `_saved_*` slots, and once released torch no longer says how many there were (none, maybe): read
    without unpacking anything a hook packed (backward_twice.walk.saved_slots)."""
    if not isinstance(fn, torch.autograd.function.BackwardCFunction):
        return False
    for slot, how, value in saved_slots(fn):
        if slot == "saved_tensors" and how == "error" and isinstance(value, RuntimeError) and (
                FREED_TEXT in str(value) or "freed" in str(value)):
            return True
    return False


class _Graph:
    """The live graph behind a node, read once (structure only: backward_twice.walk.nodes_under, up to
    walk.COUNT_LIMIT nodes); what each node saved is read lazily, node by node, only where the
    analysis asks (the newest older node with a freed tensor is found without reading the rest:
    a 5,000-node graph is answered in well under a second)."""

    def __init__(self, root_fn):
        self.nodes, self.truncated = nodes_under([root_fn], limit=COUNT_LIMIT)
        self.ids = set(self.nodes)
        self._users = None
        self._saved = {}
        self._released = {}

    def inputs(self, fn) -> list:
        return [n for n, _ in fn.next_functions if n is not None]

    def under(self, starts) -> set:
        """Every node reachable from `starts` through inputs, starts included."""
        seen, stack = set(), list(starts)
        while stack:
            fn = stack.pop()
            if fn not in seen:
                seen.add(fn)
                stack.extend(self.inputs(fn))
        return seen

    def reaching(self, target) -> set:
        """The nodes `target` feeds, directly or not, itself included."""
        if self._users is None:
            self._users = {}
            for fn in self.nodes:
                for n in self.inputs(fn):
                    self._users.setdefault(n, []).append(fn)
        seen, stack = set(), [target]
        while stack:
            fn = stack.pop()
            if fn not in seen:
                seen.add(fn)
                stack.extend(self._users.get(fn, ()))
        return seen

    def path(self, start, target) -> list:
        """Shortest chain of nodes from `start` down to `target`, following inputs."""
        parent, queue = {start: None}, deque([start])
        while queue and target not in parent:
            fn = queue.popleft()
            for n in self.inputs(fn):
                if n not in parent:
                    parent[n] = fn
                    queue.append(n)
        if target not in parent:
            return []
        out, fn = [], target
        while fn is not None:
            out.append(fn)
            fn = parent[fn]
        return out[::-1]

    def outside(self, fn, limit: int = 2_000) -> tuple[list, list]:
        """(the nodes under `fn` that are not in this graph, the nodes of this graph where that walk
        meets it): the own part of another tensor's graph (an earlier loss, an LSTM's state the
        loss does not use)."""
        if fn in self.ids:
            return [], [fn]
        own, meets, seen, stack = [], [], {fn}, [fn]
        while stack and len(seen) < limit:
            node = stack.pop()
            own.append(node)
            for n in self.inputs(node):
                if n not in seen:
                    seen.add(n)
                    (meets if n in self.ids else stack).append(n)
        return own, meets

    def feeds(self, fn, reaching: set) -> bool:
        """Whether node `fn` is one of `reaching` (a `reaching(target)` set) or is fed by one."""
        return any(m in reaching for m in self.outside(fn)[1])

    def leaves_under(self, fn) -> list:
        """The leaf tensors behind node `fn`."""
        return [n.variable for n in self.under([fn]) if is_leaf_node(n)] if fn in self.ids else []

    def saved(self, fn) -> list:
        """[(slot, state, versions)] of the tensors node `fn` saved: state 'freed', 'held' or
        'modified' (then versions = (saved at, now)); read once per node."""
        out = self._saved.get(fn)
        if out is None:
            out = self._saved[fn] = _saved_states(fn)
        return out

    def freed(self, fn) -> list:
        """The slots of node `fn` whose saved tensor is freed."""
        return [slot for slot, state, _ in self.saved(fn) if state == "freed"]

    def stops(self, fn) -> list:
        """The slots whose loss makes a backward through `fn` raise the freed-graph error: its freed
        `_saved_*` slots, or ["saved_tensors"] for a reentrant checkpoint's or a compiled graph's
        node (READS_ITS_STATE) whose state was released."""
        return self.freed(fn) or (["saved_tensors"] if fn.name() in READS_ITS_STATE and self.released(fn) else [])

    def released(self, fn) -> bool:
        """Whether `fn` is an autograd.Function node whose saved state was released (`_released`)."""
        out = self._released.get(fn)
        if out is None:
            out = self._released[fn] = _released(fn)
        return out


def _earlier_losses(graph: _Graph, every, root) -> list:
    """[(name, tensor, its own nodes, the ops of this graph it shares)]: named tensors outside
    this graph (scalars first, newest first) whose graph joins this one, that were backwarded
    already (their own saved tensors freed, or a scalar that saved none: d = c.mean()) and whose shared part holds a
    freed tensor: the earlier backward of this step, through a graph both share. Items of
    containers are left out (a list of earlier steps' losses is a log, not this step), unless the
    container holds the failed tensor too (a tuple of this step's losses)."""
    out = []
    siblings = {_container(n) for n, t in every if t is root and _container(n)}   # outputs = (loss1, loss2)
    cands = [(n, t) for n, t in _dedupe([nt for nt in every if "[" not in nt[0] or _container(nt[0]) in siblings])
             if t is not root and t.grad_fn is not None
             and ("[" not in n or _container(n) in siblings)
             and t.grad_fn not in graph.ids and not is_leaf_node(t.grad_fn)]
    cands.sort(key=lambda nt: (nt[1].numel() != 1, -seq(nt[1].grad_fn)))
    for n, t in cands[:40]:
        own, meets = graph.outside(t.grad_fn)
        if not meets:
            continue
        shared = {fn for fn in graph.under(meets) if not is_leaf_node(fn)}
        if not any(graph.freed(fn) for fn in shared):
            continue
        if _any_freed(own) or (t.numel() == 1 and not _holds_tensor(own)):   # a loss that saved no tensor
            out.append((n, t, own, shared))
            if len(out) >= 3:
                break
    return out


def _same_computation(own, mine) -> bool:
    """Whether two parts of graphs are the same computation on the same parameters (the same kinds
    of node, the same leaves): an earlier step's loss, not a sibling loss of this step."""
    kinds = sorted(fn.name() for fn in own)
    return bool(own) and kinds == sorted(fn.name() for fn in mine) and _direct_leaves(own) == _direct_leaves(mine)


def _direct_leaves(nodes) -> set:
    """ids of the leaf tensors (parameters) the nodes use directly."""
    return {id(n.variable) for fn in nodes for n, _ in fn.next_functions
            if n is not None and is_leaf_node(n)}


def _any_freed(nodes) -> bool:
    """Whether one of these live nodes holds a saved tensor an earlier backward freed."""
    return any(state == "freed" for fn in nodes for _, state, _ in _saved_states(fn))


def _out_shape(fn):
    """The shape of node `fn`'s first output (what its gradient will be), or None."""
    try:
        return tuple(fn._input_metadata[0].shape)
    except Exception:
        return None


def _holds_tensor(nodes) -> bool:
    """Whether one of these live nodes still holds a saved tensor (not backwarded yet)."""
    return any(state == "held" for fn in nodes for _, state, _ in _saved_states(fn))


def _made_where(fn) -> str | None:
    """The forward line that made node `fn`, when the user's anomaly mode recorded it."""
    try:
        stack = fn.metadata.get("traceback_")
    except Exception:
        return None
    if not stack:
        return None
    user = [f for f in stack if "/torch/" not in f.replace("\\", "/") and "/backward_twice/" not in f.replace("\\", "/")]
    last = (user or stack)[-1].strip().splitlines()
    return " ".join(part.strip() for part in last)


# --------------------------------------------------------------------------------
# Names: tensors in the user's namespace (backward_twice.names), and modules owning leaves
def _parameter_names(named, graph: _Graph, root) -> dict:
    """{name: leaf} for the named leaves behind `root`."""
    leaves = {id(t) for t in graph.leaves_under(root.grad_fn)}
    return {n: t for n, t in named if t.grad_fn is None and id(t) in leaves}


def _module_named(ns, dotted: str):
    """The module object behind 'model.rnn' (or 'encoder[2]') in `ns`, or None."""
    parts = re.findall(r"[^.\[\]]+", dotted)
    obj = ns.get(parts[0]) if ns is not None and parts else None
    for part in parts[1:]:
        obj = vars(obj).get("_modules", {}).get(part) if obj is not None else None
    return obj if isinstance(obj, torch.nn.Module) else None


def _owner(ns, leaves) -> str | None:
    """Name of a module in `ns` whose parameters include one of `leaves`."""
    ids = {id(t) for t in leaves}
    for name, value in list((ns or {}).items())[:20_000]:
        if isinstance(name, str) and not name.startswith("_") and isinstance(value, torch.nn.Module):
            try:
                if any(id(p) in ids for p in value.parameters()):
                    return name
            except Exception:
                continue
    return None


def _own_module(ns, leaves):
    """(name, module) of a module in `ns` of the user's own class (not torch's) whose parameters
    include one of `leaves`: code of the user's that runs between what the graph shows; or None."""
    ids = {id(t) for t in leaves}
    for name, value in list((ns or {}).items())[:20_000]:
        if (isinstance(name, str) and not name.startswith("_") and isinstance(value, torch.nn.Module)
                and not type(value).__module__.startswith("torch.")):
            try:
                if any(id(p) in ids for p in value.parameters()):
                    return name, value
            except Exception:
                continue
    return None


def _optimizers_holding(ns, tensor) -> list:
    """Names of the optimizers in `ns` whose parameters include `tensor` (or share its memory)."""
    key = _storage(tensor)
    out = []
    for name, value in list((ns or {}).items())[:20_000]:
        if isinstance(name, str) and isinstance(value, torch.optim.Optimizer):
            for group in value.param_groups:
                if any(p is tensor or (key is not None and _storage(p) == key) for p in group["params"]):
                    out.append(name)
                    break
    return out


def _storage(t):
    try:
        return t.untyped_storage().data_ptr()
    except Exception:
        return None


def _ipython_namespace():
    ip = shell()
    return None if ip is None else ip.user_ns


def _is_plain_name(path) -> bool:
    """'loss' yes; 'losses[0]', 'model.loss' no (a name to write `name.backward()` with)."""
    return isinstance(path, str) and path.isidentifier()


def _outermost(path):
    """'memory' for 'memory[7]' (a transition of a replay buffer), 'policy.saved_log_probs' as is."""
    return None if path is None else re.sub(r"(\[[^\[\]]+\])+$", "", path)


def _container(path: str) -> str | None:
    """'policy.saved_log_probs' for 'policy.saved_log_probs[3]'; None for a path without items."""
    m = re.fullmatch(r"(.+?)\[[^\[\]]+\]", path)
    return m.group(1) if m else None


# --------------------------------------------------------------------------------
# Finding the tensor and the error
def _tensors_from_traceback(tb) -> list:
    """The tensors a failed backward()/autograd.grad() was called on, from its traceback frames."""
    found = []
    while tb is not None:
        frame = tb.tb_frame
        code = frame.f_code
        if code.co_filename.replace("\\", "/").endswith("torch/autograd/graph.py") and \
                code.co_name == "_engine_run_backward":
            outs = frame.f_locals.get("t_outputs") or ()
            found = [t for t in outs if isinstance(t, torch.Tensor)]
        tb = tb.tb_next
    return found


def _user_frame(tb, root):
    """The innermost frame of the traceback, outside torch, whose variables hold `root` and
    something else (not a one-line wrapper around backward()): the user's loop."""
    best = None
    while tb is not None:
        frame = tb.tb_frame
        path = frame.f_code.co_filename.replace("\\", "/")
        if "/torch/" not in path:
            values = list(frame.f_locals.values())
            if any(v is root for v in values) and sum(isinstance(v, (torch.Tensor, torch.nn.Module)) for v in values) > 1:
                best = frame
        tb = tb.tb_next
    return best


class Diagnosis:
    """What `why_backward_failed` found. `.verdict` is one of: 'stopped' (the freed-graph error
    explained), 'modified' (the in-place error explained), 'would succeed', 'cannot tell' (the
    graph does not show where it stops, or whether it will), 'no graph', 'unrelated', 'no error',
    'bad input', 'too large'.

    For the corpus and for code: `culprit` (the path of your variable, or None), `fix_kind` (a
    FIX_KINDS key, or None), `confident` (True only when the evidence singles out one cause and
    one fix), `candidates` ([(fix_kind, culprit or None, evidence sentence)], the likeliest
    first), `evidence` (sentences: what the graph shows)."""

    def __init__(self, verdict: str, message: str):
        self.verdict = verdict
        self.message = message
        self.culprit = None
        self.fix_kind = None
        self.confident = False
        self.candidates = []
        self.evidence = []
        self.check = None             # what to check when not confident
        self.stopped_at = None        # name of the node the engine stopped in
        self.freed = []               # its freed saved tensors: ['result: (1, 3) float32 12 B']
        self.path = []                # node names from the loss's node to the stop
        self.culprits = []            # names in the namespace that carry the old graph
        self.pattern = None           # 'running total', 'state carried across steps', ...
        self.fix = None               # one or two sentences
        self.when = None              # 'this step', 'an earlier step', 'before the first step', ...
        self.names_available = True
        self.names_hint = None        # 'pass names=locals()' and why
        self.not_yet_run = False      # True: diagnosed before backward() was called
        self.picture = None
        self.finding = None           # the recorded finding (backward_twice.findings), when recorded
        self.rule = None              # the rule that decided it

    def __repr__(self) -> str:
        return self.message

    def _repr_mimebundle_(self, include=None, exclude=None):
        out = {"text/plain": self.message}
        body = f"<pre style=\"white-space:pre-wrap\">{html.escape(self.message)}</pre>"
        if self.picture is not None:
            body += render.svg_img(self.picture.svg, "graph of the failed backward: " + (self.stopped_at or ""),
                                   style="max-width:100%")
        out["text/html"] = body
        return out

    def _decide(self, kind, culprit, fix, pattern, confident, candidates=()):
        """Set the answer: the likeliest fix kind, its culprit, the fix text; candidates after it."""
        self.fix_kind, self.culprit, self.fix, self.pattern = kind, culprit, fix, pattern
        self.confident = confident
        self.candidates = [(kind, culprit, pattern)] + [c for c in candidates if c[0] != kind]


def _first_sentence(text: str, limit: int = 400) -> str:
    """The error's first sentence, whole (up to `limit` characters, then cut at a word)."""
    first = text.strip().split("\n")[0]
    m = re.match(r"(.+?[.!?])(\s|$)", first)
    sentence = m.group(1) if m else first
    if len(sentence) > limit:
        sentence = sentence[:limit].rsplit(" ", 1)[0] + " ..."
    return sentence


def why_backward_failed(what=None, *, names=None, max_nodes: int = 30, clock: StepClock | None = None,
                        recorder=None) -> Diagnosis:
    """Explain "Trying to backward through the graph a second time" (and "modified by an inplace
    operation") for your own code.

    what: nothing (the last error of this session, `sys.last_value`), the exception, or the
    tensor whose backward() failed. names: {name: object} to look through for the tensor that
    carries the old graph; in IPython the user namespace is used by default; inside a function
    pass names=locals() (without names, the locals of the traceback's frame are read).
    clock: a StepClock ticked at the top of each step (opt-in): when each part was made, exactly.
    recorder: the backward_twice.recorder.Recorder that ran the failing code (found by itself for
    an error raised under `record()`, `%%why_backward`, `%why_backward on` or `python -m
    backward_twice`): the diagnosis then states recorded facts (backward_twice.findings).
    max_nodes: a graph of at most this many nodes that fits the notebook's width is drawn whole;
    otherwise the picture is drawn around the stop, the rest counted in one box. The analysis
    always sees the whole graph. It is 30 by default, not draw()'s 300, on purpose: the picture
    is there to show where backward stopped, and a failing loop's graph is long; with a cap of 60
    an RNN over 30 time steps was drawn whole, 1,566 pt wide (5.5 px text at 860 px, the stop
    not drawn), while around the stop it reads at 10.7 px (backward_twice.diagnosis_picture).
    Returns a `Diagnosis` that shows as text and a picture. Never raises for bad input.

    Example (run by tests/test_docstrings.py):

        >>> import torch, backward_twice as bt
        >>> w = torch.ones(2, requires_grad=True)
        >>> total = 0
        >>> for step in range(2):
        ...     total = total + (w * w).sum()
        ...     try:
        ...         total.backward()
        ...     except RuntimeError as err:
        ...         d = bt.why_backward_failed(err, names={'total': total, 'w': w})
        >>> d.verdict, d.culprit, d.pattern
        ('stopped', 'total', 'running total')
    """
    try:
        return _diagnose(what, names, max_nodes, clock, recorder)
    except GraphInputError as err:    # e.g. torch refuses to give the root's grad_fn
        return Diagnosis("bad input", f"why_backward: {err}")


def explain(err: BaseException, *, names=None) -> Diagnosis:
    """Explain a caught exception: the one call for your own code (a script, a training loop).

        import backward_twice as bt
        try:
            train()
        except RuntimeError as err:
            print(bt.explain(err))        # where backward stopped, who carries the old graph, the fix
            raise

    err: the exception. names: {name: object} to look through (default: in IPython, your
    namespace; elsewhere, the globals and locals of the frame of the traceback that holds the failed
    tensor, and the text says so). The Diagnosis prints as text (in a notebook it
    shows a picture too); `.verdict` says what was found ('stopped', 'modified', 'unrelated' for
    any other error, ...). Never raises.

    Example (run by tests/test_docstrings.py):

        >>> import torch, backward_twice as bt
        >>> bt.explain(ValueError('not about backward')).verdict
        'unrelated'
    """
    if not isinstance(err, BaseException):
        return Diagnosis("bad input", f"explain: give the exception you caught; got a {type(err).__name__}.")
    return why_backward_failed(err, names=names)


def _diagnose(what, names, max_nodes, clock, recorder=None) -> Diagnosis:
    try:
        check_max_nodes(max_nodes)
    except GraphInputError as err:
        return Diagnosis("bad input", f"why_backward: {err}")
    if clock is not None and not isinstance(clock, StepClock):
        return Diagnosis("bad input", f"why_backward: clock= takes a StepClock; got a {type(clock).__name__}.")
    err, roots = None, None
    if what is None:
        err = getattr(sys, "last_value", None)
        if err is None:
            return Diagnosis("no error", (
                "why_backward: no error has happened yet in this session, so there is nothing to "
                "explain. Run the cell whose backward() fails, then this again in the next cell; "
                "or pass the tensor: why_backward_failed(loss)."))
    elif isinstance(what, BaseException):
        err = what
    elif isinstance(what, torch.Tensor):
        roots = [what]
    else:
        kind = "None" if what is None else f"a {type(what).__name__}"
        hint = " (did you pass the model? pass its loss)" if isinstance(what, torch.nn.Module) else ""
        hint = " (a Python number has no graph: did you call .item()?)" if isinstance(what, (int, float)) else hint
        return Diagnosis("bad input", f"why_backward: expected the tensor whose backward() failed, or "
                                     f"the exception; got {kind}{hint}.")
    inplace = False
    if err is not None:
        text = str(err)
        inplace = isinstance(err, RuntimeError) and INPLACE_TEXT in text
        if not (isinstance(err, RuntimeError) and (FREED_TEXT in text or inplace)):
            return Diagnosis("unrelated", (
                f"why_backward: the last error was {type(err).__name__}: {_first_sentence(text)}\n"
                f"This helper explains \"{FREED_TEXT}\" and \"... {INPLACE_TEXT}\"; this is "
                "another error, so there is nothing for it to diagnose." + (_DONATED_NOTE if DONATED_TEXT in text else "")))
        rec = recorder if recorder is not None else _recorder_for(err)
        if rec is not None:
            d = _recorded(err, rec, names, inplace, max_nodes)
            if d is not None:
                return d
        roots = _tensors_from_traceback(err.__traceback__)
        if not roots:
            return Diagnosis("bad input", (
                "why_backward: the last error is the one this helper explains, but its traceback no "
                "longer shows which tensor backward() was called on. Pass it: why_backward_failed(loss)."))
    root = roots[0]
    if root.grad_fn is None:
        if not root.requires_grad:
            return Diagnosis("no graph", (
                "why_backward: this tensor has no autograd graph (requires_grad=False, no grad_fn), "
                "so backward() on it fails for another reason: nothing here was freed. Compute it "
                "from tensors that require grad, outside torch.no_grad() and without .detach()."))
        return Diagnosis("would succeed", "why_backward: this is a leaf tensor: backward() on it "
                                         "would succeed (there is nothing saved to free).")
    ns, hint = _namespace(names, err, root)
    if inplace:
        return _explain_inplace(err, root, ns, hint)
    return _explain(root, ns, names_available=ns is not None, max_nodes=max_nodes, clock=clock, hint=hint,
                    failed=err is not None)


# Read from torch 2.13's AOTAutograd (CompiledFunction._backward_impl): the compiled backward is
# compiled on its first run; run without retain_graph, it may reuse (donate) the saved activations'
# memory, and then refuses retain_graph=True and create_graph=True for good. Run live in notebook 12.
_DONATED_NOTE = (
    "\nWhat the error says: the compiled model's forward was compiled with its saved activations marked "
    "as donated (the compiled backward may reuse their memory), so its backward refuses "
    "retain_graph=True and create_graph=True. The error frees nothing: backward() without retain_graph "
    "still runs on that graph. The fixes, in this order: one backward on the sum of the losses; or, "
    "retain_graph=True on the first backward that compiled graph ever runs, which helps only a graph "
    "compiled for fixed shapes whose backward saves an activation (a graph recompiled with dynamic "
    "shapes, for a new input shape for example, compiles its backward with the forward, donation "
    "included, so even a first retaining backward raises); "
    "torch._functorch.config.donated_buffer = False is a private switch (notebook 12, section 4.1). "
    "None of these makes create_graph=True work (a gradient penalty): a compiled graph does not "
    "support double backward, so compute that part without torch.compile.")

NOT_RECORDED = ("Not recorded: which call freed these buffers, which line made each node, and whether "
                "an optimizer step ran in between; the advice above is read from what is left after "
                "the error. To know, run `%why_backward on` (or `python -m backward_twice`, or "
                "`with backward_twice.record():`), then run again from the cell that builds the graph.")
NOT_RECORDED_INPLACE = ("Not recorded: which line wrote in place; the writer above is inferred. To know, "
                        "run `%why_backward on` (or `python -m backward_twice`, or `with "
                        "backward_twice.record():`), then run again from the cell that builds the graph.")


def _recorder_for(err):
    from . import recorder as record

    return record.recorder_for(err)


def _recorded(err, rec, names, inplace, max_nodes) -> Diagnosis | None:
    """The diagnosis from what the recorder saw (backward_twice.findings), or None when the record
    does not decide anything (then the after-the-fact reading runs, and says what is unknown)."""
    from . import findings

    failed = rec.failed if rec.failed is not None and rec.failed.error is err else None
    root = next((r for r in (failed.roots if failed else ()) if isinstance(r, torch.Tensor)), None)
    ns, hint = _namespace(names, err, root) if root is not None else (names if names is not None else _ipython_namespace(), None)
    if ns is None:
        ns, hint = _namespace(names, err, None)
    facts = findings.gather(err, rec, ns, "inplace" if inplace else "second time")
    found = findings.diagnose(facts)
    if found.rule == "not-recorded":
        return None
    d = Diagnosis("modified" if inplace else "stopped", findings.report(found, rec))
    d.finding, d.rule = found, found.rule
    d.culprit, d.culprits = found.culprit, list(found.culprits)
    d.fix_kind, d.confident = found.fix_kind, found.confident
    d.candidates = [(o.kind, found.culprit, o.condition or o.fix) for o in found.options]
    d.evidence = list(found.evidence)
    d.fix = found.options[0].fix if found.options else None
    d.names_hint = hint
    if facts.stop is not None:
        d.stopped_at = facts.stop.name()
    return d


def _namespace(names, err, root):
    """(the namespace to look in, a hint about names= or None). In order: names=, IPython's user
    namespace, the locals and globals of the traceback's frame that holds the failed tensor.
    When names= is a module's globals() but backward() ran inside a function, that function's
    locals are looked in too, and the hint says to pass names=locals(). In IPython, when backward()
    ran inside a function defined in the notebook (`def train(): ...`), its locals are looked in
    too, with no hint: %why_backward takes no names=."""
    frame = _user_frame(err.__traceback__, root) if err is not None else None
    inside = frame is not None and frame.f_code.co_name != "<module>"
    if names is not None:
        if inside and names is frame.f_globals:
            return ({**names, **frame.f_locals},
                    f"names= was the module's globals(), but backward() ran inside `{frame.f_code.co_name}()`, "
                    "whose tensors are its locals: pass names=locals() there (read from the traceback this time)")
        return names, None
    ns = _ipython_namespace()
    if ns is not None:
        if inside and frame.f_globals is ns:
            return {**ns, **frame.f_locals}, None
        return ns, None
    if frame is not None:
        where = f"`{frame.f_code.co_name}()`" if inside else "the module"
        return ({**frame.f_globals, **frame.f_locals},
                f"names were read from the variables of {where} in the traceback; "
                f"pass names={'locals()' if inside else 'globals()'} to choose them")
    return None, None


# --------------------------------------------------------------------------------
# The freed-graph error
def _dedupe(every) -> list:
    """[(path, tensor)] with each tensor once, under its first (shortest) path."""
    named, seen = [], set()
    for n, t in every:
        if id(t) not in seen:
            seen.add(id(t))
            named.append((n, t))
    return named


def _explain(root, ns, names_available, max_nodes, clock=None, hint=None, failed=False) -> Diagnosis:
    every = named_tensors(ns, every_path=True) if ns is not None else []
    named = _dedupe(every)
    graph = _Graph(root.grad_fn)
    if graph.truncated:
        return Diagnosis("too large", f"why_backward: the graph has more than {COUNT_LIMIT:,} nodes: "
                                     "too large to diagnose node by node.")
    ops = [fn for fn in graph.nodes if not is_leaf_node(fn)]
    start, running = _step_start(root.grad_fn, ops, graph)
    order = sorted(ops, key=seq, reverse=True)             # the CPU engine's order
    earlier = [] if running else _earlier_losses(graph, every, root)
    if earlier:        # an earlier backward of this step freed exactly the part both graphs share
        old = [fn for fn in order if fn in earlier[0][3]]
        start = min((seq(fn) for fn in ops if fn not in earlier[0][3]), default=None)
    else:
        # of equally wide gaps, the earliest whose older part holds a freed tensor (the part an
        # earlier backward freed must hold one); none: the latest, as for a single widest gap
        for cand in ([] if running or start is None else _tied_starts(ops)[:-1]):
            if any(graph.stops(fn) for fn in order if seq(fn) < cand):
                start = cand
                break
        old = [fn for fn in order if start is None or seq(fn) < start]
    stop = next((fn for fn in old if graph.stops(fn)), None)
    if failed and (stop is None or isinstance(stop, torch.autograd.function.BackwardCFunction)):
        opaque = _opaque_shared(order)
        if opaque is not None and not any(graph.freed(fn) for fn in order):
            return _explain_opaque(root, opaque, named, names_available, hint)
    if stop is None:
        return _no_stop(root, graph, ops, order, failed)
    d = Diagnosis("stopped", "")
    d.names_available, d.names_hint = names_available, hint
    d.stopped_at = stop.name()
    d.freed = graph.freed(stop) or [_STATE_WORDS.get(stop.name(), "saved_tensors")]
    path = graph.path(root.grad_fn, stop)
    d.path = [fn.name() for fn in path]
    old_set = set(old)
    new = [fn for fn in ops if fn not in old_set]
    entries = []                                            # older nodes this step's part uses
    for fn in new:
        entries += [n for n in graph.inputs(fn) if n in old_set and n not in entries]
    # called before backward (not after the error): this step's part is still held
    d.not_yet_run = not failed and start is not None and not any(graph.freed(fn) for fn in new)
    ev = _Evidence(d, root, ns, named, every, graph, stop, old_set, new, entries, start, running, path, clock, earlier)
    ev.decide()
    # after the fact, no fix is decided by what the graph still shows: which call freed, whether a step
    # ran in between, which line wrote are gone, and even a running total or a kept list leaves two right
    # fixes apart (a total backwarded every second batch is a window to start again, not a number to
    # keep; a cache is not an episode's state: tests/own_loops). Only a StepClock you ticked decides.
    d.confident = d.confident and clock is not None
    d.culprits = d.culprits or ([d.culprit] if d.culprit else [])
    d.picture = stop_picture(StopRequest(root, stop=stop, path=tuple(path), old=frozenset(old_set),
                                         names=_picture_names(d, root, named, graph), max_nodes=max_nodes,
                                         will_stop=d.not_yet_run))
    d.message = _report(d) + ("" if d.not_yet_run else "\n  " + NOT_RECORDED)
    return d


# nodes that combine tensors without computing on each: sum(list)'s adds, torch.stack, torch.cat
_COMBINE = ("AddBackward", "StackBackward", "CatBackward")

_STATE_WORDS = {"CheckpointFunctionBackward": "inputs (a reentrant checkpoint's ctx.saved_tensors)",
                "CompiledFunctionBackward": "tensors (the compiled graph's ctx.saved_tensors)"}


def _no_stop(root, graph, ops, order, failed) -> Diagnosis:
    """No node of the graph reads as one where backward stops. "Would succeed" only when every node's
    state can be read: an autograd.Function (a custom one) whose state was released may fail a
    second backward or not, depending on whether its backward reads ctx.saved_tensors."""
    released = [fn for fn in order if graph.released(fn)]
    if released:
        names = ", ".join(dict.fromkeys(fn.name() for fn in released[:3]))
        what = "the backward failed" if failed else "backward() on it may fail"
        return Diagnosis("cannot tell", (
            f"why_backward: {what}, and no saved tensor of this graph reads as freed, but {names} (an "
            "autograd.Function) has been backwarded before: its saved state (ctx.saved_tensors) was released. "
            "Whether a second backward through it fails depends on whether its backward() reads "
            "ctx.saved_tensors, which cannot be read from the graph; if it does, that is where it stops: "
            "one backward on the sum of the losses, or retain_graph=True on the earlier backward."))
    if not any(graph.freed(fn) for fn in order):
        n = sum(1 for fn in ops for _ in graph.saved(fn)) + sum(_function_saved(fn) for fn in ops)
        compiled = any(fn.name() == "CompiledFunctionBackward" for fn in ops)
        return Diagnosis("would succeed", (
            f"why_backward: backward() on this tensor would succeed now: none of the {n} tensors "
            f"saved in its graph ({len(ops)} nodes) is freed. " + (
                "It holds CompiledFunctionBackward (torch.compile): backward(retain_graph=True) or "
                f"create_graph=True through it raises \"{DONATED_TEXT}\" if its compiled backward first ran "
                "without retain_graph, which the graph does not show." if compiled else
                "If it failed before, the graph was rebuilt since.")))
    return Diagnosis("would succeed", "why_backward: no node older than this step holds a freed "
                                     "tensor: backward() on it should not fail this way.")


def _function_saved(fn) -> int:
    """How many tensors an autograd.Function node (a custom Function, a reentrant checkpoint, a
    compiled graph) holds in ctx.saved_tensors; 0 for other nodes, and once released."""
    if not isinstance(fn, torch.autograd.function.BackwardCFunction):
        return 0
    n = 0
    for slot, how, value in saved_slots(fn):
        if slot.startswith("saved_tensors"):
            if how == "packed":
                n += value is not None
            elif how == "value" and isinstance(value, (tuple, list)):
                n += sum(isinstance(v, torch.Tensor) for v in value)
    return n


def _opaque_shared(order):
    """The newest node that is an autograd.Function (a torch.compile'd graph, a custom Function),
    whose freed state is not readable as _saved_* tensors, and that has several outputs; or None."""
    for fn in order:
        if isinstance(fn, torch.autograd.function.BackwardCFunction):
            try:
                outputs = len(fn._input_metadata)
            except Exception:
                continue
            if outputs > 1:
                return fn
    return None


def _explain_opaque(root, fn, named, names_available, hint) -> Diagnosis:
    """backward() failed, no saved tensor reads as freed, and the graph holds an autograd.Function
    with several outputs whose state cannot be read: likely one backward per output through it."""
    d = Diagnosis("stopped", "")
    d.names_available, d.names_hint = names_available, hint
    d.stopped_at = fn.name()
    d.path = [root.grad_fn.name(), fn.name()] if root.grad_fn is not fn else [fn.name()]
    mine = {i for n, i in root.grad_fn.next_functions if n is fn}
    siblings = [n for n, t in named if t.grad_fn is fn and t is not root and t.output_nr not in mine]
    d.freed = ["state (not readable as tensors; torch's error says it was freed)"]
    d.culprits = [f"(none of your variables: the shared part is inside {fn.name()})"]
    d.evidence.append(f"the backward failed, yet none of the tensors saved in this graph reads as freed: the state "
                      f"of {fn.name()} (an autograd.Function: torch.compile or a custom Function) cannot be read.")
    d.evidence.append(f"{fn.name()} has {len(fn._input_metadata)} outputs; this loss uses one of them"
                      + (f", and {', '.join(f'`{n}`' for n in siblings)} are others." if siblings else "."))
    d._decide("retain-or-sum", None,
              f"every output of {fn.name()} shares its one backward, which the first backward through it freed. "
              "Call backward() once on the sum of the losses of all its outputs, or pass retain_graph=True to "
              "every backward but the last.", "outputs of one Function backwarded one by one", False,
              [("recompute-in-step", None, "or the Function ran once, before the loop: call it inside each step")])
    d.check = (f"whether another output of {fn.name()} was backwarded before this one (then sum or retain_graph); "
               "in eager mode each output may have its own backward, compiled they share one.")
    d.message = _report(d)
    return d


class _Evidence:
    """What the graph and the namespace show about one failed backward, and the decision."""

    def __init__(self, d, root, ns, named, every, graph, stop, old_set, new, entries, start, running, path, clock, earlier):
        self.d, self.root, self.ns, self.named, self.every = d, root, ns, named, every
        self.graph, self.stop, self.old_set, self.new, self.entries = graph, stop, old_set, new, entries
        self.start, self.running, self.path, self.clock, self.earlier = start, running, path, clock, earlier
        self.on_graph = [(n, t) for n, t in named if t.grad_fn is not None]
        self.root_names = [n for n, t in self.on_graph if t is root]
        self.paths_of, self.container_size = {}, {}        # id(tensor) -> its paths; container -> items
        for n, t in every:
            self.paths_of.setdefault(id(t), []).append(n)
            c = _outermost(_container(n))
            if c is not None:                                # per outermost container: memory, not memory[3]
                self.container_size[c] = self.container_size.get(c, 0) + 1

    # -- evidence ---------------------------------------------------------------------
    def when_made(self) -> str | None:
        """From the StepClock (opt-in): 'this step', 'step k', 'before the first step'."""
        if self.clock is None or not self.clock.starts:
            return None
        made, now = self.clock.step_of(self.stop), self.clock.step_of(self.root.grad_fn)
        return "before the first step" if made == 0 else "this step" if made == now else f"step {made} (this is step {now})"

    def carried(self) -> list:
        """[(name, tensor)] made in this step by the same kind of node, with the same shape, as an
        older node this step uses: a state rebound each step (h = cell(x, h)), on the path first."""
        reach = self.graph.reaching(self.stop)
        entry_kinds = {(e.name(), _out_shape(e)) for e in self.entries}
        start = self.start if self.start is not None else 0
        out = [(self.kept_path(n, t), t) for n, t in self.on_graph if t.grad_fn not in self.old_set
               and t is not self.root and seq(t.grad_fn) >= start
               and (t.grad_fn.name(), tuple(t.shape)) in entry_kinds and self.graph.feeds(t.grad_fn, reach)]
        on_path = set(self.path)
        out.sort(key=lambda nt: (nt[1].grad_fn not in on_path, seq(nt[1].grad_fn)))
        if out and _container(out[0][0]) and not re.search(r"\[\d+\]$", out[0][0]):   # a dict of states: the first made
            box, have = _container(out[0][0]), {id(t) for _, t in out}
            out += [(n, t) for n, t in self.every if _container(n) == box and id(t) not in have
                    and t.grad_fn is not None and seq(t.grad_fn) >= start
                    and (t.grad_fn.name(), tuple(t.shape)) in entry_kinds]
            out.sort(key=lambda nt: (_container(nt[0]) != box, seq(nt[1].grad_fn)))
        return out

    def old_named(self) -> list:
        """[(name, tensor)] made before this step's part and feeding the stop, newest first."""
        reach = self.graph.reaching(self.stop)
        out = [(n, t) for n, t in self.on_graph if t.grad_fn in self.old_set and t is not self.root
               and self.graph.feeds(t.grad_fn, reach)]
        out.sort(key=lambda nt: seq(nt[1].grad_fn), reverse=True)
        return out

    def chained(self, box: str, limit: int = 8) -> bool:
        """Whether an entry of container `box` made in this step is made from an older step's entry of
        the same kind and shape (a state logged step by step, `hs.append(h)`), not entries the loss
        consumes side by side."""
        cache = self.__dict__.setdefault("_chained_cache", {})
        if box not in cache:
            cache[box] = self._chained(box, limit)
        return cache[box]

    def _chained(self, box: str, limit: int) -> bool:
        fns = [t.grad_fn for n, t in self.every if _outermost(_container(n) or "") == box
               and t.grad_fn is not None and t.grad_fn in self.graph.ids][:limit]
        new = [fn for fn in fns if fn not in self.old_set]
        old = [fn for fn in fns if fn in self.old_set]
        for fn in new:          # this step's entry made from an older step's entry of its own kind
            below = self.graph.under([fn])
            if any(o in below and o.name() == fn.name() and _out_shape(o) == _out_shape(fn) for o in old):
                return True
        return False

    def repeats(self, new_tensor, old_tensor) -> bool:
        """Whether `new_tensor`'s part made in this step uses the same parameters as the graph
        under `old_tensor`: the same computation again, as a rebound state's is."""
        mine = [fn for fn in self.graph.under([new_tensor.grad_fn]) if fn not in self.old_set and not is_leaf_node(fn)]
        theirs = [fn for fn in self.graph.under([old_tensor.grad_fn]) if not is_leaf_node(fn)]
        return _direct_leaves(mine) == _direct_leaves(theirs)

    def old_entries_held(self) -> list:
        """[(name, tensor)] of old_named() whose node this step's part uses directly (an entry)."""
        entries = set(self.entries)
        return [(n, t) for n, t in self.old_named() if t.grad_fn in entries]

    def stale_prefix(self, kept: str):
        """(entries used, entries held) when this loss uses exactly the first entries of container
        `kept`, all made before the stop (freed), and none of the newer ones it holds; else None."""
        first_index = re.compile(re.escape(kept) + r"\[(\d+)\]")
        by_index = {}
        for n, t in self.every:
            m = first_index.match(n)
            if m and t.grad_fn is not None:
                by_index.setdefault(int(m.group(1)), []).append(t)
        if not by_index:
            return None
        used = sorted(i for i, ts in by_index.items() if any(t.grad_fn in self.graph.ids for t in ts))
        if not used:
            return None
        last = max(seq(t.grad_fn) for i in used for t in by_index[i])
        newer = [i for i, ts in by_index.items() if i not in used and all(seq(t.grad_fn) > last for t in ts)]
        lo = min(by_index)
        if (used == list(range(lo, lo + len(used))) and newer
                and all(t.grad_fn in self.old_set for i in used for t in by_index[i] if t.grad_fn in self.graph.ids)):
            return len(used), len(by_index)
        return None

    def trains_without(self, cut: set) -> bool:
        """Whether this loss reaches a leaf that requires grad without going through the nodes `cut`."""
        seen, stack = set(), [self.root.grad_fn]
        while stack:
            fn = stack.pop()
            if fn in seen or fn in cut:
                continue
            seen.add(fn)
            if is_leaf_node(fn):
                return True
            stack.extend(self.graph.inputs(fn))
        return False

    def kept_path(self, name, tensor) -> str:
        """Of the paths of a tensor kept in two places (`inp` and `states[1][0]`, `mem` and
        `lif1.mem`), the one in a container or on an object, which outlives the step; else `name`."""
        if "." in name or "[" in name:
            return name
        kept = [n for n in self.paths_of.get(id(tensor), []) if "." in n or "[" in n]
        # not a log of a state (`hs.append(h)`): there the state's own name is the one to fix
        kept = [n for n in kept if _container(n) is None or not self.chained(_outermost(_container(n)))]
        return kept[0] if kept else name

    def kept_in(self, tensor) -> str | None:
        """The container where `tensor` is kept longest: of its paths' outermost containers, the one
        holding the most tensors (a replay buffer `memory`, not the `batch` sampled from it)."""
        kept = [_outermost(_container(n)) for n in self.paths_of.get(id(tensor), []) if _container(n) is not None]
        return max(kept, key=lambda c: self.container_size[c], default=None)

    def loss_log(self, used, older):
        """(the entry made in this step, the names of the nodes that combine the entries) when a
        container reads as a log of losses, one per step, that this loss adds up
        (`history.append(loss)`, then `sum(history)` or `torch.stack(history).mean()`): exactly
        one entry this loss uses was made in this step's
        part; everything else this step made is what combines the entries (sum(log)'s adds: made in
        this step, after the newest entry); and every entry goes straight into an add, a stack or a
        cat, with no computation of its own (REINFORCE's `-log_prob * R` has one). Else None."""
        old_ids = {id(t) for t in older}
        new = [t for t in used if id(t) not in old_ids]
        if len(new) != 1 or not older:
            return None
        entry = new[0].grad_fn
        own = self.graph.under([entry])
        above = set()
        for t in used:
            above |= self.graph.reaching(t.grad_fn)
        if any(fn not in own and fn not in above for fn in self.new):
            return None
        fns = {t.grad_fn for t in used}
        users = [fn for fn in self.new if fn not in own and any(n in fns for n in self.graph.inputs(fn))]
        if not users or not all(fn.name().startswith(_COMBINE) for fn in users):
            return None
        return new[0], sorted({fn.name() for fn in users})

    def _loss_log(self, kept, entry, combine) -> None:
        d = self.d
        plain = [n for n in self.paths_of.get(id(entry), []) if _is_plain_name(n)]
        term = plain[0] if plain else "loss"
        root = next((n for n in self.root_names if _is_plain_name(n)), None)
        who = f"`{root}`" if root else "the tensor you called backward() on"
        n_old = len([t for n, t in self.every if _outermost(n) == kept and t is not entry and t.grad_fn is not None])
        d.evidence[-1] = d.evidence[-1].replace(" (before the loop, or earlier in this step)", " (an earlier step's loss)")
        d.evidence.append(f"`{kept}` holds the losses this loss adds up: {n_old} made before this step's part "
                          f"(freed by an earlier backward) and one made in it ({f'`{term}`, ' if plain else ''}this "
                          f"step's whole forward); they go straight into {', '.join(combine)}, made in this step: "
                          f"a log of each step's loss, kept with its graph.")
        d.culprits = [kept] + [c for c in d.culprits if c != kept]
        d._decide("accumulate-number", kept,
                  f"`{kept}` keeps every step's loss with its graph, and {who} adds them up, so this backward "
                  f"goes back through the earlier steps' graphs, which their own backward freed. Keep numbers in "
                  f"it, " + (f"`{kept}.append({term}.item())` (or `{term}.detach()`), and call backward() on this "
                             f"step's loss only (`{term}.backward()`)" if entry.numel() == 1 else
                             f"`{kept}.append({term}.detach())`, and call backward() on this step's loss only, "
                             f"reduced as {who} reduces it (e.g. `{term}.mean().backward()`)")
                  + f"; {who} is then a number to log. (Backwarding the average "
                  "itself, step after step, cannot work without keeping every step's graph: retain_graph=True, "
                  "memory and time growing every step.)", "a list of losses kept across steps", True)

    # -- the decision -------------------------------------------------------------------
    def decide(self) -> None:
        d, stop = self.d, self.stop
        made = _made_where(stop)
        d.evidence.append(f"backward stopped in {stop.name()} (creation number {seq(stop)}): its saved "
                          f"{_freed_words(d.freed)} had been freed by an earlier backward.")
        if made:
            d.evidence.append(f"anomaly mode recorded where {stop.name()} was made: {made}")
        clock_when = self.when_made()
        if self.running:
            return self._running_total()
        if self.start is None:
            return self._one_graph(clock_when)
        d.evidence.append(f"this backward's own part of the graph was made from creation number {self.start} on; "
                          f"{stop.name()} is older: made {clock_when or 'before that part'}.")
        earlier = self.earlier
        carried = self.carried()
        held = self.old_entries_held()
        if carried and held and not _fast_weight(carried[0][1]) and not self.repeats(carried[0][1], held[0][1]):
            # a name still holds the very older tensor this step uses, and this step's tensor of
            # the same kind is not the same computation again (other parameters): not a state
            # rebound every step (`h = cell(x, h)` repeats itself; `x_out = t @ (x + y)` does not
            # repeat `y = t @ a`), so the older tensor was made once and reused
            n = held[0][0]
            d.evidence.append(f"`{n}` still holds the older tensor this step's part uses ({held[0][1].grad_fn.name()}), "
                              f"and `{carried[0][0]}` is not the same computation again (other parameters): it was "
                              "not rebound, so this is not a state carried from step to step.")
            carried = []
        if clock_when is not None:
            d.when = clock_when
            if clock_when == "this step" and earlier:
                return self._same_step(earlier)
            if clock_when == "this step":
                return self._same_step_unnamed()
            if carried:
                return self._carried(carried)
            return self._before(self.old_named(), certain=True)
        if earlier and not carried:
            return self._same_step(earlier)
        if carried and not earlier:
            return self._carried(carried)
        if carried and earlier:
            self._carried(carried)
            n = earlier[0][0]
            d.confident = False
            d.candidates.append(("retain-or-sum", n, f"`{n}` was backwarded already and its graph reaches "
                                 f"{stop.name()}: two backwards through one graph in this step?"))
            d.check = (f"whether `{d.culprit}` is meant to carry the previous step into this one, or `{n}` "
                       "is an earlier loss of this same step.")
            return None
        return self._before(self.old_named(), certain=False)

    def _running_total(self) -> None:
        d = self.d
        total = _total_node(self.root.grad_fn)
        names = [n for n, t in self.on_graph if t.grad_fn is total] or self.root_names
        who = f"`{names[0]}`" if names else "the tensor you called backward() on"
        d.evidence.append(f"{who} is an {total.name()} whose input is the same add made a step "
                          "earlier, and the two steps share no node: a running total across steps.")
        d.when = "an earlier step"
        # the fix in the user's own names when known (`running += loss.item()`), else neutral words
        total_name = names[0] if names and _is_plain_name(names[0]) else "total"
        step_fns = [fn for fn, _ in total.next_functions if fn is not None and fn.name() != total.name()]
        terms = [n for n, t in self.on_graph if step_fns and t.grad_fn is step_fns[0] and _is_plain_name(n)]
        term = terms[0] if terms else "this_loss"
        d._decide("accumulate-number", names[0] if names else None,
                  f"{who} is a running total: it adds this step's loss to the graphs of all earlier steps. "
                  f"Keep the total as a number, `{total_name} += {term}.item()`, and call backward() on this "
                  f"step's loss only{f' (`{term}.backward()`)' if terms else ''}.", "running total", True)

    def _one_graph(self, clock_when) -> None:
        d = self.d
        name = self.root_names[0] if self.root_names else None
        who = f"`{name}`" if name else "this tensor"
        if clock_when is None and self._total_added_to(name, who):
            return None
        d.evidence.append("every node of this graph was made before the earlier backward that freed it: "
                          "nothing of it is newer (no gap in the creation numbers).")
        d.when = clock_when
        fix_twice = (f"backward() ran twice through the same graph of {who}. If you need both, call "
                     "backward() once, on the sum of the losses (or pass retain_graph=True to the first call).")
        fix_loop = (f"{who} was computed once and is backwarded again: compute it again (run the forward) "
                    "inside each step.")
        if clock_when is not None and clock_when != "this step":
            return d._decide("recompute-in-step", name, fix_loop, "computed once, backwarded each step", True)
        d._decide("retain-or-sum", name, fix_twice, "same graph backwarded twice", clock_when == "this step",
                  [("recompute-in-step", name, "or, in a loop: the graph was built once, before the loop, "
                    "and each step backwards it again")])
        if not d.confident:
            d.check = f"whether {who} was computed in this step (then retain_graph) or before the loop (then recompute it)."

    def _total_added_to(self, name, who) -> bool:
        """A sum (`loss += term`) over one forward pass, then the terms of another pass of the same
        parameters added onto it: the root is a chain of adds whose terms fall into two or more
        separate forward computations (no node shared between them, the same parameters), each a
        run of the chain. After the failure every node of such a graph reads as freed, so which
        part the earlier backward freed cannot be read: this is a candidate, not a certainty."""
        graph = self.graph
        total = _total_node(self.root.grad_fn)
        if not total.name().startswith("AddBackward"):
            return False
        chain, fn = [], total
        while fn is not None and fn.name().startswith("AddBackward") and len(chain) < 10_000:
            chain.append(fn)
            adds = [n for n, _ in fn.next_functions if n is not None and n.name().startswith("AddBackward")]
            fn = max(adds, key=seq) if adds else None
        links = set(chain)
        groups, sets = [], []              # per term, newest first: which separate computation it is in
        for add in chain:
            for n, _ in add.next_functions:
                if n is None or n in links or is_leaf_node(n):
                    continue
                under = {f for f in graph.under([n]) if not is_leaf_node(f)}
                hit = next((i for i, u in enumerate(sets) if u & under), None)
                if hit is None:
                    sets.append(under)
                    hit = len(sets) - 1
                else:
                    sets[hit] |= under
                groups.append(hit)
        runs = [g for i, g in enumerate(groups) if i == 0 or groups[i - 1] != g]
        if len(sets) < 2 or len(runs) != len(sets):
            return False
        leaves = [_direct_leaves(u) for u in sets]
        if not all(ls and ls == leaves[0] for ls in leaves):
            return False
        terms = [n for n, _ in total.next_functions if n is not None and n not in chain]
        term_names = [m for m, t in self.on_graph if t.grad_fn in terms and t is not self.root]
        self.d.evidence.append(f"{who} is a sum (a chain of {len(chain)} adds) of terms from {len(sets)} separate forward "
                               "passes through the same parameters, one pass after the other: the sum of one pass "
                               "was likely backwarded, then the next pass's terms were added onto it.")
        if term_names:
            t = term_names[0]
            self.d._decide("accumulate-number", name,
                           f"{who} keeps adding `{t}` onto a total already backwarded. Call backward() on `{t}` "
                           f"alone, and keep the total as a number (`total += {t}.item()`).",
                           "a total backwarded, then added to", False,
                           [("reset-per-episode", name, f"or {who} should start again from zero where its new "
                             "terms begin")])
        else:
            self.d._decide("reset-per-episode", name,
                           f"{who} is the sum of this pass's terms, but it did not start again from zero: it still "
                           f"holds the terms an earlier backward used. Restart it before adding the new terms"
                           + (f" (`{name} = 0`)" if name else "") + ": each forward-backward pass sums its own.",
                           "a total not restarted", False,
                           [("accumulate-number", name, f"or {who} is a running total for logging: keep it as a "
                             "number (`+= term.item()`)"),
                            ("retain-or-sum", name, "or the whole sum was backwarded twice (then retain_graph=True "
                             "on the first, or one backward)")])
        self.d.check = f"where {who} should start again from zero, and which terms each backward should use."
        return True

    def _same_step(self, earlier) -> None:
        d, stop = self.d, self.stop
        n, first, own, shared_ops = earlier[0]
        d.when = "this step"
        tops = [(m, t) for m, t in self.on_graph if t.grad_fn in shared_ops and t is not self.root]
        tops.sort(key=lambda mt: seq(mt[1].grad_fn), reverse=True)
        shared = [(self.kept_path(m, t), t) for m, t in tops]
        top = shared[0][0] if shared else None
        d.evidence.append(f"`{n}` is not part of this graph, its own nodes are freed, and its graph reaches "
                          f"{stop.name()}: the earlier backward, on `{n}`, freed the part both share"
                          + (f" (`{top}`)." if top else "."))
        gan = _direct_leaves(own) & _direct_leaves(self.new) and not (
            _direct_leaves(self.old_set) & _direct_leaves(self.new))
        if gan and top:
            owner = _owner(self.ns, self.graph.leaves_under(shared[0][1].grad_fn))
            net = f" made by `{owner}`" if owner else ""
            d.evidence.append(f"`{n}` and this loss go through the same parameters, and `{top}`{net} is "
                              "made by others: the first loss trains a network it should not.")
            d._decide("detach-input", top,
                      f"`{top}`{net} feeds both `{n}` and this loss. Where `{n}` uses it, pass `{top}.detach()` "
                      f"(a GAN's D step: `netD({top}.detach())`): `{n}`'s backward then stops there and "
                      f"leaves `{top}`'s graph for this loss.", "one output fed to two losses (GAN)", True,
                      [("retain-or-sum", top, "or keep the graph with retain_graph=True on the first backward")])
            return
        where = f"`{top}`" if top else f"the part from {stop.name()} down"
        if _same_computation(own, self.new):      # as well the previous step's loss, kept under a name
            d.evidence.append(f"`{n}` is the same computation on the same parameters as this loss: a loss of this "
                              "step, or the previous step's loss kept under another name.")
            d._decide("retain-or-sum", top,
                      f"`{n}` and this loss share {where}. If both are losses of this step, call backward() once on "
                      f"their sum, or pass retain_graph=True to `{n}.backward()`.", "two losses share a graph", False,
                      [("recompute-in-step", top, f"or `{n}` is the previous step's loss and {where} was made once, "
                        "before the loop: compute it inside the loop")])
            d.check = f"whether `{n}` was computed in this step or kept from the previous one (e.g. `last = loss`)."
            return None
        this = next((m for m in self.root_names if _is_plain_name(m)), "this_loss")   # the user's name for it
        d._decide("retain-or-sum", top,
                  f"`{n}` and this loss share {where}, made in this step. Call backward() once on the sum "
                  f"(`({n} + {this}).backward()`), or pass retain_graph=True to `{n}.backward()`. Neither is "
                  "right if an optimizer step ran between the two calls (then every backward goes before "
                  "the step), or if one loss should not train the shared part (then detach it where that "
                  "loss uses it).", "two losses of one step share a graph", True)

    def _same_step_unnamed(self) -> None:
        d = self.d
        shared = self.old_named()
        top = shared[0][0] if shared else None
        d.evidence.append("the StepClock says the older part was made in this step: an earlier backward of "
                          "this step freed it.")
        d._decide("retain-or-sum", top,
                  "two backwards of this step go through one graph: call backward() once on the sum of the "
                  "losses (or pass retain_graph=True to the first). If the first loss should not train the shared "
                  "part (a GAN's D step), pass it the shared tensor .detach()ed instead.",
                  "two losses of one step share a graph", False,
                  [("detach-input", top, "if the first loss should not train the network that made it")])
        d.check = "whether the first backward should train the shared part (retain_graph / sum) or not (detach)."

    def _carried(self, carried) -> None:
        d = self.d
        first, tensor = carried[0]
        d.culprits = [n for n, _ in carried]
        d.when = d.when or "an earlier step"
        d.evidence.append(f"`{first}` ({tensor.grad_fn.name()}, made in this step) is the same kind of node as "
                          f"the older node this step's part uses: a state rebound every step, which still "
                          f"holds the previous step's graph.")
        container = _container(first)
        owner_name, _, attr = first.rpartition(".")
        owner = _module_named(self.ns, owner_name) if owner_name and "[" not in attr else None
        if tensor.grad_fn.name().endswith("CopySlices") and owner is not None and attr in owner._buffers:
            d.evidence.append(f"`{first}` is a buffer registered on `{owner_name}` (a cache the module keeps between "
                              f"calls by design), and an indexed write into it (CopySlices) recorded this step's graph.")
            d._decide("detach-carried", first,
                      f"`{owner_name}` writes tensors with their graph into its buffer `{attr}`, which lives from call "
                      f"to call. Write them without a graph: `self.{attr}[...] = value.detach()` (or the write under "
                      "`torch.no_grad()`), as for an inference cache.",
                      "a module's buffer written with its graph", False,
                      [("recompute-in-step", first, f"or, if the gradient must flow through what is cached, use a "
                        f"fresh tensor each call instead of writing into `{first}`")])
            d.check = (f"whether the loss should train through what `{first}` caches: no (an inference cache: "
                       "write detached) or yes (then a fresh tensor per call, not the buffer).")
            return None
        if tensor.grad_fn.name().endswith("CopySlices"):
            d.evidence.append(f"`{first}` is a CopySlices node: an indexed write (`{first}[i] = ...`) into a tensor "
                              "made before the loop, so every step's graph hangs off it.")
            return d._decide("recompute-in-step", first,
                             f"each step writes into `{first}` (`{first}[i] = ...`), a tensor made once, and its graph "
                             f"keeps every earlier step's. Use a new tensor each step (`pred = net(x)`, then the loss "
                             f"on `pred`), and if you need them all, store `pred.detach()` into `{first}`.",
                             "a preallocated tensor written into every step", True)
        old = [(n, t) for n, t in self.old_named() if _container(n) is not None]
        episode = [c for c in {_container(n) for n, _ in old} if any(_container(m) == c for m, _ in carried)
                   and not self.chained(c)]
        if episode:
            c = episode[0]
            d.evidence.append(f"`{c}` holds both this step's entries and older ones this loss still uses.")
            return d._decide("reset-per-episode", c,
                             f"`{c}` keeps the entries of earlier episodes, and this loss uses them. Clear it when "
                             f"an episode ends, after its backward: `del {c}[:]` (or `{c}.clear()`).",
                             "a list not cleared between episodes", True)
        if _fast_weight(tensor):
            name = container or first
            held = [(n, t) for n, t in self.old_entries_held() if _fast_weight(t)]
            if held:       # the task started from these: the old task's weights, still under this name
                name = _container(held[0][0]) or held[0][0]
                d.evidence.append(f"`{held[0][0]}` still holds the previous task's adapted weight, and this "
                                  "task's inner loop starts from it.")
                d.culprits = [n for n, _ in held]
                box = _container(held[0][0])
                items = sorted({n: t for n, t in self.every if box and _container(n) == box}.items(),
                               key=lambda nt: (len(nt[0]), nt[0])) if box else held
                metas = [_meta_name(self.ns, t) if _fast_weight(t) else None for _, t in items]
                if all(metas) and "['" not in held[0][0]:
                    restart = f"[{', '.join(metas)}]" if _container(held[0][0]) else metas[0]
            if not held or not all(metas) or "['" in held[0][0]:
                restart = ("dict(model.named_parameters())" if "['" in first[len(name):] else "list(model.parameters())"
                           if container else "the meta-parameter itself")
            d.evidence.append(f"`{first}` is a parameter plus updates (a chain of subtractions down to a leaf "
                              "of its shape): fast weights of an inner loop, not reset for this task.")
            return d._decide("reset-per-episode", name,
                             f"`{name}` still holds the last task's fast weights. Restart every task from the "
                             f"meta-parameters (`{name} = {restart}` at the start of the task). Do "
                             "not detach them: that cuts the meta-gradient (and backward then fails anew).",
                             "fast weights not reset per task", True)
        m = re.fullmatch(r"(.+?)((?:\[\d+\])*)", first)     # hidden[0], states[1][0], model.hidden[0]
        base, index = m.group(1), m.group(2)
        how = (f"`{base} = [tuple(s.detach() for s in st) for st in {base}]`" if index.count("[") > 1
               else f"`{base} = tuple(s.detach() for s in {base})`" if index else f"`{base} = {base}.detach()`")
        module = _module_named(self.ns, base.rsplit(".", 1)[0]) if "." in base and "[" not in base else None
        if module is not None:
            owner_name = base.rsplit(".", 1)[0]
            reset = _resetter(module, base.rsplit(".", 1)[1])
            if reset:
                return d._decide("reset-per-episode", base,
                                 f"`{base}` is state that `{owner_name}` keeps between calls, and it still holds "
                                 f"the previous step's graph. Call `{owner_name}.{reset}()` at the start of each "
                                 f"step (or detach it: {how}).", "module state, reset not called", True)
            d._decide("detach-carried", base,
                      f"`{base}` is state that `{owner_name}` keeps between calls, and it still holds the "
                      f"previous step's graph. Detach it at the start of each step: {how}.",
                      "state stored on a module", False,
                      [("reset-per-episode", base, f"or each batch should start from a fresh state: set "
                        f"`{base}` to its initial value (or do not pass it) at the start of each batch")])
            d.check = (f"whether a batch continues the previous one (then detach `{base}`: truncated BPTT) "
                       "or is a sequence of its own (then start it from a fresh state).")
            return None
        fresh = ("reset-per-episode", first, "or each batch, sequence or window should start from a fresh "
                 f"state: set `{base}` to its initial value at the start of each one")
        if index and re.fullmatch(r"\w+", base):
            d._decide("detach-carried", first,
                      f"`{base}` carries the previous step's graph into this one. Detach every state at "
                      f"the start of each step: {how} (the `repackage_hidden` helper of many RNN codebases).",
                      "state tuple carried across steps", False, [fresh])
        else:
            d._decide("detach-carried", first,
                      f"`{first}` carries the previous step's graph into this one. Detach it where it is "
                      f"kept: `{first} = {first}.detach()` at the start of each step (truncated "
                      f"backpropagation through time), or compute it under torch.no_grad() if it should "
                      "not be trained through.", "state carried across steps", False, [fresh])
        d.check = (f"whether the next batch continues where this one ended (then detach `{base}`: truncated "
                   "BPTT, an EMA, a memory) or starts a sequence of its own (then start it from a fresh state). "
                   "Either way, the graph of the earlier step must not be kept.")
        return None

    def _before(self, old_named, certain: bool) -> None:
        """A tensor made before this step's part (before the loop, or earlier in this step) feeds it."""
        d, stop = self.d, self.stop
        if not old_named:
            d.check = ("which tensor made before this step you use in it: detach it where it is kept, or "
                       "compute it inside the step. Run with a StepClock (clock=) or anomaly mode for sharper evidence.")
            return d._decide("detach-carried", None,
                             f"A tensor made before this step (its node {stop.name()}) feeds this step. Detach "
                             "it where it is kept (`t = t.detach()`), or compute it inside the step.",
                             "older graph reused", False,
                             [("recompute-in-step", None, "or it was computed once before the loop"),
                              ("retain-or-sum", None, "or an earlier backward of this same step freed it")])
        first, tensor = old_named[0]
        d.culprits = [n for n, _ in old_named]
        kept = self.kept_in(tensor)
        when = "before the first step" if certain else "before this step's part (before the loop, or earlier in this step)"
        d.when = d.when or ("before the first step" if certain else None)
        d.evidence.append(f"`{first}` ({tensor.grad_fn.name()}, creation number {seq(tensor.grad_fn)}) was made "
                          f"{when} and feeds {stop.name()}.")
        items = [t for n, t in self.every if kept is not None and _outermost(n) == kept and t.grad_fn is not None]
        used = [t for t in items if t.grad_fn in self.graph.ids]
        # entries made after the stop were intact when this backward started (the engine runs the
        # newest nodes first and got past them): the container mixes them with freed, older ones
        older = [t for t in used if t.grad_fn in self.old_set or seq(t.grad_fn) <= seq(stop)]
        if items and len(used) == len(items) and older and len(older) < len(used) and not self.chained(kept):
            log = self.loss_log(used, older)
            if log is not None:
                return self._loss_log(kept, *log)
            d.evidence.append(f"this loss uses every entry of `{kept}`: {len(older)} made before the stop "
                              f"(freed by an earlier backward) and {len(used) - len(older)} made after it.")
            # one new entry per backward: an episode one entry long, or a log of one value per step
            # (a loss weighted before it is summed): the graph does not tell them apart
            one = len(used) - len(older) == 1
            d._decide("reset-per-episode", kept,
                      f"`{kept}` keeps the entries of earlier episodes, and this loss uses them all. Clear it "
                      f"when an episode ends, after its backward: `del {kept}[:]` (or `{kept}.clear()`).",
                      "a list not cleared between episodes", not one,
                      [("accumulate-number", kept, f"or `{kept}` is a log of one value per step (a loss): keep "
                        f"numbers in it (`{kept}.append(x.item())`) and backward this step's value only")])
            if one:
                d.check = (f"what `{kept}` holds: one episode's entries, used by one update (then clear it after "
                           "each backward), or every step's loss, kept for a log (then keep numbers in it).")
            return None
        stale = self.stale_prefix(kept) if kept is not None else None
        if stale:
            n_used, n_all = stale
            d.evidence.append(f"this loss uses the first {n_used} entries of `{kept}` (of {n_all}), all in the part "
                              f"an earlier backward freed; the {n_all - n_used} newer entries it does not use: "
                              f"`{kept}` still holds what the last update used.")
            return d._decide("reset-per-episode", kept,
                             f"`{kept}` was not emptied after the last update, so this loss reads the previous "
                             f"episode's entries. Clear it after each backward: `del {kept}[:]` (or `{kept}.clear()`), "
                             "with every list filled per episode.", "a list not cleared between episodes", True)
        if kept is not None and (len(old_named) > 1 or kept != first):
            d.evidence.append(f"`{first}` is kept in `{kept}`, and this loss uses older entries of it.")
            if used and not self.trains_without({t.grad_fn for t in used}):
                d.evidence.append(f"every trainable tensor this loss reaches, it reaches through entries of `{kept}`: "
                                  "stored detached, they would leave this loss without a gradient.")
                d._decide("recompute-in-step", kept,
                          f"`{kept}` keeps outputs of your model with their graph, and this loss trains only through "
                          f"them. Store what made them instead (the state, the action) without a graph, and compute "
                          f"them again from those at update time, in the step that backwards them.",
                          "a buffer keeps model outputs with their graph", False,
                          [("reset-per-episode", kept, f"or each update should use only the newest entries: clear "
                            f"`{kept}` after each backward")])
                d.check = (f"whether the entries of `{kept}` are meant to be reused by later updates (then store "
                           "inputs and recompute) or used once (then clear it after each backward).")
                return None
            return d._decide("detach-carried", kept,
                             f"`{kept}` keeps tensors with their graph (an older step's), and this loss uses them. "
                             f"Store them detached: `{kept}.append(x.detach())` where you add to it.",
                             "a buffer keeps tensors with their graph", True)
        leaves = self.graph.leaves_under(tensor.grad_fn)
        owner = _owner(self.ns, leaves)
        if owner:
            fix = (f"`{first}` was computed by `{owner}` {when}, with gradients on; an earlier backward freed "
                   f"its graph. If `{owner}` is frozen, compute it under `with torch.no_grad():` (and call "
                   f"`{owner}.requires_grad_(False)`); if it should train, run `{owner}` inside the loop.")
            pattern = "computed before the loop (by a module)"
        else:
            src = [n for n, t in (self.ns or {}).items() if isinstance(n, str) and not n.startswith("_")
                   and isinstance(t, torch.Tensor) and any(t is leaf for leaf in leaves)]
            made = f" from `{src[0]}`" if src else ""
            fix = (f"`{first}` was built{made} {when}, with gradients on; an earlier backward freed its "
                   f"graph. Recompute it inside the loop, every step (or, if it should not train, build it "
                   f"under `torch.no_grad()`).")
            pattern = "derived before the loop"
        d._decide("recompute-in-step", first, fix, pattern, certain,
                  [("detach-carried", first, f"or `{first}` is fixed data that no loss should train through: keep "
                    "it detached where it is made (`.detach()`, or made under `torch.no_grad()`)"),
                   ("retain-or-sum", first, f"or `{first}` was made earlier in this step and an earlier "
                    "backward of this step freed it (then one backward on the sum, or retain_graph=True on that one)"),
                   ("detach-input", first, "or a loss of this step should not train what made it (a GAN's D step)")])
        if not certain:
            d.check = (f"where `{first}` is computed: before the loop (then the fix above), or in this step "
                       "before another loss's backward (then retain_graph=True on that one, or detach it "
                       "where a loss that should not train it uses it). A StepClock (clock=) tells them apart.")


def _resetter(module, attr: str) -> str | None:
    """The name of a method of `module`'s class that resets `attr`: one of RESET_METHODS, or
    another method (not __init__ nor forward) whose code assigns `self.<attr>` (KalmanNet's
    InitSequence). Read from the bytecode: nothing runs."""
    cls = type(module)
    for name in RESET_METHODS:
        if callable(getattr(cls, name, None)):
            return name
    for name, fn in vars(cls).items():
        if name in ("__init__", "forward") or name.startswith("__") or not isinstance(fn, types.FunctionType):
            continue
        try:
            if any(i.opname == "STORE_ATTR" and i.argval == attr for i in dis.get_instructions(fn)):
                return name
        except Exception:
            continue
    return None


def _fast_weight(t) -> bool:
    """Whether `t` is a leaf of its shape plus updates: w - lr * g, again and again (MAML); the
    chain of first inputs, all subtractions or additions, ends at that leaf."""
    fn, subs = t.grad_fn, 0
    for _ in range(10_000):
        if fn is None:
            return False
        if is_leaf_node(fn):
            return subs > 0 and tuple(fn.variable.shape) == tuple(t.shape)
        if not fn.name().startswith(("SubBackward", "AddBackward")):     # w - lr * g, w.add(g, alpha=-lr)
            return False
        subs += 1
        fn = fn.next_functions[0][0]
    return False


def _meta_name(ns, t) -> str | None:
    """The top-level name of the leaf a fast weight `t` was updated from (its meta-parameter)."""
    fn = t.grad_fn
    while fn is not None and not is_leaf_node(fn):
        fn = fn.next_functions[0][0]
    leaf = fn.variable if fn is not None else None
    return next((n for n, v in (ns or {}).items() if v is leaf and isinstance(n, str) and not n.startswith("_")), None)


def _picture_names(d, root, named, graph: _Graph) -> dict:
    """{name: tensor} the diagnosis picture labels: the culprits, the named leaves behind the
    root, and the root itself (as 'loss' when it has no name)."""
    keep = {n: t for n, t in named if n in d.culprits}
    keep.update(_parameter_names(named, graph, root))
    root_name = next((n for n, t in named if t is root), "loss")
    if all(t is not root for t in keep.values()):
        keep[root_name] = root
    return keep


def _freed_words(freed: list) -> str:
    """'result, self' (the slots), at most four."""
    short = list(freed)
    more = f" and {len(short) - 4} more" if len(short) > 4 else ""
    return ", ".join(short[:4]) + more if short else "its saved tensors"


MAX_BLOCK = 24    # the longest block of node names path_words looks for (a time step's nodes)


def path_words(path: list[str]) -> str:
    """'A -> (B -> C) x29 -> D': a block of node names repeated back to back, as each time step
    of a long loop repeats, is written once with its count (the longest saving first; blocks of
    up to MAX_BLOCK names, so a 5,000-node path takes milliseconds)."""
    out, i = [], 0
    while i < len(path):
        best = (1, 1)                              # (block length, repeats)
        for size in range(1, min(MAX_BLOCK, (len(path) - i) // 2) + 1):
            block, k = path[i:i + size], 1
            while path[i + k * size:i + (k + 1) * size] == block:
                k += 1
            if k > 1 and size * (k - 1) > best[0] * (best[1] - 1):
                best = (size, k)
        size, k = best
        if k > 2 or (k == 2 and size > 1):
            words = " -> ".join(path[i:i + size])
            out.append(f"({words}) x{k}" if size > 1 else f"{words} x{k}")
        else:
            out.extend(path[i:i + size * k])
        i += size * k
    return " -> ".join(out)


_ACROSS_STEPS = {"detach-carried", "accumulate-number", "reset-per-episode", "recompute-in-step"}


def _report(d) -> str:
    lines = ["why backward will fail:" if d.not_yet_run else "why backward failed:"]
    lines.append("  what the graph shows:")
    lines += [f"    - {e}" for e in d.evidence]
    if not d.names_available:
        lines.append("  carried by: names unavailable (not running in IPython; pass names=locals() inside "
                     "a function, names=globals() at module level, to look for them)")
    elif d.culprits:
        lines.append("  carried by: " + ", ".join(d.culprits[:6]))
    else:
        lines.append("  carried by: no name in your namespace points at the old part"
                     + ("" if d.names_hint else " (inside a function? pass names=locals())"))
    if d.names_hint:
        lines.append(f"  names: {d.names_hint}")
    if d.confident:
        lines.append(f"  cause: {d.pattern}")
        lines.append(f"  fix: {d.fix}")
    else:
        lines.append("  the evidence does not single out one cause; the candidates, likeliest first:")
        for i, (kind, culprit, why) in enumerate(d.candidates, 1):
            who = f" `{culprit}`" if culprit else ""
            lines.append(f"    {i}. {kind}{who}: {why}")
        lines.append(f"  likeliest fix: {d.fix}")
        if d.check:
            lines.append(f"  check: {d.check}")
    lines.append(f"  {'will stop' if d.not_yet_run else 'stopped'} in: {d.stopped_at}, whose saved "
                 f"{_freed_words(d.freed)} had been freed by an earlier backward")
    lines.append("  path from the loss: " + path_words(d.path))
    if d.fix_kind == "retain-or-sum" and d.confident:
        lines.append("  (retain_graph=True is right here: one step's graph, backwarded twice, then dropped; "
                     "it does not grow from step to step)")
    elif d.candidates and all(k in _ACROSS_STEPS for k, _, _ in d.candidates):
        lines.append("  (not retain_graph=True: that silences the error, and the graph, memory and "
                     "time per step then grow with every step)")
    return "\n".join(lines)


# --------------------------------------------------------------------------------
# The in-place error: "one of the variables needed for gradient computation has been modified
# by an inplace operation: [torch.FloatTensor [3]], which is output 0 of SigmoidBackward0, is at
# version 1; expected version 0 instead."
_INPLACE_MSG = re.compile(r"\[(?P<tensor>[^\]]*\[[^\]]*\])\](?:, which is output (?P<out>\d+) of (?P<op>\w+),)?"
                          r" is at version (?P<now>\d+); expected version (?P<then>\d+)")


def _explain_inplace(err, root, ns, hint) -> Diagnosis:
    m = _INPLACE_MSG.search(str(err))
    named = named_tensors(ns, every_path=True) if ns is not None else []   # a weight: `model.fc.weight`, not a dict's copy
    graph = _Graph(root.grad_fn)
    order = sorted((fn for fn in graph.nodes if not is_leaf_node(fn)), key=seq, reverse=True)
    # the failing node: the newest one with a changed saved tensor (the engine runs newest first)
    first = next((fn for fn in order if any(st == "modified" for _, st, _ in graph.saved(fn))), None)
    changed = [] if first is None else [(fn, slot, v) for fn in order for slot, st, v in graph.saved(fn)
                                        if st == "modified" and seq(fn) <= seq(first)][:20]
    d = Diagnosis("modified", "")
    d.names_available, d.names_hint = ns is not None, hint
    then, now = (m.group("then"), m.group("now")) if m else (None, None)
    if not changed:
        d.evidence.append("no node of this graph holds a tensor changed in place now: it was rebuilt since, "
                          "or the changed tensor is saved by a node outside this graph.")
        d.confident = False
        d.message = _inplace_report(d, err) + "\n  " + NOT_RECORDED_INPLACE
        return d
    fn, slot, (was, now_v) = changed[0]
    d.stopped_at = fn.name()
    tensor = raw_saved_tensor(fn, slot)
    d.evidence.append(f"{fn.name()} (creation number {seq(fn)}) saved `{slot}` {_shape_words(tensor)}at version "
                      f"{was}; it is at version {now_v} now: changed in place after the forward saved it.")
    if len(changed) > 1:
        d.evidence.append(f"{len(changed) - 1} more saved tensor(s) of this graph changed too: "
                          + ", ".join(f"{f.name()}.{x}" for f, x, _ in changed[1:6]) + ".")
    made = _made_where(fn)
    if made:
        d.evidence.append(f"anomaly mode recorded where {fn.name()} was made: {made}")
    key = _storage(tensor) if tensor is not None else None
    same = [(n, t) for n, t in named if key is not None and _storage(t) == key]
    same.sort(key=lambda nt: (tuple(nt[1].shape) != tuple(tensor.shape), "['" in nt[0], len(nt[0])))
    # the names of the very tensor (`probs`, and `preds` after `preds = probs`), not its views
    aliases = [n for n, a in same if tensor is not None and tuple(a.shape) == tuple(tensor.shape)]
    if same:
        name, t = same[0]
        view = "" if tuple(t.shape) == tuple(tensor.shape) else " (saved as a view of it, e.g. its transpose)"
        d.culprit, d.culprits = name, [n for n, _ in same]
        also = f" (also named {_names_words(aliases[1:])}: the same tensor)" if len(aliases) > 1 else ""
        d.evidence.append(f"that tensor is `{name}`{also}{view}.")
    else:
        name, t = None, None
    producer = m.group("op") if m and m.group("op") else None
    if t is not None and t.grad_fn is None and t.requires_grad or (t is None and producer is None):
        opts = _optimizers_holding(ns, t) if t is not None else []
        who = f"`{name}`" if name else "a leaf tensor (a weight)"
        if opts:
            d.evidence.append(f"{who} is a parameter of the optimizer `{opts[0]}`: its step() changes it in place.")
            d._decide("backward-before-step", name,
                      f"`{opts[0]}.step()` ran between the forward that saved {who} and this backward. Call "
                      f"every backward that uses this forward before `{opts[0]}.step()`; if this loss must see "
                      f"the updated weights, "
                      "run its forward again after the step.", "an optimizer step between forward and backward", True,
                      [("recompute-in-step", name, "or recompute the forward after the step")])
        else:
            d._decide("backward-before-step", name,
                      f"{who} was updated in place (an optimizer step, or a manual update under torch.no_grad()) "
                      "between the forward that saved it and this backward. Run the backward before the update, "
                      "or the forward again after it.", "a weight updated between forward and backward",
                      t is not None and t.grad_fn is None and t.requires_grad,
                      [("recompute-in-step", name, "or recompute the forward after the update"),
                       ("no-data-write", name, "or a write through .data / no_grad")])
            d.check = "which line changes this weight between the forward and this backward (an optimizer's step()?)."
    elif t is not None and t.grad_fn is not None and seq(t.grad_fn) > seq(fn):
        op = _op_word(t.grad_fn.name())
        how = _INPLACE_OPS.get(op, f"an in-place {op.lower()}_")
        d.evidence.append(f"`{name}` is now the output of {t.grad_fn.name()} (creation number {seq(t.grad_fn)}), "
                          f"made after {fn.name()} saved it: an in-place op ({how}) ran on it since.")
        inner = _own_module(ns, graph.leaves_under(t.grad_fn)) if not made else None
        if inner is not None:
            mod_name, mod = inner
            d.evidence.append(f"both ops use parameters of `{mod_name}`, a module of your own class "
                              f"`{type(mod).__name__}`: the in-place op may have run inside its forward(), on "
                              f"another name for the same tensor, not on `{name}` in your loop.")
            d._decide("out-of-place", name,
                      f"an in-place op ({how}) changed the tensor that {fn.name()} saved, now `{name}`. If your loop "
                      f"does not write into `{name}`, look in `{type(mod).__name__}.forward`: use the out-of-place op "
                      f"({_out_of_place(op, 'x')}), or make the name written into a copy (`.clone()`) of the saved tensor.",
                      "an in-place op on a saved tensor", False,
                      [("no-data-write", name, "or a write through .data / .detach() / no_grad")])
            d.check = (f"which line writes into this tensor: in your loop (on `{name}`) or inside "
                       f"`{type(mod).__name__}.forward` (anomaly mode prints the forward line that made {fn.name()}).")
        else:
            writes = _written_in_place(err, root, aliases, op)
            written = list(dict.fromkeys(n for n, _, _ in writes))
            if len(written) == 1:        # your code writes into it under one of its names: that one
                name = written[0]
                d.culprit, d.culprits = name, [name] + [n for n in d.culprits if n != name]
                d.evidence.append("your code writes into it in place: "
                                  + "; ".join(f"line {no}: `{text}`" for _, no, text in writes[:3]) + ".")
            others = [n for n in aliases if n != name]
            if len(aliases) > 1 and len(written) != 1:   # which name the line uses is not known: all of them
                d._decide("out-of-place", name,
                          f"an in-place op ({how}) changed the tensor named {_names_words(aliases)} (one tensor), "
                          f"which {fn.name()} saved. Use the out-of-place op on the name your line writes into: "
                          f"{_out_of_place(op, 'x')}, with x that name.", "an in-place op on a saved tensor", True)
            else:
                also = f" (the same tensor as {_names_words(others)})" if others else ""
                d._decide("out-of-place", name,
                          f"an in-place op ({how}) changed `{name}`{also}, which {fn.name()} saved. Use the "
                          f"out-of-place op: {_out_of_place(op, name)}.", "an in-place op on a saved tensor", True)
    elif t is not None and not t.requires_grad:
        # a tensor that needs no grad (an index, a mask) has no node that records a write: an ordinary
        # in-place write (`idx[idx == -1] = 0`) and one through .data look the same from here
        d.evidence.append(f"`{name}` needs no grad, so no node records a write on it: it was written in place "
                          f"after {fn.name()} saved it (by an in-place op on it or an alias, through .data or "
                          ".detach(), or under torch.no_grad(); the graph does not say which).")
        d._decide("no-data-write", name,
                  f"`{name}` was written in place after {fn.name()} saved it. Write into a copy (`{name} = "
                  f"{name}.clone()` first), or out of place, or do the write after the backward.",
                  "a write autograd does not record", False,
                  [("out-of-place", name, "or an in-place op on a tensor that needs no grad: write out of place")])
        d.check = f"which line writes into `{name}` (run `%why_backward on`, then run again, to have it recorded)."
    elif t is not None:
        d.evidence.append(f"no op recorded on `{name}` after {fn.name()} saved it (its node is "
                          f"{t.grad_fn.name() if t.grad_fn is not None else 'none'}, made before): it "
                          "was written where autograd does not see it: through .data, .detach(), or under torch.no_grad().")
        d._decide("no-data-write", name,
                  f"`{name}` was written without autograd seeing it (through .data, .detach() or under "
                  f"torch.no_grad()) after {fn.name()} saved it. Write into a copy (`{name} = {name}.clone()` "
                  "first), or do the write after the backward.", "a write autograd does not record", True)
    elif _inplace_modules(ns):
        mods = _inplace_modules(ns)
        words = ", ".join(f"`{n}` ({type(m).__name__})" for n, m in mods[:4])
        d.evidence.append(f"modules with inplace=True in your namespace: {words}: each writes over its input, "
                          "which the layer before it may have saved.")
        d._decide("out-of-place", name if name or len(mods) > 1 else mods[0][0],
                  f"an in-place layer wrote over a tensor {fn.name()} saved. Set inplace=False on {words} "
                  "(or use torch.relu / F.dropout without inplace).", "an in-place layer on a saved tensor", True)
    elif slot == "result" and len(_inplace_users(graph, fn)) == 1:
        user = _inplace_users(graph, fn)[0]
        op = _op_word(user.name())
        how = _INPLACE_OPS.get(op, f"an in-place {op.lower()}_")
        d.evidence.append(f"the one node made on {fn.name()}'s output after it is {user.name()} (creation number "
                          f"{seq(user)}), an op with an in-place form ({how}): the output it saved was changed by it.")
        d._decide("out-of-place", name,
                  f"an in-place op ({how}) changed the output {fn.name()} saved. Use the out-of-place op: "
                  f"{_out_of_place(op, 'x')}.", "an in-place op on a saved tensor", True)
    else:
        d._decide("out-of-place", name,
                  "an in-place op changed a tensor the graph saved. Use the out-of-place op (`x = x + y` for "
                  "`x += y`, `torch.relu(x)` for `relu_`, `inplace=False`), or clone it before the write.",
                  "an in-place op on a saved tensor", False,
                  [("no-data-write", name, "or a write through .data / .detach() / no_grad"),
                   ("backward-before-step", name, "or an optimizer step between forward and backward")])
        d.check = ("which line writes into this tensor between the forward and this backward (run the forward "
                   "under torch.autograd.set_detect_anomaly(True) to get the line that made the node).")
    d.confident = False       # the writer is inferred from the graph, not recorded
    d.message = _inplace_report(d, err, then, now) + "\n  " + NOT_RECORDED_INPLACE
    return d


def _names_words(names) -> str:
    """'`probs`', '`probs` and `preds`', '`a`, `b` and `c`'."""
    quoted = [f"`{n}`" for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def _inplace_write_pattern(op: str, name: str) -> str:
    """A regex for a line that writes into `name` in place with op `op` (`preds += ...`, `h.add_(`,
    `x[i] = ...`, `x.relu_(`)."""
    n = r"(?<![\w.])" + re.escape(name)
    ops = {"Add": r"\s*\+=|\.add_\(", "Sub": r"\s*-=|\.sub_\(", "Mul": r"\s*\*=|\.mul_\(",
           "Div": r"\s*/=|\.div_\(", "CopySlices": r"\[[^\]]*\]\s*=(?!=)", "IndexPut": r"\[[^\]]*\]\s*=(?!=)"}
    return n + "(?:" + ops.get(op, r"\." + re.escape(op.lower()) + r"_\(") + ")"


def _written_in_place(err, root, names, op) -> list:
    """[(name, line number, the line)] of the lines of your code (the traceback's frame that called
    backward: a cell, a script, a function) that write into one of `names` in place with `op`,
    read from its source (linecache, which IPython fills with each cell); [] without a source."""
    frame = _user_frame(err.__traceback__, root) if err is not None and len(names) > 0 else None
    if frame is None:
        return []
    try:
        lines = linecache.getlines(frame.f_code.co_filename, frame.f_globals)
        numbers = [no for *_, no in frame.f_code.co_lines() if no]
    except Exception:
        return []
    if not lines or not numbers:
        return []
    patterns = [(n, re.compile(_inplace_write_pattern(op, n))) for n in names]
    out = []
    for no in range(min(numbers), min(max(numbers), len(lines)) + 1):
        code = re.sub(r"(^|\s+)#.*$", "", lines[no - 1].strip())
        out += [(n, no, code) for n, pat in patterns if pat.search(code)]
    return out


def _inplace_users(graph, fn) -> list:
    """The nodes that take node `fn`'s output and have an in-place form (ReluBackward0 of relu_,
    AddBackward0 of +=, CopySlices of x[i] = ...)."""
    graph.reaching(fn)                        # builds the users map
    return [u for u in graph._users.get(fn, []) if _op_word(u.name()) in _INPLACE_OPS]


def _inplace_modules(ns) -> list:
    """[(path, module)] of the modules in `ns` (and their submodules) with inplace=True."""
    out = []
    for name, value in list((ns or {}).items())[:20_000]:
        if isinstance(name, str) and not name.startswith("_") and isinstance(value, torch.nn.Module):
            try:
                out += [(name + "".join(f"[{p}]" if p.isdigit() else f".{p}" for p in n.split(".")) if n else name, m)
                        for n, m in value.named_modules()
                        if getattr(m, "inplace", False) is True]
            except Exception:
                continue
    seen, uniq = set(), []
    for n, m in out:
        if id(m) not in seen:
            seen.add(id(m))
            uniq.append((n, m))
    return uniq


def _op_word(node_name: str) -> str:
    """'Relu' for 'ReluBackward0' (and 'Sigmoid' for 'Sigmoid', as torch's message writes it)."""
    return re.sub(r"Backward\d*$", "", node_name.split("::")[-1])


def _out_of_place(op: str, name: str) -> str:
    return {"Relu": f"`torch.relu({name})` or nn.ReLU(inplace=False) instead of relu_ / inplace=True",
            "LeakyRelu": "nn.LeakyReLU(inplace=False)",
            "Add": f"`{name} = {name} + ...` instead of `{name} += ...`",
            "Sub": f"`{name} = {name} - ...` instead of `{name} -= ...`",
            "Mul": f"`{name} = {name} * ...` instead of `{name} *= ...`",
            "Div": f"`{name} = {name} / ...` instead of `{name} /= ...`",
            "CopySlices": f"build a new tensor (torch.cat, torch.where), or `{name} = {name}.clone()` before "
                          "the indexed assignment"}.get(op, "the op without the trailing underscore, assigned to a new name")


def _shape_words(t) -> str:
    return "" if t is None else f"(shape {tuple(t.shape)}) "


def _inplace_report(d, err, then=None, now=None) -> str:
    lines = ["why backward failed: a tensor it needs was changed in place after the forward saved it"]
    lines.append(f"  the error: {_first_sentence(str(err))}")
    if then is not None:
        lines.append(f"  (torch: saved at version {then}, at version {now} now)")
    lines.append("  what the graph shows:")
    lines += [f"    - {e}" for e in d.evidence]
    if d.names_hint:
        lines.append(f"  names: {d.names_hint}")
    if d.fix is None:
        return "\n".join(lines)
    if d.confident:
        lines += [f"  cause: {d.pattern}", f"  fix: {d.fix}"]
    else:
        lines.append("  the evidence does not single out one cause; the candidates, likeliest first:")
        lines += [f"    {i}. {k}{f' `{c}`' if c else ''}: {w}" for i, (k, c, w) in enumerate(d.candidates, 1)]
        lines.append(f"  likeliest fix: {d.fix}")
        if d.check:
            lines.append(f"  check: {d.check}")
    lines.append("  (retain_graph=True does not help here: it keeps the graph, not the old values)")
    return "\n".join(lines)


# --------------------------------------------------------------------------------
# IPython: %load_ext backward_twice, then %why_backward [tensor]
def enable_magic() -> None:
    """Register %why_backward in the running IPython (silent and safe to call again, unlike a
    second %load_ext, which prints). Does nothing outside IPython.

    Example (run by tests/test_docstrings.py):

        >>> import backward_twice as bt
        >>> bt.enable_magic()     # outside IPython: does nothing
    """
    ip = shell()
    if ip is not None:
        load_ipython_extension(ip)


_SESSION = {"recorder": None, "inside": False, "hooks": None}
_ON_WORDS = ("on", "off")


def _about(err) -> bool:
    return isinstance(err, RuntimeError) and (FREED_TEXT in str(err) or INPLACE_TEXT in str(err))


def _recording(ip, on: bool) -> str:
    """`%why_backward on` / `off`: record every cell from the next one on, as `%pdb on` does."""
    from .recorder import Recorder

    if on and _SESSION["recorder"] is None:
        rec = _SESSION["recorder"] = Recorder()

        def pre(*_args):
            if not _SESSION["inside"]:
                rec.__enter__()
                _SESSION["inside"] = True

        def post(result=None, *_args):
            if _SESSION["inside"]:
                rec.__exit__(None, None, None)
                _SESSION["inside"] = False
            err = getattr(result, "error_in_exec", None)
            if err is not None and _about(err):
                from IPython.display import display

                display(why_backward_failed(err, recorder=rec))

        ip.events.register("pre_run_cell", pre)
        ip.events.register("post_run_cell", post)
        _SESSION["hooks"] = (pre, post)
        return ("why_backward: recording from the next cell on (which line made each node, which call freed "
                "which buffers, which line wrote in place); a failing backward is explained as it fails. "
                "`%why_backward off` stops.")
    if not on and _SESSION["recorder"] is not None:
        pre, post = _SESSION["hooks"]
        ip.events.unregister("pre_run_cell", pre)
        ip.events.unregister("post_run_cell", post)
        if _SESSION["inside"]:
            _SESSION["recorder"].__exit__(None, None, None)
            _SESSION["inside"] = False
        _SESSION["recorder"] = _SESSION["hooks"] = None
        return "why_backward: recording stopped."
    return f"why_backward: recording is already {'on' if on else 'off'}."


def load_ipython_extension(ip) -> None:
    def why_backward(line, cell=None):
        """%why_backward: explain the last "backward through the graph a second time" or in-place
        error (from the record when there is one). %why_backward on / off: record every cell.
        %%why_backward: run this cell under the recorder and explain its error. %why_backward loss:
        the graph of the tensor `loss`."""
        line = line.strip()
        if cell is not None:
            return _run_recorded(ip, cell)
        if line in _ON_WORDS:
            print(_recording(ip, line == "on"))
            return None
        if not line:
            return why_backward_failed()
        if not re.fullmatch(r"[A-Za-z_][\w.\[\]'\"]*", line):
            return Diagnosis("bad input", f"why_backward: give a name, like %why_backward loss, or on / off; got {line!r}.")
        try:
            value = ip.ev(line)
        except Exception as err:   # a typo in the name: say so, no traceback
            return Diagnosis("bad input", f"why_backward: could not read {line!r}: {type(err).__name__}: {err}")
        return why_backward_failed(value)

    ip.register_magic_function(why_backward, "line_cell", "why_backward")


def _run_recorded(ip, cell: str):
    """%%why_backward: the cell runs as usual under the recorder; its error shows its traceback,
    then the diagnosis built from the record."""
    from .recorder import Recorder

    rec = Recorder()
    with rec:
        # a first line in place of `%%why_backward`: line numbers are the cell's as you see it
        result = ip.run_cell("# %%why_backward\n" + cell, store_history=False)
    err = result.error_in_exec
    if err is not None and _about(err):
        return why_backward_failed(err, recorder=rec)
    return None
