"""Private internals of other packages that this project relies on, each used in one place.

- nbval `IPyNbFile.skip_compare` (conftest.py): SVG outputs are never byte-compared;
- pytest-xdist `config.option.loadscopereorder` (conftest.py): the slowest files go first;
- nbconvert `HTMLExporter._init_resources` (scripts/build_site.py): `SiteExporter.from_notebook_node`
  is HTMLExporter's conversion without its BeautifulSoup pass.

The versions are pinned (requirements.txt, requirements-dev.txt), so these can change only with an upgrade; each
test below then fails and says what to look at, instead of the suite silently comparing SVG,
losing its order, or the site drifting from nbconvert's page.
"""
import hashlib
import inspect
import types

import nbformat
import pytest

import conftest


def test_nbval_skips_the_mime_types_in_its_files_skip_compare():
    from nbval.plugin import IPyNbCell, IPyNbFile, nocolors

    assert "self.skip_compare" in inspect.getsource(IPyNbFile.__init__), (
        "nbval's IPyNbFile no longer sets skip_compare: conftest.py's pytest_collectstart relies on it")
    cell = object.__new__(IPyNbCell)          # compare_outputs only reads these
    cell.colors = nocolors
    cell.format_output_compare = lambda *args: None    # its report needs a real pytest session
    ref = [nbformat.v4.new_output("display_data", {"text/plain": "pic", "image/svg+xml": "<svg>engine A</svg>"})]
    test = [nbformat.v4.new_output("display_data", {"text/plain": "pic", "image/svg+xml": "<svg>engine B</svg>"})]
    cell.parent = types.SimpleNamespace(skip_compare=("metadata", "image/svg+xml"), sanitize_patterns={})
    assert cell.compare_outputs(test, ref), "nbval compared a mime type listed in the file's skip_compare"
    cell.parent = types.SimpleNamespace(skip_compare=("metadata",), sanitize_patterns={})
    assert not cell.compare_outputs(test, ref), "nbval's compare_outputs no longer reads parent.skip_compare"


def test_conftest_adds_svg_to_a_notebooks_skip_compare():
    notebook = types.SimpleNamespace(fspath=types.SimpleNamespace(ext=".ipynb"), skip_compare=("metadata",))
    conftest.pytest_collectstart(notebook)
    assert notebook.skip_compare == ("metadata", "image/svg+xml")
    with pytest.raises(pytest.UsageError, match="skip_compare"):
        conftest.pytest_collectstart(types.SimpleNamespace(fspath=types.SimpleNamespace(ext=".ipynb")))


def test_xdist_still_reads_the_reorder_option_conftest_turns_off():
    import xdist.plugin
    from xdist.scheduler import loadscope

    assert 'dest="loadscopereorder"' in inspect.getsource(xdist.plugin), (
        "xdist renamed the option behind --no-loadscope-reorder: update conftest.pytest_configure")
    assert "config.option.loadscopereorder" in inspect.getsource(loadscope), (
        "xdist's loadscope scheduler no longer reads config.option.loadscopereorder: "
        "conftest.pytest_configure would no longer keep the slow files first")
    config = types.SimpleNamespace(option=types.SimpleNamespace(loadscopereorder=True))
    conftest.pytest_configure(config)
    assert config.option.loadscopereorder is False


# sha256 (first 16 hex digits) of nbconvert 7.17.2's HTMLExporter.from_notebook_node source
HTML_EXPORTER_SOURCE_SHA = "3dccafff45cc4e74"


def test_the_site_exporter_copies_the_current_html_exporter():
    from nbconvert import HTMLExporter

    from scripts import build_site

    source = inspect.getsource(HTMLExporter.from_notebook_node)
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    assert digest == HTML_EXPORTER_SOURCE_SHA, (
        "nbconvert's HTMLExporter.from_notebook_node changed: scripts/build_site.py's "
        "SiteExporter.from_notebook_node is a copy of it without the BeautifulSoup pass (and calls "
        "the private _init_resources). Compare the two, port the change, then set "
        f"HTML_EXPORTER_SOURCE_SHA = {digest!r} here.")
    resources = build_site.exporter()._init_resources({"metadata": {"name": "x"}})
    assert resources["metadata"]["name"] == "x" and resources["output_extension"] == ".html"


# ---------------------------------------------------------------------------------------------
# diag-tool: autograd internals backward_twice/diagnose.py reads (torch is pinned; each guard says what
# breaks when an upgrade changes it).
def test_diag_tool_sequence_nr_orders_nodes_by_creation():
    import torch

    w = torch.ones(2, requires_grad=True)
    a = w * 2
    b = a.exp()
    assert b.grad_fn._sequence_nr() > a.grad_fn._sequence_nr(), (
        "grad_fn._sequence_nr() no longer grows with creation: diagnose's step split and stop are wrong")


def test_diag_tool_freed_and_inplace_errors_read_from_saved_properties():
    import torch

    from backward_twice.diagnose import _INPLACE_MSG, _VERSIONS, FREED_TEXT, INPLACE_TEXT

    w = torch.ones(3, requires_grad=True)
    y = (w * 2).exp()
    y.sum().backward()
    with pytest.raises(RuntimeError) as freed:
        _ = y.grad_fn._saved_result
    assert FREED_TEXT in str(freed.value), "reading a freed _saved_* no longer raises the freed-graph text"
    z = (w * 2).sigmoid()
    z.mul_(2)
    with pytest.raises(RuntimeError) as changed:
        _ = z.grad_fn.next_functions[0][0]._saved_result
    text = str(changed.value)
    assert INPLACE_TEXT in text and _VERSIONS.search(text).groups() == ("1", "0"), text
    with pytest.raises(RuntimeError) as err:
        z.sum().backward()
    assert _INPLACE_MSG.search(str(err.value)), "the in-place error's '[tensor], ... is at version' form changed"


def test_diag_tool_raw_saved_data_reads_a_changed_tensor_without_the_check():
    import torch

    w = torch.ones(3, requires_grad=True)
    z = (w * 2).sigmoid()
    z.add_(1)
    from backward_twice.walk import raw_saved_tensor

    raw = raw_saved_tensor(z.grad_fn.next_functions[0][0], "result")
    assert isinstance(raw, torch.Tensor) and raw._version == 1, (
        "_raw_saved_<slot>.data no longer gives the saved tensor: backward_twice.walk.raw_saved_tensor, and so "
        "the in-place diagnosis, cannot name it")
    assert raw.untyped_storage().data_ptr() == z.untyped_storage().data_ptr()
    assert z.grad_fn._sequence_nr() > z.grad_fn.next_functions[0][0]._sequence_nr(), (
        "an in-place op no longer gives the tensor a newer grad_fn: out-of-place vs .data writes blur")


def test_diag_tool_input_metadata_gives_a_nodes_output_shape():
    import torch

    w = torch.ones(3, 4, requires_grad=True)
    y = (w * 2).t()
    assert tuple(y.grad_fn._input_metadata[0].shape) == (4, 3), (
        "Node._input_metadata[0].shape changed: diagnose's carried-state match (kind and shape) fails")


def test_diag_tool_anomaly_mode_records_the_forward_stack_in_metadata():
    import torch

    w = torch.ones(3, requires_grad=True)
    with torch.autograd.set_detect_anomaly(True):
        y = (w * 2).exp()
    stack = y.grad_fn.metadata.get("traceback_")
    assert isinstance(stack, list) and any("y = (w * 2).exp()" in f for f in stack), (
        "anomaly mode no longer keeps the forward stack in grad_fn.metadata['traceback_']")


def test_diag_tool_engine_frame_holds_the_backward_outputs():
    import torch

    from backward_twice.diagnose import _tensors_from_traceback

    w = torch.ones(3, requires_grad=True)
    loss = (w * 2).exp().sum()
    loss.backward()
    with pytest.raises(RuntimeError) as err:
        loss.backward()
    assert _tensors_from_traceback(err.value.__traceback__)[0] is loss, (
        "torch/autograd/graph.py's _engine_run_backward no longer holds t_outputs: pass the tensor instead")


def test_diag_tool_the_engine_runs_a_custom_backward_through_backward_cfunction_apply():
    import torch
    from torch.autograd.function import BackwardCFunction

    class Twice(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    ran, torch_apply = [], BackwardCFunction.apply

    def apply(ctx, *args):
        ran.append(type(ctx).__name__)
        return torch_apply(ctx, *args)

    BackwardCFunction.apply = apply
    try:
        Twice.apply(torch.ones(2, requires_grad=True)).sum().backward()
    finally:
        BackwardCFunction.apply = torch_apply
    assert ran == ["TwiceBackward"], (
        "the engine no longer calls BackwardCFunction.apply (looked up on the class) to run a custom "
        "Function's backward: the recorder no longer sees in-place writes made there (recorder._apply_seen)")


def test_diag_tool_indexed_assignment_is_a_copyslices_node():
    import torch

    out = torch.zeros(2)
    out[0] = torch.ones(1, requires_grad=True).sum()
    assert out.grad_fn.name().endswith("CopySlices"), "out[i] = ... is no longer a CopySlices node"

# ---- engine-robust: autograd's raw saved variables (backward_twice/walk.py, _raw_saved and _hooked_saved) ----
# The walk reads what a node saved without unpacking it when a saved-tensor hook may run user
# code (a non-reentrant torch.utils.checkpoint re-runs the forward on each unpack). It relies
# on: `node._raw_saved_<slot>` / `node._raw_saved_tensors` giving torch._C._autograd.SavedTensor
# objects; their `unpack_hook` (None without a hook) and `data` (what the pack hook returned,
# None once backward freed it); and torch.utils.checkpoint's placeholder class `_Holder`.
def test_raw_saved_variables_are_read_without_unpacking():
    import torch
    from torch.utils import checkpoint

    from backward_twice import walk

    where = ("torch changed its raw saved variables: backward_twice/walk.py (_raw_saved, _hooked_saved, "
             "_packed_saved) reads them so that drawing a checkpointed graph re-runs no user code")
    calls = []

    def block(h):
        calls.append(1)
        return h.exp()

    x = torch.randn(3, requires_grad=True)
    y = checkpoint.checkpoint(block, x, use_reentrant=False)
    raw = walk._raw_saved(y.grad_fn, "_saved_result")
    assert type(raw).__name__ == "SavedTensor", where
    assert callable(raw.unpack_hook), where
    assert isinstance(raw.data, walk._checkpoint_holder_type()), (
        where + "; torch.utils.checkpoint._Holder is no longer what its pack hook returns")
    assert len(calls) == 1, where + "; reading .unpack_hook or .data re-ran the forward"
    y.sum().backward()
    assert raw.data is None and raw.unpack_hook is None, where + "; after backward .data should be None"

    plain = x.exp()
    raw = walk._raw_saved(plain.grad_fn, "_saved_result")
    assert raw.unpack_hook is None and torch.equal(raw.data, plain.detach()), where

    class Twice(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a, a * 2)
            return a.clone()

        @staticmethod
        def backward(ctx, g):
            return g

    raw = walk._raw_saved(Twice.apply(x).grad_fn, "saved_tensors")
    assert isinstance(raw, tuple) and len(raw) == 2 and all(r.unpack_hook is None for r in raw), where


# --- diag-fix: internals the diag-fix rules read ---
def test_diag_fix_function_nodes_are_backward_cfunctions_with_one_metadata_per_output():
    """backward_twice.diagnose._opaque_shared: a custom (or compiled) autograd.Function's node is a
    torch.autograd.function.BackwardCFunction, len(_input_metadata) is its number of outputs, and a
    tensor's output_nr says which output it is."""
    import torch

    class Split(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1, x * 2, x * 3

        @staticmethod
        def backward(ctx, a, b, c):
            return a + 2 * b + 3 * c

    x = torch.randn(3, requires_grad=True)
    outs = Split.apply(x)
    fn = outs[0].grad_fn
    assert isinstance(fn, torch.autograd.function.BackwardCFunction)
    assert all(o.grad_fn is fn for o in outs) and [o.output_nr for o in outs] == [0, 1, 2]
    assert len(fn._input_metadata) == 3
    assert not isinstance((x * 2).grad_fn, torch.autograd.function.BackwardCFunction)


# --- issue 22: what diagnose reads of a reentrant checkpoint and a compiled graph ---
def test_released_function_state_and_the_names_diagnose_trusts():
    """backward_twice.diagnose._released and READS_ITS_STATE: a reentrant checkpoint's node is
    CheckpointFunctionBackward and torch.compile's (aot_eager) CompiledFunctionBackward, both
    BackwardCFunctions; once backwarded, reading ctx.saved_tensors raises the freed-graph text, and
    both backwards read it (a second backward raises). The donated-buffers text is AOTAutograd's."""
    import torch
    from torch.utils.checkpoint import checkpoint

    from backward_twice.diagnose import DONATED_TEXT, FREED_TEXT, READS_ITS_STATE

    lin = torch.nn.Linear(3, 2)
    x = torch.randn(2, 3, requires_grad=True)
    torch._dynamo.reset()
    compiled = torch.compile(torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1)),
                             backend="aot_eager")    # notebook 12's tiny(): its Tanh output is donated
    for loss in (checkpoint(lin, x, use_reentrant=True).sum(), compiled(x).sum()):
        fn = loss.grad_fn.next_functions[0][0]
        assert isinstance(fn, torch.autograd.function.BackwardCFunction) and fn.name() in READS_ITS_STATE, fn
        assert isinstance(fn.saved_tensors, tuple)
        loss.backward()
        with pytest.raises(RuntimeError, match=FREED_TEXT):
            _ = fn.saved_tensors
        with pytest.raises(RuntimeError, match=FREED_TEXT):
            loss.backward()
    compiled(x).sum().backward()
    with pytest.raises(RuntimeError, match=DONATED_TEXT):
        compiled(x).pow(2).sum().backward(retain_graph=True)
