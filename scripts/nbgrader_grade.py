"""The three submissions `bash scripts/nbgrader_check` grades with `nbgrader autograde`, and their check.

    python -m scripts.nbgrader_grade submit COURSE_DIR   # write submitted/{right,none,half}/backward_twice/
    python -m scripts.nbgrader_grade grades COURSE_DIR   # (in nbgrader's venv) compare the gradebook's scores

- `right`: every answer cell holds the solution's answer: full marks;
- `none`: the released notebooks as they are (every answer `...`): 0;
- `half`: every other exercise (in course order) right, the others a wrong answer of the right
  kind (a number + 1, the other bool, a string nobody gives, an empty set, a list off by one):
  exactly the points of the right ones.
The expected points are written to COURSE_DIR/expected.json by `submit` and read by `grades`.
"""
from __future__ import annotations

import json
import pathlib
import re
import sys

ASSIGNMENT = "backward_twice"


def wrong(value):
    """A wrong answer of the same kind as `value`."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return "not the answer"
    if isinstance(value, (set, frozenset)):
        return set()
    if isinstance(value, (list, tuple)):
        return [v + 1 for v in value]
    raise TypeError(f"no wrong answer made for {value!r}")


def submit(course: pathlib.Path) -> int:
    import nbformat

    from scripts import notebooks, skeleton, student

    release = course / "release" / ASSIGNMENT
    answers = {}
    for path in notebooks():
        answers.update(student.solution_answers(nbformat.read(path, as_version=4)))
    order = sorted(answers, key=lambda n: tuple(int(x) for x in n.split(".")))
    right_in_half = set(order[::2])
    expected = {"right": len(order), "none": 0, "half": len(right_in_half)}
    for who in expected:
        out = course / "submitted" / who / ASSIGNMENT
        out.mkdir(parents=True, exist_ok=True)
        for path in sorted(release.glob("*.ipynb")):
            nb = nbformat.read(path, as_version=4)
            for _, cell in skeleton.classify(nb).cells("answer"):
                var = skeleton.ANSWER.search(cell.source).group(1)
                name = var.removeprefix("answer_").replace("_", ".")
                if who == "none":
                    continue
                given = answers[name] if (who == "right" or name in right_in_half) else \
                    repr(wrong(student.constant(answers[name])))
                line = re.search(rf"^\s*{var}\s*=\s*\.\.\.", cell.source, flags=re.M)
                cell.source = cell.source[:line.start()] + f"{var} = {given}" + cell.source[line.end():]
            nbformat.write(nb, out / path.name)
    (course / "expected.json").write_text(json.dumps(expected))
    print(f"nbgrader_grade: 3 submissions of {len(order)} exercises written; expected points {expected}")
    return 0


def grades(course: pathlib.Path) -> int:
    from nbgrader.api import Gradebook

    expected = json.loads((course / "expected.json").read_text())
    failed = 0
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for who, want in expected.items():
            sub = gb.find_submission(ASSIGNMENT, who)
            ok = sub.score == want
            failed += not ok
            print(f"nbgrader autograde: {who:5} {sub.score:g} of {sub.max_score:g} points "
                  f"({'as expected' if ok else f'EXPECTED {want}'})")
    log = (course / "autograde.log").read_text() if (course / "autograde.log").exists() else ""
    checksum = len(re.findall(r"[Cc]hecksum", log))
    print(f"nbgrader autograde: {checksum} checksum warning(s) in its log (false: jupyter/nbgrader#1961, "
          "the database keeps the checksum from before the hidden tests are stripped; docs/install.md)")
    return 1 if failed else 0


if __name__ == "__main__":
    command, course = sys.argv[1], pathlib.Path(sys.argv[2])
    sys.exit({"submit": submit, "grades": grades}[command](course))
