"""pytest configuration shared by the unit tests, nbval and the browser tests."""
import os
import pathlib
import shutil

import pytest


def pytest_collectstart(collector):
    # Graphviz SVG differs between engine builds and fonts, matplotlib SVG embeds a date:
    # never byte-compare SVG. Every picture's structure is compared through its text/plain.
    # Our pictures put their SVG only in text/html, as an <img> (README, "Stable outputs":
    # what each front-end shows); tests/nbval_sanitize.cfg blanks its data there, so alt texts
    # and captions are still compared. Raw image/svg+xml (notebooks saved before that, or an
    # SVG a cell displays itself) is skipped here.
    # skip_compare is nbval's own attribute (private): tests/test_internals.py fails, saying
    # what to look at, if an nbval upgrade renames it or stops honouring it.
    if collector.fspath and collector.fspath.ext == ".ipynb":
        if not hasattr(collector, "skip_compare"):
            raise pytest.UsageError("nbval's IPyNbFile has no skip_compare any more: conftest.py "
                                    "cannot keep it from byte-comparing SVG (see tests/test_internals.py)")
        collector.skip_compare += ("image/svg+xml",)


# ------------------------------------------------------------------------------------
# Order for two workers (`-n 2 --dist loadscope`): xdist hands out one file at a time, by
# default the files with the most tests first, which put the three slowest files (one test
# each) last, with the other worker idle meanwhile. The slow ones go first instead;
# then the notebooks, then the quick unit tests, which fill the gaps at the end.
# (loadscopereorder is the dest of xdist's --no-loadscope-reorder flag, set here so that any
# pytest command gets the order; tests/test_internals.py checks xdist still reads it.)
# tests/test_rerun.py is one scope per notebook (a class each), ~3 notebook runs apiece: first.
SLOW_FIRST = ("tests/test_rerun.py", "tests/test_lab.py", "tests/test_site.py", "tests/test_mutation.py")


def pytest_configure(config):
    if hasattr(config.option, "loadscopereorder"):       # xdist is loaded: keep our order
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config, items):
    def rank(item):
        path = item.nodeid.split("::", 1)[0]
        if path in SLOW_FIRST:
            return 0, SLOW_FIRST.index(path)
        return (1, 0) if path.startswith("notebooks/") else (2, 0)

    items.sort(key=rank)           # stable: the order within a file, and of files in a group, stays


# ------------------------------------------------------------------------------------
# Browser tests (tests/test_site.py, tests/test_lab.py) drive a real headless Chromium.
# Without one they are skipped *loudly* (a summary line says so and how to enable them);
# under CI=true a missing Chromium is a failure, never a silent pass.
BROWSER_NOT_RUN = "BROWSER TESTS NOT RUN"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]
HOW_TO_ENABLE = ("install Chromium (Debian/Ubuntu: `apt-get install chromium`) and the Python "
                 "requirements (`playwright` is in requirements-dev.txt), or point "
                 "BACKWARD_TWICE_CHROMIUM at a Chromium binary")


def chromium_path():
    """(path, None) when a usable Chromium and Playwright are here, else (None, reason)."""
    path = os.environ.get("BACKWARD_TWICE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return None, "the Python package playwright is not installed"
    if not (pathlib.Path(path).is_file() and os.access(path, os.X_OK)):
        return None, f"no Chromium at {path}"
    return path, None


@pytest.fixture(scope="session")
def chromium():
    path, reason = chromium_path()
    if path is None:
        message = f"{BROWSER_NOT_RUN}: {reason}; to run them, {HOW_TO_ENABLE}"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(message + " (CI=true: the browser tests are required here)", pytrace=False)
        pytest.skip(message)
    return path


@pytest.fixture(scope="module")
def browser(chromium):
    """A headless Chromium driven by Playwright (one per test module)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS, timeout=60_000)
        try:
            yield b
        finally:
            b.close()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if BROWSER_NOT_RUN in str(r.longrepr)]
    if skipped:
        reason = str(skipped[0].longrepr).split(BROWSER_NOT_RUN + ": ", 1)[-1].split(";")[0]
        terminalreporter.write_sep("!", BROWSER_NOT_RUN, red=True, bold=True)
        terminalreporter.write_line(
            f"{len(skipped)} browser test(s) were skipped, not passed: {reason}. "
            f"The static site and the JupyterLab check were NOT verified. To run them, {HOW_TO_ENABLE}.")
