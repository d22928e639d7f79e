"""A recorded diagnosis: facts first (from backward_twice.recorder), then rules that are data.

`gather(err, recorder, names)` reads what the recorder saw and the graph behind the failed call
into `Facts`; `RULES` is an ordered list of small functions over those facts, each returning a
`Finding` or None; `diagnose(facts)` runs them and records which rule fired. A finding is
confident only when the recorded facts decide the fix. When the fix depends on what you meant
(should this loss train that network?), it gives each option with its consequence and how to
tell which applies. Every snippet is built for your object (a tensor, a tuple, a list, a dict,
a module attribute), and each option carries the edit that applies it (`Option.edits`), which
the corpus scorer applies and runs.

A fact that was not recorded is never guessed: `Finding.unknown` says what is unknown and how to
record it.
"""
from __future__ import annotations

import dataclasses
import keyword
import linecache
import re
from dataclasses import dataclass, field

import torch

from .names import named_tensors
from .recorder import Call, Recorder, Site, freed_by, made_at
from .walk import is_leaf_node

RECORD_HINT = ("to record it, run `%why_backward on` (or `python -m backward_twice`, or "
               "`with backward_twice.record():`), then run again from the cell that builds the graph")


@dataclass(frozen=True)
class Edit:
    """Replace line `line` of `file` by `lines` (an empty tuple deletes it; `insert=True` puts them
    before it instead)."""

    file: str
    line: int
    lines: tuple
    insert: bool = False


@dataclass
class Option:
    """One remedy: when it is the right one, what to do, what it does."""

    condition: str          # "if d_loss should not train G" ('' when it always applies)
    fix: str                # a plain sentence, with the code to write
    consequence: str        # what changes when you apply it
    edits: tuple = ()       # the edit that applies it, when it is one or two lines
    kind: str = ""          # a FIX_KINDS key of backward_twice.diagnose
    detached: str = ""      # the tensor it detaches where the earlier loss uses it (for the half-fix check)


@dataclass
class Finding:
    rule: str
    cause: str                               # one sentence: what happened
    evidence: list = field(default_factory=list)
    options: list = field(default_factory=list)
    confidence: str = "certain"              # 'certain' (the facts decide) or 'depends' (on your intent)
    culprit: str | None = None
    culprits: list = field(default_factory=list)
    unknown: list = field(default_factory=list)
    how_to_tell: str = ""

    @property
    def confident(self) -> bool:
        return self.confidence == "certain"

    @property
    def fix_kind(self) -> str | None:
        return self.options[0].kind if self.options else None


@dataclass
class Facts:
    error: str                       # 'second time' or 'inplace'
    err: BaseException
    rec: Recorder
    failed: Call | None              # the call that raised (None: raised outside any call)
    raised_at: Site | None           # the user's line that raised
    root: torch.Tensor | None
    named: list                      # [(path, tensor)]
    ns: dict
    # second time
    stop: object = None              # the node missing its buffers
    freer: Call | None = None        # the call that freed them
    old: set = field(default_factory=set)     # nodes made before the freer ran
    carriers: list = field(default_factory=list)   # [(path, tensor, Site, step)]
    uses: list = field(default_factory=list)  # [(carrier path, Site of a node of the freer's graph that uses it)]
    steps_between: list = field(default_factory=list)   # OptSteps between the freer and the failed call
    stepped: list = field(default_factory=list)   # parameters of the failed graph those steps changed
    boundary_sites: set = field(default_factory=set)    # lines that made the old nodes the new part uses
    kept: list = field(default_factory=list)   # [(node, output)]: old values the new part uses (named or not)
    remade_kept: set = field(default_factory=set)  # old nodes the same code made again from (h = cell(x, h))
    remade: set = field(default_factory=set)    # carrier paths made again since the freer from the old value
    writes_between: list = field(default_factory=list)  # in-place writes (not an optimizer's) between the calls
    # in-place
    writes: list = field(default_factory=list)
    other_writes: list = field(default_factory=list)   # in-place writes into other saved tensors of this graph
    other_steps: list = field(default_factory=list)    # optimizer steps that wrote other saved tensors of it
    written: object = None           # the saved tensor that was changed
    versions: tuple | None = None    # (expected, now)


# ------------------------------------------------------------------------------------------
# Gathering the facts
def _nodes(root_fn, limit: int = 60_000) -> list:
    seen, out, todo = set(), [], [root_fn]
    while todo and len(out) < limit:
        fn = todo.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        out.append(fn)
        todo.extend(n for n, _ in fn.next_functions if n is not None)
    return out


def _calls_before(fn) -> int | None:
    m = made_at(fn)
    return None if m is None else m[2]


def _user_line(tb) -> Site | None:
    from .recorder import _kind_of

    best = None
    while tb is not None:
        code = tb.tb_frame.f_code
        if _kind_of(code.co_filename) == 2:
            best = Site(code.co_filename, tb.tb_lineno, code.co_name)
        tb = tb.tb_next
    return best


def gather(err: BaseException, rec: Recorder, ns: dict | None, kind: str) -> Facts:
    failed = rec.failed if rec.failed is not None and rec.failed.error is err else None
    roots = [r for r in (failed.roots if failed else ()) if isinstance(r, torch.Tensor)]
    root = roots[0] if roots else None
    named = named_tensors(ns, every_path=True) if ns else []
    f = Facts(kind, err, rec, failed, _user_line(err.__traceback__), root, named, ns or {})
    if kind == "second time":
        _second_time(f)
    else:
        _inplace(f)
    return f


def _second_time(f: Facts) -> None:
    if f.root is not None and f.root.grad_fn is not None:
        nodes = _nodes(f.root.grad_fn)
    else:            # saved tensors read after backward: the freed nodes your variables lead to
        nodes = []
        for _, t in f.named:
            if t.grad_fn is not None and freed_by(t.grad_fn) is not None:
                nodes += _nodes(t.grad_fn, 2_000)
    freed = [fn for fn in nodes if freed_by(fn) is not None]
    if not freed:
        return
    f.freer = max((freed_by(fn) for fn in freed), key=lambda c: c.index)
    mine = [fn for fn in freed if freed_by(fn) is f.freer]
    f.stop = max(mine, key=lambda fn: fn._sequence_nr()) if hasattr(mine[0], "_sequence_nr") else mine[0]
    before = f.freer.index - 1          # backward calls before the freer
    f.old = {fn for fn in nodes if (_calls_before(fn) is not None and _calls_before(fn) <= before)
             or freed_by(fn) is not None}
    new = [fn for fn in nodes if fn not in f.old and made_at(fn) is not None]
    # (node, output) pairs of the old part that this call's new part uses
    used = {(n, i) for fn in new for n, i in fn.next_functions if n is not None and n in f.old}
    if f.root is not None and f.root.grad_fn in f.old:
        used.add((f.root.grad_fn, f.root.output_nr))
    boundary = {(made_at(fn)[0], fn.name(), i) for fn, i in used if made_at(fn) is not None}
    boundary_sites = {s for s, _, _ in boundary}
    f.kept = sorted(used, key=lambda u: u[0]._sequence_nr() if hasattr(u[0], "_sequence_nr") else 0)
    by_key: dict = {}
    for fn in new:
        by_key.setdefault(_key(made_at(fn)), []).append(fn)
    # made again from it: the same code made a new value that reads the old one (a cache entry or a
    # list of per-step values is kept, not made again)
    used_keys: dict = {}
    for n, _ in used:
        m = made_at(n)
        if m is not None:
            used_keys.setdefault(_key(m), set()).add(n)
    f.remade_kept = set()
    for key, olds in list(used_keys.items())[:50]:     # one bounded walk per line that made an old value
        if key in by_key:
            f.remade_kept |= olds & _reach(by_key[key], limit=20_000)
    used_nodes = {n for n, _ in used}
    seen = set()
    for path, t in f.named:
        fn = t.grad_fn
        if fn is None or _is_param_like(t) or t is f.root or path in seen:
            continue
        m = made_at(fn)
        out = t.output_nr
        # the reused value itself, or a state made again from it at the line (and output) that made
        # it: h = cell(x, h). Made again means its graph leads back to the old value: a cache entry
        # made at the same line for another key is not a carrier of this one
        if (fn, out) in used:
            remade = fn in f.remade_kept
        elif (fn not in f.old and m is not None and (m[0], fn.name(), out) in boundary
              and _reaches_any(fn, used_nodes)):
            remade = True
        else:
            continue
        seen.add(path)    # every path: rebinding `mem` leaves `lif1.mem` holding the graph
        key = _binding(f.ns, path)
        twin = next((i for i, c in enumerate(f.carriers) if _binding(f.ns, c[0]) == key), None)
        if twin is not None:   # `self.mu` and `model.mu`: one attribute of one object, named twice
            kept = f.carriers[twin][0]
            if m is not None and not _spells(kept, m) and _spells(path, m):     # the name its own line uses
                f.carriers[twin] = (path, t, _assigned_at(path, m), m[1])
                f.remade.discard(kept)
                if remade:
                    f.remade.add(path)
            continue
        f.carriers.append((path, t, _assigned_at(path, m) if m else None, m[1] if m else None))
        if remade:
            f.remade.add(path)
    f.carriers.sort(key=lambda c: (len(c[0]), c[0]))
    # where the freer's own graph used each carrier: the line of a node of that graph that takes it
    freer_nodes = [fn for r in f.freer.roots if (t := r() if callable(r) else r) is not None
                   and getattr(t, "grad_fn", None) is not None for fn in _nodes(t.grad_fn, 20_000)]
    for path, t, _site, _step in f.carriers:
        for fn in freer_nodes:
            if any(n is t.grad_fn and i == t.output_nr for n, i in fn.next_functions):
                m = made_at(fn)
                if m is not None and m[0] is not None:
                    f.uses.append((path, m[0]))
                    break
    f.boundary_sites = boundary_sites
    if f.failed is not None:
        f.steps_between = [s for s in f.rec.opt_steps if f.freer.step <= s.step < f.failed.step]
        f.writes_between = [w for w in f.rec.writes if not w.optimizer_step
                            and f.freer.index <= w.calls < f.failed.index]
        leaves = {id(fn.variable) for fn in nodes if is_leaf_node(fn)}
        f.stepped = [p for s in f.steps_between for r in s.params if (p := r()) is not None and id(p) in leaves]
    if f.failed is not None and f.failed.site == f.freer.site and not _same_call(f):
        # one helper's backward line, called from two lines of yours: say which call is which
        f.freer, f.failed = _FromLine(f.freer), _FromLine(f.failed)


def _key(m) -> tuple:
    """A node's line and the lines that called it: the same key in two steps means the same code
    made it again (`h = cell(x, h)`), not merely the same helper line called from elsewhere."""
    return (m[0], tuple(m[3]) if len(m) > 3 else ()) if m is not None else (None, ())


def _reaches_any(fn, targets: set, limit: int = 5_000, avoid: set = frozenset()) -> bool:
    """Whether the graph behind `fn` reaches one of `targets` (bounded walk), not passing `avoid`."""
    seen, todo = set(avoid), [fn]
    while todo and len(seen) < limit:
        n = todo.pop()
        if n is None or n in seen:
            continue
        if n in targets:
            return True
        seen.add(n)
        todo.extend(x for x, _ in n.next_functions)
    return False


def _call_of(code: str):
    """(the statement of one line of code, the call it assigns or evaluates, or None) read with ast."""
    import ast

    try:
        node = ast.parse(code.strip()).body[0]
    except (SyntaxError, IndexError):
        return None, None
    value = node.value if isinstance(node, (ast.Expr, ast.Assign)) else None
    return node, value if isinstance(value, ast.Call) else None


def _arg_names(call) -> list:
    """The plain names passed to a call, positionally or by keyword."""
    import ast

    return [a.id for a in [*call.args, *(k.value for k in call.keywords)] if isinstance(a, ast.Name)]


def _fed_back(f: Facts, site: Site | None) -> list:
    """The names a line both assigns and passes to the call it assigns from, which hold tensors with a
    graph: `logits, mems, states = model(seg, mems, states)` gives mems and states. Each is carried
    into the next call as the other is; the error names the first one backward reached."""
    import ast

    node, call = _call_of(site.code()) if site is not None else (None, None)
    if not isinstance(node, ast.Assign) or call is None:
        return []
    targets = {t.id for tg in node.targets for t in ast.walk(tg) if isinstance(t, ast.Name)}
    passed = set(_arg_names(call))
    out = []
    for name in sorted(targets & passed):
        obj = _resolve(f.ns, name)
        items = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) else [obj]
        if any(isinstance(t, torch.Tensor) and t.grad_fn is not None for t in items):
            out.append(name)
    return out


def _binding(ns: dict, path: str) -> tuple:
    """What `path` binds: (the object, the attribute) for `a.b.c`, (the container, the index) for
    `a[0]`, the name itself for `h`. Two paths with one binding (`self.mu` inside a method and
    `model.mu` outside it) are one value to detach, not two."""
    m = re.fullmatch(r"(?P<base>.+)\.(?P<attr>\w+)", path)
    if m and (base := _resolve(ns, m.group("base"))) is not None:
        return ("attr", id(base), m.group("attr"))
    m = re.fullmatch(r"(?P<base>.+)\[(?P<key>[^\[\]]+)\]", path)
    if m and (base := _resolve(ns, m.group("base"))) is not None:
        return ("item", id(base), m.group("key"))
    return ("name", path)


def _spells(path: str, m) -> bool:
    """Whether a line that made the value (or called that line) writes `path` as it is spelled."""
    return any(x is not None and path in x.code() for x in (m[0], *(m[3] if len(m) > 3 else ())))


def _assigned_at(path: str, m) -> Site | None:
    """Of the line that made a value and the lines that called it, the one that assigns `path`
    (`text_emb = Embedder()(texts)`, not the `return` inside the embedder); else the line that made it."""
    last = re.split(r"[.\[]", path)[-1].strip("]'\"") if not re.fullmatch(r"\w+", path) else path
    for site in (m[0], *(m[3] if len(m) > 3 else ())):
        if site is not None and re.search(rf"(?<![\w]){re.escape(last)}\b[^=]*(?<![=!<>])=(?!=)", site.code()):
            return site
    return m[0]


def _is_param_like(t) -> bool:
    return isinstance(t, torch.nn.Parameter) or t.grad_fn is None


_INPLACE_MSG = re.compile(r"\[[\w.]+ \[(?P<shape>[\d, ]*)\]\](?:, which is (?P<what>output \d+ of (?P<node>\w+)|a leaf))?"
                          r".*?is at version (?P<now>\d+); expected version (?P<expected>\d+)", re.S)


def _inplace(f: Facts) -> None:
    m = _INPLACE_MSG.search(str(f.err))
    if m is None:
        return
    shape = tuple(int(s) for s in m.group("shape").split(",") if s.strip())
    expected, now = int(m.group("expected")), int(m.group("now"))
    f.versions = (expected, now)
    # the saved tensor: in the failed graph, a saved tensor of that shape whose version moved
    target, first = None, -1
    if f.root is not None and f.root.grad_fn is not None:
        from .walk import raw_saved_tensor, saved_slots

        # of the nodes whose saved tensor matches the message, the engine reaches the newest first (it
        # runs nodes in decreasing sequence number): a residual `out += x` in a loop writes one per pass
        for fn in _nodes(f.root.grad_fn):
            seq = fn._sequence_nr() if hasattr(fn, "_sequence_nr") else 0
            if seq <= first:
                continue
            for slot, how, value in saved_slots(fn, functions=False):
                if how != "error" or "inplace" not in str(value):
                    continue
                t = raw_saved_tensor(fn, slot)
                if t is not None and tuple(t.shape) == shape and t._version == now:
                    target, first = t, seq
                    break
    f.written = target
    storage = _storage(target) if target is not None else None
    cands = [w for w in f.rec.writes if w.shape == shape or (storage is not None and w.storage == storage)]
    if storage is not None:
        cands = [w for w in cands if w.storage == storage]
    if not cands:      # the error names the view the graph saved (einsum's [1, 8, 24] of an (8, 24) queue)
        cands = [w for w in f.rec.writes if _squeezed(w.shape) == _squeezed(shape)]
    f.writes = [w for w in cands if w.before >= expected and w.after <= now]
    # the other saved tensors of this graph that were written in place: backward would stop at each
    # next, once the first is fixed (an FPN's two `+=` loops)
    if f.root is not None and f.root.grad_fn is not None:
        from .walk import raw_saved_tensor, saved_slots

        stale: dict = {}              # storage -> the lowest version a node saved it at
        for fn in _nodes(f.root.grad_fn):
            for slot, how, value in saved_slots(fn, functions=False):
                if how == "error" and "inplace" in str(value):
                    t = raw_saved_tensor(fn, slot)
                    saved_at = re.search(r"expected version (\d+)", str(value))
                    if t is not None and t is not target and saved_at:
                        key = _storage(t)
                        stale[key] = min(stale.get(key, 1 << 30), int(saved_at.group(1)))
        stale.pop(storage, None)      # the tensor of the message: its own writes are f.writes
        mine = {id(w) for w in f.writes}
        f.other_writes = [w for w in f.rec.writes if not w.optimizer_step and id(w) not in mine
                          and w.storage in stale and w.before >= stale[w.storage]
                          and w.calls == (f.failed.index - 1 if f.failed else w.calls)]
        made = made_at(f.root.grad_fn)
        built = made[2] if made is not None else 0      # backward calls made before this loss was built
        f.other_steps = [w for w in f.rec.writes if w.optimizer_step and id(w) not in mine and w.storage in stale
                         and w.before >= stale[w.storage] and w.calls >= built
                         and (f.failed is None or w.calls < f.failed.index)]


def _squeezed(shape: tuple) -> tuple:
    return tuple(n for n in shape if n != 1)


def _storage(t) -> int | None:
    try:
        return t.untyped_storage().data_ptr()
    except Exception:
        return None


# ------------------------------------------------------------------------------------------
# Snippets built for your object
def _resolve(ns: dict, path: str):
    """The object at a path like `h`, `model.hidden`, `state['h']`, `mem[0]` (None if unreadable)."""
    m = re.match(r"[A-Za-z_]\w*", path)
    if not m or m.group(0) not in ns:
        return None
    obj, rest = ns[m.group(0)], path[m.end():]
    for tok in re.findall(r"\.[A-Za-z_]\w*|\[[^\]]+\]", rest):
        try:
            if tok.startswith("."):
                obj = getattr(obj, tok[1:])
            else:
                key = tok[1:-1]
                obj = obj[int(key)] if key.lstrip("-").isdigit() else obj[key.strip("'\"")]
        except Exception:
            return None
    return obj


def container_of(ns: dict, path: str) -> tuple[str, object]:
    """(the path of the object you keep, the object): `h` for a tensor `h`; `hidden` for
    `hidden[0]` when `hidden` is a tuple or list; `state` for `state['h']` when `state` is a dict."""
    m = re.match(r"(?P<base>.+)\[[^\[\]]+\]$", path)
    if m:
        base = _resolve(ns, m.group("base"))
        if isinstance(base, (tuple, list, dict)):
            # a tuple inside a tuple cannot be assigned to: keep the outer one (past_key_values, a
            # tuple of (key, value) per layer)
            up = re.match(r"(?P<base>.+)\[[^\[\]]+\]$", m.group("base"))
            if isinstance(base, tuple) and up and isinstance(_resolve(ns, up.group("base")), tuple):
                return up.group("base"), _resolve(ns, up.group("base"))
            return m.group("base"), base
    return path, _resolve(ns, path)


def detach_snippet(path: str, obj) -> str:
    """One line that detaches what `path` holds, written for its type."""
    if isinstance(obj, tuple) and obj and all(isinstance(x, (tuple, list)) for x in obj):
        return f"{path} = tuple(tuple(t.detach() for t in x) for x in {path})"
    if isinstance(obj, tuple) and not all(isinstance(x, torch.Tensor) for x in obj):
        # a named tuple of a step count and tensors (a memory's state): the tensors detached, the rest kept
        items = f"(t.detach() if torch.is_tensor(t) else t for t in {path})"
        return f"{path} = type({path})(*{items})" if hasattr(obj, "_fields") else f"{path} = tuple{items}"
    if isinstance(obj, tuple):
        return f"{path} = type({path})(*(t.detach() for t in {path}))" if hasattr(obj, "_fields") else \
            f"{path} = tuple(t.detach() for t in {path})"
    if isinstance(obj, list):
        return f"{path}[:] = [t.detach() for t in {path}]"
    if isinstance(obj, dict):
        return f"{path}.update({{k: v.detach() for k, v in {path}.items()}})"
    return f"{path} = {path}.detach()"


def _detached(rhs: str) -> str:
    """The expression `rhs` (the right-hand side of a line that stores a value) with what it stores
    detached, written for its shape: `(x, y)` -> `(x.detach(), y.detach())`, `{"a": h}` ->
    `{"a": h.detach()}`, `[{...}]` element by element, `None` and other constants kept, `f(x)` ->
    `f(x).detach()`, `a + b` -> `(a + b).detach()`, `[f(x) for f in fs]` -> `[f(x).detach() for f in fs]`.
    Read with `ast`: a tuple or a list has no `.detach()`."""
    import ast

    try:
        node = ast.parse(rhs.strip(), mode="eval").body
    except SyntaxError:
        return f"({rhs}).detach()"

    def text(n) -> str:
        return ast.get_source_segment(rhs.strip(), n) or ast.unparse(n)

    def go(n) -> str:
        if isinstance(n, ast.Constant):
            return text(n)
        if isinstance(n, (ast.Tuple, ast.List)):
            inner = ", ".join(go(e) for e in n.elts)
            return f"({inner},)" if isinstance(n, ast.Tuple) and len(n.elts) == 1 else \
                (f"({inner})" if isinstance(n, ast.Tuple) else f"[{inner}]")
        if isinstance(n, (ast.ListComp, ast.GeneratorExp)):    # `[model(x) for model in models]`: each item
            fors = " ".join(ast.unparse(g).strip() for g in n.generators)
            return f"[{go(n.elt)} {fors}]" if isinstance(n, ast.ListComp) else f"({go(n.elt)} {fors})"
        if isinstance(n, ast.Dict) and all(k is not None for k in n.keys):
            return "{" + ", ".join(f"{text(k)}: {go(v)}" for k, v in zip(n.keys, n.values)) + "}"
        if isinstance(n, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)):
            return f"{text(n)}.detach()"
        return f"({text(n)}).detach()"

    return go(node)


def _indent(site: Site) -> str:

    line = linecache.getline(site.file, site.line)
    return line[: len(line) - len(line.lstrip())]


def _statement_end(site: Site) -> int:
    """The last line of the statement that starts at `site` (a call split over lines)."""

    n, depth = site.line, 0
    while True:
        text = linecache.getline(site.file, n)
        if not text:
            return site.line
        depth += text.count("(") + text.count("[") - text.count(")") - text.count("]")
        if depth <= 0:
            return n
        n += 1


def _with_kwarg(site: Site, kwarg: str) -> tuple[str, Edit] | None:
    """`site`'s line with `kwarg` added to its backward()/autograd.grad() call, and that edit."""
    text = site.code()
    if not text or _statement_end(site) != site.line:
        return None
    m = re.search(r"(\.backward|autograd\.grad|torch\.autograd\.backward)\(", text)
    if m is None:
        return None
    depth, i = 0, m.end() - 1
    for i in range(m.end() - 1, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            break
    inner = text[m.end():i].strip()
    key = kwarg.split("=")[0]
    at = re.search(rf"(?<![\w.]){key}\s*=", inner)
    if at:                     # replace the whole value (`retain_graph=self.retain_graph`), up to its comma
        depth, j = 0, at.end()
        while j < len(inner) and not (depth == 0 and inner[j] == ","):
            depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(inner[j], 0)
            j += 1
        inner = inner[:at.start()] + kwarg + inner[j:]
        new = text[:m.end()] + inner + text[i:]
    else:
        new = text[:m.end()] + (inner + ", " if inner else "") + kwarg + text[i:]
    return new, Edit(site.file, site.line, (_indent(site) + new,))


def _detach_at_use(site: Site, name: str) -> tuple[str, Edit] | None:
    """`site`'s line with the one use of `name` (not already detached) replaced by `name.detach()`."""
    text = site.code()
    if not text or not re.fullmatch(r"[A-Za-z_]\w*", name) or keyword.iskeyword(name):
        return None
    lhs, eq, rhs = text.partition("=") if re.match(r"[\w.\[\], ]+=[^=]", text) else ("", "", text)
    use = rf"(?<![\w.]){name}(?![\w(])(?!\.detach\(\)|\.data\b)"    # a use already detached carries no graph
    if len(re.findall(use, rhs)) != 1:
        return None
    new_rhs = re.sub(use, f"{name}.detach()", rhs)
    new = f"{lhs}{eq}{new_rhs}"
    return new, Edit(site.file, site.line, (_indent(site) + new,))


# ------------------------------------------------------------------------------------------
# The rules: each reads the facts and returns a Finding, or None
def _freed_words(f: Facts) -> str:
    node = f.stop.name() if f.stop is not None else "a node"
    made = made_at(f.stop) if f.stop is not None else None
    where = f", made at {made[0]}" if made and made[0] else ""
    return f"{node}{where}"


def _backward_expr(site: Site) -> str | None:
    """`a` of a line `a.backward()`, `(0.5 * b)` of `(0.5 * b).backward()`; None otherwise."""
    m = re.fullmatch(r"(?P<e>\w+|\(.+\))\.backward\(\)", site.code())
    return m.group("e") if m else None


def _loop_of_losses(f: Facts) -> str | None:
    """For one backward line run in a loop over your losses (`for name in loss_dict:
    loss_dict[name].backward()`, `for loss in outputs: loss.backward()`): their sum, written for
    your container (`sum(loss_dict.values())`, `sum(outputs)`)."""

    code = f.failed.site.code()
    m = re.fullmatch(r"(?P<box>[\w.]+)\[\w+\]\.backward\(\)", code)
    if m:
        box = _resolve(f.ns, m.group("box"))
        if isinstance(box, dict):
            return f"sum({m.group('box')}.values())"
        if isinstance(box, (list, tuple)):
            return f"sum({m.group('box')})"
        return None
    m = re.fullmatch(r"(?P<var>\w+)\.backward\(\)", code)
    if not m:
        return None
    for n in range(f.failed.site.line - 1, max(0, f.failed.site.line - 6), -1):
        loop = re.match(rf"\s*for\s+{m.group('var')}\s+in\s+(?P<it>[\w.]+)\s*:", linecache.getline(f.failed.site.file, n))
        if loop:
            box = _resolve(f.ns, loop.group("it"))
            if isinstance(box, dict):
                return f"sum({loop.group('it')}.values())"
            return f"sum({loop.group('it')})" if isinstance(box, (list, tuple)) else None
    return None


class _FromLine:
    """A recorded backward call named with the line of yours that called it (a helper's one backward
    line run by two calls); everything else is the call's."""

    def __init__(self, call):
        self._call = call

    def __getattr__(self, name):
        return getattr(self._call, name)

    def words(self) -> str:
        outer = self._call.outer[0] if self._call.outer else None
        return self._call.words() + (f", called from {outer.short()} `{outer.code()}`" if outer else "")


def _same_call(f: Facts) -> bool:
    """Whether the call that failed is the call that freed, run again (a loop): the same line, called
    from the same line of yours. A helper that calls backward (`opt.backward(loss)`, `update(opt,
    loss)`) called from two lines is two calls."""
    if f.failed is None or f.freer is None or f.failed.site != f.freer.site:
        return False
    return getattr(f.failed, "outer", ())[:1] == getattr(f.freer, "outer", ())[:1]


def _helper_sum(f: Facts):
    """For one helper's backward line called from two lines of yours (`opt.backward(loss1)`, then
    `opt.backward(loss2)`): (the second call with the sum of both losses, the edits that write it and
    remove the first), when each of your lines names its loss once."""
    if f.failed is None or not isinstance(f.failed, _FromLine) or not f.failed.outer or not f.freer.outer:
        return None
    a_line, b_line = f.freer.outer[0], f.failed.outer[0]
    if a_line.file != b_line.file or _statement_end(a_line) != a_line.line or _statement_end(b_line) != b_line.line:
        return None

    def loss_in(call, line):       # the one argument of your line that is a tensor with a graph
        _node, value = _call_of(line.code())
        if value is None:
            return None
        names = _arg_names(value)
        losses = [n for n in names if isinstance(t := _resolve(f.ns, n), torch.Tensor) and t.grad_fn is not None]
        ok = len(losses) == 1 and len(re.findall(rf"(?<![\w.]){losses[0]}(?!\w)", line.code())) == 1
        return losses[0] if ok else None

    a, b = loss_in(f.freer, a_line), loss_in(f.failed, b_line)
    if a is None or b is None or a == b:
        return None
    new = re.sub(rf"(?<![\w.]){b}(?!\w)", f"{b} + {a}", b_line.code(), count=1)
    return new, (Edit(a_line.file, a_line.line, ()), Edit(b_line.file, b_line.line, (_indent(b_line) + new,)))


def _grad_read_between(f: Facts):
    """The line that read a `.grad` after the freeing call and before the failing one (the gradient of the
    first loss is used in between: adversarial training's perturbation), recorded; or None."""
    if f.failed is None or f.freer is None:
        return None
    return next((site for calls, site in getattr(f.rec, "grad_reads", ())
                 if f.freer.index <= calls < f.failed.index and site is not None), None)


def _sum_option(f: Facts) -> Option | None:
    """One backward of the sum; with its edit when both calls are plain `<loss>.backward()` lines on
    different lines, and no optimizer step runs between them. None when a `.grad` was read between the
    two calls (one backward of the sum would leave nothing to read there)."""
    if _grad_read_between(f) is not None:
        return None
    a, b = _backward_expr(f.freer.site), (_backward_expr(f.failed.site) if f.failed else None)
    edits, example = (), "`(loss_a + loss_b).backward()`"
    if a and b:
        example = f"`({a} + {b}).backward()`"
    looped = _loop_of_losses(f) if f.failed is not None and _same_call(f) else None
    if looped:
        example = f"`{looped}.backward()`"
    twin = _helper_sum(f)
    if twin is not None:        # one helper called for each loss: call it once, on their sum
        text, edits = twin
        return Option("" if not f.carriers else "if both losses should train the part they share",
                      f"Call the helper once, on the sum of the losses: write `{text}` in place of both calls.",
                      "This gives the same gradients as the two calls, in one pass through the shared part, "
                      "and frees the buffers once.", edits, kind="retain-or-sum")
    if a and b and not f.steps_between and f.freer.site.file == f.failed.site.file and f.freer.site != f.failed.site:
        edits = (Edit(f.freer.site.file, f.freer.site.line, ()),
                 Edit(f.failed.site.file, f.failed.site.line, (_indent(f.failed.site) + example.strip("`"),)))
    where = (f" at {f.failed.site.short()}, in place of both calls" if edits else
             f", in place of the loop that calls backward() on each (at {f.failed.site.short()})" if looped else "")
    return Option("" if not f.carriers else "if both losses should train the part they share",
                  f"Call backward() once, on the sum of the losses: {example}{where}.",
                  "This gives the same gradients as the two calls, in one pass through the shared part, "
                  "and frees the buffers once.", edits, kind="retain-or-sum")


def _retain_option(f: Facts, condition: str = "", consequence: str = "") -> Option | None:
    got = _with_kwarg(f.freer.site, "retain_graph=True")
    if got is None:
        return None
    new, edit = got
    loop = _loop_around(f.failed.site, f.freer.site) if f.failed is not None else None
    if loop is not None:        # the later call runs again before the step ends: each pass frees it too
        more = _with_kwarg(f.failed.site, "retain_graph=True")
        if more is not None:
            at = dataclasses.replace(f.failed.site, line=loop.lineno)
            return Option(condition, f"Keep the graph at the first call and at the calls of the loop at "
                          f"{at.short()}: write `{new}` at {f.freer.site.short()} and `{more[0]}` at "
                          f"{f.failed.site.short()}.", "Every loss's gradients reach it; the buffers stay in "
                          "memory until the last of those calls has run through them.", (edit, more[1]),
                          kind="retain-or-sum")
    return Option(condition, f"Keep the graph at the first call: write `{new}` at {f.freer.site.short()}.",
                  consequence or "The buffers stay in memory until the second call has run through them.",
                  (edit,), kind="retain-or-sum")


def _stmts(node) -> list:
    """The statements of a loop's body (an `ast` node's)."""
    return getattr(node, "body", None) or []


def _loops_holding(site: Site, tree=None) -> list:
    """The `for`/`while` loops of `site`'s file (its syntax tree `tree`, when given) whose body holds its
    line, outermost first (none when the file cannot be read)."""
    import ast

    if tree is None:
        got = _parsed(site.file)
        if got is None:
            return []
        tree = got[1]
    loops = [n for n in ast.walk(tree) if isinstance(n, (ast.For, ast.While, ast.AsyncFor)) and _stmts(n)
             and _stmts(n)[0].lineno <= site.line <= _stmts(n)[-1].end_lineno]
    return sorted(loops, key=lambda n: n.lineno)


def _loop_around(site: Site, outside: Site):
    """The innermost loop whose body holds `site` but not `outside` (same file): a backward at `site` runs
    again there, before the code at `outside` does. Its `ast` node, or None."""
    if site.file != outside.file:
        return None
    inner = [n for n in _loops_holding(site) if not (n.lineno <= outside.line <= _stmts(n)[-1].end_lineno)]
    return inner[-1] if inner else None


def rule_read_after_backward(f: Facts) -> Finding | None:
    """Saved tensors read (a `_saved_*` attribute, a hook) after a backward freed them."""
    if f.error != "second time" or f.failed is not None or f.freer is None:
        return None
    where = f.raised_at
    opts = [Option("", f"Read what you need before {f.freer.words()}.",
                   "Nothing is kept longer than the backward needs.", kind="read-before-backward")]
    r = _retain_option(f, consequence="The buffers stay in memory until you have read them.")
    if r:
        r.fix = "Or keep " + r.fix[len("Keep "):]
        r.kind = "keep-graph"
        opts.append(r)
    m = re.search(r"([A-Za-z_][\w.]*)\.grad_fn\b", where.code() if where else "")
    who = [m.group(1)] if m else []
    return Finding(
        "read-after-backward",
        f"The line {where if where else '(not recorded)'} reads the saved tensors of {_freed_words(f)} after "
        f"{f.freer.words()} freed them.",
        evidence=[f"{f.freer.words()} ran without retain_graph and released the saved tensors of "
                  f"{f.freer.released} node(s), {f.stop.name()} among them."],
        options=opts, confidence="certain", culprit=who[0] if who else None, culprits=who)


def rule_grad_freed(f: Facts) -> Finding | None:
    """An earlier torch.autograd.grad() of the same graph freed it: keep the graph there."""
    if f.error != "second time" or f.freer is None or f.freer.kind != "autograd.grad" or f.failed is None:
        return None
    if f.root is None:
        return None
    opts = []
    got = _with_kwarg(f.freer.site, "create_graph=True")
    keep = _with_kwarg(f.freer.site, "retain_graph=True")
    if got:
        opts.append(Option("if the gradient it returns is part of the loss you backward (a gradient penalty, "
                           "a physics residual)",
                           f"Write `{got[0]}` at {f.freer.site.short()}.",
                           "The graph is kept, and the gradient itself gets a graph, so the loss that uses "
                           "it trains the weights through it.", (got[1],), kind="keep-graph"))
    if keep:
        opts.append(Option("if you only read the gradient it returns",
                           f"Write `{keep[0]}` at {f.freer.site.short()}.",
                           "The graph is kept for the later call; the gradient stays a plain value.",
                           (keep[1],), kind="keep-graph"))
    return Finding(
        "grad-freed-graph",
        f"{f.freer.words()} freed the saved tensors of {_freed_words(f)}, which {f.failed.words()} "
        "needs again.",
        evidence=[f"{f.freer.words()} ran without retain_graph or create_graph; it released "
                  f"{f.freer.released} node(s)' saved tensors.",
                  "Detaching would not help: the later call needs this graph."],
        options=opts, confidence="certain" if len(opts) == 1 else "depends",
        how_to_tell="Is the gradient that autograd.grad returns used to compute the loss you call backward on?")


def rule_running_total(f: Facts) -> Finding | None:
    """The failing tensor is itself a total carried across backward calls (`total = total + loss`)."""
    if f.error != "second time" or f.failed is None or f.freer is None or f.root is None:
        return None
    root_names = [p for p, t in f.named if t is f.root]
    m = made_at(f.root.grad_fn)
    if not root_names or m is None or m[0] is None or not _same_call(f) or m[0] not in f.boundary_sites:
        return None
    name = root_names[0]
    text = m[0].code()
    if not re.search(rf"(?<![\w.]){re.escape(name)}\s*(\+=|=\s*{re.escape(name)}\s*\+)", text):
        return None
    m2 = re.search(rf"(?<![\w.]){re.escape(name)}\s*(?:\+=|=\s*{re.escape(name)}\s*\+)\s*(?P<added>.+)", text)
    added = m2.group("added").strip() if m2 else "loss"
    added = added if re.fullmatch(r"[\w.]+", added) else f"({added})"
    # how many losses were added since the last backward: more than one is a window of gradient
    # accumulation, whose backward must cover them all (backwarding only the newest would drop the rest)
    window = sum(1 for fn in _nodes(f.root.grad_fn, 20_000) if fn not in f.old and made_at(fn) is not None
                 and made_at(fn)[0] == m[0])
    end = _statement_end(f.failed.site)
    reset = f"{name} = 0"
    opts = [Option("",
                   f"Start the total again after each backward: add `{reset}` after {f.failed.site.short()}.",
                   "Each backward runs through the losses added since the last one, whose buffers are still "
                   "there; the gradients are those of that window's sum. (If you also print the total, keep a "
                   "separate number for it: `running += loss.item()`.)",
                   (Edit(f.failed.site.file, end + 1, (_indent(f.failed.site) + reset,), insert=True),)
                   if f.failed.site.file == m[0].file else (),
                   kind="reset-per-episode")]
    if window <= 1:                        # a backward every step: backwarding the step's own loss is the same
        new = text[:m2.start()] + f"{name} += {added}.item()" if m2 else f"{name} += loss.item()"
        step_loss = added.strip("()")
        step_call = f"{step_loss}.backward()" if re.fullmatch(r"[\w.]+", step_loss) else f"({step_loss}).backward()"
        edits = ()
        if _backward_expr(f.failed.site) == name and m[0].file == f.failed.site.file:
            edits = (Edit(m[0].file, m[0].line, (_indent(m[0]) + new,)),
                     Edit(f.failed.site.file, f.failed.site.line, (_indent(f.failed.site) + step_call,)))
        opts.append(Option("", f"Or keep the total as a number: write `{new}` at {m[0].short()}, and call "
                               f"backward() on each step's own loss (`{step_call}`).",
                           "The same gradients; the total is then for printing only.", edits,
                           kind="accumulate-number"))
    return Finding(
        "running-total",
        f"`{name}` adds each step's loss to the total of the steps before, so {f.failed.words()} runs "
        "back into the earlier steps, whose buffers that same line freed in an earlier call.",
        evidence=[f"`{name}` was made at {m[0]} in each step ({window} loss(es) added since the last backward); "
                  f"the node missing its buffers, {_freed_words(f)}, comes from an earlier step."],
        options=opts, confidence="certain", culprit=name, culprits=[name])


def _param_names(f: Facts, params) -> list:
    ids = {id(p) for p in params}
    out = []
    for path, t in f.named:
        if id(t) in ids and path not in out and not any(path.startswith(o) for o in out):
            out.append(path)
    return out[:3]


def _shared_named(f: Facts) -> list:
    """Your names for tensors that both losses use (not parameters), the most recently made first."""
    if f.root is None or f.root.grad_fn is None:
        return []
    failing = set(_nodes(f.root.grad_fn, 20_000))
    freer = {fn for r in f.freer.roots if (t := r() if callable(r) else r) is not None and t.grad_fn is not None
             for fn in _nodes(t.grad_fn, 20_000)}
    out = [(p, t) for p, t in f.named if t.grad_fn is not None and not _is_param_like(t) and t is not f.root
           and t.grad_fn in failing and t.grad_fn in freer]
    out.sort(key=lambda pt: (-pt[1].grad_fn._sequence_nr(), len(pt[0])))
    return list(dict.fromkeys(p for p, _ in out))[:4]


def _shared_detach_options(f: Facts) -> list:
    """For a named tensor both losses use: detach it where the earlier loss uses it, if that loss
    should not train what made it (a peer network's output; a GAN's D step)."""
    if f.root is None or f.root.grad_fn is None:
        return []
    failing = set(_nodes(f.root.grad_fn, 20_000))
    freer_roots = [r() if callable(r) else r for r in f.freer.roots]
    freer_nodes = [fn for r in freer_roots if r is not None and r.grad_fn is not None for fn in _nodes(r.grad_fn, 20_000)]
    freer_set = set(freer_nodes)
    failing_roots = [f.root]
    out, done, both = [], set(), []
    for path, t in f.named:
        fn = t.grad_fn
        if fn is None or _is_param_like(t) or t is f.root or fn not in failing or fn not in freer_set or path in done:
            continue
        if not re.fullmatch(r"\w+", path) or not _reaches_leaf([fn], None):
            continue
        for user in freer_nodes:              # where the earlier loss alone uses it
            if user in failing or not any(n is fn and i == t.output_nr for n, i in user.next_functions):
                continue
            m = made_at(user)
            got = _detach_at_use(m[0], path) if m is not None and m[0] is not None else None
            if got is not None and _trains_without(f.freer, fn):
                done.add(path)
                both.append((path, m[0], got))
                out.append(Option(f"if the loss of {f.freer.site.short()} should not train what made `{path}`",
                                  f"Detach it where that loss uses it: write `{got[0]}` at {m[0].short()}.",
                                  "That loss's gradient stops at it; the other loss still trains through it.",
                                  (got[1],), kind="detach-at-use", detached=path))
                break
        for user in failing:                  # where the later loss alone uses it
            if user in freer_set or not any(n is fn and i == t.output_nr for n, i in user.next_functions):
                continue
            m = made_at(user)
            got = _detach_at_use(m[0], path) if m is not None and m[0] is not None else None
            if got is not None and _reaches_leaf([r.grad_fn for r in failing_roots], fn):
                both.append((path, m[0], got))
                break
    lines = {site.line for _, site, _ in both}
    if len(both) >= 2 and len(lines) == len(both) and len({p for p, _, _ in both}) == len(both):
        out.insert(0, Option("if each loss should train only its own network (the other's output is a constant to "
                             "agree with)", "Detach each shared output where the other loss uses it: "
                             + "; ".join(f"write `{g[0]}` at {site.short()}" for _, site, g in both) + ".",
                             "Each loss's gradient stops at the other network's output.",
                             tuple(g[1] for _, _, g in both), kind="detach-at-use"))
    return out[:3]


def rule_step_between(f: Facts) -> Finding | None:
    """optimizer.step() ran between the backward that freed the graph and the one that failed."""
    if f.error != "second time" or f.failed is None or f.freer is None or not f.stepped:
        return None
    if f.root is None or f.root.grad_fn not in f.old:
        return None     # the failing loss was built after the step: not this rule
    s = f.steps_between[0]
    keep = _with_kwarg(f.freer.site, "retain_graph=True")
    move = ()
    block, below = _block_move_outer((s.site, *s.outer), f.failed)
    if block is not None:
        import dataclasses
        s = dataclasses.replace(s, site=block[0])
        if keep is not None:
            end = _statement_end(below)
            text = tuple(linecache.getline(s.site.file, n).rstrip("\n") for n in range(block[1], block[2] + 1))
            move = (keep[1], *(Edit(s.site.file, n, ()) for n in range(block[1], block[2] + 1)),
                    Edit(s.site.file, end + 1, text, insert=True))
    opts = [Option("if both losses should use the weights as they were before the step",
                   f"Call every backward() before `{s.site.code()}` at {s.site.short()}: move that line below "
                   f"{f.failed.site.short()}, and keep the graph at the first call"
                   + (f" (`{keep[0]}`)" if keep else "") + ".",
                   "Both gradients are computed with the same weights; the step then applies them.",
                   move, kind="backward-before-step"),
            *_shared_detach_options(f),
            Option("if the second loss should see the weights after the step (the usual alternating "
                   "GAN or actor-critic update)",
                   f"Compute the second loss again after {s.site.short()}: run its forward pass anew.",
                   "The second backward runs through a new graph made with the updated weights.",
                   kind="backward-before-step")]
    return Finding(
        "step-between-backwards",
        f"{f.freer.words()} freed the buffers of {_freed_words(f)}; then `{s.site.text()}` at "
        f"{s.site.short()} changed {s.changed} parameter(s); then {f.failed.words()} ran through the "
        "same graph.",
        evidence=[f"The step changed {len(f.stepped)} parameter(s) that this graph uses"
                  + (f" ({', '.join(_param_names(f, f.stepped))})" if _param_names(f, f.stepped) else "")
                  + ". Passing retain_graph=True to the first call is therefore no fix: the second backward "
                  "would then raise \"modified by an inplace operation\" wherever the graph saved one of them."],
        options=opts, confidence="depends",
        how_to_tell="Should the second loss's gradient be computed with the weights before or after this step?")


def _optimizers_reached(f: Facts) -> list:
    """The names of your optimizers (in the namespace) that own a parameter the failing graph reaches."""
    if f.root is None or f.root.grad_fn is None:
        return []
    leaves = {id(fn.variable) for fn in _nodes(f.root.grad_fn, 20_000) if is_leaf_node(fn)}
    out = []
    for name, obj in list(f.ns.items()):
        if isinstance(obj, torch.optim.Optimizer) and not name.startswith("_"):
            if any(id(q) in leaves for g in obj.param_groups for q in g["params"]):
                out.append(name)
    return out


def rule_closure_reuses_loss(f: Facts) -> Finding | None:
    """Both calls ran inside one `optimizer.step(closure)` (L-BFGS calls the closure several times per
    step, at the weights it tries), on a loss made before the step: the closure must compute it."""
    if f.error != "second time" or f.failed is None or f.freer is None or f.root is None or f.root.grad_fn is None:
        return None
    step = getattr(f.failed, "in_step", None)
    if step is None or getattr(f.freer, "in_step", None) != step:
        return None
    if f.root.grad_fn not in f.old:
        return _closure_reads_kept(f, step)
    made = made_at(f.root.grad_fn)
    site = made[0] if made else None
    name = next((p for p, t in f.named if t is f.root and re.fullmatch(r"\w+", p)), None)
    if site is None or name is None or site.file != f.failed.site.file or site.line >= f.failed.site.line \
            or _statement_end(site) != site.line or not re.match(rf"\s*{name}\s*=[^=]", site.code()):
        return None
    at = f.failed.site
    move = (Edit(site.file, site.line, ()), Edit(at.file, at.line, (_indent(at) + site.code(),), insert=True))
    return Finding(
        "closure-loss",
        f"{_closure_called_again(step)}; the closure backwards `{name}`, made once "
        f"before the step at {site.short()}: its first call freed that graph (`{at.code()}` at {at.short()}), "
        "and the next call finds it freed.",
        evidence=[f"Both backward calls were recorded inside `{step.code()}` ({step.short()})."],
        options=[Option("", f"Compute the loss inside the closure: move `{site.code()}` from {site.short()} to just "
                            f"above {at.short()}.",
                        "Each call of the closure builds the loss at the optimizer's current weights and backwards "
                        "through its own graph.", move, kind="recompute-in-step")],
        confidence="certain", culprit=name, culprits=[name])


def _closure_called_again(step: Site) -> str:
    """The recorded fact both closure findings start from."""
    return (f"`{step.code()}` at {step.short()} calls its closure more than once in one step (an optimizer like "
            "L-BFGS evaluates the loss again at each point it tries)")


def _closure_reads_kept(f: Facts, step: Site) -> Finding | None:
    """The closure makes its loss each call, but from values made once before the step (`pred =
    model(x)` outside it): the closure must compute those too."""
    made = [(p, s) for p, _t, s, _st in f.carriers if s is not None and re.fullmatch(r"\w+", p)
            and _statement_end(s) == s.line and re.match(rf"\s*{p}\s*=[^=]", s.code()) and s.line < step.line]
    if not made or len(made) != len(f.carriers):
        return None
    edits, said = [], []
    for p, s in made:
        into = _first_line_naming(s, p, f.failed.site)
        if into is None:
            return None
        edits.append(Edit(into.file, into.line, (_indent(into) + s.code(),), insert=True))
        said.append(f"`{s.code()}` just above {into.short()}")
    names = [p for p, _ in made]
    return Finding(
        "closure-loss",
        f"{_closure_called_again(step)}; the closure's loss reads "
        + ", ".join(f"`{p}`" for p in names) + f", made once before the step ({', '.join(s.short() for _, s in made)}): "
        f"the closure's first backward freed {'their' if len(names) > 1 else 'its'} graph, and the next call "
        "finds it freed.",
        evidence=[f"Both backward calls were recorded inside `{step.code()}` ({step.short()})."],
        options=[Option("", f"Compute {'them' if len(names) > 1 else 'it'} inside the closure: add "
                            + " and ".join(said) + ".",
                        "Each call of the closure runs the forward at the optimizer's current weights and backwards "
                        "through its own graph.", tuple(edits), kind="recompute-in-step")],
        confidence="certain", culprit=names[0], culprits=names)


def rule_shared_graph(f: Facts) -> Finding | None:
    """Two losses built before the first backward share part of one graph."""
    if f.error != "second time" or f.failed is None or f.freer is None or f.root is None:
        return None
    if f.root.grad_fn not in f.old or f.stepped:
        return None
    opts = [o for o in (_sum_option(f),) if o is not None]
    r = _retain_option(f)
    if r:
        opts.append(r)
    shared = _shared_named(f)
    peers = _shared_detach_options(f)
    if peers and opts:
        opts[0].condition = "if both losses should train the part they share"
        if r:
            r.condition = opts[0].condition
    opts += peers
    owners = _optimizers_reached(f)
    if len(owners) > 1 and not peers:      # two optimizers: which loss trains which network is your call
        for o in opts:
            o.condition = "if both losses should train everything they reach"
        opts.append(Option("if one loss should not train a network the other trains (a GAN's D loss and G)",
                           "Give that loss its own forward pass, with the other network's output detached where "
                           "it enters (for a GAN: the discriminator's loss from `fake.detach()`, the generator's "
                           "from a second pass through the discriminator).",
                           "Each loss's gradient reaches only the network it should train; the summed or retained "
                           "graph would also train the other.", kind="detach-input"))
    again = next((p for p, t in f.named if t is f.root), None) if any(
        (r() if callable(r) else r) is f.root for r in f.freer.roots) else None
    if again is not None:       # the same tensor backwarded twice: it is what both calls run from
        shared = [again]
        if f.freer.site == f.failed.site:
            # backwarded again by the same line, in a loop: "the sum of the losses" means nothing here;
            # build it in each pass (the line that made it, moved into the loop), or keep its graph
            opts = [o for o in opts if o.kind != "retain-or-sum" or "retain_graph" in o.fix]
            made = made_at(f.root.grad_fn)
            site = made[0] if made else None
            loop = _loop_around(f.failed.site, site) if site is not None else None
            if loop is not None and _statement_end(site) == site.line and re.fullmatch(r"\w+", again) \
                    and re.match(rf"\s*{again}\s*=[^=]", site.code()):
                at = f.failed.site
                opts.insert(0, Option("", f"Build `{again}` in each pass: move `{site.code()}` from {site.short()} "
                                          f"into the loop, just above {at.short()}.",
                                      "Each pass backwards through a graph of its own, made with the values as they "
                                      "are then.", (Edit(site.file, site.line, ()),
                                                    Edit(at.file, at.line, (_indent(at) + site.code(),), insert=True)),
                                      kind="recompute-in-step"))
    return Finding(
        "shared-graph",
        (f"`{again}` was backwarded twice: {f.freer.words()} freed the buffers of {_freed_words(f)}, and "
         f"{f.failed.words()}, on the same tensor, needs them again." if again is not None else
         f"Both losses were built before {f.freer.words()}, which freed the buffers of {_freed_words(f)}; "
         f"{f.failed.words()} needs them too."),
        evidence=[f"{f.freer.words()} released {f.freer.released} node(s)' saved tensors."]
        + ([f"`{f.steps_between[0].site.code()}` at {f.steps_between[0].site.short()} ran in between, but changed "
            "no parameter this graph uses, so keeping the graph is safe."] if f.steps_between
           else ["No optimizer step ran in between."])
        + ([f"The graph reaches parameters of {len(owners)} optimizers ({', '.join(f'`{n}`' for n in owners)})."]
           if len(owners) > 1 else []),
        options=opts, confidence="depends" if peers or len(owners) > 1 else "certain",
        culprit=shared[0] if shared else None, culprits=shared,
        how_to_tell=("Should the loss of the first call train what made the tensor both losses use?" if peers else
                     "Which optimizer's parameters should each loss train?" if len(owners) > 1 else ""))


def rule_reused_after_backward(f: Facts) -> Finding | None:
    """A tensor made before a backward (in this iteration, or once before the loop, or carried from
    the last step) is used by a loss built after it."""
    if f.error != "second time" or f.failed is None or f.freer is None or not f.carriers:
        return None
    same_line = _same_call(f)
    names = [c[0] for c in f.carriers]
    groups = {}
    for path, _t, site, step in f.carriers:
        cpath, obj = container_of(f.ns, path)
        groups.setdefault(cpath, (obj, site, step))
    carried_words = "; ".join(f"`{p}` (made at {s.short() if s else 'a line not recorded'}"
                              f"{'' if st is None else f', in optimizer step {st}'})" for p, (o, s, st) in groups.items())
    indent = _indent(f.freer.site)
    end = _statement_end(f.freer.site)
    if same_line:
        # the same backward line ran again: the part was made in an earlier iteration. Carried state
        # is made again in every step from its value in the step before (the same code made it again,
        # and its new value leads back to the old one); a cached or once-made value is kept as it is
        remade = [p for p in groups if any(container_of(f.ns, c)[0] == p for c in f.remade)]
        if remade:
            for a in _aliases(groups, f.ns):      # `h`, `inp` are `state[1]`'s: detach the kept state once
                groups.pop(a)
            for p in list(groups):    # `out, mems, states = model(x, mems, states)`: every value fed back
                t = next((t for c, t, _s, _st in f.carriers if container_of(f.ns, c)[0] == p), None)
                m = made_at(t.grad_fn) if t is not None and t.grad_fn is not None else None
                for site in ((m[0], *(m[3] if len(m) > 3 else ())) if m else ()):
                    others = [o for o in _fed_back(f, site) if o not in groups]
                    for other in others:          # named at the line that assigns and passes it
                        groups[other] = (_resolve(f.ns, other), site, groups[p][2])
                    if others:
                        break
            carried_words = "; ".join(f"`{p}` (made at {s.short() if s else 'a line not recorded'}"
                                      f"{'' if st is None else f', in optimizer step {st}'})"
                                      for p, (o, s, st) in groups.items())
            snippets = [detach_snippet(p, o) for p, (o, s, st) in groups.items()]
            # carried by a statement after the backward (`mem_state = next_state`): detach once it holds the new value
            later = _assigned_after(f.freer.site, list(groups))
            if later is not None:
                end, indent = _statement_end(later), _indent(later)
            edit = Edit(f.freer.site.file, end + 1, tuple(indent + s for s in snippets), insert=True)
            fix = (f"Detach {'them' if len(snippets) > 1 else 'it'} after each backward: add "
                   + " and ".join(f"`{s}`" for s in snippets)
                   + f" after {(later or f.freer.site).short()}"
                   + (f", where {'they are' if len(snippets) > 1 else 'it is'} carried to the next step." if later else "."))
            opts = [Option("if gradients should flow only within one step (truncated backpropagation "
                           "through time; the state still carries its values forward)",
                           fix, "Each backward stops at the start of its step; memory stays flat.",
                           (edit,), kind="detach-carried"),
                    _reset_option(f, groups)]
            each = _detach_each_pass(f, groups)
            if each is not None:
                opts.append(each)
            return Finding(
                "carried-across-steps",
                f"{', '.join(f'`{n}`' for n in groups)} carr{'y' if len(groups) > 1 else 'ies'} the graph of "
                f"an earlier step into this one; {f.freer.words()} freed that step's buffers "
                f"({_freed_words(f)}).",
                evidence=[f"Carried: {carried_words}; each is made again in every step from its value in "
                          "the step before."],
                options=opts, confidence="depends", culprit=list(groups)[0], culprits=list(groups),
                how_to_tell="Should the gradient of this step's loss reach back into the earlier steps? "
                            "If it should, keep those graphs (retain_graph=True), at a memory cost that grows "
                            "with every step.")
        # made once, before the loop: the names the loop reads again (not an alias made inside it)
        reread = {p: v for p, v in groups.items() if v[1] is not None and _first_line_naming(v[1], p, f.failed.site)}
        assigned = {p: v for p, v in reread.items() if re.search(rf"(?<![\w.]){re.escape(p)}\s*[,=]", v[1].code())}
        reread = assigned or reread
        if reread:
            groups = reread
            names = [n for n in names if container_of(f.ns, n)[0] in groups] or names
        aliases = _aliases(groups, f.ns)           # `memory` is `cache[0][0]`: name the entry you keep
        for a in aliases:
            groups.pop(a)
        carried_words = "; ".join(f"`{p}` (made at {s.short() if s else 'a line not recorded'}"
                                  f"{'' if st is None else f', in optimizer step {st}'})" for p, (o, s, st) in groups.items())
        opts = []
        for p, (o, s, _st) in groups.items():
            if s is None:
                continue
            entry = _cache_entry(f, p, s)
            if entry is not None:
                opts += entry
                continue
            line = s.code()
            into = _first_line_naming(s, p, f.failed.site)
            if into is not None and _reads_freed(f, line.split("=", 1)[-1]):
                into = None          # made from values whose graph that backward freed: made again, it fails too
            if into is not None and _named_after_loop(f, p, s):
                into = None          # made again in the loop, the last pass frees it before a later loss uses it
            if into is not None:
                opts.append(Option(f"if `{p}` should be trained by every step's loss",
                                   f"Compute it again inside the loop: add `{line}` just before {into.short()}.",
                                   "Each step builds its own graph for it, and backward frees only that.",
                                   (Edit(s.file, into.line, (_indent(into) + line,), insert=True),),
                                   kind="recompute-in-step"))
            elif (again := _rebuild_owner(s, p, f.failed.site)) is not None:
                lines, into = again     # `dist = Normal(mean, std)` made before the loop from `std = exp(log_std)`
                opts.append(_build_again(f"if `{p}` should be trained by every step's loss", lines, into))
            elif not re.fullmatch(r"\w+", p):
                opts.append(Option(f"if `{p}` should be trained by every step's loss",
                                   f"Have it computed again in every step (for a cache, clear `{p}` before each "
                                   "step's forward), so that each step builds its own graph for it.",
                                   "Each backward frees only its own step's part.", kind="recompute-in-step"))
            store = _store_of(p, s, f.ns) if not re.fullmatch(r"\w+", p) else None
            if store is not None:          # `self.cached_freqs = freqs`, a few lines below where freqs was made
                site_s, new = store
                opts.append(Option(f"if `{p}` is fixed data that should not be trained",
                                   f"Keep it detached: write `{new}` at {site_s.short()}.",
                                   "Nothing trains through what is kept; no graph is kept with it.",
                                   (Edit(site_s.file, site_s.line, (_indent(site_s) + new,)),), kind="detach-carried"))
                continue
            snippet, still = detach_snippet(p, o), ""
            if isinstance(o, torch.Tensor) and _requires_grad_as_input(f, o):
                snippet = f"{p} = {p}.detach().requires_grad_()"
                still = (" It still requires grad: the torch.autograd.grad call recorded at "
                         + next(c.site.short() for c in f.rec.calls if any(r() is o for r in getattr(c, "wrt", ())))
                         + " differentiates against it, and still can.")
            edits = ((Edit(s.file, _statement_end(s) + 1, (_indent(s) + snippet,), insert=True),)
                     if re.fullmatch(r"\w+", p) else ())
            once = Option(f"if `{p}` is fixed data that should not be trained",
                          f"Detach it once: add `{snippet}` after {s.short()}.",
                          "Nothing trains through it; no graph is kept." + still, edits, kind="detach-carried")
            # made from inputs no optimizer holds: nothing of yours trains it, so fixed data is likelier, first
            opts.insert(len(opts) - sum(1 for o in opts if o.condition.startswith(f"if `{p}`")) if still
                        else len(opts), once)
        looped = _loop_loss_options(f, groups, opts)
        tell = "Should each step's loss train what computes it?"
        if looped and _named_after_loop(f, *[(p, v[1]) for p, v in groups.items()][0]):
            opts = looped + opts      # a later loss after the loop uses it: which loss trains what, first
            tell = (f"Should the loss of {f.freer.site.short()}, run on every pass of its loop, train what made "
                    f"`{list(groups)[0]}`, or only what comes after it?")
        else:
            opts += looped
        several = len(groups) > 1
        if several:
            opts = _together(opts, list(groups))
        return Finding(
            "computed-once",
            (f"{', '.join(f'`{n}`' for n in groups)} {'keep' if several else 'keeps'} a value made in an earlier "
             f"step: {f.freer.words()} freed its buffers in optimizer step {f.freer.step}, and the loss of "
             f"optimizer step {f.failed.step} uses it again." if f.freer.step != f.failed.step else
             f"{', '.join(f'`{n}`' for n in groups)} {'keep' if several else 'keeps'} a value made before the "
             f"loop: {f.freer.words()} freed its buffers on an earlier pass, and this pass's loss uses it again "
             f"(no optimizer step ran in between: both in optimizer step {f.failed.step})."),
            evidence=[f"Kept: {carried_words}; no later step made it again from it."],
            options=opts, confidence="depends", culprit=list(groups)[0], culprits=list(groups),
            how_to_tell="Should each step's loss use the entries earlier steps added?"
            if any(o.kind == "reset-per-episode" for o in opts) else tell)
    # two different backward lines: a later loss reuses part an earlier loss's backward freed. An entry
    # of a dict or list is named as the loss reads it (`outs['head']`), not by its container
    entries = {path: (obj, site, step) for path, _t, site, step in f.carriers
               if path != container_of(f.ns, path)[0] and _ITEM_PATH.fullmatch(path)
               and isinstance(obj := _resolve(f.ns, path), torch.Tensor)}
    if entries and len(entries) == len(f.carriers):
        groups = entries
        carried_words = "; ".join(f"`{p}` (made at {s.short() if s else 'a line not recorded'}"
                                  f"{'' if st is None else f', in optimizer step {st}'})"
                                  for p, (o, s, st) in groups.items())
    opts = []
    unsafe = _stepped_old(f)
    for path, site in f.uses:             # the earlier loss should not train what made it
        got = _detach_at_use(site, path)
        t = next((u for p, u in f.named if p == path), None)
        if got is not None and t is not None and _trains_without(f.freer, t.grad_fn):
            made = next((s for p, (o, s, st) in groups.items() if p == container_of(f.ns, path)[0]), None)
            opts.append(Option(f"if the loss of {f.freer.site.short()} should not train what made `{path}`"
                               + (f" (at {made.short()})" if made else ""),
                               f"Detach it where that loss uses it: write `{got[0]}` at {site.short()}.",
                               "That loss's gradient stops at it; the later loss still trains through it.",
                               (got[1],), kind="detach-input", detached=path))
            break
    later = _rebuild_from_detached(f)     # the later loss should not train what made the input of it
    if later is not None:
        opts.append(later)
    opts += [o for o in _shared_detach_options(f) if o.fix not in {x.fix for x in opts}]
    # a detach in the earlier loss after which the later loss still reaches what that loss frees is
    # half a fix (mutual learning: each loss also uses its own network's output, which it frees)
    opts = [o for o in opts if not (o.detached and _later_still_reaches_freed(f, o.detached))]
    both = _each_own_network(f)
    if both is not None:
        opts.insert(0, both)
    if unsafe or f.steps_between:       # a step ran in between: the later loss may mean the weights as they are now
        for path, t_, site, _st in f.carriers:
            again = _recompute_at_use(f, path, site, changed=bool(unsafe))
            if again is not None and _still_freed_without(f, t_):
                again = None        # made again, the later loss would still reach what the first call freed
            if again is not None:
                opts.insert(0 if unsafe else len(opts), again)
                break
    if not f.steps_between and not unsafe:
        opts += [o for o in (_sum_option(f),) if o is not None]
    if not unsafe:
        r = _retain_option(f, condition="if both losses should train it",
                           consequence="Both losses' gradients reach it; the buffers stay until the second call.")
        if r:
            opts.append(r)
    if later is None:       # ... or what made the value itself (a GAN's `D(fake.detach())`), said last
        last = _detach_at_later_use(f)
        if last is not None and last.fix not in {x.fix for x in opts}:
            opts.append(last)
    if not opts:        # no edit could be built: the choices, in words (a finding always says what to do)
        opts = _choices_in_words(f, unsafe)
    evidence = [f"Reused: {carried_words}."]
    read = _grad_read_between(f)
    if read is not None:
        evidence.append(f"`{read.code()}` at {read.short()} reads a gradient between the two calls, so one backward "
                        "of their sum is no remedy: there would be nothing to read there.")
    writer = _writer_between(f, unsafe) if unsafe else None
    if writer is not None and not f.steps_between:
        evidence.append(f"`{writer.op}` at {writer.site.short()}"
                        + (f" (inside the call at {writer.inner})" if writer.inner else "")
                        + f" ran in between and changed {', '.join(f'`{n}`' for n in _param_names(f, unsafe)) or 'parameters'}"
                        " in place, which the reused part saved, so keeping the graph (retain_graph=True) would "
                        "raise \"modified by an inplace operation\" instead.")
    if f.steps_between:
        s0 = f.steps_between[0]
        evidence.append(f"`{s0.site.code()}` at {s0.site.short()} ran in between"
                        + (f" and changed {', '.join(f'`{n}`' for n in _param_names(f, unsafe)) or 'parameters'} that "
                           "the reused part saved, so keeping the graph (retain_graph=True) would raise \"modified by "
                           "an inplace operation\" instead." if unsafe else "."))
    return Finding(
        "reused-after-backward",
        f"{', '.join(f'`{n}`' for n in groups)}, made before {f.freer.words()}, {'are' if len(groups) > 1 else 'is'} "
        f"used again by {f.failed.words()}; that first call freed {_freed_words(f)}.",
        evidence=evidence, options=opts, confidence="depends", culprit=list(groups)[0], culprits=list(groups),
        how_to_tell="Which networks should each of the two losses train?")


def _named_after_loop(f: Facts, name: str, made: Site) -> bool:
    """Whether `name` is read after the inner loop (holding the failing call, not `made`) ends, in the
    body that made it: a loss after a critic loop that uses the generated batch again."""
    loop = _loop_around(f.failed.site, made) if f.failed is not None and re.fullmatch(r"\w+", name) else None
    if loop is None:
        return False
    outer = [n for n in _loops_holding(made) if n.lineno < made.line]
    end = _stmts(outer[-1])[-1].end_lineno if outer else loop.end_lineno
    return any(re.search(rf"(?<![\w.]){name}(?![\w])", linecache.getline(made.file, n))
               for n in range(loop.end_lineno + 1, end + 1))


def _requires_grad_as_input(f: Facts, t) -> bool:
    """Whether a recorded `torch.autograd.grad` call differentiated against `t` (a PINN's collocation
    times `t`, for du/dt): detached, it must require grad again, or that call raises."""
    return any(r() is t for c in f.rec.calls for r in getattr(c, "wrt", ()))


def _subscripts(text: str, path: str) -> list:
    """Each `path[...]` in `text`, whole (brackets balanced), with its index: [(`logits[(k + 1) % 3]`,
    `(k + 1) % 3`)]."""
    out = []
    for m in re.finditer(rf"(?<![\w.]){re.escape(path)}\[", text):
        depth = 0
        for j in range(m.end(), len(text)):
            if text[j] in "([{":
                depth += 1
            elif text[j] in ")]}":
                if depth == 0:
                    out.append((text[m.start():j + 1], text[m.end():j].strip()))
                    break
                depth -= 1
    return out


def _peer_item_read(f: Facts, path: str, made: Site):
    """(`outputs[j]`, its Site): the one line of the failing pass's loop that reads an item of the list
    `path` (made at `made`, before the loop) other than the pass's own (indexed by the loop's variable),
    when this loss's graph has nodes made there. An earlier pass freed an item this pass needs: the
    earlier pass read it through such a line (its own item is freed only by its own backward)."""
    import ast

    loop = _loop_around(f.failed.site, made)
    own = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)} if isinstance(loop, ast.For) else set()
    if not own or not re.fullmatch(r"\w+", path) or f.root is None or f.root.grad_fn is None:
        return None
    lines = {x.line for fn in _nodes(f.root.grad_fn, 20_000) if (m := made_at(fn)) is not None
             for x in (m[0], *(m[3] if len(m) > 3 else ())) if x is not None and x.file == made.file}
    found = {}
    for n in range(_stmts(loop)[0].lineno, f.failed.site.line):
        site = Site(made.file, n, f.failed.site.function)
        for whole, index in _subscripts(site.code(), path) if n in lines else ():
            if not {part.strip() for part in index.split(",")} & own:     # `[:, t]` and `[i]` are the pass's own
                found[(whole, site)] = None
    return next(iter(found)) if len(found) == 1 else None


def _steps_reach(f: Facts, obj) -> bool:
    """Whether a recorded optimizer step changed a parameter that the graph of `obj` (a tensor, or a list,
    tuple or dict of them) saved: kept, that graph would raise the in-place error on a later pass."""
    items = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) else [obj]
    fns = [t.grad_fn for t in items if isinstance(t, torch.Tensor) and t.grad_fn is not None]
    stepped = {id(p) for s in f.rec.opt_steps for r in s.params if (p := r()) is not None}
    return bool(stepped) and any(is_leaf_node(fn) and id(getattr(fn, "variable", None)) in stepped
                                 for root in fns for fn in _nodes(root, 20_000))


def _loop_loss_options(f: Facts, groups: dict, have: list) -> list:
    """A value made in a loop's body, before an inner loop whose own loss frees it on each pass (a
    critic run five times on one generated batch, whose penalty reaches the generator): that loss may
    not be meant to train what made the value (detach it where that loss uses it), or may (keep the
    graph at that backward, on every pass). Neither when an optimizer step in between changed what the
    value's graph saved (keeping it would raise the in-place error instead)."""
    out = []
    if len(groups) != 1 or f.failed is None or f.freer.site != f.failed.site:
        return out
    path, (obj, made, _st) = next(iter(groups.items()))
    if made is None or not _loops_holding(made) or _loop_around(f.failed.site, made) is None:
        return out
    item = _peer_item_read(f, path, made)       # `F.softmax(outputs[j])`: another pass's item of a list
    if item is not None:
        text, at = item
        new = at.code().replace(text, f"{text}.detach()", 1)
        out.append(Option(f"if the loss of {f.freer.site.short()} should not train what made the other items of "
                          f"`{path}` (at {made.short()}), only its own",
                          f"Detach the item where that loss reads it: write `{new}` at {at.short()}.",
                          "Each pass's loss then trains only what made its own item; the others are constants to "
                          "it.", (Edit(at.file, at.line, (_indent(at) + new,)),), kind="detach-input", detached=path))
    # the loop's line that uses it with its graph (the earlier pass's loss is gone: the lines are read)
    lines = [Site(made.file, n, made.function) for n in range(_statement_end(made) + 1, f.freer.site.line)
             if made.file == f.freer.site.file and _detach_at_use(Site(made.file, n, made.function), path)]
    t = _resolve(f.ns, path)
    if len(lines) == 1 and isinstance(t, torch.Tensor) and t.grad_fn is not None \
            and _trains_without(f.failed, t.grad_fn):
        got = _detach_at_use(lines[0], path)
        out.append(Option(f"if the loss of {f.freer.site.short()} should not train what made `{path}` "
                          f"(at {made.short()})",
                          f"Detach it where that loss uses it: write `{got[0]}` at {lines[0].short()}.",
                          "That loss's gradient stops at it; what uses it after the loop still trains "
                          "through it.", (got[1],), kind="detach-input", detached=path))
    if not _stepped_old(f) and not _steps_reach(f, obj):
        got = _with_kwarg(f.freer.site, "retain_graph=True")
        if got is not None and not any(o.kind == "retain-or-sum" for o in have):
            out.append(Option(f"if the loss of {f.freer.site.short()} should also train what made `{path}`, on "
                              "every pass",
                              f"Keep the graph on every pass: write `{got[0]}` at {f.freer.site.short()}.",
                              f"Each pass's gradient reaches what made `{path}`; its buffers stay in memory "
                              "until the last backward through them.", (got[1],), kind="keep-graph"))
    return out


def _assigned_after(site: Site, paths: list) -> Site | None:
    """The last statement of the loop body holding `site`, after it, that assigns one of `paths` (plain
    names): `mem_state = next_state` below the backward. None when there is none."""
    import ast

    loops = _loops_holding(site)
    if not loops or not all(re.fullmatch(r"\w+", p) for p in paths):
        return None
    found = [st for st in _stmts(loops[-1]) if isinstance(st, ast.Assign) and st.lineno > site.line
             and any(isinstance(t, ast.Name) and t.id in paths for t in st.targets)]
    return Site(site.file, found[-1].lineno, site.function) if found else None


def _reset_option(f: Facts, groups: dict) -> Option:
    """'Start fresh', in words; with an edit when every carrier is a name given its first value by a
    statement just before the loop the backward runs in (`state = None`): that statement again at the
    start of each pass, for when each pass starts a new sequence (a batch of whole episodes)."""
    words = _reset_words(f, groups)
    start = _first_values(f, list(groups)) if f.failed is not None else None
    if start is None:
        return Option("if each sequence, episode or task should start fresh", words,
                      "No value or gradient crosses from one to the next.", kind="reset-per-episode")
    loop, first, lines = start
    return Option("if each sequence, episode or task should start fresh",
                  f"{words.removesuffix('.')}: where each pass of the loop at {loop.short()} starts new ones, add "
                  + " and ".join(f"`{x}`" for x in lines) + f" just before {first.short()}, "
                  + ("as its class's `__init__` starts it." if any("." in x.split("=")[0] for x in lines)
                     else "as before the loop."),
                  "No value or gradient crosses from one to the next.",
                  (Edit(first.file, first.line, tuple(_indent(first) + x for x in lines), insert=True),),
                  kind="reset-per-episode")


def _first_values(f: Facts, paths: list):
    """(the loop's Site, the Site of its body's first line, the lines) when each of `paths` is a name set,
    by a one-line statement in the block that holds the loop around the failing call, before that loop
    (`state = None`, `h = torch.zeros(1, 16)`); None otherwise."""
    import ast

    site = f.failed.site
    got = _parsed(site.file)
    loops = [] if got is None else _loops_holding(site, got[1])      # nodes of the tree searched below
    if not loops:
        return None
    if not all(re.fullmatch(r"[A-Za-z_]\w*", p) for p in paths):
        # `model.aux_loss`: the value its class's __init__ gives it, when that is a constant (`self.aux_loss = 0.0`)
        lines = [_init_value(f, p, got[1]) for p in paths]
        if not all(lines):
            return None
        loop = loops[-1]
        return (Site(site.file, loop.lineno, site.function), Site(site.file, _stmts(loop)[0].lineno, site.function),
                tuple(dict.fromkeys(lines)))
    tree, loop = got[1], loops[-1]
    block = next((getattr(n, part) for n in ast.walk(tree) for part in ("body", "orelse")
                  if isinstance(getattr(n, part, None), list) and loop in getattr(n, part)), None)
    if block is None:
        return None
    made = []
    for p in paths:
        stmt = next((s for s in reversed(block[:block.index(loop)]) if isinstance(s, ast.Assign)
                     and any(isinstance(x, ast.Name) and x.id == p for x in s.targets)), None)
        if stmt is None or stmt.lineno != stmt.end_lineno or len(stmt.targets) != 1 or not isinstance(stmt.targets[0], ast.Name):
            return None          # `h, c = ...` or a statement over several lines: said in words
        made.append(Site(site.file, stmt.lineno, site.function).code())
    first = Site(site.file, _stmts(loop)[0].lineno, site.function)
    return Site(site.file, loop.lineno, site.function), first, tuple(dict.fromkeys(made))


def _init_value(f: Facts, path: str, tree) -> str | None:
    """`model.aux_loss = 0.0` for `path` an attribute of an object whose class (defined in `tree`, the file
    of the loop) gives it a constant in `__init__` (a number, None, or a torch call on constants)."""
    import ast

    m = re.fullmatch(r"(?P<base>[A-Za-z_][\w.]*)\.(?P<attr>\w+)", path)
    obj = _resolve(f.ns, m.group("base")) if m else None
    if obj is None or isinstance(obj, (torch.Tensor, dict, list, tuple)):
        return None
    cls = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == type(obj).__name__]
    init = [n for c in cls for n in _stmts(c) if isinstance(n, ast.FunctionDef) and n.name == "__init__"]
    if len(init) != 1:
        return None
    sets = [st for st in ast.walk(init[0]) if isinstance(st, ast.Assign) and len(st.targets) == 1
            and isinstance(st.targets[0], ast.Attribute) and st.targets[0].attr == m.group("attr")
            and isinstance(st.targets[0].value, ast.Name) and st.targets[0].value.id == "self"]
    if len(sets) != 1:
        return None
    names = {n.id for n in ast.walk(sets[0].value) if isinstance(n, ast.Name)}
    if not names <= {"torch", "float", "int", "None"}:
        return None       # made from arguments or other state: not a constant to start again from
    return f"{path} = {ast.unparse(sets[0].value)}"


def _reads_freed(f: Facts, code: str) -> bool:
    """Whether `code` reads a tensor (or a list, tuple or dict of them: `torch.stack(memory.logprobs)`)
    whose graph a backward freed: computing it again would backward through freed buffers again."""
    for name in dict.fromkeys(re.findall(r"(?<![\w.])([A-Za-z_][\w.]*)(?![\w(])", code)):
        v = _resolve(f.ns, name)          # None when unreadable: nothing known
        items = list(v.values()) if isinstance(v, dict) else list(v) if isinstance(v, (list, tuple)) else [v]
        for t in items[:1000]:
            fn = getattr(t, "grad_fn", None) if isinstance(t, torch.Tensor) else None
            if fn is not None and (fn in f.old or freed_by(fn) is not None):
                return True
    return False


def _detach_each_pass(f: Facts, groups: dict) -> Option | None:
    """For state updated again and again inside the step, in a loop of its own (`coords = coords +
    flow_head(net)` in a refinement loop, RAFT's): detaching it at the start of every pass of that loop
    also cuts what the step before carried in, and each update then trains through its own pass only."""
    for p, (_o, s, _st) in groups.items():
        if s is None or not re.fullmatch(r"[A-Za-z_]\w*", p) or f.freer is None:
            continue
        node = _loop_around(s, f.freer.site)
        if node is None or not re.match(rf"{p}\s*=[^=]", s.code()) or not re.search(rf"(?<![\w.]){p}(?![\w(])",
                                                                                   s.code().split("=", 1)[1]):
            continue          # only a name the loop makes again from itself, in a loop the backward is not in
        loop = Site(s.file, node.lineno, s.function)
        first = Site(s.file, _stmts(node)[0].lineno, s.function)
        line = f"{p} = {p}.detach()"
        return Option(f"if each pass of the loop at {loop.short()} should train only through its own update "
                      f"(an iterative refinement: the `{p}` a pass starts from is a constant)",
                      f"Detach it at the start of every pass: add `{line}` just before {first.short()}.",
                      "Each update's gradient stops at the pass before it, which also cuts what the step "
                      "before carried in; memory stays flat.",
                      (Edit(s.file, first.line, (_indent(first) + line,), insert=True),), kind="detach-carried")
    return None


def _still_freed_without(f: Facts, t) -> bool:
    """Whether the later loss reaches a node a backward freed other than through `t` (so computing `t`
    again where that loss uses it would not be enough)."""
    if f.root is None or f.root.grad_fn is None or t.grad_fn is None:
        return True
    seen, todo = {t.grad_fn}, [f.root.grad_fn]
    while todo and len(seen) < 40_000:
        n = todo.pop()
        if n is None or n in seen:
            continue
        if freed_by(n) is not None:
            return True
        seen.add(n)
        todo.extend(x for x, _ in n.next_functions)
    return False


def _choices_in_words(f: Facts, unsafe: list) -> list:
    """The options of a later loss that reuses what an earlier backward freed, when none could be written
    as an edit for this program: each is a choice of intent, said in words."""
    later = f.failed.site.short() if f.failed is not None else "the later backward"
    opts = [Option("if the later loss should use the weights as they are now",
                   f"Compute what it reads again, with a new forward, after the step and before {later}.",
                   "It runs through a new graph; the first backward keeps only its own part.",
                   kind="recompute-in-step")]
    if unsafe:
        opts.append(Option("if both losses should be computed with the weights before the step",
                           f"Call the later backward() before the step that changed them ({later} moved up).",
                           "The step then applies both gradients at once.", kind="backward-before-step"))
    else:
        opts.append(Option("if both losses should train the part they share",
                           "Keep the graph at the first backward (retain_graph=True), or call backward() once on "
                           "the sum of the losses.", "Both gradients reach it.", kind="retain-or-sum"))
    return opts


def _aliases(groups: dict, ns: dict) -> dict:
    """{a name: the other name of what it holds}: a tensor kept in a container another name holds
    (`memory` -> `cache[0]`, `h` -> `state[1]`), or the very same object under a second name
    (`state[0]` -> `new[0]` after `state = new`); the first name of each object is kept."""
    out, first = {}, {}
    # a name reached through a container (`sfs[1].features`) outlives a loop's name for it (`sf`)
    for p, (o, _s, _st) in sorted(groups.items(), key=lambda kv: ("[" not in kv[0], len(kv[0]))):
        m = (re.fullmatch(r"(?P<base>.+)(?P<idx>\[[^\[\]]+\])", p)
             or re.fullmatch(r"(?P<base>.+)(?P<idx>\.\w+)", p))    # `sf.features` is `sfs[1].features`
        box = _resolve(ns, m.group("base")) if m else None
        if o is None or box is None:       # two names of one tensor (`mem`, `lif1.mem`): each is rebound
            continue
        key = (id(box), m.group("idx"))    # one slot of one list under two names (`state = new`)
        if key in first:
            out[p] = first[key]
            continue
        first[key] = p
    for p, (o, _s, _st) in groups.items():
        if p in out or not isinstance(o, torch.Tensor):
            continue
        for q, (box, _s2, _st2) in groups.items():
            items = box.values() if isinstance(box, dict) else box if isinstance(box, (tuple, list)) else ()
            if q != p and q not in out and any(x is o for x in items):
                out[p] = q
                break
    return out


def _line_below(made: Site, pattern: str, span: int = 40):
    """The first line at or below `made` (within `span` lines of its file) that matches `pattern`:
    (its Site, the match), or None. Where a value made at `made` is stored a few lines on."""

    for n in range(made.line, made.line + span):
        text = linecache.getline(made.file, n)
        if not text:
            break
        got = re.fullmatch(pattern, text.rstrip("\n"))
        if got:
            return Site(made.file, n, made.function), got
    return None


def _insert_after(site: Site, code: str) -> Edit:
    """The edit that adds `code` after the statement at `site`, at its indentation."""
    return Edit(site.file, _statement_end(site) + 1, (_indent(site) + code,), insert=True)


def _store_of(path: str, made: Site, ns: dict | None = None) -> tuple[Site, str] | None:
    """For an attribute kept across steps (`model.rotary.cached_freqs`): the line at or below where its
    value was made that stores it (`self.cached_freqs = freqs`), else the one line of the object's own
    class that stores it (`self.target = target` in `ContentLoss.__init__`, the object made at `made`),
    and that line storing it detached."""
    last = re.split(r"[.\[]", path)[-1].strip("]'\"")
    if not re.fullmatch(r"\w+", last):
        return None
    found = _line_below(made, rf"\s*(?P<lhs>[\w.]*\.{last})\s*=\s*(?P<rhs>[^=].*?)\s*(#.*)?", span=30)
    if found is None and ns is not None and "." in path:
        found = _class_store(_resolve(ns, path.rsplit(".", 1)[0]), last, made.file)
    if found is None:
        return None
    site, got = found
    return site, f"{got.group('lhs')} = {_detached(got.group('rhs'))}"


def _class_store(obj, attr: str, file: str):
    """(Site, match) of the one line of `obj`'s class, defined in `file` (the user's file: read with
    linecache and ast, nothing imported), that assigns `self.<attr> = ...`; None when there is not
    exactly one, or the class is not defined there."""
    import ast

    if obj is None or isinstance(obj, (torch.Tensor, dict, list, tuple)):
        return None
    got = _parsed(file)
    if got is None:
        return None
    lines, tree = got
    cls = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == type(obj).__name__]
    if len(cls) != 1:
        return None
    pat = re.compile(rf"\s*(?P<lhs>self\.{attr})\s*=\s*(?P<rhs>[^=].*?)\s*(#.*)?")
    hits = [(n, m) for n in range(cls[0].lineno, cls[0].end_lineno + 1)
            if (m := pat.fullmatch(lines[n - 1].rstrip("\n")))]
    if len(hits) != 1:
        return None
    return Site(file, hits[0][0], type(obj).__name__), hits[0][1]


def _built_once(f: Facts, name: str, made: Site):
    """For a container `name` written as a literal once (`prompts = {"a": enc(a), "b": enc(b)}`), at or
    a few lines below where its value was made, before the loop that uses it: (that line's Site, its
    right-hand side, the first line in the loop naming it); None when it is filled step by step."""
    if f.failed is None:
        return None
    built = _line_below(made, rf"\s*{re.escape(name)}\s*=\s*(?P<rhs>[\[{{(].*?)\s*(#.*)?", span=10)
    if built is None:
        return None
    into = _first_line_naming(built[0], name, f.failed.site)
    return None if into is None else (built[0], built[1].group("rhs"), into)


def _cache_entry(f: Facts, path: str, made: Site) -> list | None:
    """For an entry of a dict or list you keep across steps (`cache[0]`, stored by `cache[sid] = ...`):
    clear the container after each backward (every step computes it again), or store it detached."""
    m = re.fullmatch(r"(?P<base>[A-Za-z_][\w.]*)\[[^\[\]]+\]", path)
    box = _resolve(f.ns, m.group("base")) if m else None
    whole = _resolve(f.ns, path)
    here = f.freer.site.file == made.file
    if not isinstance(box, (dict, list)) and isinstance(whole, (dict, list)) and re.fullmatch(r"\w+", path):
        built = _built_once(f, path, made)
        if built is not None:       # `prompts = {"a": enc(a), ...}` before the loop: no step adds to it
            site_b, rhs, into = built
            lines = tuple(dict.fromkeys([made.code(), site_b.code()]))
            items = whole.values() if isinstance(whole, dict) else whole
            stops = {t.grad_fn for t in items if isinstance(t, torch.Tensor) and t.grad_fn is not None}
            if f.root is not None and f.root.grad_fn is not None and stops \
                    and not _reaches_leaf([f.root.grad_fn], stops):    # every item detached, the loss trains nothing
                return [_build_again(f"if what computes `{path}` should be trained by every step's loss", lines, into)]
            return [_build_again(f"if what computes `{path}` should be trained by every step's loss", lines, into),
                    Option(f"if `{path}` holds fixed data that should not be trained",
                           f"Keep it detached: write `{path} = {_detached(rhs)}` at {site_b.short()}.",
                           "Nothing trains through what is kept; no graph is kept with it.",
                           (Edit(site_b.file, site_b.line, (_indent(site_b) + f"{path} = {_detached(rhs)}",)),),
                           kind="detach-carried")]
    if not isinstance(box, (dict, list)) and isinstance(whole, (dict, list)):
        # the container itself keeps values of earlier steps (a list of log-probabilities, a dict of states)
        return [Option("if each step's loss should use only what that step adds (an episode's log-probabilities "
                       "or rewards)",
                       f"Start it again after each backward: add `{path}.clear()` after {f.freer.site.short()}.",
                       "Each backward runs through its own step's entries only; the earlier ones were used by "
                       "their own backward.",
                       (_insert_after(f.freer.site, f"{path}.clear()"),) if here else (), kind="reset-per-episode"),
                Option("if the loss should also use the earlier entries, as constants (a memory of past values)",
                       f"Keep them detached: add `{detach_snippet(path, whole)}` after {f.freer.site.short()}.",
                       "The earlier entries keep their values and train nothing; memory stays flat.",
                       (_insert_after(f.freer.site, detach_snippet(path, whole)),) if here else (),
                       kind="detach-carried")]
    if not isinstance(box, (dict, list)):
        return None
    base = m.group("base")
    opts = [Option(f"if what computes `{path}` should be trained by every step's loss",
                   f"Do not keep it from one step to the next: add `{base}.clear()` after {f.freer.site.short()}, "
                   "so that every step computes it again.",
                   "Each step builds its own graph for it, and backward frees only that; the cache then saves "
                   "work only within a step.",
                   (_insert_after(f.freer.site, f"{base}.clear()"),) if here else (), kind="recompute-in-step")]
    store = _line_below(made, rf"\s*{re.escape(base)}\[(?P<key>[^\]]+)\]\s*=[^=].*")
    if store is not None:
        snippet = detach_snippet(f"{base}[{store[1].group('key')}]", whole)
        opts.append(Option(f"if `{path}` is fixed data that should not be trained",
                           f"Store it detached: add `{snippet}` after {store[0].short()}.",
                           "Nothing trains through the kept entry; no graph is kept with it.",
                           (_insert_after(store[0], snippet),), kind="detach-carried"))
        return opts
    built = _line_below(made, rf"\s*{re.escape(base)}\s*=\s*(?P<rhs>[\[{{(].*?)\s*(#.*)?", span=10)
    if built is not None:       # `conditions = [{"cross_attn": h, ...}]`, built once below where h was made
        site_b, got = built
        into = _first_line_naming(site_b, base, f.failed.site) if f.failed is not None else None
        if into is not None:    # built once, not a cache filled on demand: clearing it would leave it empty
            lines = tuple(dict.fromkeys([made.code(), site_b.code()]))
            opts[0] = _build_again(f"if what computes `{path}` should be trained by every step's loss", lines, into)
        new = f"{base} = {_detached(got.group('rhs'))}"
        opts.append(Option(f"if `{path}` is fixed data that should not be trained",
                           f"Keep it detached: write `{new}` at {site_b.short()}.",
                           "Nothing trains through what is kept; no graph is kept with it.",
                           (Edit(site_b.file, site_b.line, (_indent(site_b) + new,)),), kind="detach-carried"))
    return opts


def _store_line(m) -> tuple[Site, str, str] | None:
    """Of the line that made a value and the lines that called it, the first that stores it into a
    container or an attribute (`cache[key] = func(X[beg:end])`, `self.memory = ...`): (site, target,
    value expression)."""
    for site in (m[0], *(m[3] if len(m) > 3 else ())):
        if site is None:
            continue
        got = re.fullmatch(r"(?P<lhs>[A-Za-z_][\w.]*(?:\[[^=]+\]|\.\w+))\s*=\s*(?P<rhs>[^=].*)", site.code())
        if got:
            return site, got.group("lhs"), got.group("rhs").strip()
    return None


def rule_kept_unnamed(f: Facts) -> Finding | None:
    """A value made before the freer is used again, but no variable of yours holds it: it is kept
    inside a function (a cache, a closure, an object). The record still names the lines."""
    if f.error != "second time" or f.failed is None or f.freer is None or f.carriers or not f.kept:
        return None
    fn, _ = f.kept[-1]
    m = made_at(fn)
    if m is None or m[0] is None:
        return None
    chain = " <- ".join(f"{x.short()} `{x.code()}`" for x in (m[0], *(m[3] if len(m) > 3 else ())) if x is not None)
    store = _store_line(m)
    where = (f" It is kept at {store[0].short()} `{store[0].code()}`." if store else
             " No variable in your namespace holds it: it is kept inside a function (a cache, a closure or an "
             "object).")
    evidence = [f"Made by {fn.name()}: {chain}, in optimizer step {m[1]}.", f"{f.freer.words()} freed its buffers."]
    remade = fn in f.remade_kept
    same_line = _same_call(f)
    if same_line and remade:
        return Finding(
            "carried-across-steps",
            f"A value made at {m[0].short()} is carried from step to step and made again from its value in the "
            f"step before; {f.freer.words()} freed the earlier step's buffers.{where}",
            evidence=evidence,
            options=[Option("if gradients should flow only within one step",
                            "Detach the kept value after each backward, where it is kept"
                            + (f" (`{store[1]}`)" if store else "") + ".",
                            "Each backward stops at the start of its step; memory stays flat.", kind="detach-carried"),
                     Option("if each sequence, episode or task should start fresh",
                            "Reset the kept value at the start of each one.",
                            "No value or gradient crosses from one to the next.", kind="reset-per-episode")],
            confidence="depends",
            how_to_tell="Should the gradient of this step's loss reach back into the earlier steps?")
    if same_line:
        opts = [Option("if what computes it should be trained by every step's loss",
                       "Compute it again in every step: do not keep it from one step to the next"
                       + (f" (it is kept at {store[0].short()})" if store else "") + ".",
                       "Each step builds its own graph for it, and backward frees only that.",
                       kind="recompute-in-step")]
        if store:
            new = f"{store[1]} = {_detached(store[2])}"
            opts.append(Option("if it is fixed data that should not be trained",
                               f"Keep it detached: write `{new}` at {store[0].short()}.",
                               "Nothing trains through it; no graph is kept.",
                               (Edit(store[0].file, store[0].line, (_indent(store[0]) + new,)),),
                               kind="detach-carried"))
        return Finding(
            "computed-once",
            f"A value made at {m[0].short()} in optimizer step {m[1]} was kept, and the loss of optimizer step "
            f"{f.failed.step} uses it again; {f.freer.words()} freed its buffers.{where}",
            evidence=evidence, options=opts, confidence="depends",
            how_to_tell="Should each step's loss train what computes it?")
    unsafe = _stepped_old(f)
    opts = [] if unsafe else [o for o in (_sum_option(f),) if o is not None]
    for o in opts:
        o.condition = "if both losses should train the part they share"
    r = None if unsafe else _retain_option(f, condition="if both losses should train it")
    if r:
        opts.append(r)
    if unsafe:
        opts.append(Option("if the later loss should use the weights as they are now",
                           "Compute what the later loss uses again, after the change, instead of reusing it.",
                           "The later loss runs through a new graph.", kind="recompute-in-step"))
    return Finding(
        "reused-after-backward",
        f"A value made at {m[0].short()}, before {f.freer.words()}, is used again by {f.failed.words()}; that first "
        f"call freed its buffers.{where}", evidence=evidence, options=opts, confidence="depends",
        how_to_tell="Which networks should each of the two losses train?")


def _together(opts: list, paths: list) -> list:
    """Several kept values, one option each per intent: detaching one of two caches is half a fix
    (the other still holds the freed graph). The options of one intent for every value become one,
    with every edit; an intent some value has no option for stays per value."""
    out, done = [], set()
    for o in opts:
        tail = next((t for t in (" should be trained by every step's loss", " is fixed data that should not be trained")
                     if o.condition.endswith(t)), None)
        if tail is None:
            out.append(o)
            continue
        same = [x for x in opts if x.condition.endswith(tail)]
        if len(same) < 2:
            out.append(o)
            continue
        if tail in done:
            continue
        done.add(tail)
        named = " and ".join(f"`{p}`" for p in paths)
        verb = " should be trained by every step's loss" if "trained by" in tail else " are fixed data that should not be trained"
        steps = [x.fix.split(": ", 1)[1].rstrip(".") for x in same if ": " in x.fix]
        if len(steps) == len(same):      # 'Keep it detached: write `...` at file:39.' for each
            lead = "Keep each detached: " if "fixed data" in tail else "Compute each again in every step: "
            fix = lead + "; ".join(steps) + "."
        else:
            fix = (f"Have each computed again in every step (for a cache, clear {named} before each step's "
                   "forward), so that each step builds its own graph for them.")
        edits = tuple(e for x in same for e in x.edits) if all(x.edits for x in same) else ()
        out.append(Option(f"if {named}{verb}", fix, same[0].consequence, edits, kind=same[0].kind))
    return out


def _reach(starts, cut_node=None, cut_line: Site | None = None, limit: int = 40_000) -> set:
    """The nodes reachable from `starts`, not following an edge into `cut_node` from a node made at
    `cut_line` (what `x.detach()` written at that one line would cut)."""
    seen, todo = set(), list(starts)
    while todo and len(seen) < limit:
        n = todo.pop()
        if n is None or n in seen:
            continue
        seen.add(n)
        cut = cut_node is not None and (m := made_at(n)) is not None and m[0] == cut_line
        todo.extend(x for x, _ in n.next_functions if not (cut and x is cut_node))
    return seen


def _later_still_reaches_freed(f: Facts, path: str, at: Site | None = None, later_detached: str | None = None,
                               later_at: Site | None = None) -> bool:
    """Whether, with `path` detached where the earlier loss uses it at `at` (and `later_detached`
    where the later loss uses it, at `later_at`), the later loss still reaches a node the earlier
    call frees: then the detach is half a fix."""
    t = next((u for p, u in f.named if p == path), None)
    if t is None or t.grad_fn is None or f.root is None or f.root.grad_fn is None:
        return False
    if at is None:
        at = next((s for p, s in f.uses if p == path), None)
    roots = [r() if callable(r) else r for r in f.freer.roots]
    freed = _reach([r.grad_fn for r in roots if r is not None and r.grad_fn is not None], t.grad_fn, at)
    freed = {n for n in freed if n in f.old}
    b = next((u for p, u in f.named if p == later_detached), None) if later_detached else None
    later = _reach([f.root.grad_fn], b.grad_fn if b is not None else None, later_at)
    return bool(later & freed)


def _each_own_network(f: Facts) -> Option | None:
    """Two networks whose outputs each loss uses (deep mutual learning, co-training): detach the
    other's output in each loss: `a` where the earlier loss uses it, `b` where the later one does."""
    for path_a, site_a in f.uses:
        a = next((u for p, u in f.named if p == path_a), None)
        got_a = _detach_at_use(site_a, path_a)
        if a is None or got_a is None or not _trains_without(f.freer, a.grad_fn):
            continue
        for path_b, b, _s, _st in f.carriers:
            if path_b == path_a or not re.fullmatch(r"\w+", path_b) or b.grad_fn is None:
                continue
            use_b = _first_new_use(f, path_b)
            got_b = _detach_at_use(use_b, path_b) if use_b is not None else None
            if got_b is None or use_b.line == site_a.line or not _reaches_leaf([f.root.grad_fn], b.grad_fn):
                continue
            if _later_still_reaches_freed(f, path_a, site_a, later_detached=path_b, later_at=use_b):
                continue
            return Option("if each loss should train only its own network (the other network's output is a "
                          "fixed target to agree with)",
                          f"Detach the other network's output in each loss: write `{got_a[0]}` at {site_a.short()}, "
                          f"and `{got_b[0]}` at {use_b.short()}.",
                          f"The earlier loss no longer frees what made `{path_a}`; the later loss no longer runs "
                          f"into what made `{path_b}`, whose graph the earlier backward frees.",
                          (got_a[1], got_b[1]), kind="detach-at-use")
    return None


def _reaches_leaf(starts, stop) -> bool:
    """Whether a parameter (an AccumulateGrad node) is reachable from `starts` without passing `stop`
    (a node, or a set of nodes)."""
    seen, todo = (set(stop) if isinstance(stop, (set, frozenset)) else {stop}), list(starts)
    while todo:
        fn = todo.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        if is_leaf_node(fn):
            return True
        todo.extend(n for n, _ in fn.next_functions)
    return False


def _trains_without(call, stop) -> bool:
    """Whether the loss of `call` still reaches a parameter once `stop` is detached."""
    roots = [r() if callable(r) else r for r in call.roots]
    return _reaches_leaf([r.grad_fn for r in roots if r is not None and r.grad_fn is not None], stop)


def _leaves_between(top, bottom) -> bool:
    """Whether a parameter feeds `top` other than through `bottom` (what computes top from bottom trains)."""
    return top is not None and _reaches_leaf([top], bottom)


def _stepped_old(f: Facts) -> list:
    """Parameters of the part made before the freer that an optimizer step, or another in-place
    write (SAM's `p.add_(e_w)`, a `load_state_dict`), changed in between."""
    if not f.steps_between and not f.writes_between:
        return []
    leaves = {id(n.variable): n.variable for fn in f.old for n, _ in fn.next_functions
              if n is not None and is_leaf_node(n)}
    out = [p for s in f.steps_between for r in s.params if (p := r()) is not None and id(p) in leaves]
    storages = {_storage(v): v for v in leaves.values()}
    for w in f.writes_between:
        t = w.tensor() if w.tensor is not None else None
        v = leaves.get(id(t)) if t is not None else None
        v = v if v is not None else storages.get(w.storage)
        if v is not None and not any(v is q for q in out):
            out.append(v)
    return out


def _writer_between(f: Facts, changed: list):
    """The first in-place write between the two calls that changed one of `changed`."""
    ids, storages = {id(p) for p in changed}, {_storage(p) for p in changed}
    for w in f.writes_between:
        t = w.tensor() if w.tensor is not None else None
        if (t is not None and id(t) in ids) or w.storage in storages:
            return w
    return None


def _recompute_at_use(f: Facts, path: str, site: Site | None, changed: bool = True) -> Option | None:
    """For `pred = model(image)` reused by a later loss after the weights changed: compute it again
    where that loss uses it (`F.cross_entropy(model(image), target).backward()`), when what computes
    it reads no value whose graph was freed."""
    if site is None or not re.fullmatch(r"\w+", path):
        return None
    m = re.fullmatch(rf"{path}\s*=\s*(?P<rhs>[^=].*)", site.code())
    if m is None:
        return None
    rhs = m.group("rhs").strip()
    for name in re.findall(r"(?<![\w.])([A-Za-z_]\w*)", rhs):
        v = _resolve(f.ns, name)
        if isinstance(v, torch.Tensor) and v.grad_fn is not None:
            return None                      # it reads a value with a graph: that graph may be freed too
    use = f.failed.site if f.failed is not None else None
    if use is None or use.file != site.file:
        return None
    text = use.code()
    if len(re.findall(rf"(?<![\w.]){path}(?![\w(])", text)) != 1:
        use = _first_new_use(f, path)
        text = use.code() if use is not None else ""
        if use is None or len(re.findall(rf"(?<![\w.]){path}(?![\w(])", text)) != 1:
            return None
    new = re.sub(rf"(?<![\w.]){path}(?![\w(])", lambda _: rhs, text)
    return Option("if the later loss should use the weights as they are now" if changed else
                  f"if the later loss should have a graph of its own for `{path}`",
                  f"Compute `{path}` again where that loss uses it: write `{new}` at {use.short()}.",
                  ("The later loss runs through a new graph, made with the changed weights; the first "
                   "backward keeps only its own part.") if changed else
                  "The later loss runs through a new graph; the first backward keeps only its own part.",
                  (Edit(use.file, use.line, (_indent(use) + new,)),), kind="recompute-in-step")


def _rebuild_from_detached(f: Facts) -> Option | None:
    """For `d_fake = D(fake)` reused by a later loss that should train D but not what made `fake`:
    write `D(fake.detach())` in place of `d_fake` where the later loss uses it."""
    for path, t, site, _step in f.carriers:
        if site is None or not re.fullmatch(r"\w+", path):
            continue
        m = re.fullmatch(rf"{path}\s*=\s*(?P<rhs>.+)", site.code())
        if m is None:
            continue
        rhs = m.group("rhs")
        inner = [n for n in re.findall(r"(?<![\w.])([A-Za-z_]\w*)(?![\w(])", rhs)
                 if any(p == n and u.grad_fn is not None and u.grad_fn in f.old for p, u in f.named)]
        if len(set(inner)) != 1:
            continue
        name = inner[0]
        rebuilt = re.sub(rf"(?<![\w.]){name}(?![\w(])", f"{name}.detach()", rhs)
        use = _first_new_use(f, path)
        below = next((u for p, u in f.named if p == name), None)
        if use is None or below is None or not _leaves_between(t.grad_fn, below.grad_fn):
            continue
        text = use.code()
        if len(re.findall(rf"(?<![\w.]){path}(?![\w(])", text)) != 1:
            continue
        new = re.sub(rf"(?<![\w.]){path}(?![\w(])", rebuilt, text)
        return Option(f"if the later loss should train what computes `{path}` from `{name}` but not what made "
                      f"`{name}`", f"Compute it again from a detached input where that loss uses it: write "
                      f"`{new}` at {use.short()}.",
                      f"The later loss's gradient stops at `{name}`; the earlier loss still trains what made it.",
                      (Edit(use.file, use.line, (_indent(use) + new,)),), kind="detach-input")
    return None


def _detach_at_later_use(f: Facts) -> Option | None:
    """For `fake = G(z)` reused by a later loss that should train only what reads it (the discriminator's
    loss on the generator's last sample): detach it where the later loss first uses it."""
    for path, t, _site, _step in f.carriers:
        if not _ITEM_PATH.fullmatch(path) or t.grad_fn is None or not _reaches_leaf([t.grad_fn], None):
            continue
        if f.failed is not None and f.failed.roots and not _trains_without(f.failed, t.grad_fn):
            continue          # detached there, the later loss would train nothing (its backward would raise)
        if _still_freed_without(f, t):
            continue          # the later loss reaches what the first call freed by another way too: half a fix
        use = _first_new_use(f, path)
        if use is None:
            continue
        text = use.code()
        spelled = _spelled(path)      # `teacher_outputs['head']`, written with either quote
        if len(re.findall(spelled, text)) != 1:
            continue
        new = re.sub(spelled, lambda m: f"{m.group(0)}.detach()", text, count=1)
        return Option(f"if the later loss (at {f.failed.site.short()}) should not train what made `{path}`",
                      f"Detach it where that loss uses it: write `{new}` at {use.short()}.",
                      "The later loss's gradient stops at it; the earlier loss still trains what made it.",
                      (Edit(use.file, use.line, (_indent(use) + new,)),), kind="detach-input", detached=path)
    return None


def _build_again(condition: str, lines: tuple, into: Site) -> Option:
    """'Build it again inside the loop': `lines` (what made a kept value, what built the object or
    container holding it) inserted just before `into`, the first line in the loop that uses it."""
    return Option(condition, "Build it again inside the loop: add " + " and ".join(f"`{x}`" for x in lines)
                  + f" just before {into.short()}.", "Each step builds its own graph for it, and backward frees only that.",
                  (Edit(into.file, into.line, tuple(_indent(into) + x for x in lines), insert=True),), kind="recompute-in-step")


def _parsed(file: str):
    """(the lines of `file` as linecache has them, their ast), or None when unreadable or not Python."""
    import ast

    lines = linecache.getlines(file)
    if not lines:
        return None
    try:
        return lines, ast.parse("".join(lines))
    except SyntaxError:
        return None


def _rebuild_owner(made: Site, path: str, until: Site):
    """For `obj.attr` (one attribute of a plain name) whose value was made at `made` and whose object is
    built by `obj = ...` a few lines below it, both before the loop: (the two lines, the first line in the
    loop naming `obj`), where the loop can build them again; else None."""
    m = re.fullmatch(r"([A-Za-z_]\w*)\.(\w+)", path)
    if m is None or made.file != until.file:
        return None
    obj = m.group(1)
    built = _line_below(made, rf"(?P<ind>\s*){obj}\s*=\s*[^=].*", span=10)
    if built is None or len(built[1].group("ind")) != len(_indent(made)):
        return None
    into = _first_line_naming(built[0], obj, until)
    if into is None:
        return None
    return tuple(dict.fromkeys([made.code(), built[0].code()])), into


def _first_line_naming(made: Site, name: str, until: Site) -> Site | None:
    """The first line after `made` and before `until` that names `name` and is indented deeper than
    `made` (inside the loop that follows it): where a copy of `made` recomputes it each step."""

    if not re.fullmatch(r"\w+", name) or made.file != until.file:
        return None
    base = len(_indent(made))
    for n in range(_statement_end(made) + 1, until.line + 1):
        text = linecache.getline(made.file, n)
        if not text.strip() or len(text) - len(text.lstrip()) <= base:
            continue
        if re.search(rf"(?<![\w.]){name}(?![\w])", text):
            return Site(made.file, n, made.function)
    return None


# the methods that start a stateful module fresh (the diagnosis, after the fact too, looks for them)
RESET_METHODS = ("reset", "reset_state", "reset_states", "reset_hidden", "init_hidden", "reset_mem")


def _reset_words(f: Facts, groups: dict) -> str:
    """How to start fresh: the owner's own reset method when it has one (`neuron.reset()`)."""
    calls = []
    for p in groups:
        owner = p.rsplit(".", 1)[0] if "." in p else None
        obj = _resolve(f.ns, owner) if owner else None
        method = next((m for m in RESET_METHODS if callable(getattr(obj, m, None))), None) if obj is not None else None
        if method:
            calls.append(f"`{owner}.{method}()`")
    if calls and len(calls) == len(groups):
        return "Call " + " and ".join(dict.fromkeys(calls)) + " at the start of each one."
    return ("Reset " + ", ".join(f"`{p}`" for p in groups)
            + (" to their initial values" if len(groups) > 1 else " to its initial value") + " at the start of each one.")


def _first_new_use(f: Facts, path: str) -> Site | None:
    """The line of the first node made after the freer that uses `path`'s tensor."""
    tensors = [t for p, t in f.named if p == path or p.startswith(path + "[") or p.startswith(path + ".")]
    ids = {t.grad_fn for t in tensors if t.grad_fn is not None}
    best = None
    for fn in _nodes(f.root.grad_fn, 20_000) if f.root is not None else []:
        if fn in f.old:
            continue
        if any(n in ids for n, _ in fn.next_functions):
            m = made_at(fn)
            if m is not None and m[0] is not None and (best is None or m[0].line < best.line):
                best = m[0]
    return best


_SIMPLE = re.compile(r"[\w.]+(\[[^\]]*\]|\([^()]*\))*")   # a name, an item, a call: no parentheses needed


def _augmented(m: re.Match) -> str:
    """`x[i - 1] += a * b` as `x[i - 1] = x[i - 1] + (a * b)`: the right side in parentheses unless
    it is one name, item or call (`x -= a + b` is `x - (a + b)`)."""
    rhs = m.group("rhs").strip()
    rhs = rhs if _SIMPLE.fullmatch(rhs) else f"({rhs})"
    return f"{m.group('lhs')} = {m.group('lhs')} {m.group('op')} {rhs}"


_OUT_OF_PLACE = [(re.compile(r"^(?P<lhs>[A-Za-z_][\w.]*(?:\[[^\]=]*\])*)\s*(?P<op>\*\*|//|[+\-*/@])=(?!=)\s*(?P<rhs>.+)$"),
                  _augmented),
                 (re.compile(r"inplace\s*=\s*True"), "inplace=False"),
                 (re.compile(r"\.(?P<m>relu|sigmoid|tanh|clamp|add|sub|mul|div|exp|masked_fill|"
                             r"clamp_min|clamp_max|abs|neg|pow|sqrt)_\("),
                  r".\g<m>("),
                 # an in-place method without an out-of-place twin (copy_, fill_, zero_, normal_,
                 # index_add_...): the same method on a copy (`x = x.clone().copy_(y)`)
                 (re.compile(r"^(?P<obj>[A-Za-z_][\w.]*(?:\[[^\]=]*\])*)\.(?P<m>[a-z]\w*_)\((?P<args>.*)$"),
                  r"\g<obj>.clone().\g<m>(\g<args>")]


def _out_of_place_line(text: str) -> str | None:
    for pat, rep in _OUT_OF_PLACE:
        new = pat.sub(rep, text, count=1)
        if new != text:
            if (pat.pattern.startswith(r"\.(") or ".clone()." in new) and not re.match(r"\s*[\w.\[\]]+\s*=[^=]", text):
                m = re.match(r"\s*(?P<obj>[\w.\[\]]+)\.\w+_\(", text)
                if m:
                    new = f"{m.group('obj')} = {new}"
            return new
    return None


def _copy_before_write(site: Site) -> tuple[str, Edit] | None:
    """For `x[i] = v`: compute the value first, then write it into a copy of x (the value may read x,
    and what computes it may save a view of x): three lines in place of one."""
    m = re.fullmatch(r"(?P<base>[A-Za-z_][\w.]*)(?P<idx>\[.+\])\s*=\s*(?P<rhs>[^=].*)", site.code())
    if m is None:
        return None
    held = re.fullmatch(r"(?P<base>[A-Za-z_][\w.]*)\[(?P<k>\d+)\](?P<idx>\[.+\])\s*=\s*(?P<rhs>[^=].*)", site.code())
    if held is not None:    # `out[0][:, 0] = ...`: a tensor held in a tuple or list (a tuple cannot be assigned into)
        box, k, part = held.group("base"), int(held.group("k")), f"{held.group('base')}[{held.group('k')}]"
        tmp = f"{box.replace('.', '_')}_{k}"     # the value first, from the tensor as it is (what computes
        lines = (f"{tmp}_value = {held.group('rhs').strip()}", f"{tmp} = {part}.clone()",   # it may save a view)
                 f"{tmp}{held.group('idx')} = {tmp}_value",
                 f"{box} = type({box})([*{box}[:{k}], {tmp}, *{box}[{k + 1}:]])")
        return "; ".join(lines), Edit(site.file, site.line, tuple(_indent(site) + x for x in lines))
    base, tmp = m.group("base"), m.group("base").replace(".", "_") + "_value"
    lines = (f"{tmp} = {m.group('rhs').strip()}", f"{base} = {base}.clone()", f"{base}{m.group('idx')} = {tmp}")
    if not re.search(rf"\b{re.escape(base.split('.')[0])}\b", m.group("rhs")):    # a value that does not read x
        lines = (f"{base} = {base}.clone()", f"{base}{m.group('idx')} = {m.group('rhs').strip()}")
    return "; ".join(lines), Edit(site.file, site.line, tuple(_indent(site) + x for x in lines))


def rule_inplace_recorded(f: Facts) -> Finding | None:
    if f.error != "inplace" or not f.writes:
        return None
    w = f.writes[-1]
    names = _names_of(f, w)
    name_words = (" (" + ", ".join(f"`{n}`" for n in names) + ")") if names else ""
    if w.optimizer_step:
        move, step_site, below, lines_moved = (), w.site, f.failed.site if f.failed is not None else None, []
        block, below = _block_move_outer((w.site, *w.outer), f.failed)
        if block is not None:       # the step's statement in the failing call's block (a wrapper's caller)
            step_site = block[0]
            # every step that wrote a tensor this graph saved moves, in its order (SAC: both critics)
            blocks = {block[1]: block}
            for other in f.other_steps:
                more, at = _block_move_outer((other.site, *other.outer), f.failed)
                if more is not None and at == below:
                    blocks.setdefault(more[1], more)
            moved = []
            for _, (_s, a, b) in sorted(blocks.items()):
                moved += [linecache.getline(step_site.file, n).rstrip("\n") for n in range(a, b + 1)]
            move = (*(Edit(step_site.file, n, ()) for _, (_s, a, b) in sorted(blocks.items()) for n in range(a, b + 1)),
                    Edit(step_site.file, _statement_end(below) + 1, tuple(moved), insert=True))
            lines_moved = sorted(blocks)
        w = _with_site(w, step_site)
        apart = _detach_from_changed(f, w) or _detach_carried_into_pass(f, w)
        return Finding(
            "inplace-optimizer-step",
            f"`{w.site.code()}` at {w.site.short()} updated a weight{name_words} that "
            f"{f.failed.words() if f.failed else 'this backward'} needs as it was (version {w.before} -> {w.after}).",
            evidence=[f"The optimizer wrote it in place ({w.op}); the graph saved it at version "
                      f"{f.versions[0] if f.versions else w.before}."],
            options=[*([apart] if apart else []),
                     Option("if both gradients should be computed with the weights before the step",
                            (f"Call every backward() before `{w.site.code()}`: move it from {w.site.short()} to after "
                             if len(lines_moved) < 2 else
                             "Call every backward() before the steps that changed what it saved: move "
                             + " and ".join(f"`{Site(w.site.file, n, w.site.function).code()}` (line {n})"
                                            for n in lines_moved) + " to after ")
                            + (f"`{below.code()}` at {below.short()}" if below is not None and below != f.failed.site
                               else f"{f.failed.site.short()}" if f.failed else "the last backward") + ".",
                            "The step then applies both gradients at once.", move, kind="backward-before-step")
                     if move or not _runs_later_in_loop(w.site, f.failed) else
                     Option("if both gradients should be computed with the weights before the step",
                            f"Step once after all of them: `{w.site.code()}` at {w.site.short()} runs in the loop, "
                            f"before {f.failed.words()} of a later pass; move the step below the loop.",
                            "The losses of every pass then use the same weights, and one step applies their "
                            "gradients.", kind="backward-before-step"),
                     *([up] if (up := _backward_up(f, below, lines_moved or [w.site.line])) else []),
                     _remake_after_step(f, w)],
            confidence="depends", culprit=names[0] if names else None, culprits=names,
            how_to_tell="Should the later loss be computed with the weights before or after the step?"
                        + (" Should it train the weights the step changed at all?" if apart else ""))
    inner = f" inside the library call at {w.inner}" if w.inner is not None else ""
    t = w.tensor() if w.tensor is not None else None
    kept = _persistent_write(f, w, t) if w.during is None else None
    if kept is not None:
        return kept
    through_detach = t is not None and not t.requires_grad and any(
        u.requires_grad and _storage(u) == w.storage for _, u in f.named)
    edits, said = [], []
    sites = dict.fromkeys(x.site for x in [*f.writes, *f.other_writes] if not x.optimizer_step)
    for site in sites:
        text = site.code()
        new = _out_of_place_line(text) if w.inner is None else re.sub(r"inplace\s*=\s*True", "inplace=False", text)
        if new == text:
            new = None
        maker = _inplace_maker(site, w.op if site == w.site else None) if new is None else None
        if maker is not None:          # `self.act = nn.ReLU(inplace=True)`, made in __init__, called here
            edits.extend(maker[1])
            where = ", ".join(f"{Site(e.file, e.line, site.function).short()}" for e in maker[1])
            said.append(f"pass `inplace=False` where {maker[0]} is made, at {where}{maker[3] if len(maker) > 3 else ''}")
            continue
        if new is not None:
            edits.append(Edit(site.file, site.line, (_indent(site) + new,)))
            said.append(f"`{new}` at {site.short()}")
            continue
        copy = _copy_before_write(site)
        if copy is not None:
            edits.append(copy[1])
            said.append(f"`{copy[0]}` in place of {site.short()}")
    # through .data / .detach(): a write autograd does not record; a tensor that needs no grad written by
    # name (`onehot[~m] = 0`) is an ordinary in-place write: out of place
    untracked = any(re.search(r"\.data\b|\.detach\(\)", s.code()) for s in sites)
    outers = {x.site: x.outer for x in [*f.writes, *f.other_writes]}
    made_here = bool(sites) and all(_made_this_call(x, outers.get(x, ())) for x in sites)
    untracked_write = through_detach or (t is not None and not t.requires_grad and (untracked or not made_here))
    kind = "no-data-write" if untracked_write and w.during is None else "out-of-place"
    opts = []
    if said:
        opts.append(Option("", "Write out of place, or into a copy: " + "; ".join(said) + ".",
                           "The saved tensor keeps its value; a new tensor holds the result (a little more memory).",
                           tuple(edits) if len(said) == len(sites) else (),
                           kind=kind))
    elif _in_forward(f, w.site):     # the write is an op of this loss's forward: it cannot move after the backward
        target = f"`{names[0]}.clone()`" if names else "a copy (`.clone()`) of the tensor"
        opts.append(Option("", f"Write out of place: `{w.site.code()}` at {w.site.short()} is part of the forward "
                               "this loss is computed from, so it cannot run after the backward; make its result a "
                               f"new tensor (the op without its trailing `_`, or into {target}), or pass "
                               f"`inplace=False` to the module or function that writes{inner}.",
                           "The saved tensor keeps its value; a new tensor holds the result (a little more memory).",
                           kind=kind))
    else:
        target = f"`{names[0]}.clone()`" if names else "a copy (`.clone()`) of the tensor"
        before = f.failed.site.short() if f.failed is not None else "the backward() call"
        opts.append(Option("", f"Make that write after the backward, not between the forward that saved the tensor "
                               f"and {before}: `{w.site.code()}` at {w.site.short()} must run after it (or not "
                               "at all, if the write is not needed); or give the write a copy: write into "
                               f"{target}, or pass `inplace=False` to the module or function that writes{inner}.",
                           "The saved tensor keeps its value until backward has used it.", kind=kind))
    how = (" through a tensor that autograd does not track (made by .detach() or .data), which shares its memory"
           if through_detach else "")
    during = ""
    if w.during is not None:        # recorded while autograd ran Python backward code (a custom Function's)
        later = f.failed.words() if f.failed is not None and f.failed is not w.during else "a later backward"
        during = (f", inside `{w.site.function}` (backward code that autograd runs) while {w.during.words()} ran; "
                  f"{later} passes through the same graph again and needs it as it was")
    return Finding(
        "inplace-write",
        f"`{w.op}` at {w.site.short()}{inner} wrote in place{how} into a tensor{name_words} that the graph had "
        f"saved (version {w.before} -> {w.after})" + (during or "; backward needs it as it was") + ".",
        evidence=[f"The write was recorded at {w.site}: the tensor's version went from {w.before} to {w.after}."]
        + ([f"Also recorded: {len(f.writes) - 1} more write(s) to it, at "
            + ", ".join(x.site.short() for x in f.writes[:-1]) + "."] if len(f.writes) > 1 else [])
        + (["Other tensors this graph saved were written in place too, at "
            + ", ".join(dict.fromkeys(x.site.short() + (" (the same line, another pass)" if x.site == w.site else "")
                                      for x in f.other_writes))
            + ": backward would stop at each of them next."] if f.other_writes else []),
        options=opts, confidence="certain", culprit=names[0] if names else None, culprits=names)


def _in_forward(f: Facts, site: Site) -> bool:
    """Whether the failing loss's graph has a node made at `site`, or by a call made there (a helper
    of yours called on that line): the line is part of its forward."""
    if f.root is None or f.root.grad_fn is None:
        return False
    for fn in _nodes(f.root.grad_fn, 20_000):
        m = made_at(fn)
        if m is not None and (m[0] == site or site in (m[3] if len(m) > 3 else ())):
            return True
    return False


def _inplace_maker(site: Site, op: str | None = None):
    """For a user line that calls a module made with `inplace=True` (`f = self.act(f)`, the module made
    in `__init__` as `self.act = nn.ReLU(inplace=True)`): (its name, the edits passing inplace=False
    where it is made, that statement's Site). Found with `ast` in the same file: the one assignment to
    a name the line calls whose source says `inplace=True`."""
    import ast

    called = set(re.findall(r"(?:self\.)?([A-Za-z_]\w*)(?:\[[^\]]*\])?\s*\(", site.code()))
    got = _parsed(site.file) if called else None
    if got is None:
        return None
    lines, tree = got
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Assign, ast.AnnAssign)):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names = {t.attr if isinstance(t, ast.Attribute) else t.id for t in targets
                 if isinstance(t, (ast.Attribute, ast.Name))}
        text = "".join(lines[node.lineno - 1:node.end_lineno])
        if names & called and re.search(r"inplace\s*=\s*True", text):
            found.append((sorted(names & called)[0], node))
    if len(found) != 1:
        return _inplace_module_of_op(site, op, lines, tree) if op else None
    name, node = found[0]
    edits = []
    for n in range(node.lineno, node.end_lineno + 1):
        line = lines[n - 1].rstrip("\n")
        if re.search(r"inplace\s*=\s*True", line):
            edits.append(Edit(site.file, n, (re.sub(r"inplace\s*=\s*True", "inplace=False", line),)))
    return (f"`{name}`", edits, Site(site.file, node.lineno, site.function)) if edits else None


_OP_MODULES = {"relu": ("ReLU",), "dropout": ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout"),
               "leaky_relu": ("LeakyReLU",), "hardtanh": ("Hardtanh", "ReLU6"), "elu": ("ELU", "CELU"),
               "selu": ("SELU",), "silu": ("SiLU",), "hardswish": ("Hardswish",), "hardsigmoid": ("Hardsigmoid",),
               "mish": ("Mish",), "threshold": ("Threshold",), "rrelu": ("RReLU",),
               "feature_dropout": ("Dropout1d", "Dropout2d", "Dropout3d"), "alpha_dropout": ("AlphaDropout",)}


def _inplace_module_of_op(site: Site, op: str, lines: list, tree):
    """When the line calls no name made with inplace=True (`return self.net(x)`, the ReLU inside a Sequential
    built in a loop): every call in the file that makes a module of the op's kind with `inplace=True`
    (`relu` -> `nn.ReLU(inplace=True)`). The record says which op wrote, not which of those modules: each is
    given `inplace=False` (the same results, a little more memory); more than four: none is named. (name,
    edits, the first one's Site, a note saying it is inferred from the file)."""
    import ast

    kinds = _OP_MODULES.get(op.removesuffix("_"))
    if not kinds:
        return None
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and (n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", None)) in kinds
             and any(k.arg == "inplace" and isinstance(k.value, ast.Constant) and k.value.value is True
                     for k in n.keywords)]
    rows = sorted({n for c in calls for n in range(c.lineno, c.end_lineno + 1)
                   if re.search(r"inplace\s*=\s*True", lines[n - 1])})
    edits = [Edit(site.file, n, (re.sub(r"inplace\s*=\s*True", "inplace=False", lines[n - 1].rstrip("\n")),))
             for n in rows]
    if not edits or len(edits) > 4:
        return None
    kind = next(k for c in calls for k in kinds if k == (c.func.attr if isinstance(c.func, ast.Attribute) else c.func.id))
    name = (f"each `{kind}` made with `inplace=True` in this file" if len(edits) > 1 else
            f"the one `{kind}` made with `inplace=True` in this file")
    note = f" (the record says a `{op.removesuffix('_')}` wrote, not which module: inferred from the file)"
    return name, edits, Site(site.file, rows[0], site.function), note


def _made_this_call(site: Site, outer: tuple = (), name: str | None = None) -> bool:
    """Whether the tensor the write at `site` writes into (`x` in `x[m] = 0`, `x.clamp_(...)`, `x += y`) is a
    local name last bound, before the write, to a new value by a statement of the same function (or the
    same loop body, at the top level): `x = F.one_hot(i).float()` then `x[~mask] = 0`. A parameter of the
    function is followed to the caller's argument at `outer` (the user's lines that called it, innermost
    first): `ids` made in the loop and passed as `w`. Such a tensor is made in this step, not kept from an
    earlier one, even when autograd calls it a leaf (it needs no grad): writing it out of place keeps the
    program's meaning. Read with `ast`; False when unsure."""
    import ast

    if name is None:
        m = re.match(r"\s*([A-Za-z_]\w*)\s*(?:\[|\.\w+_\(|[-+*/@]=)", site.code())
        if m is None:
            return False
        name = m.group(1)
    got = _parsed(site.file)
    if got is None:
        return False
    tree = got[1]
    scope = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno <= site.line <= node.end_lineno:
            if scope is None or node.lineno > scope.lineno:
                scope = node
    if scope is None:           # the top level: the loop the write is in
        for node in ast.walk(tree):
            if isinstance(node, (ast.For, ast.While)) and node.lineno <= site.line <= node.end_lineno:
                if scope is None or node.lineno > scope.lineno:
                    scope = node
    if scope is None:
        return False
    last = None
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and node.end_lineno < site.line and any(
                isinstance(t, ast.Name) and t.id == name for tg in node.targets for t in ast.walk(tg)):
            if last is None or node.lineno > last.lineno:
                last = node
    if last is not None:
        if isinstance(last.value, (ast.Name, ast.Attribute, ast.Subscript, ast.Constant)):
            return False
        if len(last.targets) == 1 and isinstance(last.targets[0], ast.Tuple):     # `a, b = f(...), g(...)`
            value = last.value
            if isinstance(value, ast.Tuple) and len(value.elts) == len(last.targets[0].elts):
                i = next(k for k, t in enumerate(last.targets[0].elts) if isinstance(t, ast.Name) and t.id == name)
                return not isinstance(value.elts[i], (ast.Name, ast.Attribute, ast.Subscript, ast.Constant))
        return True
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and outer:
        params = [x.arg for x in [*scope.args.posonlyargs, *scope.args.args]]
        if name not in params:
            return False
        i = params.index(name) - (1 if params and params[0] in ("self", "cls") else 0)
        try:
            call_line = ast.parse(outer[0].code().strip())
        except SyntaxError:
            return False
        for node in ast.walk(call_line):
            f_name = getattr(node, "func", None)
            f_name = getattr(f_name, "attr", None) or getattr(f_name, "id", None)
            if isinstance(node, ast.Call) and f_name == scope.name and 0 <= i < len(node.args) \
                    and isinstance(node.args[i], ast.Name):
                return _made_this_call(outer[0], outer[1:], node.args[i].id)
    return False


def _block_move(write_sites, before: Site) -> tuple[Site, int, int] | None:
    """The statement that makes the write (the write's line, or a line of yours that called it), in the
    same block as `before` and above it: (its first line's Site, first line, last line)."""
    import ast

    got = _parsed(before.file)
    if got is None:
        return None
    tree = got[1]

    def body_with(node, line):
        for part in ("body", "orelse", "finalbody", "handlers"):
            stmts = getattr(node, part, None)
            if isinstance(stmts, list) and any(isinstance(x, ast.stmt) and x.lineno <= line <= x.end_lineno
                                               for x in stmts):
                inner = next(x for x in stmts if x.lineno <= line <= x.end_lineno)
                deeper = body_with(inner, line)
                return deeper if deeper is not None else (stmts, inner)
        return None

    found = body_with(tree, before.line)
    if found is None:
        return None
    block, target = found
    for site in write_sites:
        if site is None or site.file != before.file or not site.line < target.lineno:
            continue
        stmt = next((x for x in block if x.lineno <= site.line <= x.end_lineno), None)
        if stmt is not None and stmt.end_lineno < target.lineno:
            return Site(site.file, stmt.lineno, site.function), stmt.lineno, stmt.end_lineno
    return None


def _backward_up(f: Facts, below: Site | None, steps: list) -> Option | None:
    """The other way to put a backward before the steps: move the statement that runs it (`below`: the
    failing call's line, or your line that called it) up, to just after the statement that made its loss,
    when that is above every step that changed what it saved. Then the code in between (a target computed
    with the network this loss trains) runs after this loss's own step, not before it."""
    if below is None or f.root is None or f.root.grad_fn is None or _statement_end(below) != below.line:
        return None
    made = made_at(f.root.grad_fn)
    site = made[0] if made else None
    if site is None or site.file != below.file:
        return None
    found = _block_move((site,), below)
    if found is None:
        return None
    _s, _first, last = found
    if last >= min(steps) or last + 1 >= below.line:
        return None          # the loss is made after a step, or the call is right below it already
    text, keep = linecache.getline(below.file, below.line).rstrip("\n"), ""
    # a backward it now runs before kept the graph (retain_graph=True): they share it, so the moved one keeps it too
    if any(c.retain_graph and c.site.file == below.file and last < c.site.line < below.line for c in f.rec.calls):
        got = _with_kwarg(below, "retain_graph=True")
        if got is None:
            return None
        text, keep = _indent(below) + got[0], f", as `{got[0]}`: the backward that now follows it uses the same graph"
    return Option("if both gradients should be computed with the weights before the step, and what runs in "
                  "between should see this loss's own step",
                  f"Call it as soon as its loss is made: move `{below.code()}` from {below.short()} to just after "
                  f"line {last}{keep}.", "It backwards and steps first; the lines in between then run with the weights "
                  "it updated.", (Edit(below.file, below.line, ()), Edit(below.file, last + 1, (text,), insert=True)),
                  kind="backward-before-step")


def _block_move_outer(write_sites, failed) -> tuple:
    """(_block_move's answer, the statement it goes below): the failing call's own line first, then the
    user's lines that called it (a `train(opt, loss)` wrapper that backwards and steps, called once
    for each loss: the step's call moves below the failing loss's call)."""
    if failed is None:
        return None, None
    for below in (failed.site, *getattr(failed, "outer", ())):
        found = _block_move(write_sites, below)
        if found is not None:
            return found, below
    return None, failed.site


def _with_site(w, site: Site):
    """A copy of the write `w` named at `site` (the user's statement that made the step)."""

    return w if site == w.site else dataclasses.replace(w, site=site)


def _persistent_write(f: Facts, w, t) -> Finding | None:
    """A write into state that outlives the step (a parameter, a buffer, a leaf: an EMA teacher's
    `tp.mul_(0.99).add_(sp, alpha=0.01)`, a weight clamp) made between the forward that saved it and
    the backward. Writing out of place would only rebind a name and silently stop the update: the
    write belongs after the backward, which then sees the values its graph saved."""
    if t is None or not (t.is_leaf or _is_param_like(t)) or f.failed is None:
        return None
    # `self.queue[i] = k` (a buffer, an attribute): a copy assigned to the attribute keeps the update
    # (the general rule writes it); a parameter cannot be assigned a plain tensor, a local name rebinds
    obj = re.match(r"\s*([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*?)(?=\[|\.\w+_\(|\s*[-+*/]?=)", w.site.code())
    if not isinstance(t, torch.nn.Parameter) and obj is not None and "." in obj.group(1):
        return None
    if any(u.requires_grad and not u.is_leaf and _storage(u) == w.storage for _, u in f.named):
        return None      # `mask = out.detach()`: a leaf only by name, sharing the memory of a value in the graph
    if not isinstance(t, torch.nn.Parameter) and _made_this_call(w.site, w.outer):
        return None      # `onehot = F.one_hot(i).float()` then `onehot[~m] = 0`: made by this call, kept by no one
    names = _names_of(f, w)
    name_words = (" (" + ", ".join(f"`{n}`" for n in names) + ")") if names else ""
    moved = _block_move((w.site, *w.outer), f.failed.site)
    if moved is not None and f.root is not None and f.root.grad_fn is not None:
        lines = range(moved[1], moved[2] + 1)
        for fn in _nodes(f.root.grad_fn, 20_000):      # the statement is part of the forward: not movable
            m = made_at(fn)
            if m is not None and any(x is not None and x.file == moved[0].file and x.line in lines
                                     for x in (m[0], *(m[3] if len(m) > 3 else ()))):
                moved = None
                break
    headline = (f"`{w.op}` at {w.site.short()} wrote in place into a tensor that lasts beyond this step{name_words} "
                f"after the forward had saved it and before {f.failed.words()} (version {w.before} -> {w.after}); "
                "backward needs it as it was.")
    recorded = f"The write was recorded at {w.site}: the tensor's version went from {w.before} to {w.after}."
    if moved is None and (_in_forward(f, w.site) or any(_in_forward(f, o) for o in w.outer)):
        # the write is part of this loss's forward (nn.Embedding(max_norm=...) renormalising the rows it
        # looks up; a power iteration inside the second of two calls whose outputs the loss adds): it
        # cannot move after the backward; the graph's reads get a copy (of every tensor written)
        reads = _reads_to_copy(f, names)
        opts = [Option("", "Give the graph a copy where the forward reads the tensor before the write"
                           + (": write " + "; ".join(f"`{new}` at {at.short()}" for new, at, _ in reads)
                              if reads else " (`.clone()`)")
                           + f". The write at {w.site.short()} is part of the forward this loss is computed "
                           "from, so it cannot run after the backward.",
                       "The write changes the tensor and not what the graph saved; the copy costs the tensor's "
                       "size until the backward has run.", tuple(e for _, _, e in reads),
                       kind="out-of-place" if t.requires_grad else "no-data-write")]
        return Finding(
            "inplace-write", headline,
            evidence=[recorded, "The write is made by a call of this loss's forward (a node of its graph was made there)."],
            options=opts, confidence="certain", culprit=names[0] if names else None, culprits=names)
    after = moved is None and w.seq >= 0 and f.root is not None and f.root.grad_fn is not None and any(
        fn._sequence_nr() > w.seq for fn in _nodes(f.root.grad_fn, 20_000) if made_at(fn) is not None)
    if after:
        copy = _copy_at_read(f, names, w.site)
        copy.condition = "if the forward after the write reads the written values (the write prepares them for it)"
        copy.fix = copy.fix.replace("Or, where", "Where", 1)
        # this loss's forward went on after the write (a helper that fixes up an index, then reads it): whether
        # the later ops need the written values is not recorded, so moving the write is one option of two
        return Finding(
            "inplace-write", headline,
            evidence=[recorded, "This loss's forward went on after the write (its graph has nodes made after it), "
                      "so the ops after it may read the written values; which ones do is not recorded."],
            options=[copy,
                     Option("if nothing the forward computes after the write needs the written values",
                            f"Make the write after the backward: `{w.site.code()}` at {w.site.short()}"
                            + (f" (called from {w.outer[0].short()})" if w.outer else "")
                            + f" would run after {f.failed.site.short()}.",
                            "The backward uses the values its graph saved; the tensor is updated as before, for "
                            "the next forward.", kind="no-data-write" if not t.requires_grad else "backward-before-step")],
            confidence="depends", culprit=names[0] if names else None, culprits=names,
            how_to_tell=f"Does the forward after {w.site.short()} read the values it writes?")
    edits, where = (), f"`{w.site.code()}` at {w.site.short()}"
    if moved is not None:
        first, a, b = moved
        text = [linecache.getline(first.file, n).rstrip("\n") for n in range(a, b + 1)]
        end = _statement_end(f.failed.site)
        edits = (*(Edit(first.file, n, ()) for n in range(a, b + 1)),
                 Edit(first.file, end + 1, tuple(text), insert=True))
        where = f"the statement at {first.short()} (`{first.code()}`)" if (a, b) != (w.site.line, w.site.line) else where
        step = _step_below(f.failed.site)
        if step is not None and not any(t is q for s_ in f.rec.opt_steps for r in s_.params if (q := r()) is not None):
            # an optimizer step follows the backward: the update may be meant to follow the stepped weights
            # (an EMA target or teacher), or the weights this forward used, as the code does now
            after = _statement_end(step)
            later = (*(Edit(first.file, n, ()) for n in range(a, b + 1)),
                     Edit(first.file, after + 1, tuple(text), insert=True))
            return Finding(
                "inplace-write", headline,
                evidence=[recorded, "The tensor is a leaf (a parameter, a buffer or a tensor you keep): writing out "
                          "of place would only rebind a name and leave it unchanged."],
                options=[Option("if the update should use the weights this step's forward used (as your code does now)",
                                f"Make the write after the backward: move {where} below {f.failed.site.short()}.",
                                "The backward uses the values its graph saved; the update is the same as before.",
                                edits, kind="no-data-write" if not t.requires_grad else "backward-before-step"),
                         Option(f"if it should follow the weights as `{step.code()}` leaves them (an EMA target or "
                                "teacher, as BYOL and mean teachers update theirs)",
                                f"Make the write after the step: move {where} below {step.short()}.",
                                "The backward uses the values its graph saved; the update then reads the stepped "
                                "weights.", later, kind="no-data-write" if not t.requires_grad else "backward-before-step")],
                confidence="depends", culprit=names[0] if names else None, culprits=names,
                how_to_tell=f"Should the update read the weights before or after `{step.code()}`?")
    return Finding(
        "inplace-write", headline,
        evidence=[recorded, "The tensor is a leaf (a parameter, a buffer or a tensor you keep): writing out of place "
                  "would only rebind a name and leave it unchanged."],
        options=[Option("", (f"Make the write after the backward: move {where} below {f.failed.site.short()}."
                             if moved is not None else
                             f"Make the write after the backward, or leave it out if it is not needed: "
                             f"`{w.site.code()}` at {w.site.short()}"
                             + (f" (called from {w.outer[0].short()})" if w.outer else "")
                             + f" runs between the forward and {f.failed.site.short()}."),
                        "The backward uses the values its graph saved; the tensor is updated as before, for the "
                        "next forward.", edits, kind="no-data-write" if not t.requires_grad else "backward-before-step")]
        + ([] if moved is not None else [_copy_at_read(f, names, w.site)]),
        confidence="certain", culprit=names[0] if names else None, culprits=names)


def _step_below(site: Site) -> Site | None:
    """The `<optimizer>.step()` statement among the few that follow `site`'s statement in its block."""
    import ast

    got = _parsed(site.file)
    if got is None:
        return None
    for node in ast.walk(got[1]):
        stmts = _stmts(node) if isinstance(node, (ast.For, ast.While, ast.With, ast.FunctionDef, ast.If)) else []
        idx = next((i for i, x in enumerate(stmts) if x.lineno <= site.line <= x.end_lineno), None)
        if idx is None or not (stmts[idx].lineno == site.line or isinstance(stmts[idx], ast.Expr)):
            continue
        for x in stmts[idx + 1:idx + 4]:
            code = Site(site.file, x.lineno, site.function).code()
            if x.lineno == x.end_lineno and re.search(r"\.step\(\s*\)", code) and "scheduler" not in code:
                return Site(site.file, x.lineno, site.function)
    return None


def _write_targets(site: Site) -> list:
    """The local names the write at `site` writes into: `u` in `F.normalize(a, out=u)`, `u.mul_(2)`,
    `u[i] = 0`, `u += 1`."""
    code = site.code()
    found = re.findall(r"\bout\s*=\s*([A-Za-z_]\w*)", code)
    m = re.match(r"\s*([A-Za-z_]\w*)\s*(?:\[|\.\w+_\(|[-+*/@]=)", code)
    return list(dict.fromkeys([*found, *([m.group(1)] if m else [])]))


def _reads_to_copy(f: Facts, names: list) -> list:
    """_graph_reads for every saved tensor of the failing graph written in place (f.writes, f.other_writes),
    each by the names its writing lines use and, for the tensor of the message, `names` too."""
    wanted: dict = {}
    for x in [w for w in [*f.writes, *f.other_writes] if not w.optimizer_step]:
        wanted.setdefault(x.storage, []).extend(_write_targets(x.site))
    if f.written is not None:
        wanted.setdefault(_storage(f.written), []).extend(names)
    return _graph_reads(f, {k: list(dict.fromkeys(v)) for k, v in wanted.items() if k is not None})


def _copy_at_read(f: Facts, names: list, site: Site) -> Option:
    """'Give the graph a copy where the forward reads it': with the edits when the lines of yours that made
    the nodes which saved the written tensors name them once (`sigma = torch.dot(u.clone(), W @ v.clone())`:
    every saved tensor of this graph written in place, f.other_writes too)."""
    reads = _reads_to_copy(f, names)
    if not reads:
        return Option("", "Or, where the forward reads it, give the graph a copy (`.clone()`), so that the write "
                          "changes the tensor and not what the graph saved.",
                      "The copy costs the tensor's size until the backward has run.", kind="no-data-write")
    return Option("", "Or, where the forward reads it, give the graph a copy: write "
                      + "; ".join(f"`{new}` at {at.short()}" for new, at, _ in reads)
                      + ", so that the write changes the tensor and not what the graph saved.",
                  "The copy costs the tensor's size until the backward has run.", tuple(e for _, _, e in reads),
                  kind="no-data-write")


def _graph_reads(f: Facts, wanted: dict) -> list:
    """[(the line with `.clone()` after each name, its Site, the Edit)]: for each node of the failing graph
    whose saved tensor was written in place (its storage a key of `wanted`), the line of yours that made
    it, when it names one of that storage's names (`wanted[storage]`) once."""
    if f.root is None or f.root.grad_fn is None or not wanted:
        return []
    from .walk import raw_saved_tensor, saved_slots

    by_site: dict = {}
    for fn in _nodes(f.root.grad_fn, 20_000):
        for slot, how, value in saved_slots(fn, functions=False):
            if how != "error" or "inplace" not in str(value):
                continue
            t = raw_saved_tensor(fn, slot)
            key = None if t is None else _storage(t)
            if t is None or key not in wanted:
                continue
            m = made_at(fn)
            for site in ((m[0], *(m[3] if len(m) > 3 else ())) if m else ()):
                if site is None:
                    continue
                name = next((n for n in wanted[key] if len(re.findall(_bare(n), site.code())) == 1), None)
                if name is not None:
                    by_site.setdefault(site, []).append(name)
                    break
    out = []
    for site, names in by_site.items():
        new = site.code()
        for name in dict.fromkeys(names):
            new = re.sub(_bare(name), f"{name}.clone()", new, count=1)
        out.append((new, site, Edit(site.file, site.line, (_indent(site) + new,))))
    return out


_ITEM_PATH = re.compile(r"""[A-Za-z_][\w.]*(\[(\d+|'[^'\]]*'|"[^"\]]*")\])*""")   # `x`, `self.h`, `outs['head'][0]`


def _spelled(path: str) -> str:
    """A pattern for `path` (an item path: _ITEM_PATH) read as a value, its keys in either quote."""
    parts = re.split(r"""('[^']*'|"[^"]*")""", path)
    pattern = "".join(f"""['"]{re.escape(x[1:-1])}['"]""" if len(x) >= 2 and x[0] in "'\"" else re.escape(x)
                      for x in parts)
    return rf"(?<![\w.]){pattern}(?![\w(\[])(?!\.clone)"


def _bare(name: str) -> str:
    """A pattern for `name` read as a value, not called, indexed or already copied."""
    return rf"(?<![\w.]){re.escape(name)}(?![\w(\[])(?!\.clone)"


def _detach_from_changed(f: Facts, w) -> Option | None:
    """When the failing loss reaches the weight the step changed only through one tensor of yours
    (`feats`, a shared trunk's output) and still trains something without it: detach that tensor
    where this loss uses it, if this loss should not train what the step changed (an actor's loss
    through a critic's trunk; a generator step then a discriminator loss)."""
    t = w.tensor() if w.tensor is not None else None
    if f.root is None or f.root.grad_fn is None or t is None:
        return None
    nodes = _nodes(f.root.grad_fn, 20_000)
    acc = next((fn for fn in nodes if is_leaf_node(fn) and getattr(fn, "variable", None) is t), None)
    if acc is None:
        return None
    inside = set(nodes)
    found = []
    # your names for tensors of this graph, the 24 made last (each is a few bounded walks: a namespace
    # of thousands of tensors must not hold up the answer)
    named = _named_in(f, inside)
    for path, u in named:
        fn = u.grad_fn
        if not _reaches_any(fn, {acc}) or _reaches_any(f.root.grad_fn, {acc}, avoid={fn}):
            continue                        # detaching it would not cut the way to the changed weight
        if not _reaches_leaf([f.root.grad_fn], fn):
            continue                        # this loss would then train nothing
        consumers = [n for n in nodes if any(x is fn and i == u.output_nr for x, i in n.next_functions)]
        user = consumers[0] if consumers else None
        m = made_at(user) if user is not None else None
        if len({made_at(n)[0] if made_at(n) else None for n in consumers}) > 1:
            continue          # used at two lines (`adv = x + perturbation`, then the norm): one detach is half a cut
        got = _detach_at_use(m[0], path) if m is not None and m[0] is not None else None
        if got is not None:
            kept = len({id(x.variable) for x in _reach([f.root.grad_fn], fn, m[0]) if is_leaf_node(x)})
            found.append((kept, -fn._sequence_nr(), path, m[0], got))
    if not found:
        found = _unnamed_cuts(f, nodes, acc)
    if not found:
        return None
    # the cut that leaves this loss the most to train: nearest the changed weight (`decoded` where the
    # discriminator reads it, not the discriminator's output `disc_fake`)
    _, _, path, site, got = max(found)
    names = _names_of(f, w)
    where = (f"Keep `{path}` detached where it is stored: write `{got[0]}` at {site.short()}."
             if "." in path else f"Detach `{path}` where this loss uses it: write `{got[0]}` at {site.short()}.")
    return Option(f"if this loss should not train {'`' + names[0] + '`' if names else 'the weights the step changed'}"
                  f" (nor what computes `{path}`)",
                  where,
                  f"This loss's gradient stops at `{path}`, so it no longer needs the weights the step changed; "
                  "it still trains what it computes from there.", (got[1],), kind="detach-at-use")


def _detach_carried_into_pass(f: Facts, w) -> Option | None:
    """The weight the step changed is used by a line of a forward loop (built before the backwards,
    not holding them) that reads a value carried from the pass before (`x = block[i](x_in)`, then
    `x_in = x`): a later pass's loss reaches back through it into what earlier passes computed. If each
    pass's loss should train only its own pass, detach what is carried, where it is carried."""
    import ast

    t = w.tensor() if w.tensor is not None else None
    if f.root is None or f.root.grad_fn is None or t is None or f.failed is None:
        return None
    nodes = _nodes(f.root.grad_fn, 20_000)
    acc = next((fn for fn in nodes if is_leaf_node(fn) and getattr(fn, "variable", None) is t), None)
    users = [fn for fn in nodes if acc is not None and any(x is acc for x, _ in fn.next_functions)]
    users += [fn for fn in nodes if any(x in users for x, _ in fn.next_functions)]    # through a TBackward
    sites = dict.fromkeys(x for fn in users if (m := made_at(fn)) is not None for x in (m[0], *(m[3] if len(m) > 3 else ()))
                          if x is not None and x.file == f.failed.site.file)
    for site in sites:
        loops = [n for n in _loops_holding(site) if not (n.lineno <= f.failed.site.line <= n.end_lineno)]
        if not loops:
            continue
        body = _stmts(loops[-1])
        reads = {n.id for st in body if st.lineno <= site.line for n in ast.walk(st)
                 if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        carried = [st for st in body if isinstance(st, ast.Assign) and len(st.targets) == 1
                   and isinstance(st.targets[0], ast.Name) and st.targets[0].id in reads and st.lineno > site.line]
        if len(carried) != 1:
            continue
        st = carried[0]
        at = Site(site.file, st.lineno, site.function)
        name, rhs = st.targets[0].id, at.code().split("=", 1)[1].strip()
        new = f"{name} = {_detached(rhs)}"
        return Option("if each pass's loss should train only its own pass (not what earlier passes computed, "
                      "with the weights the step changed)",
                      f"Detach what is carried into the next pass: write `{new}` at {at.short()}.",
                      f"Each pass starts from a constant `{name}`; its loss no longer reaches the earlier passes, "
                      "nor the weights their steps changed.", (Edit(at.file, at.line, (_indent(at) + new,)),),
                      kind="detach-at-use")
    return None


def _runs_later_in_loop(step: Site, failed) -> bool:
    """Whether the step's line is below the failing call's in the same function: it ran after that
    line in an earlier pass of a loop (the call that failed belongs to the next pass)."""
    return failed is not None and step.file == failed.site.file and step.function == failed.site.function \
        and step.line > failed.site.line


def _remake_after_step(f: Facts, w) -> Option:
    """'If the later loss should use the updated weights': compute again, after the step, the tensor of
    yours through which it reads the weights the step changed; when its making line is a plain
    `name = ...` in the function that uses it (a GAN's `fake = netG(noise)` made before the generator's
    steps and read by each step's loss), that line repeated above the use, as an edit."""
    said = Option("if the later loss should use the updated weights",
                  f"Compute that loss's forward again after {w.site.short()}.",
                  "It runs through a new graph, made with the updated weights.", kind="recompute-in-step")
    t = w.tensor() if w.tensor is not None else None
    if f.root is None or f.root.grad_fn is None or t is None or not _runs_later_in_loop(w.site, f.failed):
        return said          # the loss was built before the step in the same pass: one line above its use is no fix
    nodes = _nodes(f.root.grad_fn, 20_000)
    acc = next((fn for fn in nodes if is_leaf_node(fn) and getattr(fn, "variable", None) is t), None)
    if acc is None:
        return said
    inside = set(nodes)
    named = _named_in(f, inside)
    for path, u in named:
        made = made_at(u.grad_fn)
        if made is None or made[0] is None or made[1] > w.step or not _reaches_any(u.grad_fn, {acc}):
            continue                        # made after the step, or not through the changed weight
        # the line of the failing call's function that made it (`fake = netG(z)`, or `pert, adv = make_adv(G, x)`
        # when it was made in a helper), repeated above the first line of the step's loop that reads what it made
        fail = f.failed.site
        target = rf"\s*(?:[\w.]+\s*,\s*)*{re.escape(path)}(?:\s*,\s*[\w.]+)*\s*=[^=]"
        maker = next((s for s in (made[0], *made[3]) if s is not None and s.file == fail.file
                      and s.function == fail.function and re.match(target, s.code()) and _statement_end(s) == s.line),
                     None)
        loops = _loops_holding(w.site) if maker is not None else []
        if not loops or loops[-1].lineno <= maker.line <= _stmts(loops[-1])[-1].end_lineno:
            continue
        names = [n.strip() for n in maker.code().split("=", 1)[0].split(",")]
        first = next((n for n in range(_stmts(loops[-1])[0].lineno, fail.line + 1)
                      if any(re.search(rf"(?<![\w.]){re.escape(x)}(?![\w])", linecache.getline(fail.file, n))
                             for x in names)), None)
        if first is None:
            continue
        use = Site(fail.file, first, fail.function)
        return Option("if the later loss should use the updated weights",
                      f"Compute `{path}` again after {w.site.short()}, where this loss uses it: write "
                      f"`{maker.code()}` above {use.short()} (it was made at {maker.short()}, before the step).",
                      "The loss then runs through a new graph, made with the updated weights.",
                      (Edit(use.file, use.line, (_indent(use) + maker.code(),), insert=True),),
                      kind="recompute-in-step")
    return said


def _unnamed_cuts(f: Facts, nodes: list, acc) -> list:
    """Cuts through values no name holds any more (`state = features(next_obs)` kept from the step
    before, then rebound): a node made before the step and used by a node made after it, named by the
    line that assigned it and detached at the line of yours that uses it."""
    step = f.failed.step if f.failed is not None else None
    # the nodes made before the step that take the changed weight: what backward cannot run any more
    # (a fresh path to the weight, made after the step, is fine: it saved the weight as it is now)
    stale = {x for x in nodes if (m := made_at(x)) is not None and step is not None and m[1] < step
             and any(y is acc for y, _ in x.next_functions)}
    if not stale:
        return []
    found, tried = [], 0
    for c in nodes:
        mc = made_at(c)
        if mc is None or mc[1] != step:
            continue
        for n, _ in c.next_functions:
            mn = made_at(n) if n is not None else None
            if mn is None or mn[1] >= step or is_leaf_node(n):
                continue
            tried += 1
            if tried > 40:
                return found
            maker = next(((x, m.group(1)) for x in (mn[0], *(mn[3] if len(mn) > 3 else ())) if x is not None
                          and (m := re.match(r"\s*([A-Za-z_][\w.]*)\s*=[^=]", x.code()))), None)
            name = maker[1] if maker else None
            if name is not None and "." in name:     # kept on an object (`self.mask_e = ...` in __init__)
                if not _reaches_any(n, stale) or _reaches_any(f.root.grad_fn, stale, avoid={n}):
                    continue
                rhs = maker[0].code().split("=", 1)[1].strip()
                new = f"{name} = {_detached(rhs)}"
                kept = len({id(x.variable) for x in _reach([f.root.grad_fn], n, maker[0]) if is_leaf_node(x)})
                found.append((kept, -n._sequence_nr(), name, maker[0],
                              (new, Edit(maker[0].file, maker[0].line, (_indent(maker[0]) + new,)))))
                continue
            if name is None or not _reaches_any(n, stale) or _reaches_any(f.root.grad_fn, stale, avoid={n}):
                continue
            if not _reaches_leaf([f.root.grad_fn], n):
                continue
            if len({(made_at(y) or (None,))[0] for y in nodes if any(x is n for x, _ in y.next_functions)}) > 1:
                continue          # read at two lines of this loss: one detach would be half a cut
            uses = [u for u in (mc[0], *(mc[3] if len(mc) > 3 else ())) if u is not None]
            uses.sort(key=lambda u: u.function != maker[0].function)    # where the name was assigned first
            for use in uses:
                got = _detach_at_use(use, name)
                if got is not None:
                    kept = len({id(x.variable) for x in _reach([f.root.grad_fn], n, use) if is_leaf_node(x)})
                    found.append((kept, -n._sequence_nr(), name, use, got))
                    break
    return found


def _named_in(f: Facts, inside: set) -> list:
    """Your plain names for tensors of this graph (not the loss, not parameters), the 24 made last:
    each candidate costs a few bounded walks, so a namespace of thousands must not hold up the answer."""
    return sorted(((p, u) for p, u in f.named if u.grad_fn is not None and u.grad_fn in inside and u is not f.root
                   and not _is_param_like(u) and re.fullmatch(r"\w+", p)),
                  key=lambda pu: -pu[1].grad_fn._sequence_nr())[:24]


def _names_of(f: Facts, w) -> list:
    t = w.tensor() if w.tensor is not None else None
    out = []
    for path, u in f.named:
        if (t is not None and u is t) or (_storage(u) == w.storage and u.shape == w.shape):
            if path not in out:
                out.append(path)
    # the name the writing line itself uses first (`encoder_out[0][:, :, 0] = ...` writes `x`, as
    # `encoder_out[0]`): the user reads their own line
    code = w.site.code()
    if out:
        first = next(u for p, u in f.named if p == out[0])
        out.sort(key=lambda p: (0 if next(u for q, u in f.named if q == p) is first
                                and re.search(rf"(?<![\w.]){re.escape(p)}(?![\w])", code) else 1,
                                # the name the line writes (`out += shortcut(x)`, `out.add_(...)`) before one it reads,
                                # when it is the graph's own tensor (not a detached alias written through)
                                0 if re.match(rf"\s*{re.escape(p)}\s*(?:[-+*/@|&^]=|\[|\.\w+_\()", code)
                                and next(u for q, u in f.named if q == p).requires_grad else 1))
    return out[:4]


def rule_unknown(f: Facts) -> Finding | None:
    """Nothing recorded decides it: say what is unknown."""
    what = ("which call freed these buffers (they were freed before recording started)" if f.error == "second time"
            else "which line wrote in place (the write was not recorded)")
    return Finding("not-recorded", "The record does not say what happened.", unknown=[what],
                   confidence="depends")


# the rule ids a Finding may carry, in the order of RULES (one function may give one of two ids)
RULE_NAMES = ("read-after-backward", "grad-freed-graph", "running-total", "step-between-backwards", "closure-loss",
              "shared-graph", "carried-across-steps", "computed-once", "reused-after-backward",
              "inplace-optimizer-step", "inplace-write", "not-recorded")
RULES = [rule_read_after_backward, rule_grad_freed, rule_running_total, rule_step_between, rule_closure_reuses_loss,
         rule_shared_graph, rule_reused_after_backward, rule_kept_unnamed, rule_inplace_recorded, rule_unknown]


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:] if text else text


def _capitalised(found: Finding) -> Finding:
    """Each sentence starts with a capital (many start with a call's words: "the backward() call ...")."""
    found.cause = _cap(found.cause)
    found.evidence = [_cap(e) for e in found.evidence]
    found.how_to_tell = _cap(found.how_to_tell)
    for o in found.options:
        o.fix, o.consequence = _cap(o.fix), _cap(o.consequence)
    return found


def diagnose(f: Facts) -> Finding:
    for rule in RULES:
        found = rule(f)
        if found is not None:
            assert found.rule in RULE_NAMES, found.rule
            return _capitalised(found)
    raise AssertionError("rule_unknown always fires")


def report(finding: Finding, rec: Recorder) -> str:
    """The finding in plain sentences."""
    lines = ["why_backward (recorded): " + finding.cause]
    for e in finding.evidence:
        lines.append("  - " + e)
    if finding.culprits:
        lines.append("carried by: " + ", ".join(finding.culprits))
    if finding.options:
        if finding.confident and len(finding.options) == 1:
            lines.append("Fix: " + finding.options[0].fix + " " + finding.options[0].consequence)
        else:
            lines.append("The fix depends on what you meant:" if not finding.confident else "Fixes:")
            for i, o in enumerate(finding.options, 1):
                cond = (o.condition[0].upper() + o.condition[1:] + ": ") if o.condition else ""
                lines.append(f"  {i}. {cond}{o.fix} {o.consequence}")
        if finding.how_to_tell:
            lines.append("How to tell: " + finding.how_to_tell)
    for u in finding.unknown:
        lines.append(f"Unknown: {u}; {RECORD_HINT}.")
    lines.append(f"(rule: {finding.rule}; {rec.kept()})")
    return "\n".join(lines)
