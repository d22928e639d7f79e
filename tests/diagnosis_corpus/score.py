"""Score `backward_twice.diagnose.why_backward_failed` on the corpus (issue 19 §1).

    PYTHONPATH=$PWD python -m tests.diagnosis_corpus.score [heldout|dev|heldout_rec|heldout_r2]

Without a split it scores heldout and dev; heldout_rec and heldout_r2 (issue 27) only when named.

For each broken program: run it (notebook-style, the namespace survives the error), call
`why_backward_failed(err, names=ns)`, and compare with the program's labels:
- culprit right: the tool's `culprit` attribute (or, for a tool without one, the first name on
  its "carried by:" line) equals CULPRIT up to whitespace and quote style; a name inside the
  labelled container also counts (CULPRIT "memory", tool "memory[3][0]"). CULPRIT None is right
  only when the tool names no culprit; a list of culprits (several variables carry the old
  graph) is right when the tool names one of them.
- fix kind right: the tool's `fix_kind` attribute equals FIX_KIND (no attribute: wrong).
- confidently wrong: the tool is confident (its `confident` attribute; no attribute: confident
  whenever it names a culprit) and the culprit or the fix kind is wrong.
Prints a table per program and the three figures for each split.
"""
from __future__ import annotations

import dataclasses
import re
import sys
import time

from . import harness

TARGETS = {"culprit": 0.95, "fix_kind": 0.90, "fix_offered": 0.90, "confidently_wrong": 0}
# issue 27's fix kinds and the kinds that name the same remedy
SAME_FIX = {"detach-at-use": {"detach-at-use", "detach-input"}, "detach-input": {"detach-at-use", "detach-input"},
            "keep-graph": {"keep-graph", "retain-or-sum"}, "read-before-backward": {"read-before-backward", "keep-graph"},
            # a running total backwarded: starting it again after each backward gives the gradients of
            # keeping it as a number and backwarding each loss (remedy.py runs both on running_total_backwarded)
            "accumulate-number": {"accumulate-number", "reset-per-episode"}}
_NO_NAME = ("names unavailable", "no name in your namespace")


def _norm(name: str) -> str:
    return re.sub(r"\s+", "", name).replace('"', "'")


def culprit_matches(expected: str | list[str] | None, got: str | None) -> bool:
    if isinstance(expected, list):
        return any(culprit_matches(e, got) for e in expected)
    if expected is None or got is None:
        return expected is None and got is None
    e, g = _norm(expected), _norm(got)
    return g == e or g.startswith(e + "[")


def tool_culprit(d) -> str | None:
    """The tool's culprit: its `culprit` attribute, else the first name on 'carried by:'."""
    if hasattr(d, "culprit"):
        return d.culprit
    for line in str(getattr(d, "message", "")).splitlines():
        line = line.strip()
        if line.startswith("carried by:"):
            rest = line[len("carried by:"):].strip()
            if not rest or rest.startswith(_NO_NAME):
                return None
            return rest.split(", ")[0].strip()
    return None


@dataclasses.dataclass
class Result:
    split: str
    name: str
    category: str
    expected_culprit: str | list[str] | None
    expected_fix: str
    culprit: str | None = None
    fix_kind: str | None = None
    confident: bool = False
    offered: tuple = ()              # every fix kind the tool offers (its candidates, or its options)
    named: tuple = ()                # every variable the tool says carries the graph
    crashed: str | None = None       # the tool raised (or the program did not fail as labelled)
    seconds: float = 0.0
    said: str = ""                   # for reading only, not scored: the tool's verdict and pattern

    @property
    def culprit_ok(self) -> bool:
        return self.crashed is None and culprit_matches(self.expected_culprit, self.culprit)

    @property
    def fix_ok(self) -> bool:
        return self.crashed is None and self.fix_kind in SAME_FIX.get(self.expected_fix, {self.expected_fix})

    @property
    def culprit_named(self) -> bool:
        """The labelled culprit is among the variables the tool names (first or not)."""
        return self.culprit_ok or (self.crashed is None and any(
            culprit_matches(self.expected_culprit, n) for n in self.named))

    @property
    def fix_offered(self) -> bool:
        """The right kind of fix is among those offered (issue 27: the fix may depend on intent)."""
        return self.crashed is None and bool(SAME_FIX.get(self.expected_fix, {self.expected_fix}) & {
            self.fix_kind, *self.offered})

    @property
    def confidently_wrong(self) -> bool:
        return self.confident and not (self.culprit_ok and self.fix_ok)


def score_program(path, run=harness.run, diagnose=None) -> Result:
    """Score the tool on one program. run: path -> (namespace, error), by default harness.run (a
    fresh dict); diagnose: (error, namespace) -> the tool's answer, by default
    `why_backward_failed(err, names=ns)` (in an IPython shell: its %why_backward magic, no names=)."""
    from backward_twice.diagnose import why_backward_failed

    c = harness.constants(path)
    r = Result(harness.split_of(path), path.stem, c["CATEGORY"], c["CULPRIT"], c["FIX_KIND"])
    ns, err = run(path)
    if err is None or not str(err).startswith(harness.ERRORS[c["ERROR"]]):
        r.crashed = f"program did not raise its error: {err!r}"[:120]
        return r
    start = time.perf_counter()
    try:
        d = why_backward_failed(err, names=ns) if diagnose is None else diagnose(err, ns)
    except Exception as exc:               # a crash is scored as a wrong, unconfident answer
        r.crashed = f"{type(exc).__name__}: {exc}"[:120]
        return r
    finally:
        r.seconds = time.perf_counter() - start
    r.culprit = tool_culprit(d)
    r.said = "/".join(str(v) for v in (getattr(d, "verdict", None), getattr(d, "pattern", None)) if v)
    r.fix_kind = getattr(d, "fix_kind", None)
    r.offered = tuple(k for k, *_ in getattr(d, "candidates", ()) if k)
    r.named = tuple(getattr(d, "culprits", ()) or ())
    r.confident = bool(d.confident) if hasattr(d, "confident") else r.culprit is not None
    return r


def figures(results: list[Result]) -> dict:
    n = len(results)
    return {"programs": n,
            "culprit": sum(r.culprit_ok for r in results) / n if n else 0.0,
            "fix_kind": sum(r.fix_ok for r in results) / n if n else 0.0,
            "fix_offered": sum(r.fix_offered for r in results) / n if n else 0.0,
            "culprit_named": sum(r.culprit_named for r in results) / n if n else 0.0,
            "confidently_wrong": sum(r.confidently_wrong for r in results)}


def table(results: list[Result]) -> str:
    rows = [f"{'split':7} {'program':36} {'category':18} {'culprit: expected / tool':44} "
            f"{'fix kind: expected / tool':42} conf  s     tool said (not scored)"]
    for r in results:
        mark = lambda ok: "ok" if ok else "--"   # noqa: E731
        culprit = f"{r.expected_culprit} / {r.crashed or r.culprit}"
        fix = f"{r.expected_fix} / {r.fix_kind}"
        rows.append(f"{r.split:7} {r.name:36} {r.category:18} {mark(r.culprit_ok)} {culprit[:41]:41} "
                    f"{mark(r.fix_ok)} {fix[:39]:39} {'yes' if r.confident else 'no':4} {r.seconds:.2f}  {r.said}")
    return "\n".join(rows)


def summary(results: list[Result]) -> str:
    lines = []
    for split in (*harness.SPLITS, "all"):
        f = figures([r for r in results if split in ("all", r.split)])
        if not f["programs"]:
            continue                      # a split not scored in this run (a frozen split unless named)
        lines.append(f"{split:8} {f['programs']:3} programs: culprit right {f['culprit']:.0%} "
                     f"(named {f['culprit_named']:.0%}), fix kind right "
                     f"{f['fix_kind']:.0%} (first offered), right fix offered {f['fix_offered']:.0%}, "
                     f"confidently wrong {f['confidently_wrong']}")
    lines.append(f"targets: culprit >= {TARGETS['culprit']:.0%} and fix kind >= {TARGETS['fix_kind']:.0%} on issue "
                 f"19's programs, right fix offered >= {TARGETS['fix_offered']:.0%}, "
                 f"confidently wrong = {TARGETS['confidently_wrong']}")
    return "\n".join(lines)


def score(split: str | None = None, run=harness.run, diagnose=None) -> list[Result]:
    return [score_program(p, run, diagnose) for p in harness.programs(split)]


def recorded_run(path):
    """Run the program under the recorder: (namespace with the failing frame's locals, (error, recorder))."""
    from . import remedy

    ns, err, rec = remedy.run_source(path.read_text(), path, record=True)
    return {**ns, **(remedy._locals_of(err, path) if err is not None else {})}, err, rec


def score_recorded(split: str | None = None) -> list[Result]:
    """The recorded mode: each program run under backward_twice.record, diagnosed from the record."""
    from backward_twice.diagnose import why_backward_failed

    recs = {}

    def run(path):
        ns, err, rec = recorded_run(path)
        recs[id(err)] = rec
        return ns, err

    return score(split, run, lambda err, ns: why_backward_failed(err, names=ns, recorder=recs[id(err)]))


def issue19(results: list[Result]) -> list[Result]:
    """The programs written for issue 19 (without INTENT): its culprit and fix-kind targets apply to
    them (issue 27's programs, written for the recorded mode, are scored on every figure and held
    to the right fix offered and to no confident wrong answer)."""
    return [r for r in results if "INTENT" not in harness.constants(harness.HERE / r.split / f"{r.name}.py")]


def main(argv: list[str]) -> int:
    if [a for a in argv if a != "--recorded"] and [a for a in argv if a != "--recorded"][0] not in harness.SPLITS:
        print(f"usage: python -m tests.diagnosis_corpus.score [{'|'.join(harness.SPLITS)}] [--recorded]", file=sys.stderr)
        return 2
    recorded = "--recorded" in argv
    argv = [a for a in argv if a != "--recorded"]
    results = (score_recorded if recorded else score)(argv[0] if argv else None)
    print(table(results))
    print()
    print(summary(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
