"""One verdict per quote (issue 10): helpers.factcheck.QUOTES is the only place a verdict is
decided, each quote is proved where the registry says, and no notebook states another verdict.

How a notebook's statement of a verdict is found (scan of markdown and committed outputs):
- a unit is a markdown table row, or a line of a cell's output (stream, text/plain, text/markdown);
- it is about a quote when it holds five consecutive words of that quote (words shared by two
  quotes do not count), or the quote's id in a ledger line `[000-a] TRUE:` or a table cell;
- its verdict is the first verdict word in the table cell after the quote (rows), or before the
  quote (output lines: `PARTLY TRUE: "..."`), else after it. Words: true/right/correct,
  false/wrong/incorrect, partly/depends on the reading/half wrong/mostly right/not always/imprecise.
Prose sentences outside tables are not scanned (too loose to read a verdict from).
"""
import collections
import pathlib
import re

import nbformat
import pytest

from helpers.factcheck import QUOTES, SOURCES, VERDICTS, verdict_table

ROOT = pathlib.Path(__file__).resolve().parent.parent
NB_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NB_DIR.glob("[0-9][0-9]_*.ipynb"))

WORDS = [("partly true", "partly"), ("depends on the reading", "partly"), ("half wrong", "partly"),
         ("mostly right", "partly"),
         ("not always", "partly"), ("imprecise", "partly"), ("partly", "partly"),
         ("wrong tool", "false"), ("incorrect", "false"), ("wrong", "false"), ("false", "false"),
         ("correct", "true"), ("right", "true"), ("true", "true")]
# a word of prose, not code: `retain_graph=True`, `create_graph=False)` are no verdicts
VERDICT_WORD = re.compile(r"(?<![\w=.`])(" + "|".join(re.escape(w) for w, _ in WORDS) + r")(?![\w=(`])", re.I)
CANONICAL = dict(WORDS)
SHINGLE = 5
ID_LINE = re.compile(r"\[(\d{3}-\w+)\]\s+(TRUE|FALSE|PARTLY TRUE)\b")


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9_=.]+", re.sub(r"[*`\"'“”‘’()]", "", text.lower()))


def shingles(text: str) -> set[tuple]:
    w = words(text)
    return {tuple(w[i:i + SHINGLE]) for i in range(len(w) - SHINGLE + 1)}


def quote_shingles(quotes) -> dict[str, set]:
    """Each quote's 5-word windows that no other quote has."""
    own = {q.id: shingles(q.quote.replace("[...]", " | ")) for q in quotes}
    seen = collections.Counter(s for ss in own.values() for s in ss)
    return {qid: {s for s in ss if seen[s] == 1} for qid, ss in own.items()}


def verdict_in(text: str) -> str | None:
    m = VERDICT_WORD.search(text)
    return CANONICAL[m.group(1).lower()] if m else None


def units(nb):
    """(kind, text) for every table row of the markdown and every line of the outputs."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.lstrip().startswith("|"):
                    yield "row", line
        for out in cell.get("outputs", []):
            texts = [out.get("text", "")] + [out.get("data", {}).get(m, "")
                                             for m in ("text/plain", "text/markdown")]
            for text in texts:
                for line in (text if isinstance(text, str) else "".join(text)).splitlines():
                    yield ("row" if line.lstrip().startswith("|") else "line"), line


def statements(nb, quotes=None):
    """[(quote id, verdict, the text it was read from)] for every verdict the notebook states."""
    quotes = list(QUOTES.values()) if quotes is None else quotes
    ids = {q.id for q in quotes}
    keys = quote_shingles(quotes)
    found = []
    for kind, text in units(nb):
        m = ID_LINE.search(text)
        if m and m.group(1) in ids:
            found.append((m.group(1), CANONICAL[m.group(2).lower()], text))
            continue
        cells = re.split(r"(?<!\\)\|", text) if kind == "row" else [text]
        lead = re.match(r"\s*\|?\s*(\d{3}-\w+)\s", text)   # a ledger table row or line names its quote
        for qid, qkeys in keys.items():
            if lead and lead.group(1) in ids and qid != lead.group(1):
                continue
            at = next((i for i, c in enumerate(cells) if shingles(c) & qkeys), None)
            if at is None:
                at = next((i for i, c in enumerate(cells) if c.strip() == qid), None)
            if at is None:
                continue
            if kind == "row":
                verdict = next((v for c in cells[at + 1:] if (v := verdict_in(c))), None)
            else:
                w = words(text)
                first = min(i for i in range(len(w)) if tuple(w[i:i + SHINGLE]) in qkeys)
                before = " ".join(w[:first])
                verdict = verdict_in(before) or verdict_in(" ".join(w[first + SHINGLE:]))
            if verdict:
                found.append((qid, verdict, text))
    return found


def disagreements(notebooks: dict, quotes=None) -> list[str]:
    """Every quote whose stated verdicts differ between notebooks or from the registry."""
    quotes = list(QUOTES.values()) if quotes is None else quotes
    registered = {q.id: q.verdict for q in quotes}
    said = collections.defaultdict(list)
    for name, nb in notebooks.items():
        for qid, verdict, text in statements(nb, quotes):
            said[qid].append((name, verdict, text))
    problems = []
    for qid, items in sorted(said.items()):
        verdicts = {v for _, v, _ in items} | {registered[qid]}
        if len(verdicts) > 1:
            where = "; ".join(f"{name} says {VERDICTS[v]!r} in {text.strip()[:120]!r}" for name, v, text in items)
            problems.append(f"{qid} (registered: {VERDICTS[registered[qid]]!r}): {where}")
    return problems


def test_no_two_notebooks_state_different_verdicts_for_one_quote():
    notebooks = {p.name[:2]: nbformat.read(p, as_version=4) for p in NOTEBOOKS}
    problems = disagreements(notebooks)
    assert not problems, ("verdicts that disagree (render them with helpers.factcheck.verdict_table "
                          "instead of typing them):\n" + "\n".join(problems))


# ----------------------------------------------------------------------------------
# The scan itself, on notebooks built here: it must catch two notebooks that disagree.
def _nb(*markdown, outputs=()):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(m) for m in markdown])
    if outputs:
        cell = nbformat.v4.new_code_cell("x")
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=t) for t in outputs]
        nb.cells.append(cell)
    return nb


def test_the_scan_catches_two_notebooks_that_disagree():
    one = _nb('| Seed | Claim | Verdict |\n|---|---|---|\n'
              '| 002, 004 | "the part of graph that calculate d will be freed" | partly: only saved tensors |')
    two = _nb('| Claim | Verdict |\n|---|---|\n'
              '| after d.backward() ... the part of graph that calculate d will be freed | **true** |')
    problems = disagreements({"01": one, "09": two})
    assert len(problems) == 1 and problems[0].startswith("002-a (registered: 'partly true'): 01 says 'partly true'")
    assert "09 says 'true'" in problems[0]
    assert disagreements({"01": one}) == []


def test_the_scan_reads_ledger_lines_verdict_tables_and_learner_lines():
    old = _nb(outputs=["[004-a] FALSE: backward keeps the gradients\n"])
    assert statements(old) == [("004-a", "false", "[004-a] FALSE: backward keeps the gradients")]
    line = _nb(outputs=['PARTLY TRUE: "running .backward() on one graph will destroy any gradient '
                        'information in the..." (Stack Overflow): false if ... true if ...\n'])
    assert [(q, v) for q, v, _ in statements(line)] == [("004-a", "partly")]
    table = verdict_table("004-a", "003-4")
    rendered = _nb(table._repr_markdown_(), outputs=[repr(table)])
    assert sorted((q, v) for q, v, _ in statements(rendered)) == [
        ("003-4", "false"), ("003-4", "false"), ("004-a", "partly"), ("004-a", "partly")]
    assert statements(_nb("| not a claim | true |", "Prose: the part of graph that calculate d will be "
                          "freed, which is true.")) == []


# ----------------------------------------------------------------------------------
# The registry: complete, and each quote proved where it says.
def test_every_quote_is_registered_well():
    for q in QUOTES.values():
        assert q.verdict in VERDICTS and q.source in SOURCES, q.id
        assert q.quote.strip() and q.why.strip(), q.id
        assert (NB_DIR / q.notebook).exists(), f"{q.id}: no notebook {q.notebook}"
        assert "seed" not in q.why.lower() and "seed" not in q.quote.lower(), \
            f"{q.id}: learners see quote and why; name no seed"


@pytest.mark.parametrize("name", sorted({q.notebook for q in QUOTES.values()}))
def test_each_quote_is_proved_by_a_claim_cell_in_the_section_the_registry_names(name):
    nb = nbformat.read(NB_DIR / name, as_version=4)
    section, where = None, {}
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                m = re.match(r"^#{2,4}\s+(\d+(?:\.\d+)?)\.?\s", line)
                if m:
                    section = m.group(1)
        else:
            for qid in re.findall(r"""\.claim\(\s*["']([^"']+)["']""", cell.source):
                where.setdefault(qid, section)
    wrong = []
    for q in (q for q in QUOTES.values() if q.notebook == name):
        if q.id not in where:
            wrong.append(f"{q.id}: no `ledger.claim({q.id!r})` cell in {name}")
        elif where[q.id] is None or not (where[q.id] == q.section or where[q.id].startswith(q.section + ".")):
            wrong.append(f"{q.id}: proved in section {where[q.id]}, registered as §{q.section} "
                         "(update Quote.section in helpers/factcheck.py)")
    assert not wrong, "\n".join(wrong)
