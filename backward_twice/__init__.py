"""Backward Twice: pictures of PyTorch's autograd graph before and after backward(), and a
diagnosis of "Trying to backward through the graph a second time" and in-place errors.

    import backward_twice as bt
    pic = bt.draw(loss)                      # the graph: saved tensors with their bytes, gradients
    with bt.watch(loss) as w:                # before and after a backward call, side by side
        loss.backward()

In a notebook or IPython, `%load_ext backward_twice` registers `%why_backward`; in a script,
`python -m backward_twice train.py [args]` prints the diagnosis after the traceback; in code,
`bt.explain(err)` explains a caught exception, and `with bt.record() as rec:` records what a
diagnosis needs (which line made each node, which call freed which buffers, which line wrote in
place). docs/own_code.md has the routes.

The public API is `__all__`; every other name is internal and may change. Names load lazily
(`backward_twice.<module>` is imported on first use): `import backward_twice` imports torch only
when a name that needs it is asked for, and Graphviz and matplotlib only when a picture is drawn.
"""
from __future__ import annotations

import importlib

__version__ = "0.2.0"

_WHERE = {
    # pictures of the autograd graph: draw, a before/after pair, a step-by-step backward
    "draw": "graph", "watch": "graph", "compare": "graph",
    "step_through": "stepper", "record_modules": "modules",
    "legend": "picture.palette", "shown_px": "picture.layout", "SCREEN_PX": "modules",
    # the diagnosis: of a caught exception, of the last error in IPython, and its pictures
    "explain": "diagnose", "why_backward_failed": "diagnose", "enable_magic": "diagnose",
    "record": "recorder", "Recorder": "recorder",
    "StepClock": "diagnosis_picture", "draw_steps": "diagnosis_picture",
    # reading the graph and its memory. `snapshot` is the module backward_twice.snapshot (the data a
    # walk records, and its formatters), never the function: importing that submodule binds its name
    # on this package, which would shadow a function of the same name. The walk is `take_snapshot`
    # (backward_twice.walk.snapshot).
    "take_snapshot": "walk", "snapshot": "snapshot",
    "saved_states": "snapshot", "fmt_bytes": "snapshot", "fmt_values": "snapshot",
    "BackwardTrace": "trace", "reachable_nodes": "trace", "where_backward_stops": "trace",
    "LiveSaved": "memory", "SavedBytes": "memory", "at_a_glance": "tensor_table",
}
__all__ = sorted(_WHERE)

_RENAMED = {"take_snapshot": "snapshot"}     # public name -> its name in its module


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'backward_twice' has no attribute {name!r}")
    module = importlib.import_module(f".{_WHERE[name]}", __name__)
    return module if _WHERE[name] == name else getattr(module, _RENAMED.get(name, name))   # a module by its own name


def __dir__():
    return __all__


def load_ipython_extension(ip) -> None:
    """`%load_ext backward_twice`: registers `%why_backward` (backward_twice.diagnose)."""
    from .diagnose import load_ipython_extension as load

    load(ip)
