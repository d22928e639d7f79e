"""expect_raised: checks the error of the cell above, and gives the same result when run twice."""
import os
import subprocess
import sys
import textwrap

import pytest

from helpers import notebook
from helpers.notebook import expect_raised


@pytest.fixture
def cells(monkeypatch):
    """Pretend to be IPython: `run(source)` makes the next call see a new cell with that source."""
    state = {"n": 0, "src": None}
    monkeypatch.setattr(notebook, "_current_cell", lambda: (state["n"], state["src"]))
    monkeypatch.setattr(notebook, "_verified", None)
    monkeypatch.setattr(sys, "last_value", None, raising=False)

    def run(source, raised=None):
        state["n"] += 1
        state["src"] = source
        if raised is not None:
            sys.last_value = raised
    return run


CHECK = "expect_raised(RuntimeError, 'second time')"


def test_checks_the_error_of_the_cell_above(cells, capsys):
    cells("y.backward()", raised=RuntimeError("backward a second time"))
    cells(CHECK)
    expect_raised(RuntimeError, "second time")
    assert capsys.readouterr().out == "raised RuntimeError: second time ...\n"
    cells("x = 1")                                         # nothing raised
    cells("expect_raised(RuntimeError, 'x')")
    with pytest.raises(AssertionError, match="raised nothing"):
        expect_raised(RuntimeError, "x")
    cells("y.backward()", raised=ValueError("other"))
    cells(CHECK)
    with pytest.raises(AssertionError, match="got ValueError: other"):
        expect_raised(RuntimeError, "second time")


def test_run_twice_at_once_gives_the_same_result(cells, capsys):
    cells("y.backward()", raised=RuntimeError("backward a second time"))
    cells(CHECK)
    expect_raised(RuntimeError, "second time")
    cells(CHECK)                                           # Shift-Enter again on the same cell
    expect_raised(RuntimeError, "second time")
    cells(CHECK)                                           # and a third time
    expect_raised(RuntimeError, "second time")
    assert capsys.readouterr().out.count("raised RuntimeError: second time ...") == 3


def test_a_remembered_error_never_stands_in_for_another_cell(cells):
    cells("y.backward()", raised=RuntimeError("backward a second time"))
    cells(CHECK)
    expect_raised(RuntimeError, "second time")
    cells("y2.backward()  # no longer raises")             # another cell ran in between
    cells(CHECK)
    with pytest.raises(AssertionError, match="raised nothing"):
        expect_raised(RuntimeError, "second time")
    cells("z.backward()", raised=RuntimeError("backward a second time"))
    cells(CHECK)
    expect_raised(RuntimeError, "second time")
    cells("expect_raised(RuntimeError, 'second')")         # a different check right after
    with pytest.raises(AssertionError, match="raised nothing"):
        expect_raised(RuntimeError, "second")


def test_in_a_real_ipython_shell_a_check_run_twice_passes_twice():
    """JupyterLab and nbclient run cells with store_history=True, nbval with False (IPython's cell
    numbers then stand still): the re-run is recognised either way."""
    code = textwrap.dedent("""
        from IPython.core.interactiveshell import InteractiveShell
        sh = InteractiveShell.instance()
        for stored in (True, False):
            run = lambda src: sh.run_cell(src, store_history=stored)
            run("from helpers.notebook import expect_raised")
            r = run("1 / 0")
            print("RAISED:", not r.success)
            for _ in range(2):
                r = run("expect_raised(ZeroDivisionError, 'division by zero')")
                print("CHECK OK:", r.success)
            run("x = 1")
            r = run("expect_raised(ZeroDivisionError, 'division by zero')")
            print("CHECK OK:", r.success)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "NO_COLOR": "1", "TERM": "dumb"})
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith(("RAISED", "CHECK OK"))]
    assert lines == 2 * ["RAISED: True", "CHECK OK: True", "CHECK OK: True", "CHECK OK: False"], done.stdout
