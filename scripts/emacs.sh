#!/usr/bin/env bash
# Emacs and eglot, for tests/test_eglot.py (idempotent; prints nothing when both are there).
# Installs Debian's emacs-nox and elpa-eglot (eglot 1.9, Emacs 28 on bookworm) without recommends
# (they would bring a mail server): about 46 MB to download, 12 packages, some 20 s. apt's output
# goes to $TMPDIR/paperlens-emacs/apt.log.
set -euo pipefail
LOGDIR="${TMPDIR:-/tmp}/paperlens-emacs"
# Where Debian's elpa-* packages live; tests/eglot/scenario.el activates them the same way (-Q skips site-lisp).
HAS_EGLOT='(progn (require (quote package)) (add-to-list (quote package-directory-list) "/usr/share/emacs/site-lisp/elpa") (package-initialize) (require (quote eglot)))'

missing=()
if ! command -v emacs >/dev/null; then
  missing=(emacs-nox elpa-eglot)
elif ! emacs --batch -Q --eval "$HAS_EGLOT" >/dev/null 2>&1; then
  missing=(elpa-eglot)
fi
((${#missing[@]})) || exit 0

mkdir -p "$LOGDIR"
echo "emacs: installing ${missing[*]} from Debian (log: $LOGDIR/apt.log)" >&2
as_root=()
[ "$(id -u)" -eq 0 ] || as_root=(sudo)
{
  "${as_root[@]}" apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
} >"$LOGDIR/apt.log" 2>&1 || { echo "emacs: apt-get failed; see $LOGDIR/apt.log" >&2; exit 1; }
emacs --batch -Q --eval "$HAS_EGLOT" >/dev/null 2>&1 || { echo "emacs: installed, but Emacs cannot load eglot" >&2; exit 1; }
