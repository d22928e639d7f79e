"""Load and run the corpus of failing programs (issue 19 §1).

Each program is one .py file of notebook-style module-level code, rewritten from a public report
named in its docstring, with module constants:
  SOURCE    the report: "owner/repo#number", or a forum thread's exact title
  CATEGORY  one of CATEGORIES
  CULPRIT   the user's variable path that carries the cause, as the user would write it
            ("h", "model.hidden", "mem['M']", "policy.saved_log_probs"), or None
  CAUSE     a few words
  FIX_KIND  one of FIX_KINDS (shared with the diag-tool developer)
  ERROR     a key of ERRORS
Programs written for issue 27 (heldout_rec/, and ten in dev/) also have:
  INTENT    one or two plain sentences: what each loss is meant to train, and what it must not
            train, so that a scorer applying a remedy knows which of its options is the right one
  GRADS     the leaf tensors whose .grad after the fixed run defines "the same result": a user
            path or a list of them ("model.parameters()", ["G.parameters()", "D.parameters()"],
            ["w", "b"]); the fixed program leaves those grads in place at its end
and CULPRIT may be a list of paths when several variables carry the old graph at once.
and buggy lines marked `# BUG`, each followed by a line `# FIX: <replacement code>`.
`run(path)` executes the program in a fresh dict, as a notebook's user namespace (which survives
the exception), on one thread; `run(path, fixed=True)` executes it with every BUG line swapped for its FIX.
`run_in_shell(path, shell)` runs it as one cell of a real IPython shell instead (what
`%why_backward` sees: a namespace that also holds IPython's `In`, `Out`, `exit`, `quit`).
"""
from __future__ import annotations

import ast
import contextlib
import pathlib
import re

import torch

HERE = pathlib.Path(__file__).parent
# heldout: the first batch, written before the tool changed
SPLITS = ("heldout", "dev", "heldout_rec", "heldout_r2", "heldout_r3", "heldout_r4", "heldout_r5", "heldout_r6",
          "heldout_r7", "heldout_r8", "heldout_r9", "heldout_r10")
# heldout_rec: written and frozen before the recorder (issue 27); scored once, at the end. It is
# left out of programs() without a split, so a default scoring run (test_diagnosis_targets,
# test_diagnose_ipython) never shows it; ask for it by name: programs("heldout_rec").
# heldout_r2: a second held-out ten, written from public reports and frozen on 2026-11-28 before the
# diagnosis changed again (heldout_rec was seen when it was scored); scored once, at the end.
FROZEN = ("heldout_rec", "heldout_r2", "heldout_r3", "heldout_r4", "heldout_r5", "heldout_r6", "heldout_r7", "heldout_r8",
          "heldout_r9", "heldout_r10")

FIX_KINDS = (
    "detach-carried",        # detach the tensor carried into the next step/chunk
    "recompute-in-step",     # compute it inside the loop each step (or under no_grad if it should not train)
    "retain-or-sum",         # one graph, two losses, one step: retain_graph=True on the first, or backward the sum
    "detach-input",          # detach what one model's output feeds into another model's loss
    "accumulate-number",     # keep a running total as a number (total += loss.item())
    "reset-per-episode",     # restart the carried state from its initial value each task/episode/window
    "backward-before-step",  # every backward before optimizer.step(), or recompute the forward after it
    "out-of-place",          # relu not relu_, inplace=False, x = x + y not x += y
    "no-data-write",         # do not write into a saved tensor through .data / .detach() in place
    # issue 27:
    "keep-graph",            # retain_graph=True / create_graph=True on an earlier backward() or autograd.grad()
                             # of the same step whose graph is needed again (detaching would be wrong)
    "detach-at-use",         # detach one tensor at one specific use, so that one loss does not train a
                             # network another loss trains (summing or retaining would train it)
    "read-before-backward",  # read the saved tensors (grad_fn._saved_*, a graph drawing) before backward()
)

CATEGORIES = (
    "carried-state",         # RNN hidden, module attributes, lists, dicts, deques, objects
    "computed-once",         # a value with a graph computed once, before the loop
    "two-backwards",         # two backwards through one step's graph (GAN, shared trunk, two optimizers)
    "accumulated-loss",      # a loss that accumulates across steps
    "meta-learning",         # fast weights across tasks
    "filter-solver",         # filters, neuron or ODE solvers carrying their state
    "rl-buffer",             # replay buffers, saved log-probs
    "checkpoint-compile",    # torch.utils.checkpoint, torch.compile
    "course",                # the course's own d/e, two-heads and GAN examples
    "inplace",               # "modified by an inplace operation"
    # issue 27:
    "higher-order",          # autograd.grad of an output (forces, PDE residuals, input gradients) in the loss
    "saved-tensors",         # saved tensors read after backward (a graph drawing, grad_fn._saved_*, a hook)
)

ERRORS = {   # a stable prefix of each error message (torch 2.13)
    "second time": "Trying to backward through the graph a second time",
    "inplace": "one of the variables needed for gradient computation has been modified by an inplace operation",
}

CONSTANTS = ("SOURCE", "CATEGORY", "CULPRIT", "CAUSE", "FIX_KIND", "ERROR")
REMEDY_CONSTANTS = ("INTENT", "GRADS")   # issue 27: every program written for it has both
BUG = re.compile(r"^(?P<indent>\s*)(?P<code>.*?)\s*#\s*BUG\b.*$")
FIX = re.compile(r"^\s*#\s*FIX:\s?(?P<code>.*)$")


def programs(split: str | None = None, frozen: bool = False) -> list[pathlib.Path]:
    """The program files of one split, sorted by name; without a split, those of every split
    except the FROZEN ones (with them too if frozen=True)."""
    splits = tuple(s for s in SPLITS if frozen or s not in FROZEN) if split is None else (split,)
    return [p for s in splits for p in sorted((HERE / s).glob("*.py"))]


def split_of(path: pathlib.Path) -> str:
    return path.parent.name


def culprits(labels: dict) -> list[str]:
    """CULPRIT as a list of paths ([] for None)."""
    c = labels["CULPRIT"]
    return [] if c is None else [c] if isinstance(c, str) else list(c)


def grads_paths(labels: dict) -> list[str]:
    """GRADS as a list of paths."""
    g = labels["GRADS"]
    return [g] if isinstance(g, str) else list(g)


def leaf_grads(ns: dict, labels: dict) -> list[tuple[str, torch.Tensor, torch.Tensor | None]]:
    """[(path, leaf, leaf.grad)] for every leaf tensor the GRADS paths name in namespace ns
    (a path may name one tensor or an iterable of them, such as model.parameters())."""
    out = []
    for path in grads_paths(labels):
        value = eval(path, ns)                 # our own labels, not user input
        leaves = [value] if isinstance(value, torch.Tensor) else list(value)
        out += [(f"{path}[{i}]" if len(leaves) > 1 else path, t, t.grad) for i, t in enumerate(leaves)]
    return out


def constants(path: pathlib.Path) -> dict:
    """The module-level literal constants of a program (read with ast, without running it)."""
    out = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in CONSTANTS or name in REMEDY_CONSTANTS:
                out[name] = ast.literal_eval(node.value)
    return out


def docstring(path: pathlib.Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text())) or ""


def fixed_source(src: str) -> str:
    """src with each `... # BUG` line replaced by the code of the `# FIX: ...` line after it
    (at the BUG line's indentation). ValueError if a BUG line has no FIX line after it, if a FIX
    line follows no BUG line, or if there is no BUG line at all."""
    lines, out, i, pairs = src.splitlines(), [], 0, 0
    while i < len(lines):
        bug = BUG.match(lines[i])
        if FIX.match(lines[i]):
            raise ValueError(f"line {i + 1}: a FIX line that follows no BUG line")
        if bug is None:
            out.append(lines[i])
            i += 1
            continue
        fix = FIX.match(lines[i + 1]) if i + 1 < len(lines) else None
        if fix is None:
            raise ValueError(f"line {i + 1}: a BUG line without a '# FIX: <code>' line after it")
        out.append(bug.group("indent") + fix.group("code").strip())
        pairs += 1
        i += 2
    if pairs == 0:
        raise ValueError("no '# BUG' line")
    return "\n".join(out) + "\n"


def bug_fix_pairs(src: str) -> list[tuple[str, str]]:
    """[(buggy code, fixed code)] in the order they appear."""
    lines = src.splitlines()
    return [(BUG.match(a).group("code"), FIX.match(b).group("code").strip())
            for a, b in zip(lines, lines[1:]) if BUG.match(a) and FIX.match(b)]


@contextlib.contextmanager
def _autograd_modes():
    """One thread while a program runs (tiny programs: faster, and fair to a shared machine);
    autograd's global modes and the thread count restored after it."""
    grad_enabled, anomaly, threads = torch.is_grad_enabled(), torch.is_anomaly_enabled(), torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_grad_enabled(grad_enabled)
        torch.autograd.set_detect_anomaly(anomaly)
        torch.set_num_threads(threads)


def run(path: pathlib.Path, fixed: bool = False) -> tuple[dict, BaseException | None]:
    """Execute the program (or its fixed form) in a fresh namespace, as a notebook cell would:
    (the namespace, the exception it raised or None). Autograd's global modes are restored."""
    src = path.read_text()
    if fixed:
        src = fixed_source(src)
    ns = {"__name__": "__corpus__", "__file__": str(path)}
    with _autograd_modes():
        try:
            exec(compile(src, str(path), "exec"), ns)
        except Exception as err:          # the failure under study: returned, not raised
            return ns, err
    return ns, None


def run_in_shell(path: pathlib.Path, shell, fixed: bool = False) -> tuple[dict, BaseException | None]:
    """Run the program (or its fixed form) as one cell of IPython `shell` (see run_cell_in_shell):
    (shell.user_ns, the exception the cell raised or None)."""
    src = path.read_text()
    return shell.user_ns, run_cell_in_shell(fixed_source(src) if fixed else src, shell)


def run_cell_in_shell(src: str, shell) -> BaseException | None:
    """Run `src` as one cell of IPython `shell` after removing the variables of earlier cells from
    its user namespace, which keeps IPython's own names (`In`, `Out`, `exit`, `quit`, `get_ipython`,
    `__builtins__`; shell.reset() does the same but takes ~0.7 s, a full gc). The exception the
    cell raised, or None; IPython shows its traceback and keeps it in sys.last_value, where
    `%why_backward` reads it. Autograd's global modes are restored."""
    ns = shell.user_ns
    for name in [k for k in ns if k not in shell.user_ns_hidden and not k.startswith("__")]:
        del ns[name]
    with _autograd_modes():
        return shell.run_cell(src, store_history=True).error_in_exec
