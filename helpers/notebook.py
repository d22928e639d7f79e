"""Notebook plumbing: stable printing and warnings, versions, and checking live errors."""
from __future__ import annotations

import platform
import re
import sys
import warnings

import torch

from backward_twice._ipython import shell

_TRIGGERED = re.compile(r"\s*\(Triggered internally at [^)]*\)\.?")


def format_warning(message, category, filename, lineno, line=None) -> str:
    """`Category: message`, without the kernel's temp path or torch's C++ source location."""
    text = _TRIGGERED.sub("", str(message)).strip()
    return f"{category.__name__}: {text}\n"


def setup(seed: int = 0) -> None:
    """Call once at the top of every notebook: seeds, print options, stable warnings, short
    error reports, and a text description (alt) for every figure shown."""
    torch.manual_seed(seed)
    torch.set_printoptions(precision=4, sci_mode=False)
    warnings.formatwarning = format_warning
    warnings.simplefilter("always")   # a warning shows each time its cell runs, not once
    # torch.compile on CPython 3.13.0 exactly warns "Guards may run slower on Python 3.13.0. Consider
    # upgrading to Python 3.13.1+." from inside dynamo: a fact about the reader's interpreter patch
    # level, not about autograd, and it made notebook 12's compile cells differ on 3.13.0 only
    warnings.filterwarnings("ignore", message="Guards may run slower on Python", category=RuntimeWarning)
    short_errors()
    describe_figures()


def short_errors() -> None:
    """In IPython, an error shows as `ErrorType: message` only (IPython's "Minimal" mode, as
    `%xmode Minimal` sets it, without the magic's printed line): the lessons' errors are about
    the message, and a full traceback would show torch's internals and the install path of
    whoever ran the notebook last. `%xmode Context` brings the full traceback back."""
    ip = shell()
    if ip is not None:
        ip.InteractiveTB.set_mode("Minimal")


def describe_figures() -> None:
    """In IPython, every matplotlib figure's picture gets an `alt` text in its output metadata
    (helpers.plots.figure_alt): the static site shows it, a screen reader reads it. Registered
    by class name, so matplotlib is not imported until a figure is shown."""
    ip = shell()
    if ip is not None:
        ip.display_formatter.mimebundle_formatter.for_type_by_name(
            "matplotlib.figure", "Figure", _figure_alt_metadata)


def _figure_alt_metadata(fig, include=None, exclude=None):
    from helpers.plots import figure_alt

    return {}, {"image/png": {"alt": figure_alt(fig)}}   # the PNG itself: the inline backend


def versions() -> str:
    # package metadata, not imports: importing matplotlib (and its font cache) just to print
    # its version would slow the first cell of every notebook
    from importlib.metadata import version

    return (f"python {platform.python_version()} | torch {torch.__version__} | "
            f"matplotlib {version('matplotlib')} | graphviz (python) {version('graphviz')}")


_verified: tuple | None = None   # (cell, kind, stable_text, error) of the last check that passed


def _count_cells(shell) -> None:
    """Number every cell the shell runs, with its source, in `shell._backward_twice_cells`.

    IPython's own execution_count does not do: nbval runs cells with store_history=False,
    which leaves it (and `In`) unchanged. The pre_run_cell event fires for every cell."""
    if shell is None or hasattr(shell, "_backward_twice_cells"):
        return
    cells = shell._backward_twice_cells = [0, None]

    def count(info):
        cells[0] += 1
        cells[1] = info.raw_cell
    shell.events.register("pre_run_cell", count)


def _current_cell():
    """(number, source) of the IPython cell running now, or None outside IPython."""
    cells = getattr(shell(), "_backward_twice_cells", None)
    return tuple(cells) if cells else None


_count_cells(shell())   # at import: cells from here on are counted (the importing one is not)


def _ran_just_before(cell, earlier) -> bool:
    """True when `earlier` is this very cell's previous run, with no other cell in between."""
    return (cell is not None and earlier is not None and cell[1] is not None
            and earlier[0] == cell[0] - 1 and earlier[1] == cell[1])


def expect_raised(kind: type, stable_text: str) -> None:
    """Check that the cell just above really raised `kind` with `stable_text` in its message.

    The raising cell is tagged `raises-exception`, so Run All goes on past it;
    this check is what makes the notebook fail if the error ever stops happening.
    The error is consumed, so a later check cannot see the same one twice. Run again at
    once (Shift-Enter twice), the check remembers the error it verified and gives the same
    result; after any other cell has run, only a new error counts.
    """
    global _verified
    err = getattr(sys, "last_value", None)
    sys.last_value = None
    cell = _current_cell()
    if err is None and _verified is not None and _verified[1:3] == (kind, stable_text) \
            and _ran_just_before(cell, _verified[0]):
        err = _verified[3]
    _verified = None
    if err is None:
        raise AssertionError(f"expected the cell above to raise {kind.__name__}, but it raised nothing")
    if not isinstance(err, kind) or stable_text not in str(err):
        raise AssertionError(f"expected {kind.__name__} containing {stable_text!r}, "
                             f"got {type(err).__name__}: {str(err)[:200]}")
    _verified = (cell, kind, stable_text, err)
    print(f"raised {type(err).__name__}: {stable_text} ...")


def verified_error() -> BaseException | None:
    """The error the last `expect_raised` verified (it consumes `sys.last_value`), for a later cell
    that explains it: `why_backward_failed(verified_error())`. None when there is none."""
    return None if _verified is None else _verified[3]


# --------------------------------------------------------------------------------
# %%raises: a cell that raises on purpose, without stopping "Run All" anywhere.
def raises(line: str, cell: str) -> None:
    """Cell magic `%%raises`, written `%raises` as the first line of a cell that raises on purpose
    (tagged `raises-exception`; see raises_first_line).

    The cell's code runs as usual and the error torch raises is real; it is caught at the end of
    the cell and shown as the cell's error output (`ErrorType: message`, the kernel's `error`
    message, exactly what an uncaught error shows). The cell itself ends without failing, so
    "Run All" goes on in every front-end: JupyterLab honours the tag, but Colab and VS Code do not
    and would stop at the first error. nbval still sees and compares the error output (the tag
    tells it the error is expected), and `expect_raised(...)` in the next cell still checks it
    (`sys.last_value` is set as for an uncaught error). A cell that raises nothing shows nothing:
    the `expect_raised` check below it then fails."""
    ip = shell()
    code = ip.transform_cell(cell)     # IPython syntax (magics) inside the cell, as in a plain cell
    try:
        exec(compile(code, "<cell>", "exec"), ip.user_ns)   # the learner's own cell, in its namespace
    except Exception:
        ip.showtraceback(tb_offset=1)   # the error output; sets sys.last_value for expect_raised


def _raises_line(line: str) -> None:
    from IPython.core.error import UsageError

    raise UsageError("%raises works only as the first line of a cell (the cell that raises on purpose)")


def raises_first_line(lines: list) -> list:
    """IPython input transformer: a cell whose first line is `%raises` runs as `%%raises`. The
    notebooks write the line form because ruff lints line magics but skips cells with a cell magic."""
    if lines and lines[0].strip() == "%raises":
        return ["%%raises\n", *lines[1:]]
    return lines


def _register_raises(ip) -> None:
    if ip is None or not hasattr(ip, "register_magic_function"):
        return
    ip.register_magic_function(raises, magic_kind="cell", magic_name="raises")
    ip.register_magic_function(_raises_line, magic_kind="line", magic_name="raises")
    if raises_first_line not in ip.input_transformers_cleanup:
        ip.input_transformers_cleanup.append(raises_first_line)


_register_raises(shell())   # at import: `from helpers.notebook import setup` in the first cell
