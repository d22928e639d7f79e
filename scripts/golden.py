"""Golden pictures: the DOT source of every picture in notebooks 00-11, kept in tests/golden/.

Every picture's output carries the DOT it was drawn from (mime type backward_twice.graph.DOT_MIME,
measured box sizes blanked). nbval compares that output like the text form, so a fresh run
that draws differently fails; tests/test_golden_pictures.py compares the committed outputs with
tests/golden/<notebook>/<cell id>.<k>.dot, so that a picture change is a reviewed diff.

    python -m scripts.golden                 # compare the committed notebooks with tests/golden
    python -m scripts.golden --accept        # after review: tests/golden := the committed outputs
    python -m scripts.golden --run [NB ...]  # run the notebooks into build/golden-run first (no
                                             # notebook is rewritten), then compare those
    python -m scripts.golden --run --accept  # ... and accept what the fresh run drew
    python -m scripts.golden --last-run [--accept]   # build/golden-run as the last --run left it
"""
from __future__ import annotations

import difflib
import pathlib
import shutil
import sys

import nbformat

from backward_twice.graph import DOT_MIME
from scripts import BUILD, ROOT, notebooks

GOLDEN = ROOT / "tests" / "golden"
RUN_DIR = BUILD / "golden-run"


def pictures(nb_path: pathlib.Path) -> dict[str, str]:
    """{'<cell id>.<k>': DOT} of every output of the notebook that carries DOT_MIME."""
    nb = nbformat.read(nb_path, as_version=4)
    found = {}
    for cell in nb.cells:
        k = 0
        for out in cell.get("outputs", []):
            dot = out.get("data", {}).get(DOT_MIME)
            if dot is not None:
                found[f"{cell.get('id')}.{k}"] = dot if isinstance(dot, str) else "".join(dot)
                k += 1
    return found


def stored(stem: str) -> dict[str, str]:
    folder = GOLDEN / stem
    return {p.name[:-4]: p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.dot"))}


def differences(nb_path: pathlib.Path, stem: str | None = None) -> list[str]:
    """What differs between a notebook's pictures and its golden files, one entry per picture
    (a unified diff, or 'new'/'gone'); [] when they agree."""
    stem = stem or nb_path.stem
    have, want = pictures(nb_path), stored(stem)
    if want and not have:
        return [f"{stem}: no output of {nb_path.name} carries its picture's DOT ({DOT_MIME}): its outputs "
                f"were saved before pictures carried it, or its pictures are gone. Regenerate it "
                f"(bash scripts/regen {nb_path.relative_to(ROOT) if nb_path.is_relative_to(ROOT) else nb_path})."]
    out = []
    for key in sorted(set(have) | set(want)):
        if key not in want:
            out.append(f"{stem}/{key}.dot: new picture (no golden file)")
        elif key not in have:
            out.append(f"{stem}/{key}.dot: golden file, but the notebook no longer has this picture")
        elif have[key] != want[key]:
            diff = difflib.unified_diff(want[key].splitlines(), have[key].splitlines(),
                                        f"golden/{stem}/{key}.dot", f"{nb_path.name} cell {key}", lineterm="", n=1)
            out.append("\n".join(diff))
    return out


def accept(nb_path: pathlib.Path, stem: str | None = None) -> int:
    folder = GOLDEN / (stem or nb_path.stem)
    shutil.rmtree(folder, ignore_errors=True)
    found = pictures(nb_path)
    if found:
        folder.mkdir(parents=True)
    for key, dot in found.items():
        (folder / f"{key}.dot").write_text(dot, encoding="utf-8")
    return len(found)


def run_copy(nb_path: pathlib.Path) -> pathlib.Path:
    """The notebook executed into RUN_DIR (cwd notebooks/, as nbval runs it); the original untouched."""
    from scripts.regen import client

    nb = nbformat.read(nb_path, as_version=4)
    client(nb, nb_path.parent).execute()
    RUN_DIR.mkdir(parents=True, exist_ok=True)
    out = RUN_DIR / nb_path.name
    nbformat.write(nb, out)
    return out


def main(args: list[str]) -> int:
    do_run, do_accept, last = "--run" in args, "--accept" in args, "--last-run" in args
    names = [a for a in args if not a.startswith("--")]
    paths = [pathlib.Path(a).resolve() for a in names] or notebooks()
    failed = 0
    for p in paths:
        src = run_copy(p) if do_run else (RUN_DIR / p.name if last else p)
        if not src.exists():
            print(f"{p.stem}: no {src} (python -m scripts.golden --run first)")
            failed += 1
            continue
        if do_accept:
            print(f"{p.stem}: {accept(src, p.stem)} picture(s) accepted", flush=True)
            continue
        diffs = differences(src, p.stem)
        failed += bool(diffs)
        print(f"{p.stem}: " + ("same" if not diffs else f"{len(diffs)} picture(s) differ"), flush=True)
        for d in diffs:
            print(d)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
