"""The seam between the diagnosis and the picture engine (docs/diagnosis.md, "The seam with the
pictures"): the diagnosis fills a StopRequest and words every fact; stop_picture draws it and shows
each recorded note word for word, on its node's box and in the text form, even when the node is not drawn."""
import torch

from backward_twice.diagnosis_picture import StopRequest, stop_picture


def failing_total(steps):
    w = torch.ones(2, requires_grad=True)
    total, losses = 0, []
    for _ in range(steps):
        loss = (w * w).sum()
        losses.append(loss)
        total = total + loss
    total.backward(retain_graph=False)
    return w, total, losses


def path_to(root, stop):
    """The nodes from root.grad_fn down to stop (depth first)."""
    def walk(fn, path):
        if fn is stop:
            return path + [fn]
        for nxt, _ in fn.next_functions:
            if nxt is not None and (found := walk(nxt, path + [fn])):
                return found
        return None
    found = walk(root.grad_fn, [])
    assert found, "no path"
    return found


def test_notes_are_drawn_on_their_boxes_and_listed_word_for_word():
    w, total, losses = failing_total(2)
    stop = losses[-1].grad_fn.next_functions[0][0]             # the newest step's MulBackward0
    note = "made at train.py:7, step 2 (recorded)"
    pic = stop_picture(StopRequest(total, stop=stop, path=tuple(path_to(total, stop)),
                                   old=frozenset({losses[0].grad_fn}), names={"w": w, "total": total},
                                   notes={stop: note}))
    assert note in pic.dot                                      # on the box
    assert f"MulBackward0: {note}" in pic.text.split("notes:\n", 1)[1]   # and in the text form
    assert "(node not drawn)" not in pic.text


def test_a_note_on_a_node_left_out_of_the_picture_is_still_listed():
    w, total, losses = failing_total(40)                       # a long graph: drawn around the stop
    stop = losses[-1].grad_fn.next_functions[0][0]
    far = losses[0].grad_fn                                     # the first step's sum, far from the stop
    pic = stop_picture(StopRequest(total, stop=stop, path=tuple(path_to(total, stop)), names={"w": w},
                                   notes={far: "made at train.py:7, step 1"}, max_nodes=12))
    listed = pic.text.split("notes:\n", 1)[1]
    assert "SumBackward0: made at train.py:7, step 1 (node not drawn)" in listed
    assert "made at train.py:7, step 1" not in pic.dot


def test_no_notes_no_notes_section():
    w, total, losses = failing_total(2)
    stop = losses[-1].grad_fn.next_functions[0][0]
    pic = stop_picture(StopRequest(total, stop=stop, path=tuple(path_to(total, stop))))
    assert "notes:" not in pic.text and pic.dot.startswith("digraph")
