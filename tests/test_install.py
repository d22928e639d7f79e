"""The install: learners' and developers' requirements, helpers' declared dependencies, Binder's
files, the course-wide cells (Colab install block, %raises, folded checks), and scripts that
write into the checkout they run in."""
import ast
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import tomllib

import nbformat
import pytest

from scripts import ROOT, course_cells, notebooks

TOOLS = {"pytest", "pytest-xdist", "nbval", "hypothesis", "torchviz", "pypdf", "playwright", "ruff",
         "latex2mathml", "nbclient", "nbconvert", "nbformat"}


def pins(path) -> dict:
    found = {}
    for line in (ROOT / path).read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.-]+)==([^\s#]+)", line)
        if m:
            found[m.group(1).lower()] = m.group(2)
    return found


def test_learners_install_only_what_notebooks_need_and_dev_adds_the_tools():
    learners, dev = pins("requirements.txt"), pins("requirements-dev.txt")
    assert not TOOLS & set(learners), "test tools in the learners' requirements.txt"
    assert TOOLS <= set(dev), f"missing from requirements-dev.txt: {TOOLS - set(dev)}"
    assert "-r requirements.txt" in (ROOT / "requirements-dev.txt").read_text().splitlines()
    assert not set(learners) & set(dev), "a package pinned in both files"
    assert re.search(r"^-e \.", (ROOT / "requirements.txt").read_text(), re.M), "helpers itself (Binder)"


def test_helpers_declares_every_package_it_imports_with_a_lower_bound_the_pins_meet():
    from pip._vendor.packaging.requirements import Requirement  # pip's copy: no extra dependency

    deps = {Requirement(d).name.lower(): Requirement(d) for d in
            tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]}
    imported = set()
    for path in [*(ROOT / "backward_twice").rglob("*.py"), *(ROOT / "helpers").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    third_party = {m.lower() for m in imported} - set(sys.stdlib_module_names) - {"helpers", "backward_twice", "__future__"}
    assert third_party <= set(deps), f"imported by backward_twice or helpers but not declared: {third_party - set(deps)}"
    learners = pins("requirements.txt")
    for name, req in deps.items():
        assert all(op.startswith(">") for op in (s.operator for s in req.specifier)), f"{name}: lower bounds only"
        if name in learners:
            assert req.specifier.contains(learners[name]), f"{name}=={learners[name]} outside {req.specifier}"


def test_binder_reads_the_learners_requirements_and_a_supported_python():
    from pip._vendor.packaging.specifiers import SpecifierSet

    lines = [ln.strip() for ln in (ROOT / "binder" / "requirements.txt").read_text().splitlines()
             if ln.strip() and not ln.startswith("#")]
    assert lines == ["-r ../requirements.txt"]
    runtime = (ROOT / "binder" / "runtime.txt").read_text().strip()
    assert re.fullmatch(r"python-3\.\d+", runtime)
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert SpecifierSet(requires).contains(runtime.removeprefix("python-"))


def test_the_course_cells_are_applied_and_reapplying_changes_nothing():
    for path in notebooks():
        nb = nbformat.read(path, as_version=4)
        assert course_cells.apply(nb) == [], f"{path.name}: run `python -m scripts.course_cells`"
    first = course_cells.with_install_block("print(1)\n")
    assert course_cells.with_install_block(first) == first and first.endswith("print(1)\n")
    assert course_cells.with_raises_magic(course_cells.with_raises_magic("1/0")) == "%raises\n1/0"


def run_shell(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=180, env={**os.environ, "NO_COLOR": "1", "TERM": "dumb"}, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_a_raises_cell_raises_for_real_shows_the_error_and_run_all_goes_on():
    """In a real IPython shell: the `%raises` cell succeeds (a front-end's Run All goes on), its
    error is shown as an error (showtraceback), expect_raised in the next cell sees the real error;
    a `%raises` cell that raises nothing makes expect_raised fail; names it binds stay bound."""
    out = run_shell("""
        from IPython.core.interactiveshell import InteractiveShell
        sh = InteractiveShell.instance()
        shown = []
        sh._showtraceback = lambda etype, value, stb: shown.append(f"{etype.__name__}: {value}")
        sh.run_cell("from helpers.notebook import expect_raised, setup; setup()")
        r = sh.run_cell("%raises\\nimport torch\\nx = torch.ones(2, requires_grad=True)\\ny = (x * x).sum()\\n"
                        "y.backward()\\ny.backward()")
        print("CELL SUCCEEDED:", r.success, "| SHOWN:", shown)
        r = sh.run_cell("expect_raised(RuntimeError, 'Trying to backward through the graph a second time')")
        print("CHECK OK:", r.success, "| x bound:", sh.user_ns["x"].grad.tolist())
        r = sh.run_cell("%raises\\nz = 1")
        r2 = sh.run_cell("expect_raised(RuntimeError, 'second time')")
        print("NOTHING RAISED:", r.success, "| CHECK OK:", r2.success, type(r2.error_in_exec).__name__)
        r = sh.run_cell("1 / 0")
        print("PLAIN ERROR FAILS THE CELL:", not r.success)
    """)
    assert "CELL SUCCEEDED: True | SHOWN: ['RuntimeError: Trying to backward through the graph a second time" in out, out
    assert "CHECK OK: True | x bound: [2.0, 2.0]" in out, out
    assert "NOTHING RAISED: True | CHECK OK: False AssertionError" in out, out
    assert "PLAIN ERROR FAILS THE CELL: True" in out, out


def test_scripts_write_into_the_checkout_they_run_in(tmp_path):
    """Two clones, one environment whose editable install of `helpers` and `scripts` points at
    clone 1: clone 2's real `bash scripts/student` (through scripts/_venv.sh) writes its output
    into clone 2, and nothing appears in clone 1."""
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("needs a git checkout to clone")
    one, two = tmp_path / "clone1", tmp_path / "clone2"
    for clone in (one, two):
        subprocess.run(["git", "clone", "--quiet", "--shared", str(ROOT), str(clone)], check=True, timeout=60)
    # the shared environment: a fresh venv that sees this venv's packages (torch, nbformat, pip, ...)
    # and whose editable install is clone 1 (a path entry, as a legacy `pip install -e clone1` writes)
    venv = tmp_path / "venv"
    subprocess.run([sys._base_executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    site = venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    (site / "shared.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    (site / "editable-clone1.pth").write_text(f"{one}\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"

    def files(clone):
        return sorted(str(f.relative_to(clone)) for f in clone.rglob("*") if ".git" not in f.relative_to(clone).parts)

    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import scripts; print(scripts.BUILD)"],
                           capture_output=True, text=True, timeout=60, cwd=two / "scripts", env=env)
    assert where.stdout.strip() == str(one / "build"), where.stderr      # without _venv.sh: clone 1's
    nothing = tmp_path / "nothing.txt"          # _venv.sh installs this file, and only it: nothing to install
    nothing.write_text("")
    first, before = notebooks()[0].name, files(one)
    done = subprocess.run(["bash", str(two / "scripts" / "student"), first], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path,
                          env={**env, "BACKWARD_TWICE_VENV": str(venv), "BACKWARD_TWICE_REQUIREMENTS": str(nothing)})
    assert done.returncode == 0, done.stdout[-1000:] + done.stderr[-2000:]
    assert (two / "build" / "student" / first).is_file(), done.stdout
    assert files(one) == before and not (one / "build").exists(), sorted(set(files(one)) - set(before))


def test_the_repository_address_is_defined_once():
    """scripts/course_cells.py's REPOSITORY is the one address: the notebooks' install cells, the
    Binder badge and the docs all name it (a fork sets it there and re-runs course_cells)."""
    assert course_cells.stale_addresses() == []
    named = set()
    for path in [*notebooks(), *(ROOT / name for name in course_cells.ADDRESS_FILES)]:
        named |= {m.group(0).split("/", 1)[1] if "github.com/" in m.group(0) else m.group(0)
                  for m in re.finditer(course_cells.ADDRESS, path.read_text())}
    assert named and all(n.endswith(course_cells.REPOSITORY) for n in named), named
    assert course_cells.with_address("see https://github.com/someone/backward-twice/blob/main") \
        == f"see https://github.com/{course_cells.REPOSITORY}/blob/main"
