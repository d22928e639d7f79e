"""The student edition (scripts/student.py): what a class gets handed.

- no solution source and no printed answer survives in any student notebook;
- every student notebook runs top to bottom in a fresh kernel (nbclient), with errors only in
  cells tagged raises-exception, and each check(...) prints its "no answer yet" message;
- the navigation links (previous / contents / next, section links) resolve inside the edition;
- --clear-all leaves no output at all.
"""
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
