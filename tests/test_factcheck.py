"""The fact-check ledger records a verdict only when the proving block completes."""
import pytest

from helpers.factcheck import Ledger


def test_records_verdicts_and_tables(capsys):
    ledger = Ledger()
    with ledger.claim("x-1", seed="000", quote="a | b", teaches="01_x.ipynb") as c:
        c.verdict("false", "because")
    assert capsys.readouterr().out == "[x-1] FALSE: because\n"
    assert ledger.counts() == {"true": 0, "false": 1, "partly": 0}
    table = ledger.table()
    assert "| x-1 | 000 | a \\| b | **false** | because | [01](01_x.ipynb) |" in table._repr_markdown_()
    assert repr(table) == "x-1    false        a | b"


def test_failing_or_silent_claims_are_not_recorded():
    ledger = Ledger()
    with pytest.raises(AssertionError):
        with ledger.claim("x-2", seed="000", quote="q", teaches="") as c:
            assert 1 == 2
    with pytest.raises(AssertionError, match="no verdict"):
        with ledger.claim("x-3", seed="000", quote="q", teaches=""):
            pass
    with pytest.raises(ValueError):
        with ledger.claim("x-4", seed="000", quote="q", teaches="") as c:
            c.verdict("maybe", "")
    assert ledger.claims == []


def test_a_claim_recorded_again_keeps_the_latest_in_place(capsys):
    """A claim cell run twice (Shift-Enter twice, Run All twice) replaces its record."""
    ledger = Ledger()
    for cid in ("x-1", "x-2"):
        with ledger.claim(cid, seed="000", quote="q", teaches="") as c:
            c.verdict("true", "first run")
    with ledger.claim("x-1", seed="000", quote="q", teaches="") as c:
        c.verdict("partly", "second run")
    assert [(c.cid, c.result, c.why) for c in ledger.claims] == [
        ("x-1", "partly", "second run"), ("x-2", "true", "first run")]
    assert ledger.counts() == {"true": 1, "false": 0, "partly": 1}
    assert capsys.readouterr().out.splitlines()[-1] == "[x-1] PARTLY TRUE: second run"


def test_a_claim_whose_rerun_fails_loses_its_earlier_verdict():
    ledger = Ledger()
    with ledger.claim("x-1", seed="000", quote="q", teaches="") as c:
        c.verdict("true", "first run")
    with pytest.raises(AssertionError):
        with ledger.claim("x-1", seed="000", quote="q", teaches="") as c:
            assert 1 == 2
    assert ledger.claims == []          # no stale verdict from a run that no longer proves it
