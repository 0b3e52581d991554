"""Why a send's record is in the log more than once, from the batch headers of its copies.

An idempotent producer's batch carries its producer id, producer epoch and base
sequence. The partition leader remembers each producer's last five batches and answers
a retry of one of them with the original offsets, so two copies written under one
producer id and epoch are the broker's fault: it should have deduplicated the second.
Copies under different epochs or producer ids are the client's doing: it gave a batch it
had not seen acknowledged a new identity, and no broker can tell that from a new record.
librdkafka does this when it bumps its epoch (after OUT_OF_ORDER_SEQUENCE_NUMBER on a
later in-flight request of some partition, or a message timeout) and renumbers the
messages still queued, including ones whose earlier request may have been written.

    same-producer-epoch  broker: every copy under one producer id and epoch
    epoch-bump           client: a later copy under a higher epoch of the same id
    new-producer-id      client: a later copy under another producer id
    not-idempotent       a copy without a producer id (a plain producer's retry)
    unknown              a copy's batch could not be read

Pure: the batch headers come in through `read_batches`, whatever reads them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from brownout.protocol.records import BatchHeader

SAME_PRODUCER_EPOCH = "same-producer-epoch"
EPOCH_BUMP = "epoch-bump"
NEW_PRODUCER_ID = "new-producer-id"
NOT_IDEMPOTENT = "not-idempotent"
UNKNOWN = "unknown"
CLIENT_CAUSES = frozenset({EPOCH_BUMP, NEW_PRODUCER_ID, NOT_IDEMPOTENT})

# (topic, partition, offsets) -> the header of the batch holding each offset it found
ReadBatches = Callable[[str, int, Sequence[int]], Mapping[int, BatchHeader]]


def duplicate_cause(copies: Sequence[BatchHeader | None]) -> str:
    """The cause for one record's copies, in log order."""
    if any(c is None for c in copies):
        return UNKNOWN
    headers = [c for c in copies if c is not None]
    if any(not h.has_producer_id for h in headers):
        return NOT_IDEMPOTENT
    if len({h.producer_id for h in headers}) > 1:
        return NEW_PRODUCER_ID
    if len({h.producer_epoch for h in headers}) > 1:
        return EPOCH_BUMP
    return SAME_PRODUCER_EPOCH


def classify_duplicates(final: pa.Table, read_batches: ReadBatches) -> list[dict[str, Any]]:
    """One row per msg_id found more than once in the final read: where its copies are,
    the batch header of each copy and the cause."""
    fin = final.filter(pc.is_valid(final["msg_id"]))
    counts = fin.group_by("msg_id").aggregate([("offset", "count")])
    dup_ids = counts.filter(pc.greater(counts["offset_count"], 1))["msg_id"]
    if len(dup_ids) == 0:
        return []
    rows = fin.filter(pc.is_in(fin["msg_id"], value_set=dup_ids)).select(
        ["msg_id", "producer", "topic", "partition", "offset"]).to_pylist()
    wanted: dict[tuple[str, int], set[int]] = {}
    for row in rows:
        wanted.setdefault((row["topic"], row["partition"]), set()).add(row["offset"])
    headers = {tp: read_batches(tp[0], tp[1], sorted(offsets))
               for tp, offsets in wanted.items()}
    by_msg: dict[str, list[dict[str, Any]]] = {}
    for row in sorted(rows, key=lambda r: (r["msg_id"], r["topic"], r["partition"],
                                           r["offset"])):
        by_msg.setdefault(row["msg_id"], []).append(row)
    out = []
    for msg_id, copies in by_msg.items():
        found = [headers[(c["topic"], c["partition"])].get(c["offset"]) for c in copies]
        where = [{"topic": c["topic"], "partition": c["partition"], "offset": c["offset"],
                  **_batch(h)} for c, h in zip(copies, found, strict=True)]
        out.append({"msg_id": msg_id, "producer": copies[0]["producer"], "copies": where,
                    "cause": duplicate_cause(found)})
    return out


def cause_counts(rows: Iterable[Mapping[str, Any]],
                 producers: Collection[str] | None = None) -> dict[str, int]:
    """Duplicates per cause, of the given producers' sends (None: all of them)."""
    return dict(Counter(r["cause"] for r in rows
                        if producers is None or r["producer"] in producers))


def broker_duplicates(causes: Mapping[str, int]) -> int:
    """Duplicates the client did not cause (unknown ones included)."""
    return sum(n for cause, n in causes.items() if cause not in CLIENT_CAUSES)


def _batch(header: BatchHeader | None) -> dict[str, Any]:
    if header is None:
        return {"batch": None}
    return {"batch": {"base_offset": header.base_offset, "last_offset": header.last_offset,
                      "producer_id": header.producer_id,
                      "producer_epoch": header.producer_epoch,
                      "base_sequence": header.base_sequence,
                      "partition_leader_epoch": header.partition_leader_epoch}}
