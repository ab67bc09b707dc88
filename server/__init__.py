"""The paperlens language server (pygls). The only package that speaks LSP.

`app` holds the state and the document life cycle; importing `navigation`, `actions`, `checklist`,
`commands`, `repo` and `smoke` registers their requests and hooks on the same server object."""

from . import actions, app, checklist, commands, navigation, repo, smoke

__all__ = ["actions", "app", "checklist", "commands", "navigation", "repo", "smoke"]
