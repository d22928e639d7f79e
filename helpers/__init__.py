"""Backward Twice's helpers. The public API is `__all__`: what the notebooks import, and what a
learner may call on their own graphs; every other name is internal and may change.

    from helpers import draw, watch, compare, step_through, why_backward_failed

Names load lazily (`helpers.<module>` is imported on first use), so importing one helper does
not import torch, Graphviz and matplotlib for the others.
"""
from __future__ import annotations

import importlib

_WHERE = {
    # pictures of the autograd graph: draw, a before/after pair, a step-by-step backward
    "draw": "graph", "watch": "graph", "compare": "graph",
    "step_through": "stepper", "record_modules": "modules",
    "StepClock": "diagnosis_picture", "draw_steps": "diagnosis_picture", "why_backward_failed": "diagnose",
    "enable_magic": "diagnose", "legend": "picture.palette",
    "shown_px": "picture.layout", "SCREEN_PX": "modules",
    # reading the graph and its memory. `snapshot` is the module helpers.snapshot (the data a walk
    # records, and its formatters), never the function: importing that submodule binds its name on
    # this package, which would shadow a function of the same name. The walk is `take_snapshot`
    # (helpers.walk.snapshot).
    "take_snapshot": "walk", "snapshot": "snapshot",
    "saved_states": "snapshot", "fmt_bytes": "snapshot", "fmt_values": "snapshot",
    "BackwardTrace": "trace", "reachable_nodes": "trace", "where_backward_stops": "trace",
    "LiveSaved": "memory", "SavedBytes": "memory", "at_a_glance": "tensor_table",
    # the course's notebooks: setup, exercises, fact-check tables, plots, the multi-task net
    "setup": "notebook", "versions": "notebook", "expect_raised": "notebook", "verified_error": "notebook",
    "format_warning": "notebook",
    "check": "exercise", "verdict_table": "factcheck", "Ledger": "factcheck", "QUOTES": "factcheck",
    "bars": "plots", "lines": "plots", "series_colours": "plots", "line_panels": "plots", "timeline": "plots",
    "CatCarNet": "multitask", "make_images": "multitask", "show_images": "multitask", "grads": "multitask",
    "grad_report": "multitask", "accuracy": "multitask",
    # notebook 13: DistributedDataParallel on the CPU (run a function on N processes; the steps they run,
    # a module of its own so that the worker processes can import them)
    "run": "distributed", "WorkerError": "distributed", "last_pids": "distributed", "pids_alive": "distributed",
    "ddp_steps": "ddp_steps",
}
__all__ = sorted(_WHERE)


_RENAMED = {"take_snapshot": "snapshot"}     # public name -> its name in its module


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'helpers' has no attribute {name!r}")
    module = importlib.import_module(f".{_WHERE[name]}", __name__)
    return module if _WHERE[name] == name else getattr(module, _RENAMED.get(name, name))   # a module by its own name


def __dir__():
    return __all__
