# Sourced by the other scripts: make sure .venv exists and matches requirements.txt, then use it.
# Re-installs only when requirements.txt changed since the last install.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $($PY --version)"
  "$PY" -m venv .venv
fi
stamp=.venv/.requirements.sha256
want="$(sha256sum requirements.txt pyproject.toml | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: installing requirements.txt into .venv (first run takes a few minutes)"
  # (this machine's pip config lists local indexes; their "is ignored" warnings are noise)
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.txt \
    2>&1 | { grep -v "is ignored: it is neither a file nor a directory" || true; }
  echo "$want" > "$stamp"
fi
export PATH="$ROOT/.venv/bin:$PATH"
export VIRTUAL_ENV="$ROOT/.venv"
export PYTHONNOUSERSITE=1
