"""nbval over every notebook at each x86 vector level this CPU has (CI: .ci/run; docs/stable_outputs.md).

torch picks its CPU kernels by the vector instructions the CPU has, in three places, and each
can be held to a lower level by an environment variable read when torch loads:

  ATen's own kernels          ATEN_CPU_CAPABILITY       default, avx2, avx512
  the matrix library (MKL)    MKL_ENABLE_INSTRUCTIONS   SSE4_2, AVX2, AVX512
  the conv library (oneDNN)   ONEDNN_MAX_CPU_ISA        SSE41, AVX2, AVX512_CORE

A sum of floats added in another order rounds differently, so a printed digit that depends on
the level is not a fact: the committed outputs must pass at every level. Only this matrix sets
these variables; the ordinary test run (`bash scripts/test`) uses the CPU as it is.

    python -m scripts.cpu_levels            # every level this CPU has, nbval over every notebook
    python -m scripts.cpu_levels --probe    # only say what each level really runs

Exit status: 0 when every level passed, 1 when one failed (the summary says which).
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import subprocess
import sys
import time

from scripts import ROOT

VARIABLES = ("ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS", "ONEDNN_MAX_CPU_ISA")


@dataclasses.dataclass(frozen=True)
class Level:
    name: str
    aten: str            # ATEN_CPU_CAPABILITY, and what torch.backends.cpu.get_cpu_capability() then says
    mkl: str
    onednn: str
    flags: tuple[str, ...]   # /proc/cpuinfo flags the level needs (ATen's avx512 kernels need F, BW, VL and DQ)
    onednn_says: str     # the start of oneDNN's `isa:` verbose line at that level

    @property
    def env(self) -> dict[str, str]:
        return dict(zip(VARIABLES, (self.aten, self.mkl, self.onednn)))

    def describe(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.env.items())


LEVELS = (
    Level("default", "default", "SSE4_2", "SSE41", ("sse4_2",), "Intel SSE4.1"),
    Level("avx2", "avx2", "AVX2", "AVX2", ("avx2", "fma"), "Intel AVX2"),
    Level("avx512", "avx512", "AVX512", "AVX512_CORE", ("avx512f", "avx512bw", "avx512vl", "avx512dq"),
          "Intel AVX-512"),
)

# What a level's probe computes in a fresh interpreter: the level ATen says it runs, a digest of
# one float32 matrix product's bytes (MKL's sgemm: its result differs in the last bits between
# levels), and oneDNN's own report of the instruction set it dispatches to (a convolution large
# enough to go through oneDNN, with ONEDNN_VERBOSE=1 printing `isa:` on stdout).
PROBE = """
import hashlib, torch
torch.manual_seed(0)
a, b = torch.randn(64, 300), torch.randn(300, 64)
print("capability", torch.backends.cpu.get_cpu_capability())
print("matmul", hashlib.sha256((a @ b).numpy().tobytes()).hexdigest()[:16])
torch.nn.functional.conv2d(torch.randn(4, 16, 32, 32), torch.randn(32, 16, 3, 3))
"""


def cpu_flags() -> set[str]:
    try:
        text = open("/proc/cpuinfo").read()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def is_x86() -> bool:
    return platform.machine().lower() in ("x86_64", "amd64", "i686", "i386")


def supported() -> list[Level]:
    """The levels this CPU can run, lowest first; none on ARM (its kernels have no such switches)."""
    if not is_x86():
        return []
    flags = cpu_flags()
    return [level for level in LEVELS if set(level.flags) <= flags]


def clean_env(level: Level | None = None) -> dict[str, str]:
    """This process's environment without any of the three variables, then the level's."""
    env = {k: v for k, v in os.environ.items() if k not in VARIABLES}
    if level is not None:
        env.update(level.env)
    return env


@dataclasses.dataclass(frozen=True)
class Probe:
    capability: str
    matmul: str
    onednn: str


def probe(level: Level | None) -> Probe:
    """What torch really runs at `level` (None: the CPU as it is), read in a fresh interpreter."""
    env = clean_env(level) | {"ONEDNN_VERBOSE": "1"}
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True,
                         timeout=300, check=True).stdout
    found = {}
    for line in out.splitlines():
        if line.startswith(("capability ", "matmul ")):
            key, value = line.split(" ", 1)
            found[key] = value
        elif ",info,cpu,isa:" in line:
            found["onednn"] = line.split("isa:", 1)[1].strip()
    return Probe(found.get("capability", "?"), found.get("matmul", "?"), found.get("onednn", "?"))


def run_level(level: Level, pytest_args: list[str]) -> tuple[int, float]:
    start = time.perf_counter()
    cmd = [sys.executable, "-m", "pytest", "-q", "-n", os.environ.get("WORKERS", "2"), "--dist", "loadscope",
           "notebooks", *pytest_args]
    rc = subprocess.run(cmd, cwd=ROOT, env=clean_env(level)).returncode
    return rc, time.perf_counter() - start


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--probe", action="store_true", help="only probe each level, run no tests")
    args, pytest_args = parser.parse_known_args(argv)
    levels = supported()
    skipped = [level.name for level in LEVELS if level not in levels]
    if not levels:
        print(f"cpu levels: this is {platform.machine()}, not x86: no vector level can be forced here; "
              "the ordinary test run used the CPU as it is", flush=True)
        return 0
    print(f"cpu levels: this CPU has {', '.join(level.name for level in levels)}"
          + (f" (not {', '.join(skipped)}: it lacks the instructions)" if skipped else ""), flush=True)
    results = []
    for level in levels:
        p = probe(level)
        print(f"cpu levels: {level.name}: {level.describe()} -> ATen {p.capability}, oneDNN {p.onednn}, "
              f"matmul bytes {p.matmul}", flush=True)
        if args.probe:
            continue
        rc, seconds = run_level(level, pytest_args)
        results.append((level, rc, seconds))
        print(f"cpu levels: {level.name}: nbval over every notebook {'passed' if rc == 0 else 'FAILED'} "
              f"in {seconds:.0f} s", flush=True)
    failed = [level.name for level, rc, _ in results if rc != 0]
    if results:
        print("cpu levels: " + ", ".join(f"{level.name} {'ok' if rc == 0 else 'FAILED'} ({s:.0f} s)"
                                         for level, rc, s in results), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
