"""The project's own exception types.

Every error a user can cause (bad data, bad flags, a wrong checkpoint) is raised as one of
these, with a message naming the file or flag and the problem, so the command line can
print one clear line instead of a TensorFlow traceback.
"""


class PointerGeneratorError(Exception):
    """Base class of every error this project raises on purpose."""


class DataError(PointerGeneratorError):
    """A data file (story, .bin chunk, CSV, JSONL) is missing or malformed."""


class VocabError(PointerGeneratorError):
    """The vocabulary file is missing or malformed."""


class FlagError(PointerGeneratorError):
    """Command-line flags are missing, unknown or contradict each other."""


class CheckpointError(PointerGeneratorError):
    """A checkpoint is missing, partial, or does not match the model."""


class NonFiniteLossError(PointerGeneratorError):
    """Training produced a NaN or infinite loss."""


class OutputError(PointerGeneratorError):
    """An output (checkpoint, event file, experiment directory) cannot be written: the disk
    is full, the file system is read-only, or the path is not a writable directory."""
