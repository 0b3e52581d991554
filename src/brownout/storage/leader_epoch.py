"""Leader epoch cache: which leader epoch started at which offset.

Followers use it (through OffsetForLeaderEpoch) to find where their log diverges from a
new leader's, which is what makes truncation after a leader change safe. Persisted in
``leader-epoch-checkpoint`` in the partition directory on every change, because a stale
cache after a crash would let a follower keep records the leader no longer has.
"""

from __future__ import annotations

from pathlib import Path

from brownout.storage.checkpoint import LEADER_EPOCH_CHECKPOINT, LeaderEpochCheckpointFile, Sync

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class LeaderEpochCache:
    def __init__(self, partition_dir: Path, sync: Sync | None = None) -> None:
        self._file = LeaderEpochCheckpointFile(
            Path(partition_dir) / LEADER_EPOCH_CHECKPOINT, sync
        )
        self._entries: list[tuple[int, int]] = []  # (epoch, start_offset), both ascending

    def load(self) -> None:
        self._entries = []
        for epoch, start in self._file.read():
            self._assign_in_memory(epoch, start)

    @property
    def entries(self) -> list[tuple[int, int]]:
        return list(self._entries)

    @property
    def latest_epoch(self) -> int:
        return self._entries[-1][0] if self._entries else UNDEFINED_EPOCH

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; True if the cache changed."""
        changed = self._assign_in_memory(epoch, start_offset)
        if changed:
            self._persist()
        return changed

    def _assign_in_memory(self, epoch: int, start_offset: int) -> bool:
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid leader epoch entry ({epoch}, {start_offset})")
        if self._entries:
            last_epoch, last_start = self._entries[-1]
            # Re-assigning the same epoch at a later offset is a no-op: the epoch began
            # earlier. An earlier start offset means the log was rewritten (truncation).
            if epoch == last_epoch and start_offset >= last_start:
                return False
        # Anything that conflicts with the new entry (a later/equal epoch, or an epoch
        # starting at or after it) describes a history that no longer exists.
        self._entries = [
            (e, s) for e, s in self._entries if e < epoch and s < start_offset
        ]
        self._entries.append((epoch, start_offset))
        return True

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch: (largest known epoch <= requested, where it ended).

        The end offset of an epoch is the start offset of the next known epoch, or the log
        end offset for the latest one. An unknown request (no epochs, undefined, or newer
        than anything known) yields (-1, -1). A request older than every known epoch
        yields (requested, start offset of the first epoch), as Kafka does.
        """
        if requested_epoch == UNDEFINED_EPOCH or not self._entries:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if requested_epoch == self.latest_epoch:
            return requested_epoch, log_end_offset
        floor: tuple[int, int] | None = None
        for entry in self._entries:
            if entry[0] > requested_epoch:
                if floor is None:
                    return requested_epoch, entry[1]
                return floor[0], entry[1]
            floor = entry
        return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET

    def truncate_from_end(self, end_offset: int) -> None:
        """Forget epochs starting at or after ``end_offset`` (log truncated there)."""
        kept = [(e, s) for e, s in self._entries if s < end_offset]
        if kept != self._entries:
            self._entries = kept
            self._persist()

    def truncate_from_start(self, start_offset: int) -> None:
        """Drop epochs wholly before ``start_offset``; the one spanning it now starts there."""
        before = [(e, s) for e, s in self._entries if s <= start_offset]
        after = [(e, s) for e, s in self._entries if s > start_offset]
        if before:
            epoch, _ = before[-1]
            kept = [(epoch, start_offset), *after]
        else:
            kept = after
        if kept != self._entries:
            self._entries = kept
            self._persist()

    def clear(self) -> None:
        self._entries = []
        self._persist()

    def _persist(self) -> None:
        self._file.write(self._entries)
