"""The one error type the CLI turns into a one-line message and a non-zero exit."""


class PongrlError(Exception):
    """A problem the user can fix: bad input, a missing or corrupt file, a refused action."""


class CheckpointWriteError(PongrlError):
    """Training stopped because the disk refused a checkpoint; the previous one is intact."""
