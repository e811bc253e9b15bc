"""The errors the exactly-once processor raises to the services that run it (and the changelog
restore raises to it), apart so that both can name them without importing each other."""

from __future__ import annotations


class ProcessorError(RuntimeError):
    """The processor cannot go on safely; the service must stop and be restarted."""


class NotOwned(RuntimeError):
    """This instance does not own (or has halted) the partition a piece of work belongs to."""

    def __init__(self, partition: int) -> None:
        super().__init__(f"partition {partition} is not owned by this instance")
        self.partition = partition


class NotCommitted(RuntimeError):
    """The transaction of a submitted change failed: nothing of it was written or kept."""
