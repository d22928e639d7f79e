"""Loops written here as a new user would (tests/own_loops/README.md): the rule that fires, and the
option meant for the program's INTENT applied to the program and run, giving the fix's gradients.
In the after-the-fact mode (no record), nothing is said with confidence that the fix contradicts."""
from __future__ import annotations

import ast
import pathlib

import pytest
from diagnosis_corpus import remedy

HERE = pathlib.Path(__file__).parent / "own_loops"
PROGRAMS = sorted(HERE.glob("*.py"))
LABELS = ("INTENT", "GRADS", "RULE", "KIND", "BY_HAND")


def labels(path):
    out = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and node.targets[0].id in LABELS:
            out[node.targets[0].id] = ast.literal_eval(node.value)
    return out


def test_there_are_loops_and_each_has_its_labels():
    assert len(PROGRAMS) >= 3
    for p in PROGRAMS:
        assert {"INTENT", "GRADS", "RULE", "KIND"} <= set(labels(p)), p.name


@pytest.mark.parametrize("path", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_the_option_for_the_intent_runs_and_gives_the_fixs_gradients(path):
    want = labels(path)
    d, _, _ = remedy.diagnose(path)
    assert d.rule == want["RULE"], d.message
    verdicts = dict(zip([o.kind for o in d.finding.options], (v for _, v in remedy.try_options(path, d))))
    if want.get("BY_HAND"):         # the right remedy has no one-line edit: offered, and nothing confident
        assert verdicts.get(want["KIND"]) == "by hand" and not d.finding.confident, (verdicts, d.message)
        return
    assert verdicts.get(want["KIND"]) == "same", (verdicts, d.message)
    if d.finding.confident:        # confident: every option it offers must be right
        assert set(verdicts.values()) == {"same"}, (verdicts, d.message)


@pytest.mark.parametrize("path", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_no_option_offered_is_an_edit_that_raises(path):
    # an option whose edit, applied, still raises is a harm (summing two losses when a gradient is read
    # between their backwards; moving a backward above one that shares its graph, without keeping it)
    d, _, _ = remedy.diagnose(path)
    verdicts = [v for _, v in remedy.try_options(path, d)]
    assert not [v for v in verdicts if str(v).startswith("raises")], (verdicts, d.message)


@pytest.mark.parametrize("path", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_after_the_fact_it_is_never_confidently_wrong(path):
    d, _, _ = remedy.diagnose(path, recorded=False)
    if d.confident:
        assert d.fix_kind == labels(path)["KIND"], d.message
