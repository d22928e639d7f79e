"""Issue 19's targets for `%why_backward` on the corpus of failing programs: the right culprit in
>= 95% of programs, the right kind of fix in >= 90%, and no confidently wrong answer. Scored by
tests/diagnosis_corpus/score.py (its docstring states the rules). This test fails against the
tool as it was when the corpus was written (the baseline, docs/diagnosis_corpus.md); it turns
green only with a tool that meets the targets."""
from diagnosis_corpus import score


def test_tool_meets_the_targets_on_the_corpus():
    results = score.score()
    report = score.table(results) + "\n\n" + score.summary(results)
    print(report)
    f, f19 = score.figures(results), score.figures(score.issue19(results))
    assert f["programs"] >= 30
    assert f19["culprit"] >= score.TARGETS["culprit"], report
    assert f19["fix_kind"] >= score.TARGETS["fix_kind"], report
    assert f["fix_offered"] >= score.TARGETS["fix_offered"], report
    assert f["confidently_wrong"] == score.TARGETS["confidently_wrong"], report


def test_recorded_mode_meets_the_targets_on_the_corpus():
    """Issue 27: every program run under the recorder and diagnosed from the record. It names every
    variable that carries the graph (`culprits`); the label's is among them in 90% of the programs
    when this was written, the first named in 84% (a gap, in docs/diagnosis.md)."""
    results = score.score_recorded()
    report = score.table(results) + "\n\n" + score.summary(results)
    print(report)
    f = score.figures(results)
    assert f["programs"] >= 50, report      # culprit naming is reported, not a target here: docs/diagnosis.md
    assert f["fix_offered"] >= score.TARGETS["fix_offered"], report
    assert f["confidently_wrong"] == 0, report
