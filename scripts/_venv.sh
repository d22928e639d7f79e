# Sourced by the other scripts: make sure a virtual environment exists and matches its
# requirements, then use it. Re-installs only when the requirements or pyproject.toml changed.
#   BACKWARD_TWICE_VENV          the environment's folder (default: .venv)
#   BACKWARD_TWICE_REQUIREMENTS  the requirements file (default: requirements.txt; scripts/drift passes another)
#   PYTHON                       the interpreter that creates it (default: python3)
# If pip cannot install the requirements, it says so and exits 3 ("not run", not a test failure).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="${BACKWARD_TWICE_VENV:-$ROOT/.venv}"
REQUIREMENTS="${BACKWARD_TWICE_REQUIREMENTS:-requirements.txt}"
PY="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: creating $VENV with $($PY --version)"
  "$PY" -m venv "$VENV"
fi
stamp="$VENV/.requirements.sha256"
want="$(sha256sum "$REQUIREMENTS" pyproject.toml | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: installing $REQUIREMENTS into $VENV (first run takes a few minutes)"
  # pip warns once per configured --find-links folder that does not exist ("... is ignored: it
  # is neither a file nor a directory"); those lines are dropped, every other line shows.
  if ! "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$REQUIREMENTS" \
      2>&1 | { grep -v "is ignored: it is neither a file nor a directory" || true; }; then
    echo "setup: NOT RUN: pip could not install $REQUIREMENTS into $VENV (see above)" >&2
    exit 3
  fi
  echo "$want" > "$stamp"
fi
export PATH="$VENV/bin:$PATH"
export VIRTUAL_ENV="$VENV"
export PYTHONNOUSERSITE=1
