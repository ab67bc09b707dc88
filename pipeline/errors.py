"""The errors a user sees: a clear message, never a traceback."""


class UserError(Exception):
    """Input paperlens cannot use. `str(err)` is the message shown to the user as is."""


class PaperError(UserError):
    """The paper cannot be read."""


class DecisionsError(UserError):
    """The decisions file is malformed; it is left untouched."""


class WorkspaceError(UserError):
    """The workspace or its paperlens settings cannot be used."""
