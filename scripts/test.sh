#!/usr/bin/env bash
# Set up everything the tests need, then run all of them. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/sandbox-engine.sh  # a Docker engine and the sandbox's base image, for the smoke-run tests
scripts/emacs.sh  # Emacs and eglot (Debian's), for the eglot client tests
.venv/bin/python -m pytest "$@"
