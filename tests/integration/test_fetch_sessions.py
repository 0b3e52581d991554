"""Incremental fetch sessions (KIP-227) on real nodes: the broker's answers on the wire."""

from __future__ import annotations

import pytest
from _kafka_clients import create_topic, produce_confluent
from kio.schema.errors import ErrorCode

from brownout.protocol.apis import ApiKey
from brownout.protocol.records import iter_batches
from brownout.scenarios.rawclient import RawClient

pytestmark = [pytest.mark.integration]


def fetch(raw: RawClient, version: int, session_id: int, epoch: int, topics=(), *,
          forgotten=(), max_wait_ms: int = 0):  # type: ignore[no-untyped-def]
    """One consumer Fetch; `topics`: [(topic name or id, [(partition, offset)])]."""
    key = "topic_id" if version >= 13 else "topic"
    return raw.request(
        ApiKey.FETCH,
        version,
        {
            "replica_id": -1,
            "max_wait": max_wait_ms,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "isolation_level": 0,
            "session_id": session_id,
            "session_epoch": epoch,
            "topics": [
                {
                    key: t,
                    "partitions": [
                        {"partition": p, "fetch_offset": o, "current_leader_epoch": -1,
                         "last_fetched_epoch": -1, "log_start_offset": -1,
                         "partition_max_bytes": 1 << 20}
                        for p, o in parts
                    ],
                }
                for t, parts in topics
            ],
            "forgotten_topics_data": [{key: t, "partitions": ps} for t, ps in forgotten],
            "rack_id": "",
        },
    )


def answered(response) -> dict[int, int]:  # type: ignore[no-untyped-def]
    """partition -> records in it, over every topic of a response."""
    return {
        int(p.partition_index): sum(
            h.records_count for _, h in iter_batches(bytes(p.records or b""))
        )
        for t in response.responses
        for p in t.partitions
    }


@pytest.mark.timeout(60)
def test_broker_session_on_the_wire(node, topic):
    create_topic(node.bootstrap, topic, partitions=3)
    with RawClient(node.bootstrap) as raw:
        everything = [(topic, [(0, 0), (1, 0), (2, 0)])]
        first = fetch(raw, 12, 0, 0, everything)
        assert first.error_code == ErrorCode.none and first.session_id != 0
        session = first.session_id
        assert answered(first) == {0: 0, 1: 0, 2: 0}

        # Nothing changed: an incremental fetch names nothing and gets nothing.
        idle = fetch(raw, 12, session, 1)
        assert (idle.error_code, idle.session_id, answered(idle)) == (ErrorCode.none, session, {})

        produce_confluent(node.bootstrap, topic, [(1, b"k", b"v%d" % i, []) for i in range(3)])
        news = fetch(raw, 12, session, 2)
        assert answered(news) == {1: 3}
        [part] = news.responses[0].partitions
        assert part.high_watermark == 3

        # Partition 1 moved on to offset 3, partition 2 is forgotten.
        moved = fetch(raw, 12, session, 3, [(topic, [(1, 3)])], forgotten=[(topic, [2])])
        assert (moved.error_code, answered(moved)) == (ErrorCode.none, {})
        produce_confluent(node.bootstrap, topic, [(2, b"k", b"late", [])])
        assert answered(fetch(raw, 12, session, 4)) == {}  # partition 2 is not in it

        # A repeated epoch, an unknown session, a switch to topic ids: errors, no data.
        repeated = fetch(raw, 12, session, 4)
        assert (repeated.error_code, repeated.session_id, answered(repeated)) == (
            ErrorCode.invalid_fetch_session_epoch, 0, {})
        unknown = fetch(raw, 12, session ^ 1, 1)
        assert unknown.error_code == ErrorCode.fetch_session_id_not_found
        ids = fetch(raw, 13, session, 5)
        assert ids.error_code == ErrorCode.fetch_session_topic_id_error

        # The session survived the errors: epoch 5 is still the one it expects.
        assert fetch(raw, 12, session, 5).error_code == ErrorCode.none
        # A full fetch with epoch -1 closes it.
        closed = fetch(raw, 12, session, -1, everything)
        assert closed.session_id == 0 and answered(closed) == {0: 0, 1: 3, 2: 1}
        assert fetch(raw, 12, session, 6).error_code == ErrorCode.fetch_session_id_not_found

        # v7, the first version with sessions, gets one.
        assert fetch(raw, 7, 0, 0, everything).session_id != 0
