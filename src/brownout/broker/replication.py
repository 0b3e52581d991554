"""Pure replication rules: the high watermark and ISR membership.

These are the rules the acks scenarios (acknowledged writes vs the log) test, kept free
of I/O so unit tests can hand them any combination of log-end offsets, ISRs and clocks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kio.schema.errors import ErrorCode


def high_watermark(
    current_hw: int,
    log_end_offsets: Mapping[int, int],
    maximal_isr: Sequence[int],
    *,
    isr_size: int,
    min_insync_replicas: int,
    replication_factor: int,
) -> int:
    """The high watermark after an update; it never moves backwards.

    The minimum log-end offset over the maximal ISR (the leader is always in it). As in
    Kafka since 3.7 (KAFKA-15583, whether or not eligible leader replicas are enabled),
    it does not advance while the committed ISR (`isr_size` members) is smaller than the
    effective min ISR, min.insync.replicas capped at the replication factor: a write
    that only the leader holds is not committed, acks=1 or not, and an acks=all request
    waiting for it times out rather than succeeding after the ISR shrank.
    """
    if isr_size < min(min_insync_replicas, max(1, replication_factor)):
        return current_hw
    candidate = min(log_end_offsets.get(r, 0) for r in maximal_isr)
    return max(current_hw, candidate)


def out_of_sync_replicas(
    isr: Sequence[int],
    leader: int,
    last_caught_up_ms: Mapping[int, int],
    now_ms: int,
    replica_lag_time_max_ms: int,
) -> list[int]:
    """Followers in the ISR that have not caught up to the leader's log end within
    replica.lag.time.max.ms; the leader asks the controller to remove them."""
    return [
        r
        for r in isr
        if r != leader and now_ms - last_caught_up_ms.get(r, now_ms) > replica_lag_time_max_ms
    ]


# What a leader does with the controller's answer to an ISR change (AlterPartition),
# Kafka's Partition.handleAlterPartitionError. Until the outcome is known the leader keeps
# the pending (maximal) ISR: a change the controller may have committed must count for
# the high watermark, or a write acknowledged by the old, smaller ISR can be lost when a
# replica the controller already added becomes leader without it.
ISR_CHANGE_ADOPT = "adopt"  # committed: take the answer's ISR and partition epoch
ISR_CHANGE_RESET = "reset"  # certainly not applied: back to the committed ISR
ISR_CHANGE_AWAIT_METADATA = "await-metadata"  # outcome unknown: pending until metadata
ISR_CHANGE_RETRY = "retry"  # no answer or an unexpected error: send it again

_AWAIT_METADATA_ERRORS = frozenset({
    ErrorCode.unknown_topic_or_partition,
    ErrorCode.unknown_topic_id,
    ErrorCode.fenced_leader_epoch,
    ErrorCode.invalid_update_version,
    ErrorCode.invalid_request,
    ErrorCode.new_leader_elected,
})


def isr_change_outcome(error: ErrorCode | None) -> str:
    """The leader's next step for an AlterPartition answer (None: no answer at all).

    Only OPERATION_NOT_ATTEMPTED and INELIGIBLE_REPLICA say the change was not applied
    by any controller, past or future, so only they return to the committed ISR. Errors
    that mean the leader's view is stale wait for the metadata that will replace it; a
    lost answer or any other error is sent again, since an earlier try may have been
    applied and its answer lost."""
    if error is None:
        return ISR_CHANGE_RETRY
    if error == ErrorCode.none:
        return ISR_CHANGE_ADOPT
    if error in (ErrorCode.operation_not_attempted, ErrorCode.ineligible_replica):
        return ISR_CHANGE_RESET
    if error in _AWAIT_METADATA_ERRORS:
        return ISR_CHANGE_AWAIT_METADATA
    return ISR_CHANGE_RETRY


def can_join_isr(follower_leo: int, high_watermark: int, leader_epoch_start: int) -> bool:
    """A follower rejoins the ISR once it has caught up to the high watermark and to the
    start of the current leader's epoch (so it holds everything the leader committed)."""
    return follower_leo >= high_watermark and follower_leo >= leader_epoch_start


def high_watermark_lagging(high_watermark: int, leader_epoch_start: int) -> bool:
    """A new leader whose high watermark is still below the start of its epoch (KIP-207).

    A follower learns the high watermark only from its leader's fetch responses, so when
    it is elected its own can be behind the old leader's: records the old leader already
    acknowledged to acks=all producers sit between the two. Until the followers fetch
    from the new leader and move its high watermark past the epoch start, a client asking
    for the latest offset would see the log end move backwards and miss acknowledged
    records; Kafka answers OFFSET_NOT_AVAILABLE (retriable) instead."""
    return leader_epoch_start > high_watermark


def follower_truncation_offset(
    leader_epoch: int, leader_end: int, local: tuple[int, int], log_end_offset: int
) -> int:
    """Where a follower truncates when the leader answers that its log diverges: the
    leader's end `leader_end` of `leader_epoch` (the largest epoch the leader has at or
    below the follower's last fetched one), or the follower's own end of that epoch
    (`local`: its answer for the same epoch) when that is earlier -- the follower may
    never have had the leader's later records of it -- and never past its log end."""
    local_epoch, local_end = local
    target = min(leader_end, local_end) if local_epoch >= 0 else leader_end
    return min(target, log_end_offset)


# -- follower fetching (KRaft) -------------------------------------------------------

# What applying a metadata delta does to the fetcher of a partition this broker follows
# (Kafka's applyLocalFollowersDelta sorts the partitions into partitionsToStartFetching
# and partitionsToStopFetching; the others keep their fetcher as it is).
FETCHER_START = "start"  # (re)start fetching from the leader the registration names
FETCHER_STOP = "stop"  # fetch no more
FETCHER_AS_IS = "as-is"  # fetching, or not, as before


def follower_fetcher_change(
    node_id: int,
    *,
    changed: bool,
    leader: int,
    isr: Sequence[int],
    new_leader_epoch: bool,
    in_controlled_shutdown: bool,
) -> str:
    """The fetcher change for a partition this broker follows, after a KRaft metadata
    delta, Kafka's way (ReplicaManager.applyLocalFollowersDelta).

    Only a partition whose registration changed (a new partition epoch, Kafka's
    localChanges) is looked at. While the broker is in controlled shutdown, one with no
    leader or whose ISR leaves this broker out stops fetching: the controller has just
    taken the broker out of the ISR (or, the ISR's last member, left the partition
    without a leader), and a replica that fetched on could catch up and rejoin the ISR
    of a partition it is about to leave (KAFKA-13858). Otherwise, as at any time, a new
    leader epoch (re)starts the fetcher, at the new leader or epoch."""
    if not changed:
        return FETCHER_AS_IS
    if in_controlled_shutdown and (leader < 0 or node_id not in isr):
        return FETCHER_STOP
    return FETCHER_START if new_leader_epoch else FETCHER_AS_IS


# -- DeleteRecords ------------------------------------------------------------------

DELETE_TO_HIGH_WATERMARK = -1  # DeleteRecordsRequest.HIGH_WATERMARK


def delete_records_offset(requested: int, high_watermark: int, cleanup_policy: str
                          ) -> tuple[ErrorCode, int]:
    """Where a DeleteRecords request moves the leader's log start, Kafka's way
    (Partition.deleteRecordsOnLeader): (error, offset). -1 means the high watermark; a
    compacted-only topic refuses (POLICY_VIOLATION); an offset below zero or above the
    high watermark is OFFSET_OUT_OF_RANGE. Deleting up to the current log start or
    below is no error: nothing moves."""
    if "delete" not in [p.strip() for p in cleanup_policy.split(",")]:
        return ErrorCode.policy_violation, -1
    offset = high_watermark if requested == DELETE_TO_HIGH_WATERMARK else requested
    if offset < 0 or offset > high_watermark:
        return ErrorCode.offset_out_of_range, -1
    return ErrorCode.none, offset


def low_watermark(leader_log_start: int, follower_log_starts: Mapping[int, int]) -> int:
    """The lowest log start offset over the leader and the (live) followers given."""
    return min([leader_log_start, *follower_log_starts.values()])
