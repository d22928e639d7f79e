"""Names for tensors: where in the user's namespace (plain names, containers, module attributes)
a tensor can be found, as `[(name, tensor)]`. Used by the diagnosis (helpers.diagnose, which
names the culprit) and by its pictures (helpers.diagnosis_picture, which label nodes).
Owned by the diagnosis: it decides where to look."""
from __future__ import annotations

import torch

MAX_NAMES = 20_000                              # namespace entries looked at, at most


def named_tensors(ns) -> list:
    """[(name, tensor)] for tensors in `ns`: plain names, items of tuples/lists (`hidden[0]`),
    and tensor attributes of nn.Module instances and their submodules (`model.rnn.hidden`).
    Reads `__dict__` only (no properties run), skips names starting with '_'."""
    out, modules = [], []

    def add(name, value):
        if isinstance(value, torch.Tensor):
            out.append((name, value))
        elif isinstance(value, (tuple, list)) and 0 < len(value) <= 16:
            for i, v in enumerate(value):
                if isinstance(v, torch.Tensor):
                    out.append((f"{name}[{i}]", v))
                elif isinstance(v, (tuple, list)) and 0 < len(v) <= 16:   # [(h, c)] of a stack
                    out.extend((f"{name}[{i}][{j}]", w) for j, w in enumerate(v)
                               if isinstance(w, torch.Tensor))

    for i, (name, value) in enumerate(list(ns.items())):
        if i >= MAX_NAMES:
            break
        if not isinstance(name, str) or name.startswith("_"):
            continue
        if isinstance(value, torch.nn.Module):
            modules.append((name, value))
        else:
            add(name, value)
    seen = set()
    for name, module in modules:
        try:
            subs = list(module.named_modules(prefix=name))
        except Exception:   # a user's module may do anything: skip it, never raise
            continue
        for sub_name, sub in subs:
            if id(sub) in seen:
                continue
            seen.add(id(sub))
            for attr, value in list(vars(sub).items()):
                if not attr.startswith("_"):
                    add(f"{sub_name}.{attr}", value)
            for kind in ("_buffers", "_parameters"):
                for attr, value in list(vars(sub).get(kind, {}).items()):
                    add(f"{sub_name}.{attr}", value)
    return out
