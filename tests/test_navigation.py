"""Navigation is generated: a test fails if scripts/nav.py would change anything."""
from scripts import ROOT, nav, notebooks


def test_navigation_is_up_to_date():
    # in-process (what `python scripts/nav.py --check` does): a subprocess would pay
    # Python and nbformat start-up again
    stale = [str(path.relative_to(ROOT)) for path, _ in nav.planned_changes()]
    assert stale == [], f"out of date: {stale} (run: python scripts/nav.py)"


def test_every_notebook_has_the_skeleton():
    import nbformat

    for path in notebooks():
        nb = nbformat.read(path, as_version=4)
        text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        meta = nb.metadata.get("backward_twice", {})
        assert meta.get("question") and meta.get("seeds"), f"{path.name}: metadata question/seeds"
        assert text.startswith(f"# {path.name[:2]} · "), f"{path.name}: title must start '# NN · '"
        for heading in ("**What you'll learn**", "**Prerequisites", "## Summary",
                        "## Further reading", "Exercise"):
            assert heading in text, f"{path.name}: missing {heading!r}"
        version = [c for c in nb.cells if c.cell_type == "code"][0]
        assert "nbval-ignore-output" in version.metadata.get("tags", []) and "versions()" in version.source


def test_the_notebook_list_is_every_notebook():
    """scripts.notebooks() is the one list every script and test uses: a notebook its glob
    missed (a name not starting 'NN_') would be neither tested, navigated nor published.
    (nbval itself collects every .ipynb under notebooks/.)"""
    found = notebooks()
    assert found and found == sorted(ROOT.joinpath("notebooks").glob("*.ipynb")), "a notebook not named 'NN_title.ipynb'"
