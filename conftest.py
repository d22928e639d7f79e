"""pytest configuration shared by the unit tests and nbval."""


def pytest_collectstart(collector):
    # Graphviz SVG differs between engine builds and fonts, matplotlib SVG embeds a date:
    # never byte-compare SVG. Every picture's structure is compared through its text/plain.
    if collector.fspath and collector.fspath.ext == ".ipynb":
        collector.skip_compare += ("image/svg+xml",)
