"""The corpus of failing programs (issue 19 §1, tests/diagnosis_corpus/): every program is well
formed, really raises its error, runs clean once its report's fix is applied, and names a real
culprit; the corpus covers the categories the issue lists; the harness and the scoring rules
behave as documented. How well the tool does on it: tests/test_diagnosis_targets.py.
Issue 27 §4 added heldout_rec/ (frozen before the recorder) and ten dev programs, each with an
INTENT (what each loss trains) and GRADS (the leaves whose .grad defines "the same result"):
checked here without ever running the tool on heldout_rec."""
import collections
import re
import types

import pytest
import torch
from diagnosis_corpus import harness, score

ALL = harness.programs(frozen=True)         # every split, heldout_rec too (the tool is never run here)
REC = [p for p in ALL if "INTENT" in harness.constants(p)]    # the programs written for issue 27
REC_IDS = [f"{harness.split_of(p)}/{p.stem}" for p in REC]
IDS = [f"{harness.split_of(p)}/{p.stem}" for p in ALL]

# at least this many programs per category (issue 19 §1 "Cover, at least")
MINIMUM = {"carried-state": 5, "computed-once": 2, "two-backwards": 3, "accumulated-loss": 2,
           "meta-learning": 1, "filter-solver": 2, "rl-buffer": 2, "checkpoint-compile": 2,
           "course": 3, "inplace": 5, "higher-order": 1, "saved-tensors": 1}


def test_corpus_size_and_split():
    assert len(ALL) >= 30
    assert len(harness.programs("heldout")) >= 12
    assert len(harness.programs("heldout_rec")) >= 10
    assert not set(harness.programs("heldout_rec")) & set(harness.programs()), "heldout_rec is left out by default"
    assert not set(harness.programs("heldout_r2")) & set(harness.programs()), "heldout_r2 is left out by default"
    assert not set(harness.programs("heldout_r3")) & set(harness.programs()), "heldout_r3 is left out by default"
    assert not set(harness.programs("heldout_r4")) & set(harness.programs()), "heldout_r4 is left out by default"
    assert not set(harness.programs("heldout_r5")) & set(harness.programs()), "heldout_r5 is left out by default"
    assert len(harness.programs("heldout_r6")) == 10
    assert not set(harness.programs("heldout_r6")) & set(harness.programs()), "heldout_r6 is left out by default"
    assert len(harness.programs("heldout_r7")) == 10
    assert not set(harness.programs("heldout_r7")) & set(harness.programs()), "heldout_r7 is left out by default"
    assert len(harness.programs("heldout_r8")) == 10
    assert not set(harness.programs("heldout_r8")) & set(harness.programs()), "heldout_r8 is left out by default"
    assert len(harness.programs("heldout_r9")) == 10
    assert not set(harness.programs("heldout_r9")) & set(harness.programs()), "heldout_r9 is left out by default"
    assert len(harness.programs("heldout_r10")) == 5
    assert not set(harness.programs("heldout_r10")) & set(harness.programs()), "heldout_r10 is left out by default"
    assert len({p.stem for p in ALL}) == len(ALL), "program names must be unique across splits"


def test_every_category_is_covered():
    counts = collections.Counter(harness.constants(p)["CATEGORY"] for p in ALL)
    print(dict(sorted(counts.items())))
    assert set(MINIMUM) == set(harness.CATEGORIES)
    short = {c: (counts[c], n) for c, n in MINIMUM.items() if counts[c] < n}
    assert not short, f"categories below their minimum (have, need): {short}"


def test_shapes_the_issue_names_are_covered():
    consts = [harness.constants(p) for p in ALL]
    culprits = [c["CULPRIT"] for c in consts if c["CULPRIT"]]
    sources = [p.read_text() for p in ALL]
    assert any("['" in c for c in culprits), "a dict entry"
    assert any("._" in c for c in culprits), "a private attribute"
    assert sum("." in c and "[" not in c for c in culprits) >= 3, "module / object attributes"
    assert sum("deque(" in s for s in sources) >= 1, "a deque"
    assert sum("def train(" in s for s in sources) >= 2, "script form: the loop inside a function"
    assert any("torch.compile(" in s for s in sources) and any("checkpoint(" in s for s in sources)
    inplace = [s for s, c in zip(sources, consts) if c["ERROR"] == "inplace"]
    assert any(".step()  # BUG" in s for s in inplace), "an optimizer step between two backwards"
    assert any("inplace=True" in s for s in inplace), "an in-place activation"
    assert any("+=" in s for s in inplace), "+= on a saved tensor"
    assert any(".detach()" in s or ".data" in s for s in inplace), "a write through .data / .detach()"


@pytest.mark.parametrize("path", ALL, ids=IDS)
def test_program_is_well_formed(path):
    src = path.read_text()
    c = harness.constants(path)
    assert set(harness.CONSTANTS) <= set(c), f"missing constants: {set(harness.CONSTANTS) - set(c)}"
    rec = set(harness.REMEDY_CONSTANTS) & set(c)
    assert rec in (set(), set(harness.REMEDY_CONSTANTS)), f"INTENT and GRADS go together: {rec}"
    assert rec or harness.split_of(path) != "heldout_rec", "heldout_rec programs have INTENT and GRADS"
    assert c["FIX_KIND"] in harness.FIX_KINDS
    assert c["CATEGORY"] in harness.CATEGORIES
    assert c["ERROR"] in harness.ERRORS
    assert c["CULPRIT"] is None or isinstance(c["CULPRIT"], str | list) and harness.culprits(c)
    assert all(isinstance(n, str) and n.strip() == n != "" for n in harness.culprits(c)), c["CULPRIT"]
    assert isinstance(c["CAUSE"], str) and 3 <= len(c["CAUSE"].split()) <= 16
    # the source: owner/repo#number, or a forum thread's title; the docstring names it too
    # (a title of three words: "Loss.backward() in RetinaNet(FPN)")
    assert re.fullmatch(r"[\w.-]+/[\w.-]+#\d+", c["SOURCE"]) or len(c["SOURCE"].split()) >= 3, c["SOURCE"]
    assert " ".join(c["SOURCE"].split()) in " ".join(harness.docstring(path).split())
    assert len(src.splitlines()) < 60
    assert "torch.manual_seed(" in src
    pairs = harness.bug_fix_pairs(src)
    assert pairs and all(bug != fix for bug, fix in pairs)


def _user_namespace(path, ns, err):
    """ns plus the locals of the program's innermost frame in the traceback (script form)."""
    scope, tb = dict(ns), err.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == str(path) and tb.tb_frame.f_code.co_name != "<module>":
            scope.update(tb.tb_frame.f_locals)
        tb = tb.tb_next
    return scope


def _tensors(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple, collections.deque)):
        return [t for v in value for t in _tensors(v)]
    return []


@pytest.mark.parametrize("path", ALL, ids=IDS)
def test_broken_program_raises_its_error(path):
    c = harness.constants(path)
    ns, err = harness.run(path)
    assert isinstance(err, RuntimeError), repr(err)
    assert str(err).startswith(harness.ERRORS[c["ERROR"]]), str(err)[:200]
    # each culprit is a real path in the user's namespace at the failure, to tensors that say why
    for culprit in harness.culprits(c):
        found = _tensors(eval(culprit, _user_namespace(path, ns, err)))   # our own labels, not user input
        assert found, f"{culprit} holds no tensor"
        if c["ERROR"] == "inplace":
            assert max(t._version for t in found) > 0, f"{culprit} was never modified in place"
        else:
            assert any(t.grad_fn is not None for t in found), f"{culprit} carries no graph"


@pytest.mark.parametrize("path", ALL, ids=IDS)
def test_fixed_program_runs_clean(path):
    ns, err = harness.run(path, fixed=True)
    assert err is None, repr(err)


def test_issue_27_programs_are_all_there():
    """Ten held out (frozen before the recorder) and ten for development, all with INTENT."""
    splits = collections.Counter(harness.split_of(p) for p in REC)
    assert splits["heldout_rec"] == len(harness.programs("heldout_rec")) >= 10, splits
    assert splits["heldout_r2"] == len(harness.programs("heldout_r2")) >= 10, splits
    assert splits["heldout_r3"] == len(harness.programs("heldout_r3")) >= 10, splits
    assert splits["dev"] >= 10, splits
    assert len(SEVERAL) >= 2, "programs where several carriers each need their fix"


@pytest.mark.parametrize("path", REC, ids=REC_IDS)
def test_intent_is_one_or_two_plain_sentences_about_training(path):
    intent = harness.constants(path)["INTENT"]
    assert isinstance(intent, str) and intent[0].isupper() and intent.endswith("."), intent
    sentences = [s for s in re.split(r"(?<=[.;:])\s+(?=[A-Z])", intent) if s]
    assert 1 <= len(sentences) <= 2 and len(intent.split()) >= 8, intent
    assert "train" in intent, "INTENT says what each loss trains"
    assert not re.search(r"\b(TODO|etc)\b|\.\.\.", intent), intent


def _fixed_grads(path):
    ns, err = harness.run(path, fixed=True)
    assert err is None, repr(err)
    return harness.leaf_grads(ns, harness.constants(path))


@pytest.mark.parametrize("path", REC, ids=REC_IDS)
def test_grads_name_leaves_whose_grads_the_fixed_run_leaves_in_place(path):
    """GRADS resolves after the fixed run to leaf tensors that all have a .grad, and a second fixed
    run gives the very same grads (what a scorer compares a remedy's run against)."""
    first, second = _fixed_grads(path), _fixed_grads(path)
    assert first and len(first) == len(second)
    for (name, leaf, grad), (_, _, again) in zip(first, second):
        assert leaf.is_leaf and leaf.requires_grad, name
        assert grad is not None, f"{name} has no grad after the fixed run"
        assert torch.equal(grad, again), f"{name}: the fixed run is not deterministic"
        assert grad.abs().sum() > 0, f"{name}: a zero grad cannot tell two remedies apart"


SEVERAL = [p for p in ALL if isinstance(harness.constants(p)["CULPRIT"], list) and len(harness.bug_fix_pairs(p.read_text())) > 1]


@pytest.mark.parametrize("path", SEVERAL, ids=[p.stem for p in SEVERAL])
def test_a_half_fix_of_several_carriers_still_fails(path):
    """Where several variables carry the old graph and the fix touches each, fixing one alone is not
    enough: the program still raises its error (issue 27's "half fixes")."""
    src, c = path.read_text(), harness.constants(path)
    lines = src.splitlines()
    bug_lines = [i for i, line in enumerate(lines) if harness.BUG.match(line)]
    for keep in bug_lines:                 # apply every FIX but one
        partial = list(lines)
        for i in bug_lines:
            if i != keep:
                partial[i] = harness.BUG.match(lines[i]).group("indent") + harness.FIX.match(lines[i + 1]).group("code").strip()
        with pytest.raises(RuntimeError, match=harness.ERRORS[c["ERROR"]][:40]):
            exec(compile("\n".join(partial), str(path), "exec"), {"__name__": "__corpus__"})


def test_leaf_grads_reads_paths_and_iterables():
    w = torch.ones(2, requires_grad=True)
    lin = torch.nn.Linear(2, 1)
    (lin(w * 3).sum()).backward()
    got = harness.leaf_grads({"w": w, "lin": lin}, {"GRADS": ["w", "lin.parameters()"]})
    assert [n for n, _, _ in got] == ["w", "lin.parameters()[0]", "lin.parameters()[1]"]
    assert got[0][2] is w.grad and got[2][1] is lin.bias
    assert harness.grads_paths({"GRADS": "w"}) == ["w"] and harness.culprits({"CULPRIT": None}) == []


def test_fixed_source_swaps_each_bug_line_for_its_fix():
    src = "x = 1\nfor i in range(2):\n    y = f(x)  # BUG: forgot\n    # FIX: y = f(x).detach()\nz = 2  # BUG\n# FIX: z = 3\n"
    assert harness.fixed_source(src) == "x = 1\nfor i in range(2):\n    y = f(x).detach()\nz = 3\n"
    assert harness.bug_fix_pairs(src) == [("y = f(x)", "y = f(x).detach()"), ("z = 2", "z = 3")]
    for bad in ("y = 1  # BUG\nz = 2\n", "y = 1\n# FIX: y = 2\n", "y = 1\n", "y = 1  # BUG"):
        with pytest.raises(ValueError):
            harness.fixed_source(bad)


def test_run_returns_the_error_and_keeps_the_namespace(tmp_path):
    prog = tmp_path / "p.py"
    prog.write_text("import torch\nw = torch.ones(2, requires_grad=True)\ny = (w * w).sum()\ny.backward()\n"
                    "y.backward()  # BUG\n# FIX: pass\n")
    ns, err = harness.run(prog)
    assert isinstance(err, RuntimeError) and ns["y"].grad_fn is not None
    ns, err = harness.run(prog, fixed=True)
    assert err is None and torch.equal(ns["w"].grad, torch.tensor([2.0, 2.0]))


@pytest.mark.parametrize("expected, got, ok", [
    (["a.m", "a.r"], "a.r", True), (["a.m", "a.r"], "a", False),
    ("ema.shadow['w']", 'ema.shadow["w"]', True), ("memory[3][0]", "memory[3] [0]", True),
    ("memory", "memory[3][0]", True), ("memory", "memory_bank", False), ("h", "hidden", False),
    (None, None, True), (None, "h", False), ("h", None, False)])
def test_culprit_matching_rules(expected, got, ok):
    assert score.culprit_matches(expected, got) is ok


def test_tool_answer_is_read_from_attributes_or_the_carried_by_line():
    today = types.SimpleNamespace(message="why_backward: ...\n  carried by: h_state, out\n  fix: ...")
    assert score.tool_culprit(today) == "h_state"
    nobody = types.SimpleNamespace(message="  carried by: no name in your namespace points at the old part")
    assert score.tool_culprit(nobody) is None
    new = types.SimpleNamespace(message="  carried by: x", culprit="model.hidden")
    assert score.tool_culprit(new) == "model.hidden"
    r = score.Result("dev", "p", "course", "c", "retain-or-sum", culprit="c", fix_kind=None, confident=True)
    assert r.culprit_ok and not r.fix_ok and r.confidently_wrong
    r = score.Result("dev", "p", "course", "c", "retain-or-sum", culprit="b", fix_kind="retain-or-sum")
    assert not r.confidently_wrong                     # an unconfident answer is never confidently wrong


def test_docs_table_lists_every_program_with_its_labels():
    doc = (harness.HERE.parents[1] / "docs" / "diagnosis_corpus.md").read_text()
    for path in ALL:
        c = harness.constants(path)
        row = next((line for line in doc.splitlines() if line.startswith(f"| {harness.split_of(path)} | `{path.stem}` |")), None)
        assert row is not None, f"{path.stem} is missing from docs/diagnosis_corpus.md"
        assert f"| {c['FIX_KIND']} |" in row and f"| {c['CATEGORY']} |" in row
        assert all(f"`{n}`" in row for n in harness.culprits(c)) and (c["CULPRIT"] or "(none)" in row)
