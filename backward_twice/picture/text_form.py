"""The text form of a picture (what nbval compares), built from the Snapshot its scene is built from."""
from __future__ import annotations

from ..snapshot import Role, SavedState, Snapshot, fmt_bytes, fmt_shape, fmt_total
from .snapshot_boxes import holder_words

STATE_WORDS = {SavedState.HELD: "held", SavedState.FREED: "FREED", SavedState.VALUE: "value",
               SavedState.UNREADABLE: "UNREADABLE", SavedState.RECOMPUTED: "recomputed"}


def describe(snap: Snapshot) -> str:
    """The deterministic text form of one snapshot."""
    lines = []
    if snap.above is not None:
        a = snap.above
        lines.append(f"focus on {', '.join(a.focus)}: NOT DRAWN: {a.headline()} ({a.kinds()})")
    if snap.outside is not None:
        o = snap.outside
        into = f", into {', '.join(o.into)}" if o.into else ""
        lines.append(f"inside {o.scope}: NOT DRAWN: {o.headline()}{into} ({o.kinds()})")
    for t in snap.tensors.values():
        if t.role is not Role.LEAF:
            continue
        lines.append(f"leaf {t.name} {fmt_shape(t.shape)} {t.dtype} grad={t.grad}")
    for op in snap.ops.values():
        src = ", ".join(_label(snap, i) for i in op.inputs) or "-"
        made = f" -> {', '.join(op.produces)}" if op.produces else ""
        lines.append(f"{op.id} {op.name}({src}){made}")
        for s in op.saved:
            state = STATE_WORDS[s.state]
            lines.append(f"    {state:5} {s.describe()}{holder_words(s) if s.state is SavedState.FREED else ''}")
    for t in snap.tensors.values():
        if t.role is Role.LEAF:
            continue
        kept = f"retains_grad grad={t.grad}" if t.retains_grad else "grad not kept"
        lines.append(f"{t.role} {t.name} {fmt_shape(t.shape)} {t.dtype} {kept}")
    n = snap.count_by_state()
    b = snap.bytes_by_state()
    other = f", {n['unreadable']} unreadable" if "unreadable" in n else ""
    m = snap.memory()    # unknown sizes are counted apart, never as 0 B
    lines.append(f"saved tensors: {n['held']} held ({fmt_total(b['held'], m.held_unknown)}), "
                 f"{n['freed']} freed ({fmt_total(b['freed'], m.freed_unknown)}){other}")
    if m.by_reference:
        lines.append(f"memory {m.words()}")
    if snap.on_meta:
        lines.append("meta device: the sizes are what these tensors would take; no memory is allocated")
    shared = snap.shared_buffers()
    if shared:
        u = snap.unique_bytes_by_state()
        slots = sum(len(v) for v in shared.values())
        lines.append(f"shared buffers: {len(shared)} buffer(s) saved by {slots} slots; counted once: "
                     f"{fmt_bytes(u['held'])} held, {fmt_bytes(u['freed'])} freed")
    if snap.params_hidden:
        n = len(snap.params_hidden)
        lines.append(f"NOT DRAWN: {n} leaf tensor{'s' * (n != 1)} (parameters), hidden by hide_params=True: "
                     f"{', '.join(snap.params_hidden)}; draw them with hide_params=False")
    if snap.truncated:
        more = snap.hidden_count
        plus = "+" if snap.count_capped else ""
        kinds = ", ".join(f"{k} x{v}" for k, v in sorted(snap.hidden_by_type.items()))
        lines.append(f"NOT DRAWN: {more}{plus} more nodes beyond max_nodes ({kinds})")
    return "\n".join(lines)


def _label(snap, node_id):
    t = snap.tensors.get(node_id)
    return t.name if t is not None else node_id
