"""The one exception a measurement raises when it cannot run here (a peer not installed, an env not yet built)."""


class Skipped(Exception):
    """The measurement was not taken; the message says why and goes into the record."""
