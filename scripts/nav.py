"""Generate the navigation of the collection from the notebook order (file names).

Writes, from each notebook's title, its metadata["backward_twice"] and its core-path minutes
(scripts/lengths.py):
- the last cell of every notebook: previous / contents / next links;
- notebooks/README.md: the contents, opened first in JupyterLab;
- the contents table in README.md, between the contents markers.

    python scripts/nav.py           # rewrite what is out of date
    python scripts/nav.py --check   # exit 1 if anything would change (a test runs this)
"""
import re
import sys

import nbformat

from helpers.factcheck import SOURCES
from scripts import NAV_MARK, NB_DIR, ROOT, lengths, notebooks

START, END = "<!-- contents:start -->", "<!-- contents:end -->"


def title_of(nb) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            m = re.search(r"^#\s+(.+)$", cell.source, re.M)
            if m:
                return m.group(1).strip()
    raise SystemExit("a notebook has no '# Title' heading")


def info(path):
    nb = nbformat.read(path, as_version=4)
    meta = nb.metadata.get("backward_twice", {})
    return nb, {"file": path.name, "title": title_of(nb), "question": meta.get("question", ""),
                "seeds": meta.get("seeds", []),
                **_minutes(lengths.measure_notebook(nb, path.name))}


def _minutes(m) -> dict:
    """Reading minutes of the core path (prose, outputs, code, pictures) and its exercises' minutes."""
    return {"minutes": round(m.minutes), "exercise_minutes": round(m.exercise_minutes)}


def nav_cell_text(items, i) -> str:
    parts = []
    if i > 0:
        parts.append(f"← Previous: [{items[i - 1]['title']}]({items[i - 1]['file']})")
    parts.append("[Contents](README.md)")
    if i + 1 < len(items):
        parts.append(f"Next: [{items[i + 1]['title']}]({items[i + 1]['file']}) →")
    return NAV_MARK + "\n\n" + " · ".join(parts)


def contents_table(items, link_prefix="") -> str:
    rows = ["| Notebook | The question it answers | Core path: reading + exercises | Sources |", "|---|---|---:|---|"]
    for it in items:
        sources = ", ".join(f"[{sorted(SOURCES).index(s) + 1}]" for s in it["seeds"]) or "-"
        rows.append(f"| [{it['title']}]({link_prefix}{it['file']}) | {it['question']} | "
                    f"{it['minutes']} + {it['exercise_minutes']} min | {sources} |")
    rows.append("")
    rows += [f"[{i + 1}] {kind}: *{title}*  " for i, (kind, title) in enumerate(SOURCES[s] for s in sorted(SOURCES))]
    return "\n".join(rows)


def contents_page(items) -> str:
    return ("# Backward Twice: contents\n\n"
            "Work through the notebooks in order; each one ends with links to the previous and next.\n"
            f"*Core path*: minutes to read and run a notebook without its folded parts ({lengths.RATE}).\n"
            "*Sources*: the public discussions whose scenarios and claims a notebook runs.\n\n"
            + contents_table(items) + "\n")


def planned_changes():
    """[(path, new_text_or_notebook)] for everything that is out of date."""
    loaded = [info(p) for p in notebooks()]
    items = [it for _, it in loaded]
    changes = []
    for i, (nb, it) in enumerate(loaded):
        want = nav_cell_text(items, i)
        last = nb.cells[-1] if nb.cells else None
        if last is not None and last.cell_type == "markdown" and last.source.startswith(NAV_MARK):
            if last.source != want:
                last.source = want
                changes.append((NB_DIR / it["file"], nb))
        else:
            nb.cells.append(nbformat.v4.new_markdown_cell(want))
            changes.append((NB_DIR / it["file"], nb))
    page = contents_page(items)
    readme_nb = NB_DIR / "README.md"
    if not readme_nb.exists() or readme_nb.read_text() != page:
        changes.append((readme_nb, page))
    readme = ROOT / "README.md"
    text = readme.read_text() if readme.exists() else ""
    if START in text and END in text:
        head, rest = text.split(START, 1)
        _, tail = rest.split(END, 1)
        new = head + START + "\n" + contents_table(items, "notebooks/") + "\n" + END + tail
        if new != text:
            changes.append((readme, new))
    return changes


def main(argv):
    changes = planned_changes()
    if "--check" in argv:
        for path, _ in changes:
            print(f"out of date: {path.relative_to(ROOT)} (run: python scripts/nav.py)")
        return 1 if changes else 0
    for path, new in changes:
        if isinstance(new, str):
            path.write_text(new)
        else:
            nbformat.write(new, path)
        print(f"updated {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
