"""Download size of the learners' requirements.txt per platform, from pip's own resolution.

    python scripts/install_sizes.py REPORT.json [REPORT2.json ...]

Each REPORT is what `pip install --dry-run --ignore-installed --only-binary=:all: --platform ...
--python-version X.Y --target DIR --report REPORT.json -r <requirements.txt without -e .>` wrote
for one Linux x86_64 Python (pip evaluates environment markers for the machine it runs on, so a
report made here is right for Linux only). For each report this prints the Linux total, and, for
the same Python version, the macOS arm64 and Windows amd64 totals: the same versions, walked again
from the requirements with the markers of that platform (torch's CUDA wheels drop out; `appnope`
or `pywinpty` come in), each file's size read from PyPI's JSON API. Sizes are of the wheels
downloaded, not of the installed environment. docs/install.md shows the table.
"""
from __future__ import annotations

import json
import re
import sys
import urllib.request

from pip._vendor.packaging.requirements import Requirement
from pip._vendor.packaging.specifiers import SpecifierSet
from pip._vendor.packaging.utils import canonicalize_name
from pip._vendor.packaging.version import InvalidVersion, Version

_cache: dict = {}


def pypi(name: str) -> dict:
    if name not in _cache:
        with urllib.request.urlopen(f"https://pypi.org/pypi/{name}/json", timeout=60) as r:
            _cache[name] = json.load(r)
    return _cache[name]


def env_for(platform: str, py: str) -> dict:
    base = {"python_version": py, "python_full_version": py + ".0", "implementation_name": "cpython",
            "platform_python_implementation": "CPython", "extra": ""}
    if platform == "linux":
        return {**base, "sys_platform": "linux", "platform_system": "Linux", "os_name": "posix", "platform_machine": "x86_64"}
    if platform == "macos":
        return {**base, "sys_platform": "darwin", "platform_system": "Darwin", "os_name": "posix", "platform_machine": "arm64"}
    return {**base, "sys_platform": "win32", "platform_system": "Windows", "os_name": "nt", "platform_machine": "AMD64"}


def wheel_for(files: list, platform: str, py: str) -> dict | None:
    """The wheel pip would take for this platform (its own tag first, then abi3, then pure Python)."""
    cp = "cp" + py.replace(".", "")
    plat = {"linux": r"manylinux\w*_x86_64|linux_x86_64", "macos": r"macosx_\d+_\d+_(arm64|universal2)",
            "windows": r"win_amd64"}[platform]

    def rank(f):
        n = f["filename"]
        if not n.endswith(".whl"):
            return None
        if re.search(r"-none-any\.whl$", n):
            return 3
        if not re.search(plat, n):
            return None
        if f"-{cp}-{cp}-" in n:
            return 0
        if "-abi3-" in n:
            m = re.search(r"-cp(\d)(\d+)-abi3-", n)
            return 1 if m and (int(m.group(1)), int(m.group(2))) <= tuple(map(int, py.split("."))) else None
        if f"-{cp}-none-" in n or "-py3-none-" in n:
            return 2
        return None
    ranked = sorted((r, f["filename"], f) for f in files if (r := rank(f)) is not None)
    return ranked[0][2] if ranked else None


def walk(top: list, pinned: dict, platform: str, py: str) -> dict:
    """{name: (version, filename, size)} for the closure of `top` under this platform's markers."""
    env = env_for(platform, py)
    found, todo, seen = {}, [(Requirement(t), set()) for t in top], set()
    while todo:
        req, extras = todo.pop()
        name = canonicalize_name(req.name)
        if (name, frozenset(extras)) in seen:
            continue
        seen.add((name, frozenset(extras)))
        info = pypi(name)
        version = pinned.get(name)
        if version is None:           # only on this platform: the newest release the specifier allows
            ok = [v for v in info["releases"] if info["releases"][v] and _valid(v) and not Version(v).is_prerelease
                  and Version(v) in (req.specifier or SpecifierSet())]
            version = str(max(ok, key=Version))
        version = next(v for v in info["releases"] if _same_version(v, version))   # 13.0.3.0 is 13.0.3
        files = info["releases"][version]
        wheel = wheel_for(files, platform, py)
        if wheel is None:
            raise SystemExit(f"no {platform} wheel for {name}=={version}")
        found[name] = (version, wheel["filename"], wheel["size"])
        if name in pinned_meta:
            meta = pinned_meta[name]
        elif info["info"]["version"] == version:
            meta = info["info"]["requires_dist"]
        else:
            meta = []
            print(f"note: {name}=={version} (only on {platform}): its own dependencies not read", file=sys.stderr)
        for dep in meta or []:
            d = Requirement(dep)
            ok = d.marker is None or any(d.marker.evaluate({**env, "extra": e}) for e in (extras or {""})) \
                if d.marker else True
            if ok:
                todo.append((d, set(d.extras)))
    return found


pinned_meta: dict = {}


def _valid(v: str) -> bool:
    try:
        Version(v)
        return True
    except InvalidVersion:
        return False


def _same_version(a: str, b: str) -> bool:
    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return a == b


def main(reports) -> int:
    rows = []
    for path in reports:
        report = json.load(open(path))
        py = re.search(r"-cp3(\d+)-", " ".join(i["download_info"]["url"] for i in report["install"])).group(1)
        py = f"3.{py}"
        pinned = {canonicalize_name(i["metadata"]["name"]): i["metadata"]["version"] for i in report["install"]}
        pinned_meta.clear()
        pinned_meta.update({canonicalize_name(i["metadata"]["name"]): i["metadata"].get("requires_dist", [])
                            for i in report["install"]})
        top = [i["metadata"]["name"] + "==" + i["metadata"]["version"] for i in report["install"] if i.get("requested")]
        # pip's own Linux download, file by file: the walk below must find the same wheels
        pip_files = {i["download_info"]["url"].rsplit("/", 1)[-1] for i in report["install"]}
        pip_total = sum(f["size"] for i in report["install"] for f in pypi(canonicalize_name(i["metadata"]["name"]))
                        ["releases"].get(i["metadata"]["version"], []) if f["filename"] in pip_files)
        print(f"pip's report py{py}: {len(pip_files)} wheels, {pip_total / 1e6:.0f} MB", flush=True)
        for platform in ("linux", "macos", "windows"):
            found = walk(top, pinned, platform, py)
            if platform == "linux" and {f for _, f, _ in found.values()} != pip_files:
                print("  differs from pip's report: walk only", sorted({f for _, f, _ in found.values()} - pip_files),
                      "pip only", sorted(pip_files - {f for _, f, _ in found.values()}))
            torch = found["torch"][2]
            total = sum(s for _, _, s in found.values())
            big = sum(s for n, (_, _, s) in found.items() if n.startswith(("nvidia", "triton", "cuda")))
            rows.append((platform, py, len(found), total, torch, big))
            print(f"{platform:8} py{py}: {len(found):3} wheels, {total / 1e6:7.0f} MB "
                  f"(torch {torch / 1e6:.0f} MB, NVIDIA/CUDA/triton {big / 1e6:.0f} MB)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
