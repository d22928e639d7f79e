"""`%why_backward` in a real IPython shell, as a learner runs it: the user namespace there also
holds IPython's own names (`In`, `Out`, `exit`, `quit`, `get_ipython`), and `exit`/`quit` hold
the shell, whose `_user_ns` is that namespace again. The corpus harness runs programs in a plain
dict, which never showed that: a plain `h` came out as `exit._ip._user_ns['h']` (confidently),
and a fix read "`del exit._ip._user_ns[:]`". Here every corpus program runs as a cell of a real
shell and is diagnosed by the magic, without names=, scored by the corpus's own rules."""
import sys
import textwrap

import pytest
from diagnosis_corpus import harness, score

from backward_twice.names import named_tensors

ALL = harness.programs()
IDS = [f"{harness.split_of(p)}/{p.stem}" for p in ALL]
SHELL_WORDS = ("_ip", "_user_ns", "exit.", "quit.", "Out[", "In[", "get_ipython")


@pytest.fixture(scope="module")
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    ip.run_line_magic("xmode", "Minimal")       # the traceback is not under test: one line, and fast
    ip.run_cell("%load_ext backward_twice")
    try:
        yield ip
    finally:
        InteractiveShell.clear_instance()


def _magic(ip):
    """The diagnosis as a learner gets it: the `%why_backward` magic (no names=; not displayed)."""
    return ip.run_line_magic("why_backward", "")


def test_names_in_an_ipython_namespace_are_the_users_own(shell):
    harness.run_cell_in_shell("import torch\nh = torch.ones(2, requires_grad=True) * 2\nkept = {'g': globals()}\n"
                   "state = [h]\nh", shell)                 # `h` is shown: it is in Out
    assert shell.user_ns["Out"][shell.execution_count - 1] is shell.user_ns["h"] and hasattr(shell.user_ns["exit"], "_ip")
    paths = [p for p, t in named_tensors(shell.user_ns, every_path=True) if t is shell.user_ns["h"]]
    assert paths == ["h", "state[0]"], paths      # not exit._ip._user_ns['h'], Out[1], kept['g']['h']


# the audit's program B: an actor-critic whose critic backward frees the shared body `h`
ACTOR_CRITIC = """
import torch, torch.nn as nn
torch.manual_seed(0)
body = nn.Sequential(nn.Linear(4, 16), nn.ReLU())
actor, critic = nn.Linear(16, 2), nn.Linear(16, 1)
opt_actor = torch.optim.Adam([*body.parameters(), *actor.parameters()], lr=1e-3)
opt_critic = torch.optim.Adam(critic.parameters(), lr=1e-3)
for step in range(3):
    state = torch.randn(8, 4)
    h = body(state)
    value = critic(h).squeeze(1)
    ret = torch.randn(8)
    critic_loss = (ret - value).pow(2).mean()
    opt_critic.zero_grad()
    critic_loss.backward()
    opt_critic.step()
    dist = torch.distributions.Categorical(logits=actor(h))
    action = dist.sample()
    actor_loss = -(dist.log_prob(action) * (ret - value.detach())).mean()
    opt_actor.zero_grad()
    actor_loss.backward()
    opt_actor.step()
"""


def test_magic_names_the_plain_variable_not_a_path_through_the_shell(shell):
    assert harness.run_cell_in_shell(ACTOR_CRITIC, shell) is sys.last_value
    d = _magic(shell)
    assert (d.culprit, d.fix_kind, d.confident) == ("h", "retain-or-sum", False), d.message   # after the fact
    assert "`h`" in d.fix and not any(w in d.message for w in SHELL_WORDS), d.message
    assert "`(critic_loss + actor_loss).backward()`" in d.fix, d.fix      # the user's names, not `loss`


def test_magic_reads_the_locals_of_a_function_defined_in_the_notebook(shell):
    """A loop inside `def train():` in a cell: its tensors are the function's locals, read from the
    traceback (as names=globals() does), with no names= to pass in IPython."""
    src = textwrap.dedent("""
        import torch
        def train():
            w = torch.ones(3, requires_grad=True)
            h = torch.zeros(3)
            for step in range(3):
                h = torch.tanh(w * h + 1)
                loss = h.sum()
                loss.backward()
        train()
    """)
    assert harness.run_cell_in_shell(src, shell) is not None
    d = _magic(shell)
    assert d.culprit == "h" and d.fix_kind == "detach-carried", d.message


_RESULTS = {}


def _score(shell, path):
    if path not in _RESULTS:
        def diagnose(err, ns):
            assert err is sys.last_value and ns is shell.user_ns
            d = _magic(shell)
            assert not any(w in d.message for w in SHELL_WORDS), d.message
            return d

        _RESULTS[path] = score.score_program(path, run=lambda p: harness.run_in_shell(p, shell), diagnose=diagnose)
    return _RESULTS[path]


@pytest.mark.parametrize("path", ALL, ids=IDS)
def test_corpus_program_in_an_ipython_shell(shell, path):
    r = _score(shell, path)
    assert r.crashed is None, r.crashed
    assert not r.confidently_wrong, score.table([r])


def test_tool_meets_the_targets_on_the_corpus_in_an_ipython_shell(shell):
    results = [_score(shell, p) for p in ALL]
    report = score.table(results) + "\n\n" + score.summary(results)
    print(report)
    f, f19 = score.figures(results), score.figures(score.issue19(results))
    assert f["programs"] == len(ALL) >= 30
    assert f19["culprit"] >= score.TARGETS["culprit"], report
    assert f19["fix_kind"] >= score.TARGETS["fix_kind"], report
    assert f["fix_offered"] >= score.TARGETS["fix_offered"], report
    assert f["confidently_wrong"] == score.TARGETS["confidently_wrong"], report


def test_magic_quotes_the_cell_line_that_writes_in_place_through_an_alias(shell):
    """The audit's program C in a cell: IPython keeps the cell's source, so the fix is on the name
    the cell writes into (`preds += 0.5`), not on `probs`, which it never wrote into."""
    from test_diagnose import ALIASED_INPLACE, PRELUDE

    assert harness.run_cell_in_shell(PRELUDE + ALIASED_INPLACE, shell) is sys.last_value
    d = _magic(shell)
    assert (d.culprit, d.fix_kind, d.confident) == ("preds", "out-of-place", False), d.message   # inferred
    assert "`preds = preds + ...` instead of `preds += ...`" in d.fix and "`preds += 0.5`" in d.message, d.message
