#!/usr/bin/env bash
# Set up, then read the bundled example paper and print what paperlens found in it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
.venv/bin/paperlens index examples/paper "$@"
