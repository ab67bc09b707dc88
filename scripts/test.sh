#!/usr/bin/env bash
# Set up everything the tests need, then run all of them. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/sandbox-engine.sh  # a Docker engine and the sandbox's base image, for the smoke-run tests
.venv/bin/python -m pytest "$@"
