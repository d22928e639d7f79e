"""How long is each notebook's core path? What a learner reads there (prose and outputs), the
visible code lines, the pictures, the exercises: minutes.

The core path (GUIDE.md) is every cell that is neither inside a "Going deeper" section nor a
solution. A Going deeper section starts at a markdown heading (## or ###) whose text starts
with "Going deeper" and runs until the next heading of the same or a higher level; the
"Solutions" section is delimited the same way. A *visible* code line is a non-blank line of
a core-path code cell whose source is not hidden (`"jupyter": {"source_hidden": true}`).

Minutes are what a learner spends on the core path (the model of issue 20, a learner's own
measurement of 00-04 and 10):
- words at 200 a minute: the prose *and* what the outputs print (stdout, tables, verdict
  lines, an error's message; the visible text of HTML outputs). Silent reading of English
  non-fiction averages ~240 wpm (Brysbaert 2019, a meta-analysis of 190 studies); technical
  text with code words is read more slowly. A hidden cell's source is not read, its output is;
- 3 seconds per visible code line;
- 1 minute per picture: each image in an output (a graph, a chart, each frame of a static
  stepper);
- the exercises apart: 2 minutes each (predict, run the check, read the feedback).
Targets: the core path at most MAX_MINUTES without the exercises, the exercises at most
MAX_EXERCISE_MINUTES (tests/test_lengths.py).

    python scripts/lengths.py                # the table, for every notebook
    python scripts/lengths.py 01 03          # only these (by number or file name)
    python scripts/lengths.py --check        # also exit 1 if a notebook is over the limits

Importable: `from scripts.lengths import measure, core_minutes, exercise_minutes, minutes_table`
(tests, nav.py, the teacher's guide). `sections(nb)` is the one home of where Going deeper and
Solutions sections start and end: the core path, the site's folding, the handout, the classroom
kit and the tests all read it.
"""
from __future__ import annotations

import dataclasses
import io
import pathlib
import re
import sys
import tokenize

import nbformat

from scripts import NAV_MARK, notebooks

WORDS_PER_MINUTE = 200          # prose and printed outputs
SECONDS_PER_CODE_LINE = 3       # per visible code line
MINUTES_PER_PICTURE = 1         # per image in an output
MINUTES_PER_EXERCISE = 2        # per exercise (a check("N.M", ...) on the core path)
RATE = (f"{WORDS_PER_MINUTE} words a minute (prose and outputs), {SECONDS_PER_CODE_LINE} s per visible "
        f"code line, {MINUTES_PER_PICTURE} min per picture")
MAX_MINUTES = 20                # the core path, exercises excluded
MAX_EXERCISE_MINUTES = 8        # the exercises
CHECK_CALL = re.compile(r"""\bcheck\(\s*["']([\w.]+)["']""")   # an exercise's check cell (scripts/skeleton.py)

HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
GOING_DEEPER = re.compile(r"Going deeper\b", re.I)     # a heading text that opens a folded section
FOLDED = (("deeper", GOING_DEEPER), ("solution", re.compile(r"Solutions?\b", re.I)))
WORD = re.compile(r"[^\W_]+(?:['’._\-][^\W_]+)*")  # retain_graph, x.grad, don't, 1,024 -> 1 + 024


@dataclasses.dataclass(frozen=True)
class Length:
    notebook: str          # file name
    cells: int             # every cell
    words: int             # core-path prose words
    code_lines: int        # visible core-path code lines
    asserts: int           # assert statements, whole notebook (every checking cell stays)
    all_words: int         # prose words, whole notebook
    all_code_lines: int    # code lines, whole notebook, hidden or not
    output_words: int = 0  # words the core path's outputs show (printed text, tables, errors)
    pictures: int = 0      # images the core path's outputs show
    exercises: int = 0     # exercises on the core path

    @property
    def minutes(self) -> float:
        """The core path's reading minutes, exercises excluded."""
        return ((self.words + self.output_words) / WORDS_PER_MINUTE
                + self.code_lines * SECONDS_PER_CODE_LINE / 60 + self.pictures * MINUTES_PER_PICTURE)

    @property
    def exercise_minutes(self) -> float:
        return self.exercises * MINUTES_PER_EXERCISE

    def over_limits(self) -> list[str]:
        """What is over the core-path limits, in words a reader understands ([] if nothing)."""
        over = []
        if self.minutes > MAX_MINUTES:
            over.append(f"{self.minutes:.1f} core-path minutes without the exercises (limit {MAX_MINUTES}): "
                        f"{self.words:,} prose words, {self.output_words:,} output words, "
                        f"{self.code_lines} code lines, {self.pictures} pictures")
        if self.exercise_minutes > MAX_EXERCISE_MINUTES:
            over.append(f"{self.exercise_minutes:g} exercise minutes (limit {MAX_EXERCISE_MINUTES}): "
                        f"{self.exercises} exercises")
        return over


def outside_fences(lines):
    """(line, is_text) for each line; lines inside ``` / ~~~ fences are not headings."""
    fence = None
    for line in lines:
        mark = re.match(r"^\s*(```|~~~)", line)
        if mark and fence is None:
            fence = mark.group(1)
            yield line, False
        elif mark and line.strip().startswith(fence):
            fence = None
            yield line, False
        else:
            yield line, fence is None


def headings(lines):
    """(line number, level, text) of each Markdown heading among `lines`; lines in a fence are none."""
    for k, (line, is_text) in enumerate(outside_fences(lines)):
        m = HEADING.match(line) if is_text else None
        if m:
            yield k, len(m.group(1)), m.group(2)


def folded_kind(text: str) -> str | None:
    """"deeper" or "solution" if a heading with this text opens a folded section, else None."""
    return next((part for part, pattern in FOLDED if pattern.match(text)), None)


@dataclasses.dataclass(frozen=True)
class Piece:
    part: str                   # "core", "deeper" or "solution": the outermost folded section it is in
    text: str
    opens: str | None = None    # the folded section its first line opens ("deeper" / "solution")
    heading: str | None = None  # that heading's text
    closes: tuple = ()          # the folded sections that end just before it, innermost first


def sections(nb) -> list[tuple[object, list[Piece]]]:
    """For each cell: its pieces. The one home of the rule for where folded sections start and end.

    A folded section starts at a markdown heading (any level) whose text starts with
    "Going deeper" or "Solutions" and runs until the next heading of the same or a higher level;
    one may open inside another. A code cell is one piece; a markdown cell is cut at each
    heading that opens or closes a folded section (## Summary ... ## Solutions in one cell), and
    an empty one has no pieces. Headings inside code fences are text."""
    stack = []                  # [(part, level)] of the open folded sections, outermost first
    out = []

    def part():
        return stack[0][0] if stack else "core"

    for cell in nb.cells:
        if cell.cell_type != "markdown":
            out.append((cell, [Piece(part(), cell.source)]))
            continue
        lines = cell.source.splitlines()
        pieces, start, marks = [], 0, {"part": part()}
        for k, level, text in headings(lines):
            closes = []
            while stack and level <= stack[-1][1]:
                closes.append(stack.pop()[0])
            kind = folded_kind(text)
            if kind:
                stack.append((kind, level))
            if closes or kind:
                if k > 0:
                    pieces.append(Piece(text="\n".join(lines[start:k]), **marks))
                    start = k
                marks = {"part": part(), "opens": kind, "heading": text if kind else None, "closes": tuple(closes)}
        if lines:
            pieces.append(Piece(text="\n".join(lines[start:]), **marks))
        out.append((cell, pieces))
    return out


def parts(nb) -> list[tuple[object, list[tuple[str, str]]]]:
    """For each cell: [(part, text)], part "core", "deeper" or "solution" (`sections`, merged by part)."""
    out = []
    for cell, pieces in sections(nb):
        merged = []
        for p in pieces:
            if merged and merged[-1][0] == p.part:
                merged[-1] = (p.part, merged[-1][1] + "\n" + p.text)
            else:
                merged.append((p.part, p.text))
        out.append((cell, merged))
    return out


def section_text(markdown: str, title: str) -> str:
    """The text under the heading `title` (any level) up to the next heading of that level or higher."""
    lines = markdown.splitlines()
    found = list(headings(lines))
    for n, (k, level, text) in enumerate(found):
        if text == title:
            end = next((j for j, lv, _ in found[n + 1:] if lv <= level), len(lines))
            return "\n".join(lines[k + 1:end]).strip()
    return ""


def prose_words(markdown: str) -> int:
    """Words a reader reads: link targets, HTML comments and tags, URLs and table rules are not."""
    text = re.sub(r"<!--.*?-->", " ", markdown, flags=re.S)
    text = re.sub(r"\]\([^)]*\)", "]", text)            # [text](target): the text only
    text = re.sub(r"<[^>\n]+>", " ", text)               # HTML tags
    text = re.sub(r"https?://\S+", " ", text)
    return len(WORD.findall(text))


def code_lines(source: str) -> int:
    return sum(1 for line in source.splitlines() if line.strip())


def asserts(source: str) -> int:
    """assert statements (tokens, so an 'assert' inside a string or comment does not count)."""
    try:
        return sum(1 for tok in tokenize.generate_tokens(io.StringIO(source).readline)
                   if tok.type == tokenize.NAME and tok.string == "assert")
    except (tokenize.TokenError, IndentationError, SyntaxError):   # IPython syntax: count lines
        return len(re.findall(r"^\s*assert\b", source, re.M))


def _text(value) -> str:
    return value if isinstance(value, str) else "".join(value)


def html_visible(html: str) -> tuple[str, int]:
    """(the text a reader sees, the number of images) of an HTML output: tags, styles, scripts, image
    alt texts and the folded body of <details> (its <summary> stays) are not seen."""
    html = re.sub(r"<(style|script)\b.*?</\1>", " ", html, flags=re.S | re.I)
    pictures = len(re.findall(r"<(?:img|svg)\b", html, re.I))
    html = re.sub(r"<svg\b.*?</svg>", " ", html, flags=re.S | re.I)
    html = re.sub(r"<details\b[^>]*>\s*(<summary\b.*?</summary>)?.*?</details>",
                  lambda m: m.group(1) or " ", html, flags=re.S | re.I)
    return re.sub(r"<[^>]*>", " ", html), pictures


def output_reading(outputs) -> tuple[int, int]:
    """(words, pictures) a reader sees in a code cell's outputs: what JupyterLab shows of each
    (HTML before Markdown before an image before plain text), an error's name and message."""
    words = pictures = 0
    for out in outputs:
        kind = out.get("output_type")
        if kind == "stream":
            words += prose_words(_text(out.get("text", "")))
        elif kind == "error":
            words += prose_words(f"{out.get('ename', '')}: {out.get('evalue', '')}")
        elif kind in ("execute_result", "display_data"):
            data = out.get("data", {})
            if "text/html" in data:
                text, n = html_visible(_text(data["text/html"]))
                words, pictures = words + prose_words(text), pictures + n
            elif "text/markdown" in data:
                words += prose_words(_text(data["text/markdown"]))
            elif any(k.startswith("image/") for k in data):
                pictures += 1
            elif "text/plain" in data:
                words += prose_words(_text(data["text/plain"]))
    return words, pictures


def is_hidden(cell) -> bool:
    return bool(cell.metadata.get("jupyter", {}).get("source_hidden"))


def measure_notebook(nb, name: str) -> Length:
    words = all_words = lines = all_lines = n_asserts = out_words = pictures = 0
    exercises = set()
    for cell, pieces in parts(nb):
        if cell.cell_type == "markdown":
            if cell.source.startswith(NAV_MARK):
                continue
            for part, text in pieces:
                n = prose_words(text)
                all_words += n
                words += n if part == "core" else 0
        elif cell.cell_type == "code":
            n = code_lines(cell.source)
            all_lines += n
            n_asserts += asserts(cell.source)
            if pieces[0][0] != "core":
                continue
            if not is_hidden(cell):
                lines += n
            w, p = output_reading(cell.get("outputs", []))
            out_words, pictures = out_words + w, pictures + p
            exercises.update(CHECK_CALL.findall(cell.source))
    return Length(name, len(nb.cells), words, lines, n_asserts, all_words, all_lines,
                  out_words, pictures, len(exercises))


def measure(path) -> Length:
    path = pathlib.Path(path)
    return measure_notebook(nbformat.read(path, as_version=4), path.name)


def core_minutes(path) -> int:
    """The core path's estimated minutes without the exercises, rounded to a whole minute (what the
    README and the teacher's guide show)."""
    return round(measure(path).minutes)


def exercise_minutes(path) -> int:
    """The minutes of the core path's exercises (MINUTES_PER_EXERCISE each)."""
    return round(measure(path).exercise_minutes)


def minutes_table(paths=None) -> dict[str, tuple[int, int]]:
    """{notebook file name: (core-path minutes without the exercises, exercise minutes)}, in course
    order: the two numbers the README and the teacher's guide show."""
    return {m.notebook: (round(m.minutes), round(m.exercise_minutes))
            for m in (measure(p) for p in (notebooks() if paths is None else paths))}


def table(lengths: list[Length]) -> str:
    rows = ["| notebook | core prose words | output words | visible code lines | pictures | core minutes "
            "| exercises | exercise minutes | asserts | all words | all code lines |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for n in lengths:
        flag = lambda over: " !" if over else ""       # noqa: E731
        rows.append(f"| {n.notebook} | {n.words:,} | {n.output_words:,} | {n.code_lines} | {n.pictures} | "
                    f"{n.minutes:.0f}{flag(n.minutes > MAX_MINUTES)} | {n.exercises} | "
                    f"{n.exercise_minutes:.0f}{flag(n.exercise_minutes > MAX_EXERCISE_MINUTES)} | "
                    f"{n.asserts} | {n.all_words:,} | {n.all_code_lines:,} |")
    if len(lengths) > 1:
        total = lambda f: sum(getattr(n, f) for n in lengths)   # noqa: E731
        rows.append(f"| all {len(lengths)} | {total('words'):,} | {total('output_words'):,} | "
                    f"{total('code_lines'):,} | {total('pictures')} | {total('minutes'):.0f} | "
                    f"{total('exercises')} | {total('exercise_minutes'):.0f} | {total('asserts')} | "
                    f"{total('all_words'):,} | {total('all_code_lines'):,} |")
    return "\n".join(rows)


def main(argv) -> int:
    wanted = [a for a in argv if not a.startswith("-")]
    paths = [p for p in notebooks() if not wanted or any(p.name.startswith(w) for w in wanted)]
    lengths = [measure(p) for p in paths]
    print(table(lengths))
    print(f"\nlimits per notebook (! = over): {MAX_MINUTES} core-path minutes without the exercises, "
          f"{MAX_EXERCISE_MINUTES} exercise minutes; minutes: {RATE}, {MINUTES_PER_EXERCISE} min per exercise")
    over = [(n.notebook, n.over_limits()) for n in lengths if n.over_limits()]
    if "--check" in argv and over:
        for name, what in over:
            print(f"over the limits: {name}: {'; '.join(what)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
