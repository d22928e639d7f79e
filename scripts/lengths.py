"""How long is each notebook's core path? Prose words, visible code lines, asserts, minutes.

The core path (GUIDE.md) is every cell that is neither inside a "Going deeper" section nor a
solution. A Going deeper section starts at a markdown heading (## or ###) whose text starts
with "Going deeper" and runs until the next heading of the same or a higher level; the
"Solutions" section is delimited the same way. A *visible* code line is a non-blank line of
a core-path code cell whose source is not hidden (`"jupyter": {"source_hidden": true}`).

Minutes estimate what a class spends on the core path, reading and running it:
- prose at 200 words per minute: silent reading of English non-fiction averages ~240 wpm
  (Brysbaert 2019, a meta-analysis of 190 studies); technical text with code words and
  formulas is read more slowly;
- 6 seconds per visible code line (10 lines a minute), for reading the line, running the
  cell and looking at what it printed or drew. With 200 wpm, this rate reproduces the
  estimates issue 10 made for the long notebooks (03: 3,362 words + 610 lines = 78 min,
  stated "about 70"; 01, 02, 04: 42, 48, 56 min, stated "about 45-50").
At the limits (1,500 words, 120 lines) that is 7.5 + 12 = 19.5 minutes, which leaves room in
a 45-minute period for the exercises and the discussion.

    python scripts/lengths.py                # the table, for every notebook
    python scripts/lengths.py 01 03          # only these (by number or file name)
    python scripts/lengths.py --check        # also exit 1 if a notebook is over the limits

Importable: `from scripts.lengths import measure, core_minutes` (tests, nav.py, the teacher's guide).
`sections(nb)` is the one home of where Going deeper and Solutions sections start and end: the
core path, the site's folding, the handout, the classroom kit and the tests all read it.
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

WORDS_PER_MINUTE = 200
SECONDS_PER_CODE_LINE = 6
RATE = f"{WORDS_PER_MINUTE} words a minute plus {SECONDS_PER_CODE_LINE} s per visible code line"
MAX_WORDS = 1500
MAX_CODE_LINES = 120

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

    @property
    def minutes(self) -> float:
        return self.words / WORDS_PER_MINUTE + self.code_lines * SECONDS_PER_CODE_LINE / 60

    def over_limits(self) -> list[str]:
        """What is over the core-path limits, in words a reader understands ([] if nothing)."""
        over = []
        if self.words > MAX_WORDS:
            over.append(f"{self.words:,} core-path prose words (limit {MAX_WORDS:,})")
        if self.code_lines > MAX_CODE_LINES:
            over.append(f"{self.code_lines} visible core-path code lines (limit {MAX_CODE_LINES})")
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


def is_hidden(cell) -> bool:
    return bool(cell.metadata.get("jupyter", {}).get("source_hidden"))


def measure_notebook(nb, name: str) -> Length:
    words = all_words = lines = all_lines = n_asserts = 0
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
            if pieces[0][0] == "core" and not is_hidden(cell):
                lines += n
    return Length(name, len(nb.cells), words, lines, n_asserts, all_words, all_lines)


def measure(path) -> Length:
    path = pathlib.Path(path)
    return measure_notebook(nbformat.read(path, as_version=4), path.name)


def core_minutes(path) -> int:
    """The core path's estimated minutes, rounded to a whole minute (what the README shows)."""
    return round(measure(path).minutes)


def table(lengths: list[Length]) -> str:
    rows = ["| notebook | cells | core prose words | visible core code lines | asserts "
            "| core minutes | all words | all code lines |",
            "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for n in lengths:
        flag = lambda over: " !" if over else ""       # noqa: E731
        rows.append(f"| {n.notebook} | {n.cells} | {n.words:,}{flag(n.words > MAX_WORDS)} | "
                    f"{n.code_lines}{flag(n.code_lines > MAX_CODE_LINES)} | {n.asserts} | "
                    f"{n.minutes:.0f} | {n.all_words:,} | {n.all_code_lines:,} |")
    if len(lengths) > 1:
        total = lambda f: sum(getattr(n, f) for n in lengths)   # noqa: E731
        rows.append(f"| all {len(lengths)} | {total('cells')} | {total('words'):,} | "
                    f"{total('code_lines'):,} | {total('asserts')} | "
                    f"{sum(n.minutes for n in lengths):.0f} | {total('all_words'):,} | "
                    f"{total('all_code_lines'):,} |")
    return "\n".join(rows)


def main(argv) -> int:
    wanted = [a for a in argv if not a.startswith("-")]
    paths = [p for p in notebooks() if not wanted or any(p.name.startswith(w) for w in wanted)]
    lengths = [measure(p) for p in paths]
    print(table(lengths))
    print(f"\nlimits per notebook: {MAX_WORDS:,} core prose words, {MAX_CODE_LINES} visible core "
          f"code lines (! = over); minutes: {WORDS_PER_MINUTE} words/min + "
          f"{SECONDS_PER_CODE_LINE} s per visible code line")
    over = [(n.notebook, n.over_limits()) for n in lengths if n.over_limits()]
    if "--check" in argv and over:
        for name, what in over:
            print(f"over the limits: {name}: {'; '.join(what)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
