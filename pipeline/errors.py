"""The one error type a user sees: a clear message, never a traceback."""


class PaperError(Exception):
    """The paper cannot be read. `str(err)` is the message shown to the user as is."""
