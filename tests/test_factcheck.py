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


# ---- the registry: one verdict per quote
from helpers.factcheck import QUOTES, verdict_table  # noqa: E402


def test_a_registered_claim_must_prove_its_registered_verdict(capsys):
    ledger = Ledger()
    with pytest.raises(AssertionError, match="QUOTES says 'partly true'"):
        with ledger.claim("002-a") as c:
            c.verdict("true")
    assert ledger.claims == []
    with ledger.claim("002-a") as c:
        c.verdict("partly")
    line = capsys.readouterr().out
    assert line.startswith('PARTLY TRUE: "After this computation, the part of graph') and "(Q&A digest)" in line
    assert QUOTES["002-a"].why in line and "002-a" not in line          # no internal id for learners
    with pytest.raises(KeyError, match="register it there"):
        with ledger.claim("999-z") as c:
            c.verdict("true")


def test_older_call_sites_keep_their_text_but_not_their_own_verdict(capsys):
    ledger = Ledger()
    with ledger.claim("003-4", seed="003", quote="the placement affects ...", teaches="04_x.ipynb") as c:
        c.verdict("false", "bitwise identical")
    assert capsys.readouterr().out == "[003-4] FALSE: bitwise identical\n"
    with pytest.raises(AssertionError, match="one verdict per quote"):
        with ledger.claim("003-4", seed="003", quote="q", teaches="") as c:
            c.verdict("true", "no")


def test_verdict_table_markdown_and_complete_plain_text():
    t = verdict_table("004-i", "003-6")
    md, plain = t._repr_markdown_(), repr(t)
    assert md.splitlines()[0] == "| Source | Quote | Verdict | Why | Proof |"
    assert "| Stack Overflow [1] | As long as you use retain_graph=True" in md
    assert "**partly true** |" in md and "[09 §1](09_fact_check.ipynb) |" in md
    assert "[04 §8](04_retain_grad_placement.ipynb)" in md
    assert "[1] Stack Overflow: *What does the parameter retain_graph mean" in md
    assert "[2] Q&A article: *How does pytorch's `retain_grad()`" in md
    assert md.endswith("2 quotes: 0 true, 1 partly true, 1 false.")
    for qid in ("004-i", "003-6"):                      # nothing cut from the text nbval compares
        assert QUOTES[qid].quote in plain and QUOTES[qid].why in plain
    assert "004-i" not in md + plain
    everything = verdict_table()
    assert repr(everything).count("\n") == len(QUOTES)


def test_quotes_are_shortened_at_a_whole_word_and_a_quiet_ledger_prints_nothing(capsys):
    from helpers.factcheck import QUOTES, shorten
    assert shorten("short", 90) == "short"
    assert shorten("the graph will then not be consumed", 20) == "the graph will..."
    assert shorten("abcdefghijklmnopqrstuvwxyz", 10) == "abcdefg..."          # one long word: cut inside it
    for q in QUOTES.values():
        short = shorten(q.quote, 90)
        assert len(short) <= 90
        if short != q.quote:                                               # whole words of the quote
            kept = short[:-3]
            assert q.quote.startswith(kept) and not q.quote[len(kept)].isalnum(), short
    ledger = Ledger(echo=False)
    with ledger.claim("000-i") as c:
        c.verdict("true")
    assert capsys.readouterr().out == "" and [x.cid for x in ledger.claims] == ["000-i"]
    with Ledger().claim("000-i") as c:
        c.verdict("true")
    assert capsys.readouterr().out.startswith("TRUE: ")
