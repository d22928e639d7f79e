"""The Backward Twice course's own helpers: notebook setup, exercises, fact-check tables, plots,
the multi-task nets, and the distributed runner of notebook 13. The tool the notebooks teach
(pictures, the diagnosis) is the package `backward_twice`, which never imports this one.

    from helpers.notebook import setup, expect_raised
    from helpers.exercise import check

Names load lazily (`helpers.<module>` is imported on first use).
"""
from __future__ import annotations

import importlib

_WHERE = {
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


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'helpers' has no attribute {name!r}")
    module = importlib.import_module(f".{_WHERE[name]}", __name__)
    return module if _WHERE[name] == name else getattr(module, name)


def __dir__():
    return __all__
