"""Write docs/teachers_guide.md: lesson plans a teacher can run, one 45-minute plan per notebook.

    python scripts/teachers_guide.py           # rewrite docs/teachers_guide.md
    python scripts/teachers_guide.py --check   # exit 1 if it is out of date (tests/test_teachers_guide.py)

Data-driven: the hand-written part is scripts/lesson_plans.toml (what to say, why each exercise's
answer is right, the questions students ask, the exercises done in class, the homework). The rest
comes from the notebooks as they are now:
- each section's minutes: scripts/lengths.py's model, on that section's cells;
- the cells to run live (pictures and errors on the core path, found by scripts/skeleton.py);
- before each live error, a "predict this" question, and the expected answer: the error the
  committed output shows (nbval checks those outputs), plus why, from the data;
- each exercise's right answer, from its solution cell.
An exercise done in class gets its minutes in scripts/lengths.py's model (MINUTES_PER_EXERCISE:
predict, run the check, read the feedback) plus EXERCISE_MARGIN (hands up for each answer, then
the explanation). A plan fills exactly 45 minutes: opening, the sections, the exercises done in class, questions,
wrap-up; if the core path reads longer than the time left, its sections are shortened in
proportion and the plan says so. The slides' speaker notes (scripts/slides.py) are the plan's
rows, from `notes(path)`.
"""
from __future__ import annotations

import dataclasses
import re
import sys
import tomllib

import nbformat

from scripts import ROOT, lengths, nav, skeleton

GUIDE = ROOT / "docs" / "teachers_guide.md"
PLANS = ROOT / "scripts" / "lesson_plans.toml"
PERIOD = 45               # minutes of one class
OPENING_MINUTES = 3       # the notebook's question and objectives
EXERCISE_MARGIN = 2       # per exercise in class, on top of its reading minutes: hands up, explain
EXERCISE_MINUTES = lengths.MINUTES_PER_EXERCISE + EXERCISE_MARGIN   # per exercise done in class
WRAP_UP_MINUTES = 3       # the summary, the homework, the pointer to what comes next
MIN_QUESTIONS = 3         # at least this long for questions
MAX_QUESTIONS = 8         # time left over beyond this goes to the sections, in proportion
PREDICT_MINUTES = 2       # per live error, on top of reading: predict, hands up, run, why
SESSIONS = {90: [["00", "01"]], 45: [["00"], ["01"], ["10"]]}   # the suggested sessions: whole plans
NOT_SECTIONS = re.compile(r"^(\d+\.\s*)?(Exercises?|Summary|Further reading|Solutions?)\b", re.I)


def load_plans() -> dict:
    return tomllib.loads(PLANS.read_text(encoding="utf-8"))


def section_key(title: str) -> str:
    """A section's key in the data: its number ("2", "6.1"), "Exercise 1.2" for an exercise,
    else its heading text without markup ("Summary")."""
    plain = re.sub(r"[`*]", "", title).strip()
    m = re.match(r"^(Exercise \d+\.\d+)\b", plain)
    if m:
        return m.group(1)
    m = re.match(r"^(\d+(?:\.\d+)*)\.?\s", plain)
    return m.group(1) if m else plain


def parent_keys(key: str) -> list:
    """"6.1" -> ["6.1", "6"]; others -> [key]."""
    parts = key.split(".")
    return [".".join(parts[:n]) for n in range(len(parts), 0, -1)] if key[:1].isdigit() else [key]


@dataclasses.dataclass
class Section:
    key: str
    title: str
    cells: list               # the cells (markdown split at the section's heading), for minutes
    live: list                # [(what, detail)]: pictures and errors to run live
    first_sentence: str = ""


def _split_level2(source: str) -> list:
    """A markdown cell's text cut before each heading of level 1 or 2 (outside code fences)."""
    pieces, cur = [], []
    for line, is_text in lengths.outside_fences(source.splitlines()):
        m = lengths.HEADING.match(line) if is_text else None
        if m and len(m.group(1)) <= 2 and cur:
            pieces.append("\n".join(cur))
            cur = []
        cur.append(line)
    if cur:
        pieces.append("\n".join(cur))
    return pieces


# a sentence ends at . ! or ? (and any closing quote, emphasis or bracket), before a space and the
# start of the next sentence (a capital, a backtick, a quote, a bracket, $): "e.g. x", "x.grad",
# "0.5", "etc." and a colon end none
SENTENCE_END = re.compile(r"(?<!e\.g)(?<!i\.e)(?<!etc)(?<!vs)[.!?][*_\"'”’)\]]*(?=\s+[A-Z`*_\"'“‘(\[$]|$)")


def first_sentence(markdown: str) -> str:
    """The first whole sentence of a section's first paragraph (the plan's fallback when
    lesson_plans.toml has no `say` for the section): never cut at a colon or at a length; a
    paragraph with no sentence end is returned whole."""
    body = "\n".join(ln for ln in markdown.splitlines() if not lengths.HEADING.match(ln)).strip()
    para = re.split(r"\n\s*\n", body)[0] if body else ""
    para = " ".join(para.split())
    m = SENTENCE_END.search(para)
    return para[:m.end()] if m else para


def error_of(cell):
    return next((o for o in cell.get("outputs", []) if o.get("output_type") == "error"), None)


def error_line(err) -> str:
    """The error as the class will see it: its type and its first sentence."""
    text = " ".join(re.sub(r"\x1b\[[0-9;]*m", "", err.get("evalue", "")).split())
    m = re.match(r"(.+?[.!?])(\s|$)", text)
    return f"{err.get('ename', 'Error')}: {m.group(1) if m else text}"


def sections(nb) -> list:
    """The core path's numbered sections (level 2), in order, with their cells and live cells;
    exercises, the summary and further reading are not among them."""
    sk = skeleton.classify(nb)
    out, current = [], None
    numbered = ""             # the last numbered heading of the current section read so far ("1.2")
    for i, cell in enumerate(nb.cells):
        if not sk.core(i) or sk.kind[i] == "title":
            continue
        pieces = _split_level2(cell.source) if cell.cell_type == "markdown" else [None]
        for piece in pieces:
            h = skeleton.heading(nbformat.v4.new_markdown_cell(piece)) if piece is not None else None
            if h and h[0] <= 2:
                current = None if NOT_SECTIONS.match(h[1]) or h[1].startswith("Going deeper") else \
                    Section(section_key(h[1]), h[1], [], [], first_sentence(piece))
                if current:
                    out.append(current)
                    numbered = current.key
            if current is None:
                continue
            if piece is not None:
                current.cells.append(nbformat.v4.new_markdown_cell(piece))
                for _, _, text in lengths.headings(piece.splitlines()):
                    if re.fullmatch(r"\d+(?:\.\d+)*", section_key(text)):
                        numbered = section_key(text)
                continue
            current.cells.append(cell)
            if cell.cell_type == "code" and not lengths.is_hidden(cell):
                sub = skeleton.last_heading(nb.cells[sk.section[i]])
                sub_key = section_key(sub[1]) if sub else current.key
                if not re.fullmatch(r"\d+(?:\.\d+)*", sub_key):    # an unnumbered "####" heading inside the
                    sub_key = numbered                               # section: the numbered one it sits under
                err = error_of(cell)
                if err is not None:
                    current.live.append(("error", (sub_key, err)))
                elif re.search(r"\b(watch|draw_steps|draw|step_through)\(", cell.source):
                    current.live.append(("picture", code_line(cell)))
    return out


def code_line(cell) -> str:
    lines = [ln.split("  #")[0].strip() for ln in cell.source.splitlines()]
    lines = [ln for ln in lines if ln and not ln.startswith("#")]
    return next((ln for ln in lines if re.search(r"\b(watch|draw_steps|draw|step_through)\(", ln)), lines[-1])


def section_minutes(sec: Section) -> float:
    nb = nbformat.v4.new_notebook(cells=sec.cells)
    return lengths.measure_notebook(nb, sec.key).minutes


def solutions(nb) -> dict:
    """{exercise: the right answer's source}, from the solution cells."""
    sk = skeleton.classify(nb)
    return {name: arg for _, c in sk.cells("solution") if c.cell_type == "code"
            for name, arg in skeleton.check_calls(c.source)}


@dataclasses.dataclass
class Row:
    start: int
    minutes: int
    what: str
    say: str
    live: list = dataclasses.field(default_factory=list)    # lines
    key: str = ""


def predict_text(data: dict, key: str, err) -> tuple:
    """(question, expected answer) for a live error."""
    why = next((data.get("predict", {})[k] for k in parent_keys(key) if k in data.get("predict", {})), "")
    question = "Before running it: does this cell run to the end? If not, which error, and why?"
    answer = f"It raises `{error_line(err)}`" + (f" Why: {why}" if why else "")
    return question, answer


def plan_rows(path, data: dict, nb=None) -> tuple:
    """The 45-minute plan of one notebook: ([Row], note). Its minutes add up to PERIOD."""
    nb = nb or nbformat.read(path, as_version=4)
    info = nav.info(path)[1]
    secs = sections(nb)
    in_class = data.get("in_class", [])
    fixed = OPENING_MINUTES + EXERCISE_MINUTES * len(in_class) + WRAP_UP_MINUTES
    room = PERIOD - fixed - MIN_QUESTIONS
    raw = [max(1.0, section_minutes(s)) + PREDICT_MINUTES * sum(k == "error" for k, _ in s.live) for s in secs]
    note = ""
    if sum(raw) > room:
        factor = room / sum(raw)
        note = (f"The core path reads in about {round(sum(raw))} min; in class its sections get "
                f"{room} min, presented rather than read: learners read it in full as preparation or afterwards.")
        raw = [r * factor for r in raw]
    elif secs and room + MIN_QUESTIONS - sum(raw) > MAX_QUESTIONS:     # time to spare: a slower pace
        factor = (room + MIN_QUESTIONS - MAX_QUESTIONS) / sum(raw)
        raw = [r * factor for r in raw]
    mins = [max(1, round(r)) for r in raw]
    while sum(mins) > room:                       # rounding: take back from the longest
        mins[mins.index(max(mins))] -= 1
    while secs and PERIOD - fixed - sum(mins) > MAX_QUESTIONS:     # rounding: give to the longest
        mins[mins.index(max(mins))] += 1
    questions = PERIOD - fixed - sum(mins)
    say = data.get("say", {})
    objectives_text = "; ".join(objectives(nb))
    rows, t = [], 0

    def add(minutes, what, text, live=(), key=""):
        nonlocal t
        rows.append(Row(t, minutes, what, text, list(live), key))
        t += minutes

    add(OPENING_MINUTES, "Opening", f"Ask the notebook's question: *{info['question']}* Today: {objectives_text}.",
        key="title")
    for sec, m in zip(secs, mins):
        live = []
        for kind, detail in sec.live:
            if kind == "picture":
                live.append(f"Run the picture: `{detail}`; point at what changed.")
            else:
                sub, err = detail
                q, a = predict_text(data, sub, err)
                live.append(f"**Predict this** (section {sub}): {q} *Expected:* {a}")
        add(m, f"{sec.title}", say.get(sec.key) or f"(from the notebook) {sec.first_sentence}", live, key=sec.key)
    answers = solutions(nb)
    for name in in_class:
        add(EXERCISE_MINUTES, f"Exercise {name}",
            f"Learners predict, write their answer and run the check cell ({lengths.MINUTES_PER_EXERCISE} min, "
            f"as in the notebook's exercise minutes); then hands up for each answer and the explanation "
            f"({EXERCISE_MARGIN} min margin).",
            [f"*Answer:* `{answers.get(name, '?')}`. {data.get('answers', {}).get(name, '')}"], key=f"Exercise {name}")
    asked = data.get("asked", [])
    add(questions, "Questions students ask",
        "Take the class's questions; if none come, ask these: " + " ".join(f"*{x['q']}*" for x in asked[:2]),
        key="questions")
    wrap = (say["Summary"] + " " if say.get("Summary") else "") + "Read the summary aloud; give the homework."
    see = data.get("see_also")
    if see:
        wrap += f" Then point to {see_also_link(see)}: {see['why']}."
    add(WRAP_UP_MINUTES, "Wrap-up", wrap, [homework_text(data)], key="Summary")
    assert t == PERIOD, (path.name, t)
    return rows, note


def see_also_link(see: dict) -> str:
    path = next(p for p in nav.notebooks() if p.name.startswith(see["notebook"]))
    nb = nbformat.read(path, as_version=4)
    for c in nb.cells:
        if c.cell_type == "markdown":
            for line in c.source.splitlines():
                m = lengths.HEADING.match(line)
                if m and section_key(m.group(2)) == see["section"] and len(m.group(1)) == 2:
                    return f"[{see['notebook']} §{see['section']}](../notebooks/{path.name}#{skeleton.heading_anchor(line)})"
    raise SystemExit(f"lesson_plans.toml: no section {see['section']} in notebook {see['notebook']}")


def homework_text(data: dict) -> str:
    if data.get("homework"):
        return f"Homework: Exercise {data['homework']} (not done in class; its check cell says right or gives a hint)."
    return f"Homework: {data['homework_task']}"


def objectives(nb) -> list:
    """The bullets of the notebook's **What you'll learn**."""
    first = next(c.source for c in nb.cells if c.cell_type == "markdown")
    part = first.split("**What you'll learn**", 1)[-1]
    return [m.group(1).rstrip(";.") for m in re.finditer(r"^- (.+)$", part.split("**Prerequisites", 1)[0], re.M)]


def fmt_rows(rows) -> list:
    out = []
    for r in rows:
        out.append(f"- **{r.start}–{r.start + r.minutes} min · {r.what}** ({r.minutes} min). {r.say}")
        out += [f"  - {line}" for line in r.live]
    return out


class Notes:
    """Speaker notes for the slides of one notebook: the plan's rows, by section key."""

    def __init__(self, path):
        plans = load_plans()
        self.data = plans.get(path.name[:2], {})
        self.rows = plan_rows(path, self.data)[0] if self.data else []

    def section(self, key: str) -> str:
        if key.startswith("Exercise "):
            rows = [r for r in self.rows if r.key == key]
            name = key.split()[1]
            answer = self.data.get("answers", {}).get(name, "")
            return (f"{key}: learners predict first, then run the check. {answer}").strip()
        for k in parent_keys(key):
            rows = [r for r in self.rows if r.key == k]
            if rows:
                r = rows[0]
                return f"{r.start}–{r.start + r.minutes} min. {r.say}"
        if re.match(r"^(\d+\.\s*)?Exercises?\b", key):
            return "Exercises: learners predict before each check cell runs (see the plan's exercise rows)."
        return "Not in the 45-minute plan: for reading after class."

    def predict(self, key: str, err) -> str:
        q, a = predict_text(self.data, key, err)
        return f"Predict this: {q} Let the class answer first, then click. Expected: {a}"


def notes(path) -> Notes:
    return Notes(path)


def guide() -> str:
    plans = load_plans()
    items = []
    for path in nav.notebooks():
        nb, it = nav.info(path)
        items.append((path.name[:2], path, nb, it))
    minutes = {n: lengths.core_minutes(p) for n, p, _, _ in items}
    exercise_minutes = {n: lengths.exercise_minutes(p) for n, p, _, _ in items}
    titles = {n: it["title"] for n, _, _, it in items}
    out = ["# Teacher's guide",
           "",
           "<!-- generated by scripts/teachers_guide.py from the notebooks and scripts/lesson_plans.toml; "
           "edit those, not this file -->",
           "",
           "Lesson plans to run a class from: for every notebook, 45 minutes, minute by minute, with what to say, "
           "the cells to run live, a *predict this* question before each live error and its expected answer; "
           "then an answer key that explains each exercise, the questions students usually ask, and homework "
           "that is not the exercise done in class. **Core minutes** is the notebook's core path (everything "
           f"outside its *Going deeper* sections) at {lengths.RATE}; **exercise minutes** are its exercises at "
           f"{lengths.MINUTES_PER_EXERCISE} min each (`python scripts/lengths.py`). In class an exercise gets "
           f"{EXERCISE_MINUTES} min: its {lengths.MINUTES_PER_EXERCISE} plus a margin of {EXERCISE_MARGIN} for "
           "hands up and the explanation.",
           "",
           "To prepare: `bash scripts/student` for the learners' copies (no solutions), `bash scripts/site` for the "
           "site and the printable handout (`build/site/handout.html`), and `bash scripts/slides` for the slides "
           "(`build/slides/`; press `S` for the speaker notes, which are the plan's rows).",
           "",
           "## Suggested sessions",
           "",
           "Every session is made of whole 45-minute plans (below), so every minute is planned.",
           ""]
    for length, sessions in SESSIONS.items():
        out += [f"{'One' if len(sessions) == 1 else len(sessions)} × {length} minutes:", ""]
        for k, session in enumerate(sessions, 1):
            total = PERIOD * len(session)
            parts = " + ".join(f"{titles[n]} ({PERIOD} min, its plan below)" for n in session)
            out.append(f"- Session {k} ({total} of {length} min): {parts}.")
        left = [titles[n] for n in titles if not any(n in s for s in sessions)]
        out += ["- Not in class: " + ", ".join(left) + " (reading and homework; each has its own plan below).", ""]
    out += ["Hand out the printed cheat sheet and summaries (`build/site/handout.html`) at the end of the last session.",
            "", "| Notebook | Core minutes | Exercise minutes | Homework |", "|---|---:|---:|---|"]
    for n, path, _, it in items:
        data = plans.get(n, {})
        hw = f"Exercise {data['homework']}" if data.get("homework") else ("a task of its own" if data else "-")
        out.append(f"| [{it['title']}](../notebooks/{path.name}) | {minutes[n]} | {exercise_minutes[n]} | {hw} |")
    for n, path, nb, it in items:
        data = plans.get(n)
        out += ["", f"## [{it['title']}](../notebooks/{path.name})", "",
                f"*{it['question']}* Core path: **{minutes[n]} min**; exercises: **{exercise_minutes[n]} min**.",
                "", "**Objectives**"]
        out += [f"- {o}" for o in objectives(nb)]
        if data is None:
            out += ["", f"*No lesson plan yet: add notebook {n} to scripts/lesson_plans.toml.*"]
            continue
        rows, note = plan_rows(path, data, nb)
        out += ["", "**The 45 minutes**", ""] + ([note, ""] if note else []) + fmt_rows(rows)
        answers = solutions(nb)
        out += ["", "**Answer key**", ""]
        for name in skeleton.classify(nb).exercise_names():
            why = data.get("answers", {}).get(name, "*(no explanation yet)*")
            out.append(f"- **{name}**: `{answers.get(name, '?')}`. {why}")
        out += ["", "**Where learners get stuck**", ""] + [f"- {s}" for s in data.get("stuck", [])]
        out += ["", "**Questions students usually ask**", ""]
        out += [f"{k}. {x['q']}  \n   *Answer:* {x['a']}" for k, x in enumerate(data.get("asked", []), 1)]
        out += ["", f"**{homework_text(data)}**"]
    return "\n".join(out) + "\n"


def main(argv) -> int:
    text = guide()
    if "--check" in argv:
        if not GUIDE.is_file() or GUIDE.read_text() != text:
            print(f"out of date: {GUIDE.relative_to(ROOT)} (run: python scripts/teachers_guide.py)")
            return 1
        return 0
    GUIDE.parent.mkdir(exist_ok=True)
    GUIDE.write_text(text)
    print(f"wrote {GUIDE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
