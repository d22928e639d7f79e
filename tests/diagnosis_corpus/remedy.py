"""Apply a diagnosis's remedies to a corpus program and run them (issue 27 §4): "right" means the
remedy runs and gives the gradients of the maintainers' fix, not that its text matches a pattern.

    PYTHONPATH=$PWD python -m tests.diagnosis_corpus.remedy [heldout_rec|heldout_r2|dev|PATH ...] [--after]

For each program: run it under the recorder (or plainly with --after: the after-the-fact mode),
diagnose it, then apply each option that carries an edit (`Option.edits`) to the program's
source and run it; compare the GRADS leaves' .grad with the fixed program's (FIX lines). An option
without an edit is listed for grading by hand ("by hand").
"""
from __future__ import annotations

import pathlib
import sys

import torch

from . import harness


def apply_edits(src: str, file: str, edits) -> str | None:
    """src with the edits applied bottom-up (None when an edit is for another file)."""
    lines = src.splitlines()
    for e in sorted(edits, key=lambda e: (e.line, not e.insert), reverse=True):
        if pathlib.Path(e.file).resolve() != pathlib.Path(file).resolve():
            return None
        i = e.line - 1
        if e.insert:
            lines[i:i] = list(e.lines)
        else:
            lines[i:i + 1] = list(e.lines)
    return "\n".join(lines) + "\n"


def run_source(src: str, path: pathlib.Path, record: bool = False):
    """(namespace, exception or None, recorder or None) of running `src` as the program at `path`."""
    from backward_twice.recorder import Recorder

    ns = {"__name__": "__corpus__", "__file__": str(path)}
    rec = Recorder() if record else None
    with harness._autograd_modes():
        try:
            if rec is not None:
                with rec:
                    exec(compile(src, str(path), "exec"), ns)
            else:
                exec(compile(src, str(path), "exec"), ns)
        except Exception as err:
            return ns, err, rec
    return ns, None, rec


def _locals_of(err, path) -> dict:
    tb, out = err.__traceback__, {}
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == str(path) and tb.tb_frame.f_code.co_name != "<module>":
            out = dict(tb.tb_frame.f_locals)
        tb = tb.tb_next
    return out


def diagnose(path: pathlib.Path, recorded: bool = True):
    from backward_twice.diagnose import why_backward_failed

    ns, err, rec = run_source(path.read_text(), path, record=recorded)
    if err is None:
        raise AssertionError(f"{path.name} did not fail")
    names = {**ns, **_locals_of(err, path)}
    return why_backward_failed(err, names=names, recorder=rec), ns, err


def same_grads(a: dict, b: dict, labels: dict) -> bool:
    ga, gb = harness.leaf_grads(a, labels), harness.leaf_grads(b, labels)
    if len(ga) != len(gb):
        return False
    for (_, _, x), (_, _, y) in zip(ga, gb):
        if (x is None) != (y is None):
            return False
        if x is not None and not torch.allclose(x, y, rtol=1e-4, atol=1e-6):
            return False
    return True


def try_options(path: pathlib.Path, d) -> list[tuple[str, str]]:
    """[(option's first words, verdict)] with verdict 'same' (runs, the fix's gradients), 'runs,
    other gradients', 'raises <Error>', 'runs' (no GRADS label to compare), or 'by hand' (no edit)."""
    labels = harness.constants(path)
    fixed_ns, fixed_err, _ = run_source(harness.fixed_source(path.read_text()), path)
    assert fixed_err is None, f"{path.name}: the fix raises {fixed_err!r}"
    out = []
    finding = getattr(d, "finding", None)
    for o in (finding.options if finding is not None else []):
        words = (o.condition or o.fix)[:60]
        if not o.edits:
            out.append((words, "by hand"))
            continue
        src = apply_edits(path.read_text(), str(path), o.edits)
        if src is None:
            out.append((words, "by hand"))
            continue
        ns, err, _ = run_source(src, path)
        if err is not None:
            out.append((words, f"raises {type(err).__name__}: {str(err)[:50]}"))
        elif "GRADS" not in labels:
            out.append((words, "runs"))
        else:
            out.append((words, "same" if same_grads(ns, fixed_ns, labels) else "runs, other gradients"))
    return out


def main(argv: list[str]) -> int:
    after = "--after" in argv
    args = [a for a in argv if a != "--after"]
    paths = []
    for a in args or ["dev"]:
        paths += harness.programs(a) if a in harness.SPLITS else [pathlib.Path(a)]
    for p in paths:
        labels = harness.constants(p)
        d, _, _ = diagnose(p, recorded=not after)
        print(f"== {p.parent.name}/{p.name}  label: {labels.get('FIX_KIND')} {labels.get('CULPRIT')}")
        print(f"   rule {d.rule or '(after the fact)'}, kind {d.fix_kind}, culprit {d.culprit}, "
              f"{'confident' if d.confident else 'not confident'}")
        for words, verdict in try_options(p, d):
            print(f"   - {verdict:28} {words}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
