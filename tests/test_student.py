"""The student edition (scripts/student.py): what a class gets handed.

- no solution source and no printed answer survives in any student notebook;
- every student notebook runs top to bottom in a fresh kernel (nbclient), with errors only in
  cells tagged raises-exception, and each check(...) prints its "no answer yet" message;
- the navigation links (previous / contents / next, section links) resolve inside the edition;
- --clear-all leaves no output at all.
"""
import pathlib
import urllib.parse

import nbformat
import pytest

from scripts import nav, notebooks, skeleton, student

NOTEBOOKS = notebooks()


@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    out = tmp_path_factory.mktemp("student")
    written = student.build(out)
    assert [p.name for p in written] == [p.name for p in NOTEBOOKS]
    return out


def exercises(path) -> list:
    return skeleton.read(path).exercise_names()


def test_the_source_notebooks_have_solutions_to_remove():
    """Guards the tests below against passing on nothing: the classifier finds what they remove."""
    with_exercises = [p for p in NOTEBOOKS if exercises(p)]
    assert len(with_exercises) >= len(NOTEBOOKS) - 1
    for p in with_exercises:
        answers = student.solution_answers(nbformat.read(p, as_version=4))
        assert set(answers) == set(exercises(p)), f"{p.name}: a solution for every exercise ({answers})"


def test_no_solution_source_survives(edition):
    for p in NOTEBOOKS:
        original = nbformat.read(p, as_version=4)
        answers = student.solution_answers(original)
        nb = nbformat.read(edition / p.name, as_version=4)
        sk = skeleton.classify(nb)
        assert sk.cells("solution") == [], f"{p.name}: a solution cell is left"
        solution_sources = {c.source for _, c in skeleton.classify(original).cells("solution")}
        for cell in nb.cells:
            assert cell.source not in solution_sources, p.name
            for name, arg in skeleton.check_calls(cell.source) if cell.cell_type == "code" else ():
                assert arg.startswith("answer_"), f"{p.name}: check({name!r}, {arg}) enters an answer"
        for name, arg in answers.items():        # e.g. check("4.1", {"x", "h"}, ...) in no form
            assert f'check("{name}", {arg}' not in nbformat.writes(nb), p.name


def test_no_printed_answer_survives(edition):
    for p in NOTEBOOKS:
        nb = nbformat.read(edition / p.name, as_version=4)
        sk = skeleton.classify(nb)
        for _, cell in sk.cells("check"):
            assert cell.outputs == [] and cell.execution_count is None, f"{p.name}: {cell.source[:60]}"
        text = "\n".join(str(o) for c in nb.cells if c.cell_type == "code" for o in c.outputs)
        for name in sk.exercise_names():
            assert f"Exercise {name}:" not in text, f"{p.name}: a verdict of exercise {name} is printed"
        kept = sum(bool(c.outputs) for c in nb.cells if c.cell_type == "code")
        assert kept > 0, f"{p.name}: the other outputs (the pictures) must be kept"


def test_nbgrader_metadata_on_answer_and_check_cells(edition):
    for p in NOTEBOOKS:
        sk = skeleton.read(edition / p.name)
        ids = []
        for kind in ("answer", "check"):
            for _, cell in sk.cells(kind):
                meta = cell.metadata["nbgrader"]
                assert meta["schema_version"] == 3 and meta["solution"] == (kind == "answer")
                assert meta["locked"] == meta["grade"] == (kind == "check")
                ids.append(meta["grade_id"])
        assert len(ids) == len(set(ids)), f"{p.name}: grade_id must be unique: {ids}"


def test_nbgrader_source_holds_each_answer_in_a_solution_region():
    """What `nbgrader generate_assignment` strips (scripts/nbgrader_check runs nbgrader itself)."""
    nb = student.nbgrader_source(nbformat.read(NOTEBOOKS[4], as_version=4))
    sk = skeleton.classify(nb)
    answers, checks = sk.cells("answer"), sk.cells("check")
    assert answers and len(answers) == len(checks) and sk.cells("solution") == []
    for _, cell in answers:
        first, begin, answer, end = cell.source.splitlines()
        assert (begin, end) == ("### BEGIN SOLUTION", "### END SOLUTION") and first.split()[0] == answer.split()[0]
    for _, cell in checks:
        assert "### BEGIN HIDDEN TESTS" in cell.source and cell.metadata["nbgrader"]["points"] == 1


def test_navigation_links_work_inside_the_edition(edition):
    broken = []
    for p in sorted(edition.glob("*.ipynb")):
        for file, frag in skeleton.local_links(nbformat.read(p, as_version=4)):
            target = edition / urllib.parse.unquote(file) if file else p
            if not target.is_file():
                broken.append(f"{p.name} -> {file}")
            elif frag and target.suffix == ".ipynb" and urllib.parse.unquote(frag) not in skeleton.anchors(
                    nbformat.read(target, as_version=4)):
                broken.append(f"{p.name} -> {file}#{frag}")
    assert broken == []
    assert (edition / "README.md").is_file()


def test_clear_all_leaves_no_output(tmp_path):
    student.build(tmp_path, clear_all=True, only={NOTEBOOKS[0].name})
    nb = nbformat.read(tmp_path / NOTEBOOKS[0].name, as_version=4)
    assert all(c.outputs == [] and c.execution_count is None for c in nb.cells if c.cell_type == "code")


@pytest.mark.parametrize("name", [p.name for p in NOTEBOOKS])
def test_student_notebook_runs_in_a_fresh_kernel(edition, name):
    from scripts.regen import client  # here, not at the top: nbclient's import is slow for every worker

    nb = nbformat.read(edition / name, as_version=4)
    client(nb, edition, allow_errors=True).execute()
    sk = skeleton.classify(nb)
    for cell in nb.cells:
        errors = [o for o in cell.get("outputs", []) if o.output_type == "error"]
        if "raises-exception" not in skeleton.tags(cell):
            assert errors == [], f"{name}: {errors[0].ename}: {errors[0].evalue[:200]} in\n{cell.source[:200]}"
    for _, cell in sk.cells("check"):
        text = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
        name_ = skeleton.CHECK.search(cell.source).group(1)
        assert f"Exercise {name_}: no answer yet" in text, f"{name}: check {name_} printed {text[:200]!r}"


def test_classifier_on_a_built_notebook():
    """The kinds the kit relies on, on a notebook built here (Going deeper, a summary cell that
    opens the Solutions, a solution cell, an answer and its check)."""
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    nb = nbformat.v4.new_notebook(cells=[
        md("# 99 · T"), code("x = 1"),
        md("## 1. A"), code("y = 2", metadata={"tags": ["raises-exception"]}),
        md("### Going deeper: B", metadata={"jp-MarkdownHeadingCollapsed": True}), code("z = 3"),
        md("## 2. Exercises"), code("answer_9_1 = ...   # an int"), code('check("9.1", answer_9_1, 3, hint="h")'),
        md("## Summary\n- s\n\n## Solutions\nTry first."), code('check("9.1", 3, 3, hint="")'),
        md(nav.NAV_MARK + "\n\n[Contents](README.md)")])
    assert skeleton.classify(nb).kind == [
        "title", "code", "heading", "raises", "deeper", "deeper", "heading", "answer", "check",
        "solutions-heading", "solution", "nav"]
    out = student.student_notebook(nb)
    assert [c.source for c in out.cells][9] == "## Summary\n- s\n\n" + student.SOLUTIONS_NOTE
    assert len(out.cells) == len(nb.cells) - 1


# ------------------------------------------------------------------------------ class-install
def test_check_cells_leave_no_right_answer_in_the_kernel(edition):
    """A student check cell imports and calls check(...) against a Sealed digest, nothing else: no
    experiment runs, no truth variable is bound, no picture is drawn; the Sealed one is made from
    the solution's literal, and accepts that literal and nothing of another value."""
    import ast

    from helpers.exercise import Sealed, same

    for p in NOTEBOOKS:
        answers = student.solution_answers(nbformat.read(p, as_version=4))
        for _, cell in skeleton.read(edition / p.name).cells("check"):
            tree = ast.parse(cell.source)
            kinds = [type(node).__name__ for node in tree.body]
            assert kinds == ["ImportFrom", "Expr"], f"{p.name}: {cell.source[:120]}"
            assert not [n for n in ast.walk(tree) if isinstance(n, (ast.Name, ast.Attribute))
                        and getattr(n, "ctx", None).__class__ is ast.Store], p.name
            name, var = skeleton.check_calls(cell.source)[0]
            sealed = eval(ast.get_source_segment(cell.source, tree.body[1].value.args[2]), {"Sealed": Sealed})
            value = student.constant(answers[name])
            assert same(value, sealed) and var == "answer_" + name.replace(".", "_")
            assert cell.metadata["jupyter"]["source_hidden"] is True
            from scripts.nbgrader_grade import wrong
            assert not same(wrong(value), sealed), f"{p.name} {name}: a wrong answer passes"


def summary_text(nb) -> str:
    """The markdown of a notebook's `## Summary` section."""
    text, inside = [], False
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        for line in cell.source.splitlines():
            if line.startswith("## "):
                inside = line.startswith("## Summary")
            if inside:
                text.append(line)
    return "\n".join(text)


def giveaways(nb) -> list:
    """The exercises whose answer the Summary gives away, in inline code:
    - a set answer: at least half of its items (and at least 2);
    - a string answer: the answer itself, unless the answer cell lists its choices and every one of
      them is in the summary too (then naming them tells nothing);
    numbers and True/False are not looked for (too common in prose to judge)."""
    import re

    from helpers.exercise import canonical

    codes = {canonical(c) for c in re.findall(r"`([^`]+)`", summary_text(nb))}
    sk = skeleton.classify(nb)
    choices = {skeleton.ANSWER.search(c.source).group(1): re.findall(r'"([^"]+)"', c.source.split("...", 1)[1])
               for _, c in sk.cells("answer")}
    found = []
    for name, source in student.solution_answers(nb).items():
        value = student.constant(source)
        if isinstance(value, (set, frozenset)):
            hits = [v for v in value if isinstance(v, str) and canonical(v) in codes]
            if len(hits) >= 2 and 2 * len(hits) >= len(value):
                found.append((name, sorted(hits)))
        elif isinstance(value, str) and canonical(value) in codes:
            alternatives = choices.get("answer_" + name.replace(".", "_"), [])
            if not (len(alternatives) > 1 and all(canonical(a) in codes for a in alternatives)):
                found.append((name, [value]))
    return found


def test_no_summary_gives_an_exercise_answer_away():
    assert {p.name: giveaways(nbformat.read(p, as_version=4)) for p in NOTEBOOKS} == {p.name: [] for p in NOTEBOOKS}


def test_the_giveaway_rule_catches_what_the_first_student_edition_had():
    """01's Summary as it was: "(`x + 2`, `-x`, `x.mean()`)" named 2 of the 4 labels of 1.2's answer."""
    nb = nbformat.read(NOTEBOOKS[1], as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "markdown" and "## Summary" in c.source)
    cell.source = cell.source.replace("A graph that saved no tensors can",
                                      "A graph that saved no tensors (`x + 2`, `-x`, `x.mean()`) can")
    assert giveaways(nb) == [("1.2", ["-x", "x.mean()"])]
    cell.source += "\n- Only `x.exp()` here"                  # a wrong label named: no giveaway added
    assert [n for n, _ in giveaways(nb)] == ["1.2"]


# ------------------------------------------------------------------------------ the kit
@pytest.fixture(scope="module")
def kit(tmp_path_factory):
    return student.kit(tmp_path_factory.mktemp("kit"))


def test_the_kit_holds_the_edition_the_tool_and_the_helpers_and_nothing_else(kit):
    import zipfile
    root = kit.parent / student.KIT_NAME
    assert sorted(p.name for p in root.iterdir()) == sorted(
        ["START_HERE.md", "backward_twice", "helpers", "notebooks", "pyproject.toml", "requirements.txt"])
    assert sorted(p.name for p in (root / "notebooks").glob("*.ipynb")) == [p.name for p in NOTEBOOKS]
    assert (root / "backward_twice" / "picture" / "alt_text.py").is_file()        # subpackages too
    assert (root / "requirements.txt").read_text().rstrip().endswith("-e .                     # the tool "
                                                                     "`backward_twice` and the course's `helpers`, "
                                                                     "importable from every notebook (pyproject.toml)")
    meta = (root / "pyproject.toml").read_text()
    assert 'name = "backward-twice"' in meta and 'include = ["backward_twice*", "helpers*"]' in meta
    assert "[tool.pytest" not in meta and "nbval" not in meta
    assert "pip install -r requirements.txt" in (root / "START_HERE.md").read_text()
    names = zipfile.ZipFile(kit).namelist()
    on_disk = sorted(str(p.relative_to(kit.parent)) for p in root.rglob("*") if p.is_file())
    assert sorted(n for n in names if not n.endswith("/")) == on_disk
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


def test_no_solution_is_in_the_kit(kit):
    root = kit.parent / student.KIT_NAME
    text = {p: p.read_text(errors="ignore") for p in root.rglob("*") if p.is_file()}
    assert not [p for p, t in text.items() if "### BEGIN SOLUTION" in t]
    for p in NOTEBOOKS:
        sk = skeleton.read(root / "notebooks" / p.name)
        assert sk.cells("solution") == [], p.name
        for name, arg in student.solution_answers(nbformat.read(p, as_version=4)).items():
            spoiled = [q.name for q, t in text.items() if f'check("{name}", {arg}' in t]
            assert not spoiled, f"exercise {name}'s answer in {spoiled}"


def test_a_kit_notebook_runs_on_the_kit_s_own_package(kit, monkeypatch):
    """Notebook 00 from the kit, in a fresh kernel whose imports resolve to the kit's own copy of
    backward_twice and helpers (PYTHONPATH: the kit only, as `pip install -r requirements.txt` there
    would make them importable), not to this checkout."""
    from scripts.regen import client

    root = kit.parent / student.KIT_NAME
    monkeypatch.setenv("PYTHONPATH", str(root))
    nb = nbformat.read(root / "notebooks" / NOTEBOOKS[0].name, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("import backward_twice, helpers\n"
                                              "print(backward_twice.__file__)\nprint(helpers.__file__)"))
    client(nb, root / "notebooks", allow_errors=True).execute()
    for cell in nb.cells:
        if "raises-exception" not in skeleton.tags(cell):
            assert not [o for o in cell.get("outputs", []) if o.output_type == "error"], cell.source[:200]
    where = nb.cells[-1].outputs[0]["text"].split()
    assert all(pathlib.Path(w).is_relative_to(root) for w in where), where
