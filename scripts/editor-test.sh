#!/usr/bin/env bash
# Set up everything the VS Code extension's tests need, idempotently (a second run only rebuilds
# the .vsix):
#   - Debian's chromium (driven headless by playwright-core), ripgrep, and what code-server's native
#     modules build with;
#   - client-vscode/node_modules from package-lock.json (npm ci);
#   - code-server 4.100.3 (= VS Code 1.100.3; newer ones need Node 22) in a cache folder outside the
#     repository: $PAPERLENS_EDITOR_CACHE, else $XDG_CACHE_HOME/paperlens/editor-test, else
#     ~/.cache/paperlens/editor-test;
#   - client-vscode/paperlens-0.1.0.vsix.
# The last lines printed are CODE_SERVER=..., VSIX=... and CHROMIUM=... for the caller.
#
# With --run, it then runs the unit tests and the end-to-end walk-through too (screenshots in
# $SHOTS, else a new temporary folder); tests/test_vscode_extension.py does the same under pytest.
# Offline apart from the Debian, npm and PyPI registries (see ../shared/recipes/real-editor/).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
CODE_SERVER_VERSION=4.100.3
RIPGREP_CACHE=vscode-ripgrep-cache-1.15.11
RIPGREP_ASSET=ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz
CACHE=${PAPERLENS_EDITOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/paperlens/editor-test}
CODE_SERVER_DIR=$CACHE/code-server-$CODE_SERVER_VERSION
CODE_SERVER=$CODE_SERVER_DIR/node_modules/.bin/code-server
say() { echo "editor-test: $*" >&2; }

# -- Debian packages ---------------------------------------------------------------------------
packages=(chromium ripgrep build-essential pkg-config libkrb5-dev)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
  say "installing ${missing[*]} (apt)"
  as_root=()
  [ "$(id -u)" -eq 0 ] || as_root=(sudo)
  "${as_root[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi
command -v node >/dev/null || { say "node is needed (Node 20)"; exit 1; }

# -- the extension's npm packages ----------------------------------------------------------------
lock_hash=$(sha256sum client-vscode/package-lock.json | cut -d' ' -f1)
stamp=client-vscode/node_modules/.paperlens-lock-sha256
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$lock_hash" ]; then
  say "npm ci in client-vscode"
  (cd client-vscode && npm ci --no-audit --no-fund --loglevel=error >&2)
  echo "$lock_hash" >"$stamp"
fi

# -- code-server ----------------------------------------------------------------------------------
if [ ! -x "$CODE_SERVER" ]; then
  say "installing code-server $CODE_SERVER_VERSION into $CODE_SERVER_DIR"
  mkdir -p "$CACHE"
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  # Its postinstall downloads ripgrep from the internet unless the download cache holds it: seed
  # that cache with Debian's rg.
  mkdir -p "$scratch/$RIPGREP_CACHE" "$scratch/rg"
  cp "$(command -v rg)" "$scratch/rg/rg"
  tar czf "$scratch/$RIPGREP_CACHE/$RIPGREP_ASSET" -C "$scratch/rg" rg
  # unsafe_perm: installs as root are refused otherwise; yes: node-pty's `npx node-gyp`;
  # nodedir=/usr: node-gyp would download Node's headers otherwise.
  TMPDIR=$scratch npm_config_yes=true npm_config_unsafe_perm=true npm_config_nodedir=/usr \
    npm install --prefix "$scratch/install" --no-audit --no-fund --loglevel=error "code-server@$CODE_SERVER_VERSION" >&2
  rm -rf "$CODE_SERVER_DIR"
  mv "$scratch/install" "$CODE_SERVER_DIR"  # whole or not at all: a failed install leaves nothing
fi
"$CODE_SERVER" --version >/dev/null

# -- the .vsix ---------------------------------------------------------------------------------------
say "building the .vsix"
(cd client-vscode && npm run --silent package >/dev/null)
VSIX=$REPO/client-vscode/paperlens-0.1.0.vsix
test -f "$VSIX"

if [ "${1:-}" = "--run" ]; then
  SHOTS=${SHOTS:-$(mktemp -d -t paperlens-shots-XXXXXX)}
  (cd client-vscode && npm test)
  PYTHON=${PAPERLENS_PYTHON:-$REPO/.venv/bin/python}
  CODE_SERVER=$CODE_SERVER VSIX=$VSIX PAPERLENS_PYTHON=$PYTHON SHOTS=$SHOTS node client-vscode/e2e/run.js
  say "screenshots in $SHOTS"
fi

echo "CODE_SERVER=$CODE_SERVER"
echo "VSIX=$VSIX"
echo "CHROMIUM=$(command -v chromium)"
