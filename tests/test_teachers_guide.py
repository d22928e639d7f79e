"""docs/teachers_guide.md is generated (scripts/teachers_guide.py): in sync with the notebooks,
every notebook has its teaching notes, the homework exercises exist, the minutes are the length
script's, and the suggested sessions fit their periods."""
import pathlib
import re

from scripts import handout, lengths, nav, skeleton
from scripts import teachers_guide as tg

TITLES = {p.name[:2]: nav.info(p)[1]["title"] for p in nav.notebooks()}


def test_guide_is_in_sync():
    assert tg.GUIDE.read_text() == tg.guide(), "out of date: run python scripts/teachers_guide.py"


def test_every_notebook_has_notes_and_its_homework_exists():
    for path in nav.notebooks():
        note = tg.NOTES.get(path.name[:2])
        assert note is not None, f"{path.name}: no teaching notes in scripts/teachers_guide.py NOTES"
        assert note["homework"] in skeleton.read(path).exercise_names(), f"{path.name}: no exercise {note['homework']}"
        assert len(note["questions"]) == 2 and all(q and a for q, a in note["questions"]) and note["stuck"]


def test_minutes_are_the_length_scripts(monkeypatch):
    """The guide reads each notebook's minutes from scripts/lengths.py when it is generated: with
    made-up lengths, the table, each notebook's section and the session plans show those."""
    fake = {p.name[:2]: 31 + 2 * k for k, p in enumerate(nav.notebooks())}     # made up: 31, 33, ... minutes
    monkeypatch.setattr(lengths, "core_minutes", lambda path: fake[pathlib.Path(path).name[:2]])
    text = tg.guide()
    rows = dict(re.findall(r"^\| \[(\d\d) · [^\]]+\]\([^)]+\) \| (\d+) \|", text, re.M))
    assert rows == {n: str(m) for n, m in fake.items()}
    for n, m in fake.items():
        assert re.search(rf"^## \[{n} · .*\n\n\*.*\* Core path: \*\*{m} min\*\*\.$", text, re.M), n
    for length, count in ((90, 1), (45, 3)):               # the plans are made from the same minutes
        for line in tg.session_text(*tg.plan(fake, length, count), length, TITLES):
            assert line in text.splitlines(), line


def test_sessions_fit_their_period_and_keep_the_course_order():
    minutes = {p.name[:2]: lengths.core_minutes(p) for p in nav.notebooks()}
    for length, count in ((90, 1), (45, 3)):
        plans, left = tg.plan(minutes, length, count)
        order = [n for session in plans for n, _ in session] + left
        assert order == [n for n in minutes if n in tg.NOTES]            # each once, in course order
        for session in plans:
            total = tg.OPENING_MINUTES + sum(m for _, m in session)
            assert total <= length or len(session) == 1, (length, session)   # only a lone long notebook runs over
    assert tg.plan({"00": 50, "01": 5}, 45, 2) == ([[("00", 60)], [("01", 15)]], [])


def test_live_cells_are_on_the_core_path():
    for path in nav.notebooks():
        sk = skeleton.read(path)
        picks = tg.live_cells(sk)
        assert 1 <= len(picks) <= 3, (path.name, picks)
        if any(k == "raises" for i, k in enumerate(sk.kind) if sk.core(i)):
            assert any(what == "the error, live" for what, _, _ in picks), path.name


def test_guide_is_a_site_page_with_page_links():
    pages = {name: text for name, _, text in handout.pages([nav.info(p) for p in nav.notebooks()])}
    assert "](../notebooks/" not in pages["teachers_guide.html"]
    assert f"]({nav.notebooks()[0].name})" in pages["teachers_guide.html"]
