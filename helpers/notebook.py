"""Notebook plumbing: stable printing and warnings, versions, and checking live errors."""
from __future__ import annotations

import platform
import re
import sys
import warnings

import torch

_TRIGGERED = re.compile(r"\s*\(Triggered internally at [^)]*\)\.?")


def format_warning(message, category, filename, lineno, line=None) -> str:
    """`Category: message`, without the kernel's temp path or torch's C++ source location."""
    text = _TRIGGERED.sub("", str(message)).strip()
    return f"{category.__name__}: {text}\n"


def setup(seed: int = 0) -> None:
    """Call once at the top of every notebook: seeds, print options, stable warnings, and a
    text description (alt) for every figure shown."""
    torch.manual_seed(seed)
    torch.set_printoptions(precision=4, sci_mode=False)
    warnings.formatwarning = format_warning
    warnings.simplefilter("always")   # a warning shows each time its cell runs, not once
    describe_figures()


def describe_figures() -> None:
    """In IPython, every matplotlib figure's picture gets an `alt` text in its output metadata
    (helpers.plots.figure_alt): the static site shows it, a screen reader reads it. Registered
    by class name, so matplotlib is not imported until a figure is shown."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    ip = get_ipython()
    if ip is not None:
        ip.display_formatter.mimebundle_formatter.for_type_by_name(
            "matplotlib.figure", "Figure", _figure_alt_metadata)


def _figure_alt_metadata(fig, include=None, exclude=None):
    from helpers.plots import figure_alt

    return {}, {"image/png": {"alt": figure_alt(fig)}}   # the PNG itself: the inline backend


def versions() -> str:
    # package metadata, not imports: importing matplotlib just to print its version costs ~0.3 s
    from importlib.metadata import version

    return (f"python {platform.python_version()} | torch {torch.__version__} | "
            f"matplotlib {version('matplotlib')} | graphviz (python) {version('graphviz')}")


def expect_raised(kind: type, stable_text: str) -> None:
    """Check that the cell just above really raised `kind` with `stable_text` in its message.

    The raising cell is tagged `raises-exception`, so Run All goes on past it;
    this check is what makes the notebook fail if the error ever stops happening.
    The error is consumed, so a later check cannot see the same one twice.
    """
    err = getattr(sys, "last_value", None)
    sys.last_value = None
    if err is None:
        raise AssertionError(f"expected the cell above to raise {kind.__name__}, but it raised nothing")
    if not isinstance(err, kind) or stable_text not in str(err):
        raise AssertionError(f"expected {kind.__name__} containing {stable_text!r}, "
                             f"got {type(err).__name__}: {str(err)[:200]}")
    print(f"raised {type(err).__name__}: {stable_text} ...")
