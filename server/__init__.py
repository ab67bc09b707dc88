"""The paperlens language server (pygls). The only package that speaks LSP.

`app` holds the state and the document life cycle; importing `navigation`, `actions` and `smoke`
registers their requests and hooks on the same server object."""

from . import actions, app, navigation, smoke

__all__ = ["actions", "app", "navigation", "smoke"]
