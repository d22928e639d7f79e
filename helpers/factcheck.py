"""A ledger of claims from the seeds, each with a verdict that a cell proved.

    ledger = Ledger()
    with ledger.claim("000-2", seed="000", quote="...", teaches="01_shared_graph_retain_graph.ipynb") as c:
        ...                       # run the claim; assert what is really true
        c.verdict("partly", "only graphs that saved tensors refuse a second backward")
    ledger.table()                # the summary, as a Markdown table

A claim block that raises (an assert failing) fails the notebook: a verdict is only
recorded when the cell that proves it ran to the end. A claim recorded again (its cell
run twice) replaces the earlier record in place: the latest run counts, the order stays.
"""
from __future__ import annotations

import contextlib

VERDICTS = {"true": "true", "false": "false", "partly": "partly true"}


class _Claim:
    def __init__(self, cid, seed, quote, teaches):
        self.cid, self.seed, self.quote, self.teaches = cid, seed, quote, teaches
        self.result = None
        self.why = ""

    def verdict(self, result: str, why: str) -> None:
        if result not in VERDICTS:
            raise ValueError(f"verdict must be one of {sorted(VERDICTS)}, got {result!r}")
        self.result, self.why = result, why


class Ledger:
    def __init__(self):
        self.claims: list[_Claim] = []

    @contextlib.contextmanager
    def claim(self, cid: str, seed: str, quote: str, teaches: str):
        earlier = [i for i, old in enumerate(self.claims) if old.cid == cid]
        c = _Claim(cid, seed, quote, teaches)
        try:
            yield c
            if c.result is None:
                raise AssertionError(f"claim {cid}: the cell ran but gave no verdict")
        except BaseException:
            if earlier:                  # the latest run did not prove it: no stale verdict stays
                del self.claims[earlier[0]]
            raise
        if earlier:                      # the cell ran again: keep the latest, in its place
            self.claims[earlier[0]] = c
        else:
            self.claims.append(c)
        print(f"[{cid}] {VERDICTS[c.result].upper()}: {c.why}")

    def counts(self) -> dict[str, int]:
        out = {v: 0 for v in VERDICTS}
        for c in self.claims:
            out[c.result] += 1
        return out

    def table(self) -> Table:
        rows = ["| # | Seed | Claim | Verdict | Why | Taught in |", "|---|---|---|---|---|---|"]
        for c in self.claims:
            quote = c.quote.replace("|", "\\|")
            link = f"[{c.teaches[:2]}]({c.teaches})" if c.teaches else "-"
            rows.append(f"| {c.cid} | {c.seed} | {quote} | **{VERDICTS[c.result]}** | "
                        f"{c.why.replace('|', '/')} | {link} |")
        n = self.counts()
        rows.append(f"\n{len(self.claims)} claims: {n['true']} true, {n['partly']} partly true, "
                    f"{n['false']} false.")
        plain = [f"{c.cid:6} {VERDICTS[c.result]:12} {c.quote[:70]}" for c in self.claims]
        return Table("\n".join(rows), "\n".join(plain))


class Table:
    """Markdown in JupyterLab and the site; a plain text form that nbval compares."""

    def __init__(self, markdown: str, text: str):
        self.data, self.text = markdown, text

    def _repr_markdown_(self):
        return self.data

    def __repr__(self):
        return self.text
