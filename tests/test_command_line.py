"""`python -m backward_twice script.py [args]`: the script runs as `python script.py` would (its
argv, its folder first on sys.path, its exit status), and a backward error gets the traceback and
then the diagnosis. Run in a folder with its own `helpers.py`, as practitioners' projects often have."""
import os
import subprocess
import sys
import textwrap

import pytest

FAILING = textwrap.dedent("""
    import sys
    import torch
    from helpers import scale            # the user's own helpers.py, not the course's

    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    print("args", sys.argv[1:])
    total = 0
    for step in range(3):
        loss = scale(model(torch.randn(4, 3)).pow(2).mean())
        total = total + loss
        opt.zero_grad()
        total.backward()
        opt.step()
""")


def checkout_env():
    """This environment with only the checkout on PYTHONPATH, as an install would put the packages;
    the user's folder (the cwd, or the script's) comes first for their script."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return env


def run(folder, *args):
    return subprocess.run([sys.executable, "-m", "backward_twice", *args], cwd=folder, env=checkout_env(),
                          capture_output=True, text=True, timeout=300)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "helpers.py").write_text("def scale(x):\n    return 2 * x\n")
    (tmp_path / "train.py").write_text(FAILING)
    return tmp_path


def test_a_failing_script_gets_its_traceback_then_the_diagnosis(project):
    out = run(project, "train.py", "--lr", "3")
    assert out.returncode == 1
    assert "args ['--lr', '3']" in out.stdout                       # its own argv, as `python train.py --lr 3`
    err = out.stderr
    assert err.startswith("Traceback (most recent call last):\n  File \"")   # the script's frames, not ours
    assert 'train.py", line 15, in <module>' in err and "runpy" not in err and "__main__.py" not in err
    assert "RuntimeError: Trying to backward through the graph a second time" in err
    assert "record.py" not in err                                    # the recorder's frames are not shown
    after = err.split("backward_twice: what happened", 1)[1]
    assert "why_backward (recorded)" in after and "rule: running-total" in after
    assert "carried by: total" in after and "total += loss.item()" in after
    assert "train.py:13 `total = total + loss`" in after and "train.py:15 `total.backward()`" in after


def test_no_record_runs_it_plainly_and_explains_after_the_fact(project):
    out = run(project, "--no-record", "train.py")
    after = out.stderr.split("backward_twice: what happened", 1)[1]
    assert out.returncode == 1 and "why backward failed" in after and "(recorded)" not in after
    assert "carried by: total" in after and "total += loss.item()" in after and "Not recorded" in after


def test_exit_status_and_argv_are_the_scripts(project):
    (project / "ok.py").write_text("import sys\nprint(sys.argv)\nsys.exit(3)\n")
    out = run(project, "ok.py", "a", "b")
    assert (out.returncode, out.stdout.strip(), out.stderr) == (3, "['ok.py', 'a', 'b']", "")
    (project / "other.py").write_text("raise ValueError('not about backward')\n")
    out = run(project, "other.py")
    assert out.returncode == 1 and out.stderr.rstrip().endswith("ValueError: not about backward")
    assert "what happened" not in out.stderr                       # other errors: the traceback only


def test_a_module_and_bad_input(project):
    (project / "pkg").mkdir()
    (project / "pkg" / "__init__.py").write_text("")
    (project / "pkg" / "train.py").write_text(FAILING)
    out = run(project, "-m", "pkg.train", "x")
    assert out.returncode == 1 and "args ['x']" in out.stdout and "carried by: total" in out.stderr
    for args, says in ((["nope.py"], "no such script: nope.py"), (["-m"], "-m needs a module name")):
        out = run(project, *args)
        assert out.returncode == 2 and says in out.stderr and "usage:" in out.stderr
    assert run(project).returncode == 2
    out = run(project, "--help")
    assert out.returncode == 0 and out.stdout.startswith("usage: python -m backward_twice")


def test_under_torchrun_each_rank_prints_its_diagnosis(project):
    # torchrun runs `python -m backward_twice train.py` in each worker; no process group is needed
    # for this loop, so the two ranks fail on their own and each explains its failure
    out = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=2", "--master-port=0",
                          "-m", "backward_twice", "train.py"], cwd=project, env=checkout_env(),
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 1
    assert out.stderr.count("carried by: total") == 2, out.stderr[-3000:]


def test_a_stop_signal_while_it_explains_waits_for_the_diagnosis(project):
    """torchrun stops the other ranks (SIGTERM) as soon as one fails: a rank that is printing its own
    diagnosis finishes it first, then exits 1. Here the script's own thread sends the signal once the
    diagnosis has begun (its module imported), so the timing is not left to chance."""
    (project / "stopped.py").write_text(textwrap.dedent("""
        import os, signal, sys, threading, time

        def stop_when_explaining():
            while "backward_twice.diagnose" not in sys.modules:
                time.sleep(0.001)
            os.kill(os.getpid(), signal.SIGTERM)

        threading.Thread(target=stop_when_explaining, daemon=True).start()
    """) + FAILING)
    out = run(project, "stopped.py")
    assert out.returncode == 1, (out.returncode, out.stderr[-2000:])
    assert "carried by: total" in out.stderr and "rule: running-total" in out.stderr


def test_import_is_lazy():
    """`import backward_twice` imports no torch; asking for draw imports torch but not matplotlib or
    pygraphviz (those load when a picture is laid out or a chart drawn)."""
    code = ("import sys, backward_twice\n"
            "print(*(m in sys.modules for m in ('torch', 'matplotlib', 'pygraphviz')))\n"
            "backward_twice.draw, backward_twice.why_backward_failed, backward_twice.explain\n"
            "print(*(m in sys.modules for m in ('torch', 'matplotlib', 'pygraphviz')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split("\n")[:2] == ["False False False", "True False False"], out.stdout


def test_a_script_named_like_runpy_keeps_its_frames(project):
    # the command hides its own and runpy's frames by file, not by a name a user's file may share
    (project / "runpy_job.py").write_text(FAILING)
    out = run(project, "runpy_job.py")
    assert out.returncode == 1 and 'runpy_job.py", line 15, in <module>' in out.stderr
