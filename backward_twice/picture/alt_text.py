"""A picture's text alternative: what it teaches, in a few sentences (the <img>'s alt), built from
the same Snapshot as its text form (text_form.describe), so it is as deterministic as that.

It says which saved tensors were freed (and by which call, when the picture knows), which are
still held and by whom, which nodes a backward call ran, and which gradients changed. The full
text form goes one click away, beside the picture (figure.figure_html)."""
from __future__ import annotations

from collections import Counter

from ..snapshot import Role, SavedState, Snapshot

LISTED = 6          # items named in a list before "and N more"


def listed(items) -> str:
    items = list(dict.fromkeys(items))
    more = len(items) - LISTED
    return ", ".join(items[:LISTED]) + (f" and {more} more" if more > 0 else "")


def _slot(s) -> str:
    return f"{s.slot} (= {s.alias})" if s.alias and not s.alias_view else s.slot


def _who(snap: Snapshot, op) -> str:
    """An op's name, with its id when two ops share the name ('MulBackward0 op2')."""
    return op.name if _name_counts(snap)[op.name] == 1 else f"{op.name} {op.id}"


_COUNTS: dict = {}      # id(snapshot.ops) -> Counter of op names: one count per snapshot, not per op


def _name_counts(snap: Snapshot) -> Counter:
    key = id(snap.ops)
    hit = _COUNTS.get(key)
    if hit is None or hit[0] is not snap.ops:
        _COUNTS.clear()                 # only the snapshot being described is kept
        hit = _COUNTS[key] = (snap.ops, Counter(op.name for op in snap.ops.values()))
    return hit[1]


def _by_op(snap: Snapshot, pairs) -> list[str]:
    """'MulBackward0's self (= a) and other' per op, in the snapshot's order."""
    slots: dict = {}
    for op, s in pairs:
        slots.setdefault(op.id, []).append(_slot(s))
    return [f"{_who(snap, snap.ops[oid])}'s {' and '.join(ss) if len(ss) <= 2 else ', '.join(ss)}"
            for oid, ss in slots.items()]


def saved_words(snap: Snapshot, call: str | None = None, freed_now=None) -> list[str]:
    """Sentences on the saved tensors: FREED (by `call` for those in `freed_now`, a set of
    (op id, slot), or all of them when freed_now is None and call is given), freed but still in
    memory (Saved.held_by), held (by the node that saved it)."""
    saved = list(snap.saved_tensors())
    freed = [(op, s) for op, s in saved if s.state is SavedState.FREED]
    held = [(op, s) for op, s in saved if s.state is SavedState.HELD]
    out = []
    if freed:
        if freed_now is None:
            now, earlier = (freed, []) if call else ([], freed)
        else:
            now = [(op, s) for op, s in freed if (op.id, s.slot) in freed_now]
            earlier = [(op, s) for op, s in freed if (op.id, s.slot) not in freed_now]
        if now:
            out.append(f"FREED by {call}: {listed(_by_op(snap, now))}.")
        if earlier:
            out.append(f"FREED{' before it' if now else ''}: {listed(_by_op(snap, earlier))}.")
        kept = [(op, s) for op, s in freed if s.held_by]
        if kept:
            out.append("No memory returned for " + listed(
                f"{_who(snap, op)}'s {_slot(s)} (still held by {' and '.join(s.held_by)})" for op, s in kept) + ".")
    if held:
        out.append(f"HELD, each by the node that saved it: {listed(_by_op(snap, held))}.")
    if not freed and not held:
        out.append("No saved tensor.")
    modified = [(op, s) for op, s in saved if s.modified]
    if modified:
        out.append(f"Modified in place since saved: {listed(_by_op(snap, modified))}.")
    return out


def _shape(snap: Snapshot) -> str:
    leaves = [t.name for t in snap.tensors.values() if t.role is Role.LEAF]
    ops = len(snap.ops)
    head = f"Autograd graph of {ops} op{'s' if ops != 1 else ''}"
    if leaves:
        head += f" and {len(leaves)} lea{'ves' if len(leaves) != 1 else 'f'} ({listed(leaves)})"
    if snap.truncated:
        head += f", {snap.hidden_count}{'+' if snap.count_capped else ''} more nodes not drawn"
    return head + "."


def ran_words(snap: Snapshot, ran) -> str:
    """'Backward ran 3 nodes, in order: SumBackward0, MulBackward0, AccumulateGrad of a.'"""
    order = sorted(((k, nid) for nid, ks in ran.items() for k in ks))
    if not order:
        return ""
    labels = [f"AccumulateGrad of {snap.tensors[n].name}" if n in snap.tensors else
              (snap.ops[n].name if n in snap.ops else n) for _, n in order]
    more = len(labels) - LISTED
    shown = ", ".join(labels[:LISTED]) + (f" and {more} more" if more > 0 else "")
    return f"Backward ran {len(labels)} node{'s' if len(labels) != 1 else ''}, in order: {shown}."


def grad_words(snap: Snapshot, before: Snapshot | None) -> str:
    """Which .grad changed since `before`; without `before`, the .grad values held."""
    if before is not None:
        changed = snap.grad_changes_since(before)
        return f"Gradients changed: {listed(changed)}." if changed else "No gradient changed."
    grads = [f"{t.name}.grad = {t.grad}" for t in snap.tensors.values()
             if (t.role is Role.LEAF or t.retains_grad) and t.grad not in (None, "None")]
    return f"Gradients: {listed(grads)}." if grads else ""


def call_of(title: str | None) -> str | None:
    """'loss.backward()' from a pair's 'after loss.backward()' title; 'this backward call' from
    a bare 'after'."""
    if not title:
        return None
    t = title.split(" (raised", 1)[0]
    if t.startswith("after "):
        return t[len("after "):].split(":", 1)[0]
    return "this backward call" if t.startswith("after") else None


def alt_of(snap: Snapshot, title: str | None = None, before: Snapshot | None = None, ran=None,
           call: str | None = None, shape: bool = True) -> str:
    """The text alternative of a picture of `snap` (titled `title`): its shape, saved tensors
    freed (by `call`, or by the call between `before` and it) and held, what ran, the gradients."""
    if before is not None and call is None:
        call = "this backward call"
    now = None if before is None else {(op.id, s.slot) for op, s in snap.freed_since(before)}
    parts = ([f"{title}."] if title else []) + ([_shape(snap)] if shape else []) + saved_words(snap, call, now)
    parts += [w for w in (ran_words(snap, ran or {}), grad_words(snap, before)) if w]
    return " ".join(parts)


def pair_alt(before: Snapshot, after: Snapshot, titles, ran=None) -> str:
    """The alt of a before/after pair: the 'after' side says what the call did."""
    call = call_of(titles[1]) or "this backward call"
    n = before.count_by_state()
    first = ""
    if n["freed"]:       # two states compared (compare(c, d)): say what the first one had freed, too
        first = " " + " ".join(w for w in saved_words(before) if w.startswith("FREED"))
    head = (f"Two pictures, {titles[0]} and {titles[1]}. {_shape(before)} Before: {n['held']} saved "
            f"tensor(s) held, {n['freed']} freed.{first} After {call}:")
    return f"{head} {alt_of(after, None, before, ran, call, shape=False)}"
