"""Write the student edition of every notebook: solutions removed, exercise answers not shown.

    bash scripts/student                  # build/student/: outputs kept (pictures to read), check outputs cleared
    bash scripts/student --clear-all      # every output cleared
    bash scripts/student --kit            # build/student-kit/: a folder and a .zip to hand to a class
    python scripts/student.py [--out DIR] [--clear-all] [notebooks ...]

For each notebook (read at run time through scripts/skeleton.py):
- the cells under `## Solutions` are removed; a one-line note takes the heading's place;
- each exercise check cell (`check("N.M", ...)`) is replaced by one that compares the learner's
  answer with a `Sealed` digest of the right answer (helpers/exercise.py), made here from the
  solution cell's literal (which the course notebook checks against the real run): the student's
  kernel never computes nor holds the right answer, and no picture of it is drawn; the hint is
  kept, an `explain=` is not; the cell is folded and its output cleared;
- every other output is kept, unless --clear-all.
Cells carry nbgrader's metadata (schema 3) where it fits: the answer cells `answer_N_M = ...`
are its "autograded answer" cells, the check cells its read-only graded cells (`locked`, 1 point),
each with a `grade_id`. `--nbgrader DIR` also writes the teacher's version in nbgrader's format
(`nbgrader_source()`); `bash scripts/nbgrader_check` releases it with nbgrader itself and checks
the result equals this edition.
notebooks/README.md (the contents page the navigation links to) is copied alongside.

`--kit` (kit()) writes what a class of students is handed: build/student-kit/backward-twice-student/
(and a .zip of it) holding the student edition in notebooks/, the tool `backward_twice` and the
course's `helpers` (the Python packages the notebooks import, and nothing else of the repository:
no tests, no scripts, no course notebooks, so no solutions), requirements.txt and the package
metadata (pyproject.toml) so that `pip install -r requirements.txt` installs both, and START_HERE.md
with the steps (docs/teaching.md, "Handing it out").
"""
from __future__ import annotations

import argparse
import ast
import copy
import pathlib
import shutil
import sys

import nbformat

from helpers.exercise import Sealed
from scripts import BUILD, lengths, nav, skeleton  # nav: notebook order

DEFAULT_OUT = BUILD / "student"
KIT_OUT = BUILD / "student-kit"
KIT_NAME = "backward-twice-student"
KIT_PACKAGES = ("backward_twice", "helpers")
START_HERE = """# Backward Twice: the student edition

The notebooks of the course, with the tool `backward_twice` and the course's `helpers`. The
exercises have no solutions here: each check cell tells you whether your answer is right, and
gives a hint if not.

1. Python 3.11 or newer. In this folder, make an environment and install what the notebooks need
   (once; the download is about 2.8 GB on Linux, with torch's CUDA
   libraries, about 0.2 GB on macOS and Windows: docs/install.md of the course):

       python3 -m venv .venv
       source .venv/bin/activate          # Windows: .venv\\Scripts\\activate
       pip install -r requirements.txt    # its last line installs backward_twice and helpers from here

2. Open the notebooks and start with 00:

       jupyter lab notebooks/

   Run each cell in order (Shift+Enter). Before a cell that may stop with an error, predict what
   it does, then run it.

Already have torch 2.13 or newer (a JupyterHub, your own environment)? `pip install .` in this
folder installs only the tool and the helpers. No internet after the install is needed.
"""
CHECK_POINTS = 1          # nbgrader points of an exercise's check cell (its hidden test asserts the answer)
SOLUTIONS_NOTE = ("## Solutions\n"
                  "Not in the student edition. Run each check cell after your prediction: it tells you "
                  "whether you are right and gives a hint if not.")


def grade_id(cell, kind) -> str:
    if kind == "answer":
        return skeleton.ANSWER.search(cell.source).group(1)
    return "check_" + skeleton.CHECK.search(cell.source).group(1).replace(".", "_")


def nbgrader_meta(kind, gid, points=None) -> dict:
    meta = {"grade": points is not None, "grade_id": gid, "locked": kind != "answer",
            "schema_version": 3, "solution": kind == "answer", "task": False}
    if points is not None:
        meta["points"] = points
    return meta


def without_solutions(markdown: str) -> str:
    """The text before the '## Solutions' heading (a cell may hold the summary above it)."""
    lines = markdown.splitlines(keepends=True)
    cut = next(k for k, _, text in lengths.headings(lines)         # the rule lengths and skeleton use
               if lengths.folded_kind(text) == "solution")
    head = "".join(lines[:cut]).rstrip()
    return head + "\n\n" if head else ""


def cells_without_solutions(nb, sk):
    """(kind, cell) for every cell of `nb` but the solution cells; the `## Solutions` heading
    keeps only its text above the solutions, then SOLUTIONS_NOTE (edits the cells in place)."""
    for i, cell in enumerate(nb.cells):
        kind = sk.kind[i]
        if kind == "solution":
            continue
        if kind == "solutions-heading":
            cell.source = without_solutions(cell.source) + SOLUTIONS_NOTE
        yield kind, cell


def constant(source: str):
    """The value of a solution's literal answer: constants, sets, lists, tuples and arithmetic on
    numbers (`((128 * 256 + 256) * 4 + 128 * 4) / 1024`); anything else is a ValueError."""
    tree = ast.parse(source, mode="eval")
    allowed = (ast.Expression, ast.Constant, ast.Set, ast.List, ast.Tuple, ast.BinOp, ast.UnaryOp,
               ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Pow, ast.USub, ast.UAdd, ast.Load)
    bad = [type(n).__name__ for n in ast.walk(tree) if not isinstance(n, allowed)]
    if bad:
        raise ValueError(f"a solution answer must be a literal, not {source!r} ({bad[0]})")
    return eval(compile(tree, "<solution>", "eval"), {"__builtins__": {}})


def sealed_check_source(cell, answers) -> str:
    """The student edition's check cell: the learner's answer against a Sealed digest, with the
    course cell's hint; no experiment, no picture, no explanation (it would tell the answer)."""
    call = next(n for n in ast.walk(ast.parse(cell.source)) if isinstance(n, ast.Call)
                and getattr(n.func, "id", None) == "check")
    name, var = call.args[0].value, ast.get_source_segment(cell.source, call.args[1])
    sealed = Sealed.of(name, constant(answers[name]))
    keywords = "".join(f",\n      {k.arg}={ast.get_source_segment(cell.source, k.value)}" for k in call.keywords
                       if k.arg == "hint")   # not explain=: it would tell the answer to whoever unfolds the cell
    return ("from helpers.exercise import Sealed, check\n"
            f'check("{name}", {var}, {sealed!r}{keywords})')


def student_notebook(nb, clear_all=False):
    """A copy of `nb` as students get it."""
    answers = solution_answers(nb)
    nb = copy.deepcopy(nb)
    sk = skeleton.classify(nb)
    cells = []
    for kind, cell in cells_without_solutions(nb, sk):
        if kind == "check":
            cell.source = sealed_check_source(cell, answers)
            cell.metadata.setdefault("jupyter", {})["source_hidden"] = True
        if kind in ("answer", "check"):
            cell.metadata["nbgrader"] = nbgrader_meta(kind, grade_id(cell, kind), CHECK_POINTS if kind == "check" else None)
        if cell.cell_type == "code" and (clear_all or kind == "check"):
            cell.outputs, cell.execution_count = [], None
        cell.metadata.pop("execution", None)
        cells.append(cell)
    nb.cells = cells
    nb.metadata.pop("widgets", None)
    return nb


# ------------------------------------------------------------------------------ nbgrader
def solution_answers(nb) -> dict:
    """{"4.1": 'source of the right answer'} from the check(...) calls of the solution cells."""
    sk = skeleton.classify(nb)
    return {name: arg for _, cell in sk.cells("solution") for name, arg in skeleton.check_calls(cell.source)}


def nbgrader_source(nb):
    """The teacher's version in nbgrader's format, for `nbgrader generate_assignment`:
    answer cells hold the right answer in a solution region (`answer_N_M = ...` stays above it,
    so the released cell is ours again); check cells are graded cells (1 point) whose hidden
    test asserts the answer; the `## Solutions` cells are dropped (their answers moved up)."""
    answers = solution_answers(nb)
    nb = student_notebook(nb, clear_all=True)     # the student edition, sealed check cells included
    sk = skeleton.classify(nb)
    by_answer = {}
    for _, cell in sk.cells("check"):
        name = skeleton.CHECK.search(cell.source).group(1)
        by_answer["answer_" + name.replace(".", "_")] = name
    cells = []
    for kind, cell in cells_without_solutions(nb, sk):
        if kind == "answer":
            var = grade_id(cell, kind)
            name = by_answer.get(var)
            if name in answers:
                cell.source = (f"{cell.source.rstrip()}\n### BEGIN SOLUTION\n{var} = {answers[name]}\n"
                               "### END SOLUTION")
            cell.metadata["nbgrader"] = nbgrader_meta(kind, var)
        elif kind == "check":
            name = skeleton.CHECK.search(cell.source).group(1)
            var = "answer_" + name.replace(".", "_")
            sealed = Sealed.of(name, constant(answers[name]))
            cell.source += ("\n### BEGIN HIDDEN TESTS\n"
                            f"assert {sealed!r}.matches({var}), 'Exercise {name}: not the right answer'\n"
                            "### END HIDDEN TESTS")
            cell.metadata["nbgrader"] = nbgrader_meta(kind, grade_id(cell, kind), CHECK_POINTS)
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        cells.append(cell)
    nb.cells = cells
    return nb


def release_differences(release_dir: pathlib.Path, student_dir: pathlib.Path) -> list:
    """Where nbgrader's released notebooks differ from our --clear-all student edition, in the
    source of any cell (trailing whitespace aside: nbgrader's empty stub leaves a newline)."""
    found = []
    for ours in sorted(student_dir.glob("*.ipynb")):
        theirs = release_dir / ours.name
        if not theirs.is_file():
            found.append(f"{ours.name}: not released")
            continue
        a = [(c.cell_type, c.source.rstrip()) for c in nbformat.read(theirs, as_version=4).cells]
        b = [(c.cell_type, c.source.rstrip()) for c in nbformat.read(ours, as_version=4).cells]
        if len(a) != len(b):
            found.append(f"{ours.name}: {len(a)} cells released, {len(b)} in the student edition")
        found += [f"{ours.name} cell {i}: {x[1][:60]!r} != {y[1][:60]!r}" for i, (x, y) in enumerate(zip(a, b)) if x != y]
    return found


# ------------------------------------------------------------------------------ writing
def build(out=DEFAULT_OUT, clear_all=False, only=None, nbgrader=None) -> list:
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    written = []
    for path in nav.notebooks():
        if only and path.name not in only:
            continue
        nb = nbformat.read(path, as_version=4)
        nbformat.write(student_notebook(nb, clear_all), out / path.name)
        written.append(out / path.name)
        if nbgrader:
            nbgrader.mkdir(parents=True, exist_ok=True)
            nbformat.write(nbgrader_source(nb), nbgrader / path.name)
    shutil.copyfile(nav.NB_DIR / "README.md", out / "README.md")
    return written


def _pyproject_for_kit() -> str:
    """The repository's pyproject.toml up to its tool settings: the package metadata (name,
    dependencies, which packages), without the test and lint configuration."""
    text = (nav.ROOT / "pyproject.toml").read_text()
    cut = text.find("[tool.pytest")
    return text[:cut].rstrip() + "\n" if cut >= 0 else text


def kit(out=KIT_OUT, clear_all=False) -> pathlib.Path:
    """The folder and .zip a class is handed (see the module's docstring); returns the .zip."""
    if out.exists():
        shutil.rmtree(out)
    root = out / KIT_NAME
    build(root / "notebooks", clear_all)
    for package in KIT_PACKAGES:
        shutil.copytree(nav.ROOT / package, root / package,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"))
    shutil.copyfile(nav.ROOT / "requirements.txt", root / "requirements.txt")
    (root / "pyproject.toml").write_text(_pyproject_for_kit())
    (root / "START_HERE.md").write_text(START_HERE)
    return pathlib.Path(shutil.make_archive(str(out / KIT_NAME), "zip", root_dir=out, base_dir=KIT_NAME))


def main(argv) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    ap.add_argument("--clear-all", action="store_true", help="clear every output, not only the check cells'")
    ap.add_argument("--nbgrader", type=pathlib.Path, metavar="DIR",
                    help="also write nbgrader source notebooks into DIR (e.g. source/backward_twice)")
    ap.add_argument("--kit", action="store_true",
                    help=f"write the kit to hand out: {KIT_OUT.relative_to(nav.ROOT)}/{KIT_NAME}/ and its .zip")
    ap.add_argument("notebooks", nargs="*", help="only these notebook files (default: all)")
    args = ap.parse_args(argv)
    if args.kit:
        archive = kit(clear_all=args.clear_all)
        print(f"student kit: {archive.with_suffix('')}/ and {archive} (START_HERE.md says what to do)")
        return 0
    written = build(args.out.resolve(), args.clear_all, {pathlib.Path(n).name for n in args.notebooks} or None,
                    args.nbgrader.resolve() if args.nbgrader else None)
    print(f"student edition: {len(written)} notebooks in {args.out}"
          + (" (every output cleared)" if args.clear_all else " (check-cell outputs cleared, others kept)"))
    if args.nbgrader:
        print(f"nbgrader source: {args.nbgrader}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
