"""Why a smoke run could not be made."""

from __future__ import annotations


class SandboxUnavailable(Exception):
    """The environment cannot make the run (no Docker, no permission, no image, a failed build).
    `str(err)` is the message for the user, saying how to fix it; run_smoke returns it as an
    `error` result and never raises it."""


class Cancelled(Exception):
    """The caller's cancel event was set before the run could start."""
