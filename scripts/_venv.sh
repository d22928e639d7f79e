# Sourced by the other scripts: make sure a virtual environment exists and matches its
# requirements, then use it. Re-installs only when the requirements or pyproject.toml changed.
#   BACKWARD_TWICE_VENV          the environment's folder (default: .venv)
#   BACKWARD_TWICE_REQUIREMENTS  the requirements file (default: requirements-dev.txt, which
#                                includes requirements.txt: tests, lint, site, bench; scripts/lab
#                                passes requirements.txt, the learners' file; scripts/drift another)
#   PYTHON                       the interpreter that creates it (default: python3)
# If pip cannot install the requirements, it says so and exits 3 ("not run", not a test failure).
# `helpers` and `scripts` are imported from THIS checkout (PYTHONPATH), whichever checkout the
# venv's editable install points to: two clones can share one venv, each writes into itself.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="${BACKWARD_TWICE_VENV:-$ROOT/.venv}"
REQUIREMENTS="${BACKWARD_TWICE_REQUIREMENTS:-requirements-dev.txt}"
PY="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: creating $VENV with $($PY --version)"
  "$PY" -m venv "$VENV"
fi
# one stamp per requirements file: the learners' file is satisfied by an install of the dev
# file too (it includes it), so `scripts/lab` after `scripts/test` installs nothing again
stamp_of() { echo "$VENV/.stamp-$(basename "$1")"; }
hash_of() {   # the file, the files it includes with -r, and pyproject.toml
  local files=("$1" pyproject.toml)
  local inc
  for inc in $(sed -nE 's/^-r[[:space:]]+([^[:space:]#]+).*/\1/p' "$1"); do files+=("$(dirname "$1")/$inc"); done
  sha256sum "${files[@]}" | sha256sum | cut -d' ' -f1
}
if [ "$(cat "$(stamp_of "$REQUIREMENTS")" 2>/dev/null)" != "$(hash_of "$REQUIREMENTS")" ]; then
  echo "setup: installing $REQUIREMENTS into $VENV (first run takes a few minutes)"
  # pip warns once per configured --find-links folder that does not exist ("... is ignored: it
  # is neither a file nor a directory"); those lines are dropped, every other line shows.
  if ! "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$REQUIREMENTS" \
      2>&1 | { grep -v "is ignored: it is neither a file nor a directory" || true; }; then
    echo "setup: NOT RUN: pip could not install $REQUIREMENTS into $VENV (see above)" >&2
    exit 3
  fi
  hash_of "$REQUIREMENTS" > "$(stamp_of "$REQUIREMENTS")"
  for inc in $(sed -nE 's/^-r[[:space:]]+([^[:space:]#]+).*/\1/p' "$REQUIREMENTS"); do
    inc="$(dirname "$REQUIREMENTS")/$inc"
    hash_of "$inc" > "$(stamp_of "$inc")"
  done
fi
export PATH="$VENV/bin:$PATH"
export VIRTUAL_ENV="$VENV"
export PYTHONNOUSERSITE=1
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
