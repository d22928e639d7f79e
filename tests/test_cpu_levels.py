"""The CPU-level matrix (scripts/cpu_levels.py) really runs each level it claims: ATen reports the
level, oneDNN reports its instruction set, and MKL's matrix product gives different bytes at each
level (so a level that silently fell back to another would show as equal bytes)."""
import platform

import pytest

from scripts import cpu_levels

LEVELS = cpu_levels.supported()


def test_levels_follow_the_cpu():
    if cpu_levels.is_x86():
        assert LEVELS and LEVELS[0].name == "default"   # every x86-64 CPU torch runs on has SSE4.2
        names = [level.name for level in LEVELS]
        assert names == [level.name for level in cpu_levels.LEVELS][:len(names)]   # lowest first, no gaps
    else:
        assert LEVELS == [], platform.machine()


@pytest.fixture(scope="module")
def probes():
    return {level.name: cpu_levels.probe(level) for level in LEVELS}


@pytest.mark.parametrize("level", LEVELS, ids=lambda level: level.name)
def test_each_level_is_really_used(level, probes):
    p = probes[level.name]
    assert p.capability == level.aten.upper()
    assert p.onednn.startswith(level.onednn_says), p.onednn


def test_each_level_gives_its_own_matmul_bytes(probes):
    digests = [p.matmul for p in probes.values()]
    assert "?" not in digests
    assert len(set(digests)) == len(digests), probes     # MKL really switched kernels at each level


def test_nothing_outside_the_matrix_pins_a_level():
    from scripts import ROOT

    for path in [*ROOT.glob("scripts/*"), ROOT / ".ci/run", ROOT / "pyproject.toml", ROOT / "conftest.py"]:
        if path.is_file() and path.name not in ("cpu_levels.py", "cpu_levels"):
            text = path.read_text(errors="replace")
            assert not any(f"{v}=" in text for v in cpu_levels.VARIABLES), path
