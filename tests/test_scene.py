"""The scene layer (issue 18 §2, §4): DOT written in one place, imports one way, repeated structure
that reads at notebook width."""
import ast
import importlib
import pathlib
import re
import subprocess
import sys
import types

import pytest
import torch
from torch import nn

from backward_twice.graph import draw
from backward_twice.picture import repeats
from backward_twice.picture.layout import MIN_TEXT_PX, fits, reads_at, smallest_text_px
from backward_twice.walk import snapshot

ROOT = pathlib.Path(__file__).resolve().parent.parent
TOOL = ROOT / "backward_twice"        # the tool: never imports the course
COURSE = ROOT / "helpers"             # the course's own package: imports the tool


def _modules():
    out = {}
    for p in [*TOOL.rglob("*.py"), *COURSE.rglob("*.py")]:
        parts = p.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = p
    return out


def _imports(name, path, known):
    pkg = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    deps = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(pkg.split(".")[: len(pkg.split(".")) - node.level + 1])
                mod = f"{base}.{node.module}" if node.module else base
            elif (node.module or "").startswith(("helpers", "backward_twice")):
                mod = node.module
            else:
                continue
            for a in node.names:
                deps.add(f"{mod}.{a.name}" if f"{mod}.{a.name}" in known else mod)
        elif isinstance(node, ast.Import):
            deps.update(a.name for a in node.names if a.name.startswith(("helpers", "backward_twice")))
    return {d for d in deps if d in known and d != name}


def test_no_import_cycles_and_the_picture_package_imports_nothing_above_it():
    mods = _modules()
    graph = {m: _imports(m, p, mods) for m, p in mods.items()}
    state = {}

    def visit(m, path):
        state[m] = "open"
        for d in graph[m]:
            assert state.get(d) != "open", "import cycle: " + " -> ".join(path + [d])
            if d not in state:
                visit(d, path + [d])
        state[m] = "done"

    for m in graph:
        if m not in state:
            visit(m, [m])
    for m, deps in graph.items():
        if m.startswith("backward_twice.picture"):
            above = [d for d in deps if not d.startswith("backward_twice.picture")
                     and d not in ("backward_twice.snapshot", "backward_twice.layout")]
            assert not above, f"{m} imports {above}: the picture package may use only snapshot and layout"


def test_the_tool_never_imports_the_course():
    """backward_twice is a package of its own: no module of it imports helpers (at any depth,
    lazily inside a function included), so a user's own `helpers` can shadow only the course."""
    mods = _modules()
    for name, path in mods.items():
        if name.startswith("backward_twice"):
            course = sorted(d for d in _imports(name, path, mods) if d.startswith("helpers"))
            assert not course, f"{name} imports {course}: the tool must not import the course"
            assert not re.search(r"^\s*(import helpers|from helpers)", path.read_text(), re.M), name
    assert any(d.startswith("backward_twice") for n, p in mods.items() if n.startswith("helpers")
               for d in _imports(n, p, mods)), "the course imports the tool (the check above is not vacuous)"


def test_dot_is_written_in_one_module_and_never_edited_as_text():
    writer = TOOL / "picture" / "dot_writer.py"
    for p in [*TOOL.rglob("*.py"), *COURSE.rglob("*.py")]:
        if p == writer:
            continue
        src = re.sub(r"ast\.parse\([^\n]*?\)\.body", "ast.parse(...)", p.read_text())   # Python's syntax tree, not DOT
        for pattern in (r"\bdigraph\b\s*\{", r"\.body\b", r"[\"'] -> [\"'] (not )?in\b", r"rfind\(\"\}\"\)", "import graphviz"):
            assert not re.search(pattern, src), f"{p.relative_to(ROOT)} writes or edits DOT ({pattern})"


def _rnn(steps):
    torch.manual_seed(0)
    cell = nn.RNNCell(8, 16)
    h, xs = torch.zeros(1, 16), torch.randn(steps, 1, 8)
    for t in range(steps):
        h = cell(xs[t], h)
    return h.sum()


def _tanh_chain(n=400):
    torch.manual_seed(0)
    w, h = torch.randn(4, 4, requires_grad=True), torch.randn(1, 4)
    for _ in range(n):
        h = torch.tanh(h @ w)
    return h.sum(), w


def _dense(layers=40):
    torch.manual_seed(0)
    outs = [torch.randn(1, 4)]
    for lin in [nn.Linear(4, 4) for _ in range(layers)]:
        outs.append(torch.relu(lin(sum(outs))))     # every earlier output feeds the next layer
    return outs[-1].sum()


def test_an_unrolled_rnn_is_its_last_block_and_one_box_for_the_rest():
    loss = _rnn(20)
    folded = repeats.fold(snapshot(loss))
    assert folded.count == 18                      # 20 steps: the first (no h yet) differs, one drawn
    assert sorted(folded.block) == sorted(["AddmmBackward0", "AddmmBackward0", "AddBackward0", "TanhBackward0",
                                           "TBackward0", "TBackward0"])
    pic = draw(loss)
    assert pic.text.endswith("\npicture: " + folded.words)
    # folded, all 20 steps are 900 px tall and more as drawn, their text 13 px: shown smaller than
    # drawn (layout.at_shown_size), whole: the first step, the step nearest the loss and the box
    # of the 18 others, nothing left out
    assert pic.simplified == 0 and "&#215;18 more of the block below" in pic.dot
    assert "more nodes not drawn" not in pic.dot and fits(pic.svg) and smallest_text_px(pic.svg) >= 11
    chain, _ = _tanh_chain()
    # 400 steps, beyond max_nodes=300: draw walks further to find the repeats (graph.FOLD_WALK), so
    # all 398 identical blocks fold (the first step has no h to multiply, one block is drawn). They
    # save w (one 64 B buffer), h (16 B) and tanh's result, which is the next block's h:
    # 64 + 398 x 16 = 6,432 B (12.4 KiB when every slot counts its buffer again), of which
    # 398 x 16 = 6,368 B are activations (w is a leaf, saved by reference)
    assert "all 398, a buffer counted once:</FONT>" in draw(chain).dot
    assert ">6.3 KiB held (6.2 KiB activations)</FONT>" in draw(chain).dot
    # the text form still lists every op: two matrix products a step
    assert len(re.findall(r"^\w+ AddmmBackward0\(", pic.text, flags=re.M)) == 2 * 20


@pytest.mark.parametrize("make", ["rnn20", "tanh_chain", "dense40"])
def test_repeated_structure_reads_at_notebook_width(make):
    loss = {"rnn20": lambda: _rnn(20), "tanh_chain": lambda: _tanh_chain()[0], "dense40": _dense}[make]()
    pic = draw(loss)
    assert smallest_text_px(pic.svg) >= MIN_TEXT_PX, (make, smallest_text_px(pic.svg))
    assert reads_at(pic.svg, MIN_TEXT_PX)
    if make == "dense40":       # no repeated block: fewer nodes, and the picture says so
        assert pic.simplified and "to read at notebook width (max_nodes= draws more)" in pic.dot


def test_an_unrolled_rnn_after_backward_stays_folded_with_who_holds_each_freed_buffer():
    """engine-merge: the FREED rows' holder lines (Saved.held_by, known here: a walk saw the graph
    before backward) must not widen the folded picture past reading, or draw() falls back to
    the cap and most of the graph is not drawn."""
    torch.manual_seed(0)
    cell = nn.RNNCell(4, 4)
    h, xs = torch.zeros(1, 4), torch.randn(20, 1, 4)
    for t in range(20):
        h = cell(xs[t], h)
    loss = h.sum()
    names = dict(cell.named_parameters())
    snapshot(loss, names=names)
    loss.backward()
    pic = draw(loss, names=names)
    assert "still held by leaf" in pic.dot and "memory returned" in pic.dot
    # issue 28: 11 px at 860 px. All 20 steps folded are too tall as drawn (the FREED rows lengthen
    # the block), with 13 px text: shown smaller than drawn, whole, and the text says it folded
    assert fits(pic.svg) and not pic.simplified, smallest_text_px(pic.svg)
    assert "picture: folded: 18 x the block" in pic.text and "simplified to read" not in pic.text


def test_a_short_loop_is_not_folded():
    loss = _rnn(5)        # 4 identical blocks, 18 ops: too few to hide, drawn op by op
    assert repeats.fold(snapshot(loss)).ops_folded < repeats.FOLD_FROM_OPS
    assert repeats.fold(snapshot(_rnn(3))) is None
    assert "more of the block below" not in draw(loss).dot


@pytest.mark.parametrize("package", ["backward_twice", "helpers"])
def test_notebooks_import_only_the_public_api(package):
    """Each package's __all__ is its public API; every name a notebook imports from it is in it, and
    every name in it resolves to what it names (a module by its own name, else that module's object,
    never a module), whether or not its submodules were imported first."""
    import nbformat

    from scripts import notebooks

    pkg = importlib.import_module(package)
    renamed = getattr(pkg, "_RENAMED", {})

    def resolved(names):
        out = {}
        for name in names:
            obj = getattr(pkg, name)
            where = importlib.import_module(f"{package}.{pkg._WHERE[name]}")
            if pkg._WHERE[name] == name:
                out[name] = "module" if obj is where else f"not {package}.{name}: {obj!r}"
            else:
                own = getattr(where, renamed.get(name, name))
                out[name] = ("object" if obj is own and not isinstance(obj, types.ModuleType)
                             else f"not {package}.{pkg._WHERE[name]}'s {name}: {obj!r}")
        return out

    if package == "backward_twice":
        # a new interpreter: the names asked for before any submodule is imported
        fresh = subprocess.run(
            [sys.executable, "-c", "from backward_twice import snapshot, take_snapshot; import types; print("
                                   "isinstance(snapshot, types.ModuleType), isinstance(take_snapshot, types.FunctionType))"],
            capture_output=True, text=True, check=True, cwd=ROOT).stdout
        assert fresh.split() == ["True", "True"], fresh
    for module in sorted(set(pkg._WHERE.values())):   # every submodule imported: none shadows a name
        importlib.import_module(f"{package}.{module}")
    now = resolved(pkg.__all__)
    assert set(now.values()) == {"module", "object"}, {n: v for n, v in now.items() if v not in ("module", "object")}
    if package == "backward_twice":
        assert now["snapshot"] == "module" and pkg.take_snapshot is snapshot
    pattern = re.compile(rf"^\s*from {package}(?:\.[\w.]+)? import ([^\n#]+)", re.M)
    for path in notebooks():
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type != "code":
                continue
            for names in pattern.findall(cell.source):
                for name in (n.strip(" ()") for n in names.split(",")):
                    assert name in pkg.__all__, f"{path.name} imports {name}, not in {package}.__all__"


def test_the_two_public_apis_do_not_overlap():
    import backward_twice
    import helpers

    assert not set(backward_twice.__all__) & set(helpers.__all__)
    assert {"draw", "watch", "why_backward_failed", "explain"} <= set(backward_twice.__all__)
    assert {"check", "CatCarNet", "run", "QUOTES", "setup"} <= set(helpers.__all__)


def test_after_view_marks_the_changes_and_fades_the_rest():
    from backward_twice import watch
    from backward_twice.picture import palette

    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    z = (y.exp() * x).sum()
    with watch(z, names={"x": x, "y": y, "z": z}, title="z.backward()") as w:
        z.backward()
    view = w.after_view()
    assert view.text.startswith("after z.backward(): what changed (unchanged boxes faded)")
    assert palette.FADED in view.dot and palette.CHANGED in view.dot and palette.FREED in view.dot
    only_y = w.after_view(spotlight=["y"]).dot
    # with y alone in the spotlight no FREED row keeps its red (the legend still explains red)
    boxes = [line for line in only_y.splitlines() if "[label=<<TABLE" in line and "legend" not in line]
    assert not any(palette.FREED in line for line in boxes)
    assert any("retains grad" in line and palette.CHANGED in line for line in boxes)
    with pytest.raises(Exception, match="no tensor named"):
        w.after_view(spotlight=["nope"])


def test_the_static_stepper_can_show_only_the_frames_that_change_something():
    from backward_twice import step_through

    a = torch.tensor([1.0, 2.0], requires_grad=True)
    c = (a.exp() * a).sum()
    st = step_through(lambda: c.backward(), c, names={"a": a, "c": c}, frames="changes")
    shown = st.changing()
    assert shown[0] == 0 and shown[-1] == len(st.frames) - 1 and len(shown) < len(st.frames)
    for i in range(1, len(st.frames) - 1):      # a frame left out releases nothing and changes no .grad
        f = st.frames[i]
        assert (i in shown) == bool(f.released or f.grad_changes or f.error)
    assert st.html.count('class="bt-frame"') == len(shown)
    assert f"{len(shown)} of {len(st.frames)} frames" in st.html and "static form: frames" in st.text


def _fake_svg(width_pt, font_pt, height_pt=300):
    return (f'<svg width="{width_pt}pt" height="{height_pt}pt" viewBox="0 0 {width_pt} {height_pt}">'
            f'<text font-size="{font_pt:.2f}">x</text></svg>')


def test_module_and_diagnosis_pictures_are_chosen_by_the_one_readability_rule(monkeypatch):
    """issue 18 §2: whether a picture reads is decided by its smallest text at 860 px, not a width
    bound; issue 28: by picture.layout.fits, 11 px and 900 px tall: 760 pt of 10 pt text fits
    (11.3 px), 900 pt does not (9.6 px), 700 pt of 6 pt text does not (7.4 px)."""
    import types

    from backward_twice import diagnosis_picture, modules


    wide_but_reads, narrow_but_tiny = _fake_svg(760, 10), _fake_svg(700, 6)
    assert fits(wide_but_reads) and not fits(_fake_svg(900, 10)) and not reads_at(narrow_but_tiny)
    pics = [types.SimpleNamespace(svg=narrow_but_tiny), types.SimpleNamespace(svg=wide_but_reads)]
    assert diagnosis_picture._readable(pics) is pics[1]
    assert diagnosis_picture._readable(pics[:1]) is pics[0]          # none reads: the most readable

    def module_picture(ops_svg, overview_svg):
        svgs = {"OPS": ops_svg, "OVERVIEW": overview_svg, "STACKED": overview_svg}
        monkeypatch.setattr(modules.render, "svg_from_dot", svgs.__getitem__)
        return modules.ModulePicture(None, "text", "OPS",
                                     lambda stack, compact=False: "STACKED" if stack else "OVERVIEW")

    assert module_picture(wide_but_reads, _fake_svg(500, 10)).form == "ops"     # reads: op by op
    assert module_picture(narrow_but_tiny, _fake_svg(800, 10)).form == "calls"  # does not: the overview
    assert module_picture(narrow_but_tiny, _fake_svg(500, 5)).form == "ops"     # unless that reads worse
