#!/usr/bin/env bash
# Create .venv with paperlens installed editable plus the test tools. Safe to run again: it only
# reinstalls when pyproject.toml changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "paperlens needs Python >= 3.11 (found $("$PYTHON" --version 2>&1)); set PYTHON=..." >&2
  exit 1
fi
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
stamp=.venv/.paperlens-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  log=.venv/install.log
  echo "setting up .venv (log: $log)" >&2
  if ! { .venv/bin/python -m pip install --upgrade pip && .venv/bin/python -m pip install -e '.[test]'; } >"$log" 2>&1; then
    tail -30 "$log" >&2
    echo "setup failed; the whole log is in $log" >&2
    exit 1
  fi
  echo "$want" > "$stamp"
fi
