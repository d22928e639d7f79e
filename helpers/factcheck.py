"""Every quote from the sources that the course checks, each with its one verdict.

`QUOTES` is the single home of the verdicts: each quote once, with its source (by public
title), the verdict, why, and the notebook section whose cell proves it. Notebooks never type
a verdict themselves:

    verdict_table("002-a", "004-i")      # a table for a notebook: Markdown in JupyterLab and
                                         # on the site, the complete plain text for nbval

and the proving cell asserts that what it ran agrees with the registered verdict:

    ledger = Ledger()
    with ledger.claim("000-a") as c:
        ...                              # run the claim; assert what is really true
        c.verdict("partly")              # AssertionError if QUOTES says otherwise

A claim block that raises (an assert failing) fails the notebook: a verdict is only
recorded when the cell that proves it ran to the end. A claim recorded again (its cell
run twice) replaces the earlier record in place: the latest run counts, the order stays.
The ids ("000-a": source 000, claim a) are internal; learners see the public titles.
"""
from __future__ import annotations

import contextlib
import dataclasses

VERDICTS = {"true": "true", "false": "false", "partly": "partly true"}

# kind, public title (GUIDE.md): what learners see instead of the internal source number
SOURCES = {
    "000": ("PyTorch Forums", "What exactly does `retain_variables=True` in `loss.backward()` do?"),
    "001": ("Article", "What is retain_graph in PyTorch: Explanation and Usage"),
    "002": ("Q&A digest", "Hot questions for Using Neural networks in automatic differentiation"),
    "003": ("Q&A article", "How does pytorch's `retain_grad()` affect gradient calculations when its "
                           "position changes?"),
    "004": ("Stack Overflow", "What does the parameter retain_graph mean in the Variable's backward() method?"),
}

NB03, NB04, NB09 = ("03_summed_vs_sequential.ipynb", "04_retain_grad_placement.ipynb", "09_fact_check.ipynb")


@dataclasses.dataclass(frozen=True)
class Quote:
    id: str           # internal: source number and a letter or number
    quote: str        # the short quote being checked ([...] marks a cut, [word] an addition)
    verdict: str      # "true", "false" or "partly"
    why: str          # one or two sentences, what the proving cell shows
    notebook: str     # the notebook whose cell proves it (a ledger.claim(id) block)
    section: str      # the section of that notebook, "1" or "8.1"

    @property
    def source(self) -> str:
        return self.id.split("-")[0]


def _q(*entries):
    return {q.id: q for q in (Quote(*e) for e in entries)}


QUOTES: dict[str, Quote] = _q(
    # ---- what backward() frees (proved in 09 §1)
    ("000-a", "After loss.backward you cannot do another loss.backward unless retain_variables is true.",
     "partly", "only when the graph saved tensors: a graph that saved none (x + 1, sum) can be backwarded "
     "twice; and the argument is now retain_graph", NB09, "1"),
    ("000-b", "the backward proc will consume the intermediate saved Tensors (Variables) [...] unless you "
     "explicitly tell PyTorch to retain them", "true",
     "backward frees the tensors its nodes saved (here PowBackward0.self and MulBackward0.other; a saved leaf "
     "too, not only intermediates); retain_graph=True keeps them", NB09, "1"),
    ("000-c", "The default is to drop the variables/gradient to save on memory.", "partly",
     "the saved tensors are dropped, but gradients are kept: the leaf's .grad is filled and accumulates",
     NB09, "1"),
    ("001-a", "By default, PyTorch frees this graph [after backward] to save memory", "partly",
     "the graph's nodes and edges stay (walkable, drawable); only the tensors they saved are freed", NB09, "1"),
    ("002-a", "After this computation, the part of graph that calculate d will be freed by default to save "
     "memory. So if we do e.backward(), the error message will pop up", "partly",
     "the error is real, but what is freed is the saved tensors of the nodes d's backward ran through "
     "(shared with e); the nodes themselves stay, e's path can still be walked", NB09, "1"),
    ("002-b", "d.backward(retain_graph=True) # fine / e.backward(retain_graph=True) # fine / d.backward() "
     "# also fine / e.backward() # error will occur!", "true",
     "the third call frees the shared saved tensors, so the fourth fails; the three calls that worked "
     "accumulated their gradients into a.grad", NB09, "1"),
    ("004-i", "As long as you use retain_graph=True in your backward method, you can do backward any time "
     "you want", "partly",
     "only while every call passes retain_graph=True and nothing the graph saved changes: the first call "
     "without it frees the saved tensors, and an in-place update of a saved tensor (an optimizer step on "
     "the weights) makes the next backward fail", NB09, "1"),
    ("004-a", "running .backward() on one graph will destroy any gradient information in the convolutional "
     "layers", "partly",
     "false if 'gradient information' means the gradients: the conv layers' .grad is kept (and accumulates); "
     "true if it means what is needed to compute them: the conv layers' saved tensors are freed, which is "
     "why the second branch's backward fails", NB09, "1"),
    ("004-j", "the second branch's convolutional computations (since these are the only ones shared with the "
     "other branch) will not contain a graph anymore!", "false",
     "every node and edge of the second branch's path to the input is still there after the first "
     "backward; only the tensors those nodes saved are gone", NB09, "1"),
    ("004-b", "Pytorch will throw an error since it cannot find a graph connecting the input to the output",
     "partly", "it does throw, but because the saved tensors on that path were freed: the path to the input "
     "is all there", NB09, "1"),
    ("004-c", "If you retain the graph at all backward passes, the implicit graph definitions attached to the "
     "output variables will never be freed", "partly",
     "backward(retain_graph=True) does not free it, but the graph is freed like any object once nothing "
     "refers to its outputs (a running total or a list of losses keeps it)", NB09, "1"),
    ("001-e", "Using retain_graph=True unnecessarily can cause higher memory use.", "true",
     "a retained graph keeps every saved tensor until its last backward or until it is dropped: here 4 "
     "references to 3 buffers of 64 KiB, one of them the leaf, so 128 KiB kept that backward would have given back",
     NB09, "1"),
    ("002-f", "by setting retain_graph=True, we're not freeing the memory allocated for the graph on the "
     "backward pass", "partly",
     "what is kept is the tensors the graph saved for backward (here 2); the graph's nodes are never freed by "
     "backward either way", NB09, "1"),
    # ---- retain_variables, retain_graph, create_graph (09 §2)
    ("000-d", "retain_variables argument has been deprecated in favor of retain_graph", "true",
     "deprecated, then removed: passing retain_variables is a TypeError today; retain_graph does the job",
     NB09, "2"),
    ("002-c", "retain_graph [...] Defaults to the value of create_graph.", "true",
     "with create_graph=True nothing is freed unless you pass retain_graph=False", NB09, "2"),
    ("001-f", "retain_graph=False (default) frees the graph after backward to save memory", "partly",
     "the default is None, meaning 'the same as create_graph': False in ordinary training, True when "
     "create_graph=True", NB09, "2"),
    ("001-b", "[use retain_graph=True for] Computing higher-order derivatives (gradients of gradients)",
     "partly",
     "what makes a gradient differentiable is create_graph=True (retain_graph alone gives a gradient with "
     "no graph); but several second derivatives from one first derivative, such as the rows of a Hessian "
     "with repeated autograd.grad, need retain_graph=True on every call but the last", NB09, "2"),
    ("001-c", "x = 2; y = x*x; y.backward(retain_graph=True) -> 4; y.backward() -> 8", "true",
     "the second backward adds another 4 into x.grad: gradients accumulate until zeroed", NB09, "2"),
    ("001-d", "[use retain_graph=True for] Custom optimization loops where you accumulate gradients in steps",
     "false", "each micro-batch builds its own graph, so accumulation needs no retain_graph, only loss "
     "scaling", NB09, "2"),
    # ---- several losses, GANs, saliency, batches (09 §3)
    ("000-k", "multi-task learning [...] you will need to set retain_graph=True, or you can only do backward "
     "for one of the many losses", "partly",
     "true if you call backward once per loss; summing the losses needs one backward and no retain_graph",
     NB09, "3"),
    ("004-h", "In order to backprop the gradient of loss1 and loss2 [...] independently. You have to use "
     "retain_graph=True in backward() method in the first back-propagated loss.", "partly",
     "with two separate backward calls, yes; torch.autograd.backward([loss1, loss2]) or the summed loss need "
     "none; and .backward() accumulates, so the per-loss gradients are only separate with autograd.grad",
     NB09, "3"),
    ("000-l", "when we train a GAN [...] after calculating the gradient of D_loss, we need to retain variables "
     "for the calculation of G_loss", "false",
     "detach the fake batch for D's step and run D again for G's step: no graph is reused, so nothing needs "
     "retaining", NB09, "3"),
    ("000-n", "you do not compute discriminator and generator gradients for the same forward step because the "
     "loss objectives have opposing signs", "partly",
     "the usual recipe does run D again for G's step, but because D's step changed D's weights: with D not "
     "updated in between, one forward gives both gradients, bit for bit those of separate passes, opposing "
     "signs and all", NB09, "3"),
    ("000-m", "[saliency:] the input image is treated as variables, and a gradient is calculated [an example "
     "where retain_graph is useful]", "partly",
     "a saliency map is one backward to the input and needs no retain_graph; only several backwards through "
     "one forward (one map per class) do", NB09, "3"),
    ("004-d", "looping over a batch [...] accumulating the gradients at the end, will do the same optimization "
     "step as doing a full batched update", "partly",
     "the same gradient only with each mean loss scaled by its share of the batch, n/N (1/k for k equal "
     "micro-batches; Adam, which divides by the gradient's size, takes the same steps unscaled when they are "
     "equal), no batch-dependent layer such as BatchNorm in training mode, and up to float rounding", NB09, "3"),
    ("002-d", "you can only run .backward (with no arguments) on a unitary/scalar tensor [...] T = torch.sum(S)",
     "true", "backward() with no argument needs a one-element output; summing first gives the elementwise "
     "derivative here because each S_i depends only on its own input", NB09, "3"),
    ("002-e", "[Theano] does not take the previously-computed gradients to compute the gradients in lower "
     "layers [when asked one parameter at a time]", "true",
     "in PyTorch too: one autograd.grad call per parameter re-runs the shared upper layers each time; one "
     "call for all parameters runs each node once", NB09, "3"),
    # ---- summed vs sequential backward (proved in 03)
    ("000-e", "What if I add both the losses and do total_loss.backward()? [...] that is pretty legit and "
     "works well.", "true",
     "the summed backward gives the same gradients as the sequential one, up to rounding (only the last bits "
     "can differ, from the order of float additions), with one traversal of the trunk; in one process: under "
     "DistributedDataParallel the sequential one raises or makes the replicas diverge (13, section 2)", NB03, "2"),
    ("004-f", "pytorch accumulates gradients by adding them in-place (to a variable's/parameters .grad "
     "property)", "true",
     "the second backward adds into the same .grad tensor (same memory), unless it runs with "
     "create_graph=True, which replaces .grad by a new tensor; set .grad to None or call zero_grad() between steps",
     NB03, "2"),
    ("000-f", "[sequential:] the layers between loss1 and loss2 will only calculate gradients from loss2. and "
     "the layers before loss1 will calculate gradientes as sum of loss1+loss2 [...] [summed:] all layers "
     "will calculate gradient by using loss_value = loss1 + loss2", "partly",
     "each description is right, but they describe the same thing: both ways give every parameter the sum "
     "of the gradients of the losses it feeds", NB03, "4.1"),
    ("000-g", "derivative of weights of model 2 wrt to loss 1 would be zero", "partly",
     "mathematically zero; PyTorch does not even visit model 2 for loss1, so its .grad stays None, not a "
     "tensor of zeros", NB03, "4.1"),
    ("000-h", "'loss1.backward(retain_graph=True)' will update the model-1's parameters [...] Yes, it will "
     "update model1 parameters.", "false",
     "backward() only fills .grad; the parameters change when optimizer.step() runs", NB03, "4.1"),
    ("000-i", "Gradients from loss2 will flow all the way to model1.", "true",
     "loss2 depends on model1's output, so loss2.backward() reaches model1 (unless that output is detached)",
     NB03, "4.1"),
    ("000-j", "sum(loss).backward() using only 1 optimizer with sum of grads; and l1, l2 using 1 optimizer(or "
     "even 2 optimizer) to compute step-size based on the grads, for params which l1 and l2 owns in public, "
     "maybe the step-size is depended on l2 loss(which computes later).", "partly",
     "with one step after both backward calls the update is the summed one; only a step after each loss "
     "changes it", NB03, "4.2"),
    ("004-k", "we can solve the problem by simple retaining the graph on the first backward pass", "true",
     "with retain_graph=True on the first loss's backward, the second loss's backward through the shared "
     "trunk works", NB09, "3"),
    ("004-e", "The graph will then not be consumed, but only be consumed by the first backward pass that does "
     "not require to retain it.", "partly",
     "retaining on the first call works, but the last call frees only the saved tensors of the nodes it "
     "runs: the other head's stay alive until its loss is dropped", NB03, "1"),
    ("004-g", "First (which would probably be the best thing here [...]), we simply compute a loss on both "
     "assessments and sum the loss, and then backpropagate. However, there's another scenario - in which we "
     "want to do this sequentially.", "true",
     "summing is the better default (same gradients, one trunk traversal); sequential backward has its "
     "uses, such as treating each loss's gradient separately", NB03, "5"),
    # ---- retain_grad() (proved in 04 §8, a Going deeper section)
    ("003-1", "If placed *after*, the gradient will be released *before* it can be used, causing errors.",
     "false", "after the ops that use y it works; only after backward() is it too late, and then y.grad is "
     "None with no error and not even a warning", NB04, "8"),
    ("003-2", "The position of `retain_grad()` directly determines which gradients are retained.", "partly",
     "only one boundary matters: before or after backward(). Before or after the ops that use the tensor, "
     "or an in-place op on it, gives the same y.grad", NB04, "8"),
    ("003-3", "Failing to use it correctly leads to `RuntimeError` exceptions related to accessing freed "
     "memory.", "false", "no retain_grad(): None and a UserWarning; too late: None, silently. The only "
     "RuntimeError is retain_grad() on a tensor with requires_grad=False, unrelated to memory", NB04, "8"),
    ("003-4", "the placement affects the order in which gradients are accumulated, potentially influencing "
     "the final gradient values", "false",
     "the leaf gradient is bit-for-bit identical with retain_grad() nowhere, before the ops, after them, or "
     "after backward", NB04, "8"),
    ("003-5", "Misplacement can lead to incorrect gradient calculations, silently propagating errors", "false",
     "no placement changes any gradient value; a misplaced call leaves y.grad None, not a wrong number",
     NB04, "8"),
    ("003-6", "Without `retain_grad()`, the gradient from the first branch would overwrite any subsequent "
     "contributions, leading to an inaccurate gradient.", "false",
     "backward adds the branches' contributions, with or without retain_grad(); the leaf gets the full sum "
     "either way", NB04, "8"),
    ("003-7", "Each tensor in the graph has an associated gradient buffer [...] After the backward pass "
     "completes, PyTorch, by default, releases the gradient buffers", "false",
     "leaves keep .grad after backward (it accumulates); non-leaf tensors never get one unless retained. "
     "What backward releases are the saved tensors", NB04, "8"),
    ("003-8", "The `retain_grad()` function prevents PyTorch from releasing the gradient buffers of a tensor "
     "after a backward pass.", "false",
     "with or without retain_grad() the graph saves the same bytes and backward frees all of them; "
     "retain_grad() only adds y.grad, which was never stored before", NB04, "8"),
    ("003-9", "when a tensor's gradient is required multiple times, for example, in higher-order gradient "
     "calculations [...] `retain_grad()` becomes essential", "false",
     "higher-order gradients need create_graph=True; a gradient needed several times needs "
     "retain_graph=True; retain_grad() plays no part", NB04, "8"),
    ("003-10", "Example 1: `retain_grad()` on `y` [...] allows us to access `y.grad` after the `backward()` "
     "pass.", "true", "y.grad is 0.1 everywhere", NB04, "8"),
    ("003-11", "Removing `y.retain_grad()` would result in an error because `y`'s gradient buffer would be "
     "deallocated.", "false", "no error: y.grad is None and torch prints a UserWarning", NB04, "8"),
    ("003-12", "Example 2 [retain_grad() after z]: `print(y.grad)` Raises a RuntimeError: Trying to access "
     "freed memory", "false", "it prints exactly Example 1's gradient: retain_grad() after the ops but "
     "before backward() works", NB04, "8"),
    ("003-13", "Example 3: Without `retain_grad()`, the second `loss.backward()` would fail due to the "
     "deallocation of `y`'s gradient buffer after the first backward pass.", "false",
     "Example 3 as written (with retain_grad) fails at the second backward: the saved tensors were freed; "
     "the fix is retain_graph=True", NB04, "8"),
    ("003-14", "Example 3: `retain_grad()` allows us to observe the different gradient values calculated in "
     "each backward pass, [...] higher-order gradient calculation.", "false",
     "as written it crashes; fixed with retain_graph=True, both passes give y the same gradient; nothing "
     "is higher-order", NB04, "8"),
)


def lookup(cid: str) -> Quote:
    try:
        return QUOTES[cid]
    except KeyError:
        raise KeyError(f"no quote {cid!r} in helpers.factcheck.QUOTES: register it there (once, with its "
                       "verdict) before a notebook checks or shows it") from None


# ------------------------------------------------------------------------------------
# Tables of verdicts, for any notebook
def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def verdict_table(*ids: str) -> Table:
    """The registered verdicts of `ids` (all quotes if none), as one table: Markdown in JupyterLab
    and on the site (the sources by public title, listed under it), the complete plain text for nbval."""
    quotes = [lookup(i) for i in ids] if ids else list(QUOTES.values())
    sources = list(dict.fromkeys(q.source for q in quotes))      # numbered in order of appearance
    number = {s: n for n, s in enumerate(sources, 1)}
    rows = ["| Source | Quote | Verdict | Why | Proof |", "|---|---|---|---|---|"]
    plain = []
    for q in quotes:
        proof = f"[{q.notebook[:2]} §{q.section}]({q.notebook})"
        rows.append(f"| {SOURCES[q.source][0]} [{number[q.source]}] | {_cell(q.quote)} | "
                    f"**{VERDICTS[q.verdict]}** | {_cell(q.why)} | {proof} |")
        plain.append(f"{VERDICTS[q.verdict]}: \"{q.quote}\" ({SOURCES[q.source][0]}) because {q.why} "
                     f"[{q.notebook[:2]} §{q.section}]")
    rows.append("")
    rows += [f"[{number[s]}] {SOURCES[s][0]}: *{SOURCES[s][1]}*  " for s in sources]
    n = {v: sum(q.verdict == v for q in quotes) for v in VERDICTS}
    total = (f"{len(quotes)} quotes: {n['true']} true, {n['partly']} partly true, {n['false']} false.")
    rows += ["", total]
    return Table("\n".join(rows), "\n".join(plain + [total]))


class Table:
    """Markdown in JupyterLab and the site; a plain text form that nbval compares."""

    def __init__(self, markdown: str, text: str):
        self.data, self.text = markdown, text

    def _repr_markdown_(self):
        return self.data

    def __repr__(self):
        return self.text


def shorten(text: str, width: int) -> str:
    """`text` if it fits in `width` characters, else cut at the last whole word and marked '...'."""
    if len(text) <= width:
        return text
    cut = text[:width - 3]
    cut = cut[:cut.rfind(" ")] if " " in cut and not text[width - 3].isspace() else cut
    return cut.rstrip(" ,;:[") + "..."


# ------------------------------------------------------------------------------------
# Proving cells
class _Claim:
    def __init__(self, cid, seed=None, quote=None, teaches=None):
        self.cid, self.seed, self.quote, self.teaches = cid, seed, quote, teaches
        self.result = None
        self.why = ""
        self.legacy = False

    def verdict(self, result: str, why: str | None = None) -> None:
        """Record what the cell proved. For a registered quote it must be the registered verdict."""
        if result not in VERDICTS:
            raise ValueError(f"verdict must be one of {sorted(VERDICTS)}, got {result!r}")
        registered = QUOTES.get(self.cid)
        if registered is not None and registered.verdict != result:
            raise AssertionError(
                f"claim {self.cid}: this cell proves {VERDICTS[result]!r}, but helpers.factcheck.QUOTES says "
                f"{VERDICTS[registered.verdict]!r}; one verdict per quote: change one of them")
        if why is None and registered is None:
            raise ValueError(f"claim {self.cid} is not registered in helpers.factcheck.QUOTES: give a why")
        self.result, self.why = result, why if why is not None else registered.why


class Ledger:
    """The claims proved in this kernel, in the order their cells ran."""

    def __init__(self, echo: bool = True):
        """echo=False: a proved claim prints nothing (a core path keeps its verdicts for notebook 09 and
        its folded table)."""
        self.claims: list[_Claim] = []
        self.echo = echo

    @contextlib.contextmanager
    def claim(self, cid: str, seed: str | None = None, quote: str | None = None, teaches: str | None = None):
        """Prove quote `cid` in the with-block. (seed, quote, teaches: only for quotes not registered
        in QUOTES, as older notebooks call it; a registered quote takes them from QUOTES.)"""
        registered = QUOTES.get(cid)
        legacy = quote is not None       # an older call site: its own text and print stay as they were
        if registered is None and not legacy:
            lookup(cid)                  # raises, with what to do
        if not legacy:
            seed, quote, teaches = registered.source, registered.quote, registered.notebook
        earlier = [i for i, old in enumerate(self.claims) if old.cid == cid]
        c = _Claim(cid, seed, quote, teaches)
        c.legacy = legacy
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
        if self.echo:
            print(self.line(c))

    @staticmethod
    def line(c: _Claim) -> str:
        if not c.legacy:                   # what learners read: the quote and its source, no internal id
            q = QUOTES[c.cid]
            short = shorten(q.quote, 90)
            return f"{VERDICTS[c.result].upper()}: \"{short}\" ({SOURCES[q.source][0]})\n    {c.why}"
        return f"[{c.cid}] {VERDICTS[c.result].upper()}: {c.why}"

    def counts(self) -> dict[str, int]:
        out = {v: 0 for v in VERDICTS}
        for c in self.claims:
            out[c.result] += 1
        return out

    def table(self) -> Table:
        """The claims proved in this kernel (older notebooks; new ones use verdict_table)."""
        rows = ["| # | Seed | Claim | Verdict | Why | Taught in |", "|---|---|---|---|---|---|"]
        for c in self.claims:
            quote = c.quote.replace("|", "\\|")
            link = f"[{c.teaches[:2]}]({c.teaches})" if c.teaches else "-"
            rows.append(f"| {c.cid} | {c.seed} | {quote} | **{VERDICTS[c.result]}** | "
                        f"{c.why.replace('|', '/')} | {link} |")
        n = self.counts()
        rows.append(f"\n{len(self.claims)} claims: {n['true']} true, {n['partly']} partly true, "
                    f"{n['false']} false.")
        plain = [f"{c.cid:6} {VERDICTS[c.result]:12} {shorten(c.quote, 70)}" for c in self.claims]
        return Table("\n".join(rows), "\n".join(plain))
