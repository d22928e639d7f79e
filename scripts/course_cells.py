"""Apply the course-wide cell changes to every notebook (idempotent: run it again after any merge).

    python -m scripts.course_cells            # rewrite notebooks/NN_*.ipynb in place (sources and metadata only)
    python -m scripts.course_cells --check    # exit 1 if a notebook lacks one of the changes (tests/test_course_cells.py)

What it does, to the source and metadata of the cells concerned only (cell ids, outputs and every
other cell untouched; running it twice changes nothing the second time):
1. the first code cell starts with INSTALL_BLOCK: on Colab (or any Jupyter without the course
   installed) it installs the distribution `backward-twice` (the tool and the course's `helpers`)
   with pip, keeping the platform's own torch (pyproject.toml asks for torch>=2.13); where
   `backward_twice` imports, it does nothing. The source
   is COURSE_PIP, or the environment variable BACKWARD_TWICE_PIP at run time (a local path in
   the zero-install test, scripts/zero_install_check); the cell is folded (setup plumbing: its
   output, the versions, stays in sight);
2. every cell tagged `raises-exception` starts with the line `%raises` (helpers/notebook.py; a
   line magic for ruff, which skips cells with cell magics, made the cell magic `%%raises` by
   an IPython input transformer): the error is raised for real and shown as the cell's error output, and
   Run All goes on in Colab and VS Code too (they ignore the tag); nbval still compares it;
3. every exercise check cell (`check("N.M", ...)`) is folded (`jupyter.source_hidden`): its hint
   is not in sight before a first wrong answer;
4. a check call without `explain=` gets EXPLAIN's sentence for its exercise: printed after a right
   answer, and with the answer when the course edition offers it after three wrong ones
   (helpers.exercise). Each restates the hint with the answer the cell computes; the student
   edition drops it (scripts/student.py);
5. names the folded first cell imported for visible cells are imported where a learner sees them:
   `expect_raised` (used by visible cells after a live error) moves from the folded version cell to
   the first visible core code cell after it, so no visible cell uses a name bound only in folded
   code (tests/test_self_contained.py).
"""
from __future__ import annotations

import argparse
import ast
import re
import sys

import nbformat

from scripts import ROOT, notebooks, skeleton

# Where Colab installs the course from. The repository's public address goes here (then re-run
# this script); until then, BACKWARD_TWICE_PIP must be set where the notebooks run without it.
# The repository's public address, defined here once: `python -m scripts.course_cells` writes it into
# the notebooks' install cells, the README's Binder badge and the docs (tests/test_course_cells.py
# checks that they agree). Publishing or forking the course: set it here, then run that command.
REPOSITORY = "OWNER/backward-twice"
COURSE_PIP = f"backward-twice @ git+https://github.com/{REPOSITORY}"
# the files besides the notebooks that name the repository (github.com/..., mybinder.org/v2/gh/...,
# colab.research.google.com/github/...)
ADDRESS_FILES = ("README.md", "docs/install.md", "docs/own_code.md", "notebooks/README.md")
ADDRESS = r"(github\.com/|mybinder\.org/v2/gh/|colab\.research\.google\.com/github/)[A-Za-z0-9_.-]+/backward-twice\b"
INSTALL_MARK = "# Colab, or a Jupyter without this course installed:"
INSTALL_BLOCK = f"""{INSTALL_MARK} install it (the tool `backward_twice`, the
# course's `helpers`, graphviz, pygraphviz); the platform's own torch is kept (torch>=2.13). Where
# `backward_twice` imports, this does nothing (a `helpers.py` of your own would not count).
import importlib, importlib.util, os
if importlib.util.find_spec("backward_twice") is None:
    course = os.environ.get("BACKWARD_TWICE_PIP", "{COURSE_PIP}")
    %pip install --quiet {{course}}
    importlib.invalidate_caches()
"""
INSTALL_END = "    importlib.invalidate_caches()\n"
RAISES_MAGIC = "%raises"
VERSION_IMPORT = "from helpers.notebook import setup, versions"
VISIBLE_IMPORT = "from helpers.notebook import expect_raised\n"

# Why each answer is right, in the words of its hint and section (10.2's comes from the diagnosis).
EXPLAIN = {
    "0.1": "3: sin saves its input x; the product saves both factors (sin x and x); sum saves no tensor.",
    "0.2": "True: backward frees the saved tensors, not the nodes: all 3 ops are still in the graph.",
    "0.3": "MulBackward0: the engine starts at the output; SumBackward0 runs first and saved nothing, then "
           "MulBackward0 runs and releases its saved tensors right after.",
    "1.1": "1: d.backward() frees what the nodes on d's own path saved; ExpBackward0 is not on it, so the "
           "tensor it saved is still held.",
    "1.2": "x + 1, -x, x.mean() and x[0] save no tensor, so nothing is freed and a second backward works; "
           "* 3 and / 2 save the constant, exp and relu their result.",
    "1.3": "0 bytes: x * x saved x twice, and x is a leaf you still hold; retain_graph=True keeps alive no "
           "buffer that would otherwise be freed (section 7).",
    "2.1": "{'cat'}: loss_car's path runs through the trunk and the car head only; the cat head's "
           "parameters keep .grad None (not zero).",
    "2.2": "4: backward frees the saved tensors on its own path only; the car head's are not on loss_cat's path.",
    "2.3": "False: after loss1.backward(), model2's .grad is None, and SGD skips a parameter whose .grad is "
           "None: nothing loss2 needs was changed in place.",
    "3.1": "6: one ReLU per layer, 3 layers, and each of the two backward calls runs the whole trunk.",
    "3.2": "True: model1's second Linear saved its weight, both losses reach it, so opt.step() changed it in "
           "place before loss2.backward() needed it.",
    "3.3": "129.5 KiB: loss1.backward() frees only the nodes it runs, so head 2's saved tensors survive: "
           "((128 x 256 + 256) x 4 + 128 x 4) bytes.",
    "4.1": "{'x', 'h'}: x is a leaf; h called retain_grad() before backward(); g called it only after, and "
           "loss is not a leaf.",
    "4.2": "[10, 20]: d loss/dy = y, and retain_grad follows y to its latest version, after mul_(5).",
    "4.3": "[50, 100]: the hook stays with y's value before mul_(5); d loss/dy_old = 5 x y_new.",
    "5.1": "18: 3 backwards, each adding dy/dx = 2x = 6 into x.grad.",
    "5.2": "0.25 = 2/8: each of the 2 samples counts 1/8, as in the full batch.",
    "5.3": "45: 27 (y' = 3x^2) + 18 (y'' = 6x), added into the same x.grad.",
    "6.1": "[1, 0, 30]: v_j x dy_j/dx_j = [1 x 1, 0 x 2, 10 x 3].",
    "6.2": "[3, 2, 1]: z0 is in all three cumulative sums c_i, z1 in two, z2 in one.",
    "7.1": "4: D(fake) is computed from G's output, so backward from d_loss reaches every one of G's 4 "
           "parameters.",
    "7.2": "4: a call that frees the graph is fine only when no call comes after it: only the last of the 5 may.",
    "7.3": "8: each loss's backward runs every conv below it: 1 (style1) + 2 (style2) + 2 (content2) + 3 (style3).",
    "8.1": "120: the call for the i-th weight from the bottom runs the top 11 - i layers (2 nodes each) and "
           "the sum: 2 x (10 + 9 + ... + 1) + 10.",
    "8.2": "1: detach() cuts total off every graph, but the variable loss still refers to the latest graph, "
           "which retain_graph=True kept.",
    "8.3": "True: e.backward() frees only the nodes it runs; d's ExpBackward0 is not one of them, so what it "
           "saved stays alive.",
    "9.1": "3: backward frees saved tensors, not nodes: the 3 ops between a and d are still there.",
    "9.2": "False: a second backward needs the tensors PowBackward0 saved, which the first one freed; y's "
           ".grad has nothing to do with it.",
    "10.1": "9: step 1 multiplied a zero state that needs no gradient; each of the 9 later steps multiplied "
            "the previous v, and the retained graph links them all.",
    "10.3": "1.875 = (3 + 7 x 6) / 24: every 3 time steps an update re-runs the last 6 (the first only 3).",
    "11.1": "detach(): it cuts the history carried from the last step; retain_graph=True only keeps saved "
            "tensors (the graph still grows) and retain_grad() only keeps a .grad.",
}


def with_install_block(source: str) -> str:
    """`source` with INSTALL_BLOCK at its top, replacing an earlier version of the block."""
    if source.startswith(INSTALL_MARK):
        end = source.find(INSTALL_END)
        if end < 0:
            raise ValueError("the install block's last line is missing: remove the block by hand, then re-run")
        source = source[end + len(INSTALL_END):]
    return INSTALL_BLOCK + source


def with_raises_magic(source: str) -> str:
    if source.lstrip().startswith(("%raises", "%%raises")):
        return source.replace("%%raises", RAISES_MAGIC, 1)
    return f"{RAISES_MAGIC}\n{source}"


def with_explanation(source: str) -> str:
    """`source` with explain=EXPLAIN[name] added to its check(...) call, unless it has one."""
    call = next((n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call)
                 and getattr(n.func, "id", None) == "check" and n.args), None)
    if call is None or any(k.arg == "explain" for k in call.keywords) or call.args[0].value not in EXPLAIN:
        return source
    lines = source.splitlines(keepends=True)
    end = sum(len(line) for line in lines[:call.end_lineno - 1]) + call.end_col_offset - 1   # its ")"
    return f"{source[:end]},\n      explain={EXPLAIN[call.args[0].value]!r}{source[end:]}"


def with_visible_import(nb, first: int, sk) -> list:
    """Step 5: the version cell (index `first`) stops importing expect_raised; the first visible core
    code cell after it imports it, when any cell uses it. Returns the indices of the cells changed."""
    version = nb.cells[first]
    old = VERSION_IMPORT + ", expect_raised"
    uses = [i for i, c in enumerate(nb.cells) if i > first and c.cell_type == "code" and "expect_raised(" in c.source]
    if not uses:
        return []
    target = next(i for i, c in enumerate(nb.cells) if i > first and c.cell_type == "code"
                  and sk.core(i) and not c.get("metadata", {}).get("jupyter", {}).get("source_hidden"))
    if target > uses[0]:
        raise ValueError(f"cell {uses[0]} uses expect_raised before the first visible core code cell ({target})")
    changed = []
    if old in version.source:
        version.source = version.source.replace(old, VERSION_IMPORT)
        changed.append(first)
    if VISIBLE_IMPORT.strip() not in nb.cells[target].source:
        nb.cells[target].source = VISIBLE_IMPORT + nb.cells[target].source
        changed.append(target)
    return changed


def apply(nb) -> list:
    """Apply the five changes to `nb` in place; return what changed, one line per cell."""
    changed = []
    sk = skeleton.classify(nb)
    first = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        before = (cell.source, repr(cell.metadata.get("jupyter")))
        if i == first:
            cell.source = with_install_block(cell.source)
            cell.metadata.setdefault("jupyter", {})["source_hidden"] = True   # plumbing: its output says the versions
        if "raises-exception" in skeleton.tags(cell):
            cell.source = with_raises_magic(cell.source)
        if sk.kind[i] == "check":
            cell.metadata.setdefault("jupyter", {})["source_hidden"] = True
            cell.source = with_explanation(cell.source)
        if (cell.source, repr(cell.metadata.get("jupyter"))) != before:
            changed.append(f"cell {i} ({cell.get('id')})")
    changed += [f"cell {i} ({nb.cells[i].get('id')}): expect_raised imported in sight"
                for i in with_visible_import(nb, first, sk)]
    return changed


def with_address(text: str) -> str:
    """`text` with every address of the repository (GitHub, Binder, Colab) pointing at REPOSITORY."""
    return re.sub(ADDRESS, lambda m: f"{m.group(1)}{REPOSITORY}", text)


def stale_addresses() -> list[str]:
    """The files outside the notebooks whose repository address is not REPOSITORY's."""
    return [name for name in ADDRESS_FILES
            if (ROOT / name).is_file() and with_address((ROOT / name).read_text()) != (ROOT / name).read_text()]


def main(argv) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 if a notebook needs a change")
    args = ap.parse_args(argv)
    stale = 0
    for path in notebooks():
        nb = nbformat.read(path, as_version=4)
        changed = apply(nb)
        if changed and args.check:
            stale += 1
            print(f"{path.name}: needs `python -m scripts.course_cells` ({', '.join(changed)})")
        elif changed:
            nbformat.write(nb, path)
            print(f"{path.name}: {len(changed)} cell(s) updated")
    for name in stale_addresses():
        if args.check:
            stale += 1
            print(f"{name}: names another repository than {REPOSITORY}: run `python -m scripts.course_cells`")
        else:
            (ROOT / name).write_text(with_address((ROOT / name).read_text()))
            print(f"{name}: repository address set to {REPOSITORY}")
    if args.check and not stale:
        print(f"course cells: all {len(notebooks())} notebooks up to date")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
