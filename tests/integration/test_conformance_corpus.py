"""The wire conformance corpus in the suite: bench/conformance.py's requests, two for
every API and version the node advertises on its broker and controller listeners (356
with the fixed seed), their fields drawn from plausible values, each sent alone to
Brownout's node and to Apache Kafka 4.4.0 (a one-node combined lab each), and the whole
answers compared after normalising what two clusters must differ in (ids, times, ports;
entries about Kafka's __transaction_state are left out on both sides).

Every answer must be Kafka's, except where the cause is known and written down here:
what the node does not have (transactions, KIP-848 and share groups, the features
above metadata.version 3.9-IV0), two Kafka 4.4.0 bugs the node does not copy, and a
sub-second request timeout that one controller's queue outlasts. A new difference
fails the test with the frame, the field and both values.
"""

from __future__ import annotations

import json
import struct
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from brownout.protocol.apis import ApiKey, request_class
from brownout.protocol.framecheck import decode_entity

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import conformance  # noqa: E402
import fuzz_vs_kafka  # noqa: E402

SEED, PER_VERSION, TIMEOUT_S = 1, 2, 30.0

# What the node does not have, by API and field (list indices dropped).
LACKS = {
    (ApiKey.API_VERSIONS, ".api_keys.length"):
        "the node serves 42 APIs: none of transactions, KIP-848 consumer groups, share "
        "groups, delegation tokens or feature updates",
    (ApiKey.API_VERSIONS, ".supported_features[].max_version"):
        "the node implements metadata.version 3.9-IV0 (21), Kafka 4.4.0 up to 33",
    (ApiKey.API_VERSIONS, ".supported_features[].min_version"):
        "the node supports metadata.version from 3.0-IV1 (1) as Kafka 3.9 does",
    (ApiKey.API_VERSIONS, ".finalized_features.length"):
        "the node finalizes metadata.version only: it has no KIP-848 or share groups, "
        "no transactions, no eligible leader replicas",
}
FETCH_SESSION_ID_BUG = 2**31 - 1  # Kafka's FetchSessionCache shards past its last


def request_of(row: dict[str, Any]) -> Any:
    raw = bytes.fromhex(row["hex"])[4:]
    key, version = struct.unpack_from(">hh", raw)
    cls: Any = request_class(key, version)
    _header, pos = decode_entity(cls.__header_schema__, raw)
    return decode_entity(cls, raw, pos)[0]


def cause(row: dict[str, Any]) -> str | None:
    """Why this frame's answers differ, when the cause is known."""
    key = int(row["api"].split("v")[0])
    fields = {conformance.shape(path) for path, _node, _kafka in row["differences"]}
    reasons = {LACKS.get((key, f)) for f in fields}
    if None not in reasons:
        return "; ".join(sorted(r for r in reasons if r))
    if key == ApiKey.INIT_PRODUCER_ID and request_of(row).transactional_id:
        return "transactional: the node has no transaction coordinator"
    if key == ApiKey.FIND_COORDINATOR and request_of(row).key_type == 1:
        return "a transaction coordinator: the node has none"
    timeout = getattr(request_of(row), "timeout", None)
    if timeout is not None and 0 < timeout.total_seconds() < 1 and timed_out_only(
            row["differences"]):
        # A controller queues the work with the request's deadline: under a second, one
        # side's queue may be busy longer (say, still deleting __consumer_offsets).
        return "the request's own timeout, shorter than a busy controller's queue"
    if key == ApiKey.FETCH:
        request = request_of(row)
        if getattr(request, "session_id", 0) == FETCH_SESSION_ID_BUG:
            return "Kafka's session cache fails on the largest session id"
        if int(row["api"].split("v")[1]) >= 13 and any(
                t.topic_id is None or t.topic_id.int == 0 for t in request.topics):
            return "Kafka fails (NullPointerException) on the zero topic id"
    return None


def timed_out_only(differences: list[list[str]]) -> bool:
    """Every difference is an error one side answered REQUEST_TIMED_OUT for, or the
    error message beside it (the other side's answer carries its own message)."""
    timed_out = {path.removesuffix("error_code") for path, node, kafka in differences
                 if path.endswith("error_code") and "'request_timed_out'" in (node, kafka)}
    return bool(timed_out) and all(
        path.removesuffix("error_code") in timed_out
        or path.removesuffix("error_message") in timed_out for path, _, _ in differences)


@pytest.fixture(scope="module")
def sides(tmp_path_factory: pytest.TempPathFactory, kafka_installed: str
          ) -> Iterator[list[fuzz_vs_kafka.Side]]:
    started: list[fuzz_vs_kafka.Side] = []
    try:
        fuzz_vs_kafka.start_sides(started, tmp_path_factory.mktemp("conformance"), "4.4.0")
        for side in started:
            conformance.coordinator_ready(side)
        yield started
    finally:
        for side in started:
            side.down()


def test_every_answer_of_the_corpus_is_kafkas_or_its_difference_explained(
        sides: list[fuzz_vs_kafka.Side]) -> None:
    rows = conformance.run_corpus(sides, SEED, PER_VERSION, TIMEOUT_S)
    unexplained = [row for row in rows if not row["identical"] and cause(row) is None]
    assert not unexplained, "\n".join(
        f"frame {r['i']} ({ApiKey(int(r['api'].split('v')[0])).name} {r['api']}, "
        f"{r['listener']}): {json.dumps(r['differences'])}" for r in unexplained)
    identical = sum(r["identical"] for r in rows)
    # Every API the node serves is in the corpus, and most answers are Kafka's exactly.
    assert len(rows) >= 300 and identical >= 0.9 * len(rows), (identical, len(rows))
