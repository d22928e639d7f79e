"""JupyterLab, for real: the README's server, a headless Chromium, Run All through the UI.

Starts `bash scripts/lab --no-browser --port=<free> --IdentityProvider.token=<random>` (the
README's command; when the tests run outside the repo's .venv, the same `jupyter lab` server
with this interpreter) on 127.0.0.1, opens notebook 00,
checks what a learner sees before running it (the stepper's static frames), runs every cell
from the Run menu, and checks that the graphs render, the expected error was raised and
checked, and the stepper widget answers clicks. The notebook is never saved (autosave off
in a throw-away settings dir; the test compares git status and file hashes before and
after), and the server is shut down by the test, with a time limit on every wait.
"""
import contextlib
import hashlib
import json
import os
import pathlib
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "build" / "artifacts"     # screenshots; on failure also lab-failure.png/.log
NOTEBOOK = ROOT / "notebooks" / "00_reading_the_graph.ipynb"
SETTINGS = {  # user settings for the throw-away JupyterLab profile
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false",
                                                                       "checkForUpdates": False},
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def repo_state():
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "notebooks"],
                            cwd=ROOT, capture_output=True, text=True, timeout=60).stdout
    hashes = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((ROOT / "notebooks").iterdir())
              if p.is_file()}
    return status, hashes, (ROOT / "notebooks" / ".ipynb_checkpoints").exists()


def api(port, token, path, method="GET", timeout=5):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                 headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        body = r.read()
    return json.loads(body) if body else None


def wait_for_kernel(page, port, token, timeout=90):
    """Until the notebook's kernel is started, connected to the page, and idle.

    Waits with page.wait_for_timeout, not time.sleep: the request filter (page.route) runs
    in this thread, and only while Playwright has control."""
    deadline = time.monotonic() + timeout
    while True:
        sessions = api(port, token, "/api/sessions")
        kernels = [s["kernel"] for s in sessions if s["path"].endswith(NOTEBOOK.name)]
        if kernels and kernels[0]["execution_state"] == "idle" and kernels[0]["connections"] >= 1:
            return
        assert time.monotonic() < deadline, f"the kernel was not ready within {timeout} s: {sessions}"
        page.wait_for_timeout(300)


@pytest.fixture
def lab(tmp_path, chromium):
    """A JupyterLab server on a free local port; stopped (kernels included) at the end."""
    port, token = free_port(), secrets.token_hex(16)
    for rel, value in SETTINGS.items():
        f = tmp_path / "settings" / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(value))
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
           "JUPYTER_DATA_DIR": str(tmp_path / "data"), "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
           "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    log = open(tmp_path / "lab.log", "w")
    args = ["--no-browser", f"--port={port}", f"--IdentityProvider.token={token}",
            "--ServerApp.ip=127.0.0.1", "--ServerApp.port_retries=0",
            # a throw-away profile, and nothing that would reach for the network
            f"--LabApp.user_settings_dir={tmp_path / 'settings'}",
            f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}", "--LabApp.extension_manager=readonly",
            # JupyterLab makes a checkpoint of every notebook it opens: keep it out of the repository
            f"--FileCheckpoints.checkpoint_dir={tmp_path / 'checkpoints'}",
            "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    if pathlib.Path(sys.prefix).resolve() == (ROOT / ".venv").resolve():
        cmd = ["bash", "scripts/lab", *args]       # the README's command itself (bash scripts/test, CI)
    else:                                          # another environment: the same server, this interpreter
        cmd = [sys.executable, "-m", "jupyter", "lab", f"--notebook-dir={ROOT / 'notebooks'}", *args]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-root")             # as scripts/lab does for root
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                pytest.fail(f"jupyter lab exited ({proc.returncode}):\n{(tmp_path / 'lab.log').read_text()[-3000:]}")
            try:
                api(port, token, "/api/status", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("jupyter lab did not answer within 90 s:\n" + (tmp_path / "lab.log").read_text()[-3000:])
                time.sleep(0.3)
        yield port, token, tmp_path / "lab.log"
    finally:
        try:   # shut the kernels and the server down through the API
            api(port, token, "/api/shutdown", method="POST", timeout=10)
        except OSError:
            pass
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=15)
        log.close()


def test_notebook_runs_in_jupyterlab_and_the_stepper_answers_clicks(lab, browser):
    start = time.perf_counter()
    port, token, log = lab
    before = repo_state()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(30_000)
    page = context.new_page()
    try:
        drive_jupyterlab(page, port, token)
    except BaseException:          # leave what is needed to see why, CI included
        with contextlib.suppress(Exception):
            page.screenshot(path=str(ARTIFACTS / "lab-failure.png"))
        with contextlib.suppress(Exception):
            shutil.copyfile(log, ARTIFACTS / "lab-failure.log")
        raise
    finally:
        context.close()
    assert repo_state() == before, "the notebook folder changed: something was saved from the UI"
    print(f"JupyterLab check in {time.perf_counter() - start:.1f} s (after the server was up)")


# How JupyterLab shows a picture: our text/html, an <img> of the SVG (trusted or not: html
# ranks first); raw SVG (an <img> inside .jp-RenderedSVG) only for outputs that carry it.
GRAPHS = (".jp-RenderedSVG img, .jp-RenderedSVG svg, "
          ".jp-RenderedHTMLCommon > img[src^='data:image/svg+xml'], "
          ".jp-RenderedHTMLCommon > figure.bt-figure > img[src^='data:image/svg+xml']")   # with its words beside it


def drive_jupyterlab(page, port, token):
    from playwright.sync_api import expect  # here: without playwright the fixtures skip loudly

    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    n_shown = sum(1 for c in code if not c.metadata.get("jupyter", {}).get("source_hidden"))
    n_svg = sum(1 for c in nb.cells for o in c.get("outputs", [])             # graphs: an <img> of SVG
                if "".join(o.get("data", {}).get("text/html", "")).startswith(("<img", '<figure class="bt-figure"'))
                or "image/svg+xml" in o.get("data", {}))
    page_errors = []
    page.on("pageerror", lambda e: page_errors.append(str(e)))
    local = f"http://127.0.0.1:{port}/"
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith((local, "data:", "blob:")) else r.abort())
    page.goto(f"{local}lab/tree/{NOTEBOOK.name}?token={token}", wait_until="domcontentloaded", timeout=60_000)
    notebook = page.locator(".jp-NotebookPanel:visible .jp-Notebook")
    notebook.wait_for(timeout=60_000)
    wait_for_kernel(page, port, token)        # Run All before the kernel is connected runs nothing
    page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").first.wait_for(timeout=60_000)

    # Before running: the committed outputs, the stepper as its static frames.
    static = page.locator(".jp-OutputArea-output", has_text="before the call: 3 saved tensor(s) held").first
    static.wait_for()
    assert page.locator(".bt-stepper").count() == 0
    frame0 = static.locator("img[alt^='before the call']")          # kept by JupyterLab's sanitizer
    frame0.scroll_into_view_if_needed()
    assert frame0.evaluate("el => el.complete && el.naturalWidth > 50")
    page.screenshot(path=str(ARTIFACTS / "lab-before-run.png"))
    # A fresh clone is untrusted: JupyterLab will not render raw SVG, so every picture also
    # carries an <img> copy in text/html. The graphs must be visible before anything runs.
    committed = page.locator(GRAPHS)
    assert committed.count() >= n_svg, ("graphs visible before running", committed.count(), n_svg)
    assert all(committed.nth(i).evaluate("el => el.complete && el.naturalWidth > 50")
               for i in range(committed.count()))

    # Run > Run All Cells, as a learner does.
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
    prompts = page.locator(".jp-CodeCell .jp-InputPrompt")
    deadline = time.monotonic() + 180
    while True:
        texts = [t.strip() for t in prompts.all_inner_texts() if t.strip()]   # hidden cells show none
        done = [t for t in texts if re.fullmatch(r"\[\d+\]:", t)]
        if len(done) == n_shown and notebook.locator("text=Exercise 0.3: right!").count():
            break
        assert time.monotonic() < deadline, f"Run All did not finish in 180 s: {texts}"
        page.wait_for_timeout(500)
    numbers = [int(t.strip("[]:")) for t in done]
    # one Run All: every code cell numbered in order from 1; the folded ones (the version cell with the
    # Colab block, the check cells) run too, but show no prompt number
    shown_at = [k + 1 for k, c in enumerate(code) if not c.metadata.get("jupyter", {}).get("source_hidden")]
    assert numbers == shown_at, (numbers, shown_at)

    text = notebook.inner_text()
    assert "raised RuntimeError: Trying to backward through the graph a second time" in text
    assert "Exercise 0.3: no answer yet" in text and "Exercise 0.3: right!" in text
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    error_texts = [t for t in errors.all_inner_texts() if "Error" in t]
    assert len(error_texts) == 1 and "Trying to backward through the graph a second time" in error_texts[0], error_texts

    graphs = page.locator(GRAPHS)
    assert graphs.count() >= n_svg, (graphs.count(), n_svg)
    for i in range(graphs.count()):
        g = graphs.nth(i)
        g.scroll_into_view_if_needed()
        box = g.bounding_box()
        assert box and box["width"] > 50 and box["height"] > 50, f"graph {i} not drawn: {box}"
        assert g.evaluate("el => el.tagName !== 'IMG' || (el.complete && el.naturalWidth > 0)"), f"graph {i} broken"

    # The live stepper: a widget now, answering clicks.
    stepper = page.locator(".bt-stepper").first
    stepper.wait_for()
    caption = stepper.locator("pre").first       # locators are found again after each redraw
    picture = stepper.locator("svg").first
    nxt = stepper.get_by_role("button", name="next ▶")
    expect(caption).to_contain_text("before the call")
    nxt.click()
    expect(caption).to_contain_text("step 1 of 6", timeout=30_000)
    expect(picture).to_be_visible()
    for _ in range(3):
        nxt.click()
    expect(caption).to_contain_text("step 4 of 6 · op4 MulBackward0 ran", timeout=30_000)
    expect(caption).to_contain_text("released after it ran: its saved other (= w)")
    stepper.get_by_role("button", name="⏮ reset").click()
    expect(caption).to_contain_text("before the call", timeout=30_000)
    nxt.click()
    expect(caption).to_contain_text("step 1 of 6", timeout=30_000)
    expect(picture).to_be_visible()
    # issue 30 §3: the caption is a live region; Tab from 'previous' reaches the slider's handle,
    # then 'next', each with a visible 3 px focus ring; the picture has a text alternative
    expect(stepper.locator("[role=status][aria-live=polite]")).to_contain_text("step 1 of 6")
    assert stepper.locator("[role=img][aria-label*='FREED'], [role=img][aria-label*='HELD']").count() == 1
    stepper.get_by_role("button", name="◀ previous").focus()
    rings = []
    for _ in range(3):                      # the slider's handle, its readout (editable), 'next'
        page.keyboard.press("Tab")
        rings.append(page.evaluate("() => { const e = document.activeElement, s = getComputedStyle(e);"
                                   " return [e.className, s.outlineStyle, s.outlineWidth]; }"))
    assert "noUi-handle" in rings[0][0] and "widget-readout" in rings[1][0] and "jupyter-button" in rings[2][0], rings
    assert all(r[1:] == ["solid", "3px"] for r in rings), rings
    stepper.screenshot(path=str(ARTIFACTS / "lab-stepper.png"))
    assert page_errors == [], page_errors
