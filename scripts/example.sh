#!/usr/bin/env bash
# Set up, then run paperlens on the bundled example: the paper's gaps, and the example workspace's
# code checked against the paper. Extra arguments go to `paperlens check`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
echo "== paperlens gaps examples/paper"
.venv/bin/paperlens gaps examples/paper
echo "== paperlens check examples/workspace"
.venv/bin/paperlens check examples/workspace --fail-on never "$@"
