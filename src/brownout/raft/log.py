"""The core's in-memory picture of the replicated log (`__cluster_metadata`).

The shell loads the durable entries from disk at start and hands them over as a
`RaftLog`; afterwards the core changes the log only through `append` and `truncate_to`
and tells the shell to repeat those changes on disk through `Ready`. The log keeps a
small leader-epoch cache (epoch -> first offset), which is what Kafka's
`leader-epoch-checkpoint` holds, so that `end_offset_for_epoch` (Kafka's
OffsetForLeaderEpoch answer) and fetch validation cost O(log epochs).

Offsets are dense from 0; epochs start at 1 (the first election bumps epoch 0 to 1), so
"epoch 0" and "offset 0" together mean "before the first entry".
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Entry:
    """One record of the metadata log. `control` marks Kafka's control records (the
    LeaderChangeMessage a new leader writes); the state machine above should skip them."""

    offset: int
    epoch: int
    payload: bytes
    control: bool = False

    def __post_init__(self) -> None:
        if self.offset < 0 or self.epoch < 1:
            raise ValueError(f"invalid entry offset={self.offset} epoch={self.epoch}")


@dataclass(frozen=True, slots=True)
class OffsetAndEpoch:
    """Kafka's OffsetAndEpoch / EpochEndOffset: `offset` is an *end* offset (exclusive)."""

    offset: int
    epoch: int


class LogError(ValueError):
    """An append or truncation that would break the log's invariants."""


class RaftLog:
    """Entries in offset order with a leader-epoch cache. Pure data, no I/O."""

    def __init__(self, entries: Iterable[Entry] = ()) -> None:
        self._entries: list[Entry] = []
        # Parallel lists: epochs in increasing order and the first offset of each.
        self._epochs: list[int] = []
        self._epoch_starts: list[int] = []
        self.append(list(entries))

    @property
    def end_offset(self) -> int:
        return len(self._entries)

    @property
    def last_epoch(self) -> int:
        """Epoch of the last entry (Kafka's lastFetchedEpoch); 0 when empty."""
        return self._epochs[-1] if self._epochs else 0

    def end(self) -> OffsetAndEpoch:
        return OffsetAndEpoch(self.end_offset, self.last_epoch)

    def epoch_at(self, offset: int) -> int | None:
        """The epoch of the entry at `offset` (etcd's Term), None when absent."""
        if 0 <= offset < len(self._entries):
            return self._entries[offset].epoch
        return None

    def entry(self, offset: int) -> Entry:
        return self._entries[offset]

    def entries(self, start: int = 0, end: int | None = None) -> list[Entry]:
        return self._entries[start:end]

    def entries_from(self, start: int, max_count: int) -> list[Entry]:
        return self._entries[start : start + max_count]

    def append(self, entries: list[Entry]) -> None:
        for e in entries:
            if e.offset != len(self._entries):
                raise LogError(f"append at {e.offset}, end offset is {len(self._entries)}")
            if e.epoch < self.last_epoch:
                raise LogError(f"epoch {e.epoch} after epoch {self.last_epoch}")
            if e.epoch != self.last_epoch:
                self._epochs.append(e.epoch)
                self._epoch_starts.append(e.offset)
            self._entries.append(e)

    def truncate_to(self, offset: int) -> None:
        """Drop every entry at or above `offset`."""
        if offset < 0:
            raise LogError(f"truncate to {offset}")
        if offset >= len(self._entries):
            return
        del self._entries[offset:]
        while self._epoch_starts and self._epoch_starts[-1] >= offset:
            self._epochs.pop()
            self._epoch_starts.pop()

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        """The largest epoch <= `epoch` in this log and the end offset of that epoch
        (the first offset of the next epoch, or the log end). (0, 0) when no entry has
        an epoch <= `epoch`. This is what a leader answers to OffsetForLeaderEpoch."""
        i = bisect.bisect_right(self._epochs, epoch) - 1
        if i < 0:
            return OffsetAndEpoch(0, 0)
        end = self._epoch_starts[i + 1] if i + 1 < len(self._epochs) else self.end_offset
        return OffsetAndEpoch(end, self._epochs[i])

    def validate_fetch(self, fetch_offset: int, last_fetched_epoch: int) -> OffsetAndEpoch | None:
        """None when the fetcher's log up to `fetch_offset` matches ours; otherwise the
        diverging epoch the fetcher must truncate to (Kafka's validateOffsetAndEpoch)."""
        if fetch_offset == 0 and last_fetched_epoch == 0:
            return None
        found = self.end_offset_for_epoch(last_fetched_epoch)
        if found.epoch != last_fetched_epoch or found.offset < fetch_offset:
            return found
        return None

    def truncate_to_end_offset(self, diverging: OffsetAndEpoch) -> int:
        """Truncate after a leader reported `diverging`; returns the new end offset.
        Entries of epochs <= diverging.epoch up to its end offset agree with the leader
        (log matching), so cutting at the smaller of the two ends is enough; the next
        fetch re-validates and may cut further."""
        local = self.end_offset_for_epoch(diverging.epoch)
        target = min(local.offset, diverging.offset)
        self.truncate_to(target)
        return target

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        epochs = list(zip(self._epochs, self._epoch_starts, strict=True))
        return f"RaftLog(end={self.end_offset}, epochs={epochs})"
