"""nbval really catches drift: two deliberate mutations, each must fail the exact cell.

One pytest --nbval run (a subprocess, its own kernels) over two temporary copies of the
first notebook:

- stored/ : one committed output is altered (a number in a printed line), as if the
  notebook's behaviour had drifted from what is committed. Only that cell may fail.
- helper/ : the committed outputs are intact, but the kernel's helpers stop marking freed
  buffers (reading a freed saved tensor is reported "held"). This is injected into the
  kernel process only, through a sitecustomize.py on PYTHONPATH that patches
  backward_twice.walk right after it is imported, and only for kernels started in helper/.
  Every cell whose committed output shows a FREED buffer must fail. The patch reports to a
  file each time it turns a freed buffer into a held one (or that it found nothing to
  patch), and the test first requires those reports: a renamed function cannot make the
  mutation silently miss while the cells fail for another reason.

What nbval cannot catch, a notebook committed with cleared outputs (it passes: nothing to
compare), is caught by the guard in tests/test_committed_outputs.py, tested there.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import nbformat

from scripts import ROOT, notebooks

NOTEBOOK = notebooks()[0]

SITECUSTOMIZE = '''
# Injected by tests/test_mutation.py into nbval's kernels (never into the repository).
import importlib.abc, importlib.util, os, sys

if os.path.basename(os.getcwd()) == "helper":
    class _PatchWalk(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name != "backward_twice.walk":
                return None
            sys.meta_path.remove(self)
            spec = importlib.util.find_spec(name)
            run = spec.loader.exec_module

            def exec_module(module):
                run(module)
                mark = open(os.environ["BT_MUTATION_MARK"], "a")
                real = getattr(module, "_unreadable_state", None)
                if real is None:
                    mark.write("missing\\n")
                    mark.close()
                    return

                def never_freed(err):   # the mutation: freed buffers are reported held
                    state, note = real(err)
                    if state == "freed":
                        mark.write("mutated\\n")
                        mark.flush()
                        return "held", None
                    return state, note
                module._unreadable_state = never_freed

            spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, _PatchWalk())
'''


def _code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def _text(cell):
    out = []
    for o in cell.outputs:
        out.append("".join(o.get("text", "")))
        out.append("".join(o.get("data", {}).get("text/plain", "")))
    return "".join(out)


def test_nbval_fails_on_a_changed_output_and_on_a_changed_helper(tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    cells = _code_cells(nb)

    # mutation 1: a digit in the first plain printed line of an untagged cell
    target = next(i for i, c in enumerate(cells) if not c.metadata.get("tags")
                  and any(o.output_type == "stream" and re.search(r"\d", "".join(o.text)) for o in c.outputs))
    stream = next(o for o in cells[target].outputs if o.output_type == "stream")
    text = "".join(stream.text)
    digit = re.search(r"\d", text)
    stream.text = text[:digit.start()] + str((int(digit.group()) + 1) % 10) + text[digit.end():]
    (tmp_path / "stored").mkdir()
    nbformat.write(nb, tmp_path / "stored" / NOTEBOOK.name)

    # mutation 2: the notebook intact, the helper changed inside the kernel
    (tmp_path / "helper").mkdir()
    shutil.copy(NOTEBOOK, tmp_path / "helper" / NOTEBOOK.name)
    freed_cells = {i for i, c in enumerate(_code_cells(nbformat.read(NOTEBOOK, as_version=4)))
                   if "FREED" in _text(c) and "nbval-ignore-output" not in c.metadata.get("tags", [])
                   and "legend(" not in c.source}      # the legend's key says FREED whatever the walk reads
    assert freed_cells, "the first notebook shows no freed buffer: pick another mutation"

    inject = tmp_path / "inject"
    inject.mkdir()
    (inject / "sitecustomize.py").write_text(SITECUSTOMIZE)
    shutil.copy(ROOT / "conftest.py", tmp_path / "conftest.py")   # SVG is not compared
    mark = tmp_path / "mutation.log"
    env = dict(os.environ, BT_MUTATION_MARK=str(mark), PYTHONPATH=os.pathsep.join(
        [str(inject), str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-c", os.devnull, "--rootdir", str(tmp_path),
         "-p", "helpers._pytest_startup", "-p", "no:cacheprovider", "-p", "no:xdist", "-q", "-rf",
         "--nbval", "--nbval-current-env", "--nbval-sanitize-with", str(ROOT / "tests" / "nbval_sanitize.cfg"),
         "stored", "helper"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    # first: the mutation really ran inside the kernel
    reports = mark.read_text().split() if mark.exists() else []
    assert "missing" not in reports, ("the mutation found no backward_twice.walk._unreadable_state to patch (renamed?): "
                                      "update SITECUSTOMIZE in tests/test_mutation.py")
    assert reports.count("mutated") > 0, ("the mutation never turned a freed buffer into a held one inside the "
                                          "kernel, so the failures below would prove nothing:\n" + done.stdout[-2000:])
    failed = re.findall(r"^FAILED (\w+)/\S+::Cell (\d+)", done.stdout, re.M)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    assert {int(n) for d, n in failed if d == "stored"} == {target}, done.stdout[-3000:]
    # every cell that shows a freed buffer fails (a cell that relies on freed detection,
    # like the stepper's, may fail too, with an error instead of a changed output)
    assert freed_cells <= {int(n) for d, n in failed if d == "helper"}, done.stdout[-3000:]

