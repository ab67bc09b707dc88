"""The paperlens language server (pygls). The only package that speaks LSP.

`app` holds the state and the document life cycle; importing `navigation` and `actions` registers
their requests on the same server object."""

from . import actions, app, navigation

__all__ = ["actions", "app", "navigation"]
