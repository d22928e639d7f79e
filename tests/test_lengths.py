"""Core-path limits (issue 20 §1): every notebook's core path is read in at most 20 minutes without
its exercises (prose and outputs at 200 words a minute, 3 s per visible code line, 1 minute per
picture), its exercises take at most 8; and the counting rules of scripts/lengths.py on small
notebooks built here."""
import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from scripts import NAV_MARK, lengths

NOTEBOOKS = lengths.notebooks()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_core_path_fits_the_limits(path):
    n = lengths.measure(path)
    assert not n.over_limits(), (f"{path.name} is over the core-path limits: {'; '.join(n.over_limits())}. "
                                 "Fold the rest into a 'Going deeper' section, print less, or show fewer pictures "
                                 "(`python scripts/lengths.py` prints the table)")


def _nb(*cells):
    return new_notebook(cells=list(cells))


def _hidden(source):
    cell = new_code_cell(source)
    cell.metadata["jupyter"] = {"source_hidden": True}
    return cell


def test_going_deeper_solutions_and_hidden_cells_are_not_core():
    nb = _nb(
        new_markdown_cell("# 01 · Title\n\nOne two three."),               # 5 words (01 counts)
        new_code_cell("x = 1\n\ny = 2\n"),                                  # 2 visible lines
        _hidden("assert x == 1\nassert y == 2"),                            # hidden: 0 lines, 2 asserts
        new_markdown_cell("## Going deeper: more\nfour five six seven"),
        new_code_cell("z = 3\nassert z"),                                   # folded
        new_markdown_cell("### A sub-heading inside\neight"),               # still folded (### < ##)
        new_markdown_cell("## 2. Back on the path\nnine ten"),              # core again: 7 words
        new_code_cell("w = 4"),                                             # 1 line
        new_markdown_cell("## Summary\nshort.\n\n## Solutions"),            # Summary core, Solutions not
        new_code_cell("check('1.1', 3, truth)"),                            # a solution
        new_markdown_cell(NAV_MARK + "\n\n[Next](02.ipynb)"),
    )
    n = lengths.measure_notebook(nb, "x.ipynb")
    assert (n.words, n.code_lines, n.asserts, n.cells) == (5 + 7 + 2, 3, 3, 11)
    assert n.all_words == 14 + 7 + 4 + 1          # + folded prose (Going deeper 7, sub 4, Solutions 1)
    assert n.all_code_lines == 2 + 2 + 2 + 1 + 1
    assert (n.output_words, n.pictures, n.exercises) == (0, 0, 0)    # no outputs; the check is a solution
    assert n.minutes == pytest.approx(14 / 200 + 3 * 3 / 60)


def test_a_going_deeper_section_ends_at_a_heading_of_its_level_or_higher_only():
    nb = _nb(new_markdown_cell("### Going deeper: detail\nfolded"),
             new_markdown_cell("#### deeper still\nfolded"),
             new_markdown_cell("## 3. Next section\nseen"))
    assert lengths.measure_notebook(nb, "x").words == 4      # "3 Next section seen"


def test_what_counts_as_a_word():
    assert lengths.prose_words("Call `loss.backward()` with [retain_graph](https://x.org/a_b) = True.") == 5
    assert lengths.prose_words("| a | b |\n|---|---|\n| 1 | 2 |") == 4
    assert lengths.prose_words("<!-- hidden note -->\n<details><summary>Open</summary></details>") == 1
    assert lengths.prose_words("```python\n# Going deeper: not a heading in a fence\n```\nword") == 10
    assert lengths.asserts("assert x  # assert in a comment\ns = 'assert'\nassert y") == 2
    assert lengths.asserts("%time assert x\nassert y") == 2          # IPython syntax: by line


def test_a_heading_in_a_code_fence_does_not_open_a_section():
    nb = _nb(new_markdown_cell("```\n## Going deeper: inside a fence\n```"), new_code_cell("x = 1"))
    assert lengths.measure_notebook(nb, "x").code_lines == 1


def test_over_limits_names_the_numbers():
    n = lengths.Length("07_x.ipynb", 10, 1000, 100, 0, 1000, 100, output_words=1000, pictures=6, exercises=5)
    assert n.minutes == pytest.approx(2000 / 200 + 100 * 3 / 60 + 6)     # 10 + 5 + 6
    assert n.over_limits() == [
        "21.0 core-path minutes without the exercises (limit 20): 1,000 prose words, 1,000 output words, "
        "100 code lines, 6 pictures",
        "10 exercise minutes (limit 8): 5 exercises"]
    assert lengths.Length("07_x.ipynb", 10, 1000, 100, 0, 1000, 100, 800, 6, 4).over_limits() == []


def _output(kind, **fields):
    return nbformat.from_dict({"output_type": kind, **fields})


def test_outputs_count_what_a_reader_sees():
    """Printed text, tables, an error's message, the text of HTML outside its pictures; each image is
    a picture (one per frame of a static stepper); a folded <details> body and alt texts are not seen."""
    html = ('<div><p><b>backward, step by step</b>: 2 frames</p>'
            '<img alt="long text form never seen" src="data:x"><figure><img src="y"></figure>'
            '<details><summary>Open me</summary>hidden words here</details><style>p {color: red}</style></div>')
    cell = new_code_cell("draw(loss)")
    cell.outputs = [
        _output("stream", name="stdout", text="a.grad = tensor([2., 4.])\n"),          # a grad tensor 2 4
        _output("display_data", data={"text/html": html, "text/plain": "plain twin not shown"}, metadata={}),
        _output("display_data", data={"text/markdown": "| a | b |\n|---|---|\n| yes | no |",
                                      "text/plain": "x"}, metadata={}),
        _output("display_data", data={"image/png": "iVBOR", "text/plain": "<Figure>"}, metadata={}),
        _output("execute_result", data={"text/plain": "3"}, metadata={}, execution_count=1),
        _output("error", ename="RuntimeError", evalue="Trying to backward", traceback=["long"]),
    ]
    assert lengths.output_reading(cell.outputs) == (5 + 7 + 4 + 1 + 4, 3)
    folded = new_code_cell("draw(loss)")
    folded.outputs = cell.outputs
    nb = _nb(new_markdown_cell("one two"), cell, new_markdown_cell("## Going deeper: x"), folded)
    n = lengths.measure_notebook(nb, "x")
    assert (n.output_words, n.pictures) == (21, 3)                     # the folded copy is not counted
    assert n.minutes == pytest.approx((2 + 21) / 200 + 1 * 3 / 60 + 3)


def test_exercises_are_the_core_paths_check_calls():
    nb = _nb(new_code_cell("answer_1_1 = ..."), new_code_cell('check("1.1", answer_1_1, truth)'),
             new_code_cell("check('1.2', answer_1_2, t)\ncheck('1.2', answer_1_2, t)"),   # one exercise
             new_markdown_cell("## Solutions"), new_code_cell('check("1.1", 3, truth)'))
    n = lengths.measure_notebook(nb, "x")
    assert (n.exercises, n.exercise_minutes) == (2, 4)


def test_minutes_table_gives_both_numbers_per_notebook(tmp_path):
    nbformat.write(_nb(new_markdown_cell("word " * 400), new_code_cell('check("1.1", answer_1_1, t)')),
                   tmp_path / "01_a.ipynb")
    assert lengths.minutes_table(sorted(tmp_path.glob("*.ipynb"))) == {"01_a.ipynb": (2, 2)}
    assert lengths.core_minutes(tmp_path / "01_a.ipynb") == 2 and lengths.exercise_minutes(tmp_path / "01_a.ipynb") == 2


def test_the_table_has_a_row_per_notebook_and_a_total(tmp_path):
    for name, words in (("01_a.ipynb", "one two"), ("02_b.ipynb", "three")):
        nbformat.write(_nb(new_markdown_cell(words), new_code_cell("x = 1")), tmp_path / name)
    rows = lengths.table([lengths.measure(p) for p in sorted(tmp_path.glob("*.ipynb"))]).splitlines()
    assert rows[2].startswith("| 01_a.ipynb | 2 | 0 | 1 | 0 | 0 | 0 | 0 |")
    assert rows[-1].startswith("| all 2 | 3 | 0 | 2 | 0 | 0 | 0 | 0 |")


def test_sections_cut_a_cell_where_a_folded_section_opens_or_closes():
    """The one rule the core path, the site's folding, the handout and the kit read (lengths.sections)."""
    nb = _nb(new_markdown_cell("## 1. Core\ntext"),
             new_markdown_cell("### Going deeper: outer\nfolded\n#### a sub-heading stays inside"),
             new_markdown_cell("more\n### Going deeper: sibling\nnext"),      # closes outer, opens another
             new_markdown_cell("#### Going deeper: nested\nin"),             # opens inside; still 'deeper'
             new_markdown_cell("end\n## Summary\nsum\n## Solutions\nsol"),    # closes both, then a solution
             new_code_cell("check('1.1', 3, truth)"),
             new_markdown_cell(""))
    got = [[(p.part, p.text, p.opens, p.heading, p.closes) for p in pieces]
           for _, pieces in lengths.sections(nb)]
    assert got == [
        [("core", "## 1. Core\ntext", None, None, ())],
        [("deeper", "### Going deeper: outer\nfolded\n#### a sub-heading stays inside", "deeper",
          "Going deeper: outer", ())],
        [("deeper", "more", None, None, ()),
         ("deeper", "### Going deeper: sibling\nnext", "deeper", "Going deeper: sibling", ("deeper",))],
        [("deeper", "#### Going deeper: nested\nin", "deeper", "Going deeper: nested", ())],
        [("deeper", "end", None, None, ()),
         ("core", "## Summary\nsum", None, None, ("deeper", "deeper")),
         ("solution", "## Solutions\nsol", "solution", "Solutions", ())],
        [("solution", "check('1.1', 3, truth)", None, None, ())],
        [],
    ]
    assert [parts for _, parts in lengths.parts(nb)][4] == [("deeper", "end"), ("core", "## Summary\nsum"),
                                                            ("solution", "## Solutions\nsol")]


def test_section_text_is_what_stands_under_a_heading():
    text = "# T\n## Summary\n- a\n### more\n- b\n```\n## not a heading\n```\n## Further reading\n- c"
    assert lengths.section_text(text, "Summary") == "- a\n### more\n- b\n```\n## not a heading\n```"
    assert lengths.section_text(text, "Further reading") == "- c"
    assert lengths.section_text(text, "Missing") == ""
