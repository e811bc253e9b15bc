"""A pot group in the real pot book, for the tests that feed the display what the pot service
writes: each command or table event is one batch of the book (``PotBook``: the engine and its
records, no Kafka), and the pot updates and awards it wrote are kept in order.

The display's unit tests read them through its feed; its integration tests publish them to the
display's topics and beat the latest update (``tests.integration.test_display.beat_updates``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from jackpot.pot import commands
from jackpot.pot.pot_book import InputRecord, PotBook
from jackpot.v1 import common_pb2, pot_pb2, table_events_pb2

LIMITS = {"min_bet": 1000, "max_bet": 5000, "credit_value": 1000}  # every linked table's (E1)


def caribbean(table_id: str, **link: Any) -> table_events_pb2.LinkTable:
    """A Caribbean table's link at LIMITS; ``link`` adds its site or a studio table's seats."""
    return table_events_pb2.LinkTable(
        table_id=table_id, game=common_pb2.GAME_CARIBBEAN, **LIMITS, **link
    )


class BookPot:
    """One pot group in the real pot book with its tables linked, and every update and award the
    book wrote for it."""

    def __init__(
        self,
        group: str,
        config: Mapping[str, Any],
        links: Iterable[table_events_pb2.LinkTable],
    ) -> None:
        self.group = group
        self.book = PotBook(0, source="pot:test", event_id_window=64)
        self.offset = 0
        self.updates: list[pot_pb2.PotUpdate] = []
        self.awards: list[pot_pb2.Award] = []
        self.apply(commands.create_group(group, config))
        for link in links:
            self.apply(commands.link_table(group, link))

    @property
    def update(self) -> pot_pb2.PotUpdate | None:
        """The latest pot update (what the pot service beats, D5); None before any."""
        return self.updates[-1] if self.updates else None

    def apply(self, event: table_events_pb2.TableEvent) -> list[pot_pb2.Award]:
        """``event`` as one committed batch of the book: the awards it wrote (kept too)."""
        record = InputRecord(event.SerializeToString(), "t", 0, self.offset, self.group.encode())
        self.offset += 1
        outputs = self.book.apply_batch([record])
        self.book.commit(outputs)
        self.updates.extend(outputs.pot_updates)
        self.awards.extend(outputs.awards)
        return list(outputs.awards)

    def event(self, table_id: str, sequence: int, **what: Any) -> table_events_pb2.TableEvent:
        """Event ``sequence`` of round R1 at Caribbean table ``table_id`` (``what``: its lock,
        its result)."""
        return commands.table_event(
            self.group, table_id, "R1", sequence, common_pb2.GAME_CARIBBEAN, **what
        )
