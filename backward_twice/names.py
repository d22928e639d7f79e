"""Names for tensors: where in the user's namespace a tensor can be found, as `[(path, tensor)]`.
Used by the diagnosis (backward_twice.diagnose, which names the culprit) and by its pictures
(backward_twice.diagnosis_picture, which label nodes). Owned by the diagnosis: it decides where to look.

Where people keep tensors, and the paths reported for them:
- plain names: `h`;
- items of lists, tuples and deques: `memory[3][0]`, `hidden[0]`;
- values of dicts (str/int keys): `ema.shadow['w']`, `cache[2]`;
- attributes of plain objects and of nn.Modules, private ones included: `ema.shadow`,
  `model.rnn._hidden`; a module's parameters and buffers: `model.fc.weight`.

Never looked into: the interactive shell and what holds it (IPython's `exit`/`quit` keep the
shell, whose `_user_ns` is the namespace again, so a plain `h` would also be found as
`exit._ip._user_ns['h']`), its history (`In`, `Out`, and the `_`-names), modules, and any
dict that is a namespace (the one searched, or a module's globals: it holds `__builtins__`).
So every path reported starts at one of the user's own names.

Bounded: at most MAX_DEPTH steps below a namespace name, at most MAX_ITEMS items per container
(the newest first: the *last* items of a list or deque, where a training loop appends, so a long
buffer's recent entries are seen), at most MAX_VISITS objects in all. Reads `__dict__` and
container items only: no property, `__getattr__` or `__iter__` of a user class runs. Breadth
first, so the shortest path to a tensor comes first.
"""
from __future__ import annotations

import collections
import itertools
import types

import torch

MAX_NAMES = 20_000        # namespace entries looked at, at most
MAX_DEPTH = 6             # container/attribute steps below a namespace name
MAX_ITEMS = 64            # items looked at per container (the newest)
MAX_VISITS = 50_000       # objects looked at in all

# never looked into: they hold no user state, or too much of torch's own
_OPAQUE = (str, bytes, bytearray, int, float, complex, bool, type(None), type, types.ModuleType,
           types.FunctionType, types.BuiltinFunctionType, types.MethodType, range, slice,
           torch.optim.Optimizer, torch.dtype, torch.device)
_SKIP_ATTRS = frozenset({"_modules", "_parameters", "_buffers", "_non_persistent_buffers_set"})
# IPython's input and output history, under the names a user sees (`Out[3]` may hold a tensor the
# user printed): skipped when they are the shell's (`_ih`, `_oh` are the same lists)
_HISTORY = {"In": "_ih", "Out": "_oh"}
# objects of these packages (the shell, ExitAutocall `exit`/`quit`, the kernel) hold the namespace
_SHELL_PACKAGES = frozenset({"IPython", "ipykernel", "jupyter_client", "traitlets"})
_shell_types: dict = {}


def _is_shell_object(value) -> bool:
    """Whether `value`'s class, or a class it derives from, is of the interactive shell's packages."""
    cls = type(value)
    if cls not in _shell_types:
        _shell_types[cls] = any((getattr(c, "__module__", None) or "").split(".", 1)[0] in _SHELL_PACKAGES
                                for c in getattr(cls, "__mro__", (cls,)))
    return _shell_types[cls]


def _is_namespace(value, ns) -> bool:
    """Whether `value` is the namespace being searched or another one (a module's or a shell's
    globals, which hold `__builtins__`): never a place a user keeps tensors under a path."""
    return value is ns or (isinstance(value, dict) and dict.__contains__(value, "__builtins__"))


def _items(value):
    """[(suffix, item)] of a container, newest first and at most MAX_ITEMS; [] for other values."""
    if isinstance(value, dict):
        keys = [k for k in list(value.keys())[-MAX_ITEMS:] if isinstance(k, (str, int))]
        return [(f"[{k!r}]", value[k]) for k in reversed(keys)]
    if isinstance(value, (list, tuple, collections.deque)):
        n = len(value)
        newest = itertools.islice(reversed(value), MAX_ITEMS)     # a deque's too: no copy of it all
        return [(f"[{n - 1 - i}]", v) for i, v in enumerate(newest)]
    return []


def _attributes(value):
    """[(suffix, attribute)] of a plain object or module: its `__dict__` (private names included),
    a module's parameters and buffers; [] for values with no `__dict__`."""
    try:
        attrs = vars(value)
    except TypeError:
        return []
    if not isinstance(attrs, dict):     # a mappingproxy (a class) or something odd
        return []
    out = [(f".{k}", v) for k, v in list(attrs.items())[:MAX_ITEMS * 4]
           if isinstance(k, str) and k not in _SKIP_ATTRS and not k.startswith("__")]
    if isinstance(value, torch.nn.Module):
        for kind in ("_parameters", "_buffers", "_modules"):       # a Sequential's layer 2: [2]
            out += [(f"[{k}]" if kind == "_modules" and k.isdigit() else f".{k}", v)
                    for k, v in attrs.get(kind, {}).items() if v is not None]
    return out


def named_tensors(ns, every_path: bool = False) -> list:
    """[(path, tensor)] for the tensors reachable from namespace `ns` ({name: value}), breadth
    first (shortest paths first), each tensor once under its shortest path; every_path=True: a
    tensor kept in two places (a replay buffer and the batch sampled from it) under each path.
    Top-level names starting with '_' (IPython's output history) and the shell's `In`/`Out` are
    skipped; the shell and what holds it (`exit`, `quit`) are never looked into."""
    out, seen_tensors, seen = [], set(), set()
    level = []                                  # (path, value, the namespace name it hangs from)
    for i, (name, value) in enumerate(list(ns.items())):
        if i >= MAX_NAMES:
            break
        if name in _HISTORY and ns.get(_HISTORY[name], ns) is value:
            continue
        if isinstance(name, str) and not name.startswith("_"):
            level.append((name, value, name))
    visits = 0
    for _depth in range(MAX_DEPTH + 1):
        nxt = []
        for path, value, top in level:
            visits += 1
            if visits > MAX_VISITS:
                return out
            if isinstance(value, torch.Tensor):
                if every_path or id(value) not in seen_tensors:
                    seen_tensors.add(id(value))
                    out.append((path, value))
                continue
            # each object once (cycles), or with every_path once under each namespace name: the
            # transitions sampled into `batch` are still found in `memory.memory`
            key = (top, id(value)) if every_path else id(value)
            if isinstance(value, _OPAQUE) or key in seen or _is_namespace(value, ns) or _is_shell_object(value):
                continue
            seen.add(key)
            try:
                children = _items(value) or _attributes(value)
            except Exception:       # a user's object may do anything: skip it, never raise
                continue
            nxt.extend((path + suffix, child, top) for suffix, child in children)
        level = nxt
    return out
