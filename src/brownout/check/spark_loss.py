"""What Spark's Kafka source says when the log no longer holds offsets a query had
reached (an unclean election truncated it, retention deleted it), read from a query's
failure text. Pure: the pipeline stage and the expectations read the same words.

With the source option failOnDataLoss=true (Spark's default) the query fails with
Spark's data-loss error, KAFKA_DATA_LOSS in Spark 4 (its message is the one Spark 3
raised as an IllegalStateException):

    Some data may have been lost because they are not available in Kafka any more; ...
    Reason: Partition orders-0 offset was changed from 1500 to 1000.

(when it plans a micro-batch from the query's offset to a log end below it), or, when a
task reads a batch planned before the log lost those offsets, "Reason: Could not read
records in offset [1400, 1500) for topic partition orders-0".

Spark 3's variant of the reason reads "Partition orders-0's offset was changed from 1500
to 1000, some data may have been missed". With failOnDataLoss=false the same finding is
a warning in the driver's log and the query goes on.
"""

from __future__ import annotations

import dataclasses
import re

# Both Spark 3's and Spark 4's wording; a failure naming neither is not a data loss.
DATA_LOSS_MARKERS = (
    "KAFKA_DATA_LOSS",
    "Some data may have been lost because they are not available in Kafka any more",
)
# The Reason line of Spark 4's message, as the pipeline keeps it on one line: up to the
# next query's failure ("; orders.ledger: ...") or the end, without the final period.
_REASON = re.compile(r"Reason: (?P<reason>[^;]+?)\.?\s*(?=;|$)")
_OFFSET_CHANGED = re.compile(
    r"Partition (?P<partition>\S+?)(?:'s)? offset was changed from (?P<before>-?\d+) to "
    r"(?P<after>-?\d+)")


@dataclasses.dataclass(frozen=True)
class OffsetChange:
    """A partition whose end Spark found below the offset its query had reached."""

    partition: str  # topic-partition, as Spark prints it: orders-0
    before: int  # the query's offset (the previous batch's end)
    after: int  # the log's end when the next batch was planned

    @property
    def records(self) -> int:
        """How far the log's end went back."""
        return max(0, self.before - self.after)

    def as_json(self) -> dict[str, int | str]:
        return {"partition": self.partition, "from": self.before, "to": self.after}

    def __str__(self) -> str:
        return f"{self.partition} offset was changed from {self.before} to {self.after}"


def is_data_loss(error: str | None) -> bool:
    """The failure is Spark's data-loss error (failOnDataLoss=true)."""
    return bool(error) and any(m in str(error) for m in DATA_LOSS_MARKERS)


def reasons(error: str | None) -> tuple[str, ...]:
    """The Reason of every data-loss error the text holds, in order, once each: where
    the query found the loss. "Partition orders-0 offset was changed from 3479 to 2524"
    when it planned a batch (the log's end below the query's offset); "Could not read
    records in offset [3441, 3641) for topic partition orders-0" when a task read a
    batch planned before the log lost those offsets."""
    return tuple(dict.fromkeys(m["reason"].strip() for m in _REASON.finditer(str(error or ""))))


def offset_changes(error: str | None) -> tuple[OffsetChange, ...]:
    """Every "offset was changed from X to Y" the text names, in order, once each."""
    seen: dict[OffsetChange, None] = {}
    for m in _OFFSET_CHANGED.finditer(str(error or "")):
        seen.setdefault(OffsetChange(m["partition"], int(m["before"]), int(m["after"])))
    return tuple(seen)
