"""The fetcher's side of fetch sessions, against hand-made responses, and then against
the broker's side (FetchManager) so the two agree on every step."""

import random

from kio.schema.errors import ErrorCode

from brownout.broker.fetch_session import (
    INVALID_SESSION_ID,
    FetchManager,
    FetchMetadata,
    FetchSessionCache,
    PartitionData,
    TopicIdPartition,
)
from brownout.broker.fetch_session_handler import FetchSessionHandler
from brownout.broker.partition import TopicPartition

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


def data(offset: int, epoch: int = 3) -> PartitionData:
    return PartitionData(offset, 0, 1_048_576, epoch, epoch)


def started(wanted) -> FetchSessionHandler:
    """A handler whose full fetch of `wanted` created session 77."""
    h = FetchSessionHandler(node=1)
    fetch = h.build(wanted)
    assert fetch.is_full and fetch.to_send == wanted
    assert h.handle_response(ErrorCode.none, 77, set(wanted))
    assert h.next_metadata == FetchMetadata(77, 1)
    return h


def test_first_fetch_is_full_and_opens_a_session():
    h = FetchSessionHandler(node=1)
    fetch = h.build({A0: data(5), A1: data(0)})
    assert fetch.metadata == FetchMetadata(0, 0) and fetch.to_forget == []
    assert h.handle_response(ErrorCode.none, 77, {A0, A1})
    assert h.session_id == 77


def test_incremental_fetch_names_only_changed_and_added_partitions_and_forgets_removed():
    h = started({A0: data(5), A1: data(0)})
    fetch = h.build({A0: data(5), A1: data(0)})
    assert not fetch.is_full and fetch.metadata == FetchMetadata(77, 1)
    assert fetch.to_send == {} and fetch.to_forget == []
    assert h.handle_response(ErrorCode.none, 77, set())

    fetch = h.build({B0: data(0), A0: data(9)})
    assert fetch.metadata == FetchMetadata(77, 2)
    # New partitions first, then the altered ones.
    assert list(fetch.to_send) == [B0, A0]
    assert fetch.to_forget == [A1]
    assert set(fetch.session_partitions) == {A0, B0}
    assert h.handle_response(ErrorCode.none, 77, {A0})
    assert h.next_metadata == FetchMetadata(77, 3)


def test_an_epoch_change_alone_is_a_change():
    h = started({A0: data(5)})
    assert h.build({A0: data(5, epoch=4)}).to_send == {A0: data(5, epoch=4)}


def test_session_not_found_starts_over_with_a_fresh_session():
    h = started({A0: data(5)})
    h.build({A0: data(5)})
    assert not h.handle_response(ErrorCode.fetch_session_id_not_found, 0, set())
    assert h.next_metadata == FetchMetadata(0, 0)
    assert h.build({A0: data(5)}).to_send == {A0: data(5)}


def test_invalid_epoch_closes_the_session_and_asks_for_a_new_one():
    h = started({A0: data(5)})
    h.build({A0: data(5)})
    assert not h.handle_response(ErrorCode.invalid_fetch_session_epoch, 0, set())
    fetch = h.build({A0: data(5)})
    assert fetch.metadata == FetchMetadata(77, 0) and fetch.is_full


def test_network_error_and_close():
    h = started({A0: data(5)})
    h.handle_error()
    assert h.next_metadata == FetchMetadata(77, 0)
    h.notify_close()
    assert h.next_metadata == FetchMetadata(77, -1)


def test_responses_the_session_does_not_explain_are_refused():
    h = FetchSessionHandler(node=1)
    h.build({A0: data(5), A1: data(0)})
    assert not h.handle_response(ErrorCode.none, 77, {A0})  # A1 omitted from a full answer
    assert h.next_metadata == FetchMetadata(0, 0)
    h = started({A0: data(5)})
    h.build({A0: data(5)})
    assert not h.handle_response(ErrorCode.none, 77, {B0})  # not in the session
    assert h.next_metadata == FetchMetadata(77, 0)


def test_no_session_granted_means_full_fetches_every_time():
    h = FetchSessionHandler(node=1)
    h.build({A0: data(5)})
    assert h.handle_response(ErrorCode.none, INVALID_SESSION_ID, {A0})
    assert h.build({A0: data(5)}).is_full


def test_handler_and_manager_agree_over_many_rounds():
    """A follower's fetcher and a leader's FetchManager, driven by a seeded random
    sequence of offset changes, partition moves and lost responses: the partitions the
    leader reads are always exactly what the follower wants, with the same requests."""
    rng = random.Random(7)
    fm = FetchManager(FetchSessionCache(10, rng=random.Random(1), num_shards=1))
    h = FetchSessionHandler(node=1)
    universe = [TopicPartition(t, p) for t in "abc" for p in range(4)]
    wanted = {tp: data(0) for tp in universe[:6]}
    fulls = 0
    for round_ in range(400):
        if rng.random() < 0.1:
            tp = rng.choice(universe)
            if tp in wanted:
                del wanted[tp]
            else:
                wanted[tp] = data(0)
        for tp in list(wanted):
            if rng.random() < 0.2:
                wanted[tp] = data(wanted[tp].fetch_offset + 1)
        if not wanted:
            wanted[universe[0]] = data(0)
        fetch = h.build(dict(wanted))
        fulls += fetch.is_full
        ctx = fm.new_context(
            12,
            fetch.metadata,
            True,
            {TopicIdPartition(None, tp.topic, tp.partition): d for tp, d in fetch.to_send.items()},
            [TopicIdPartition(None, tp.topic, tp.partition) for tp in fetch.to_forget],
            {},
            round_,
        )
        read = {TopicPartition(p.topic, p.partition): d for p, d in ctx.partitions()}
        if ctx.partitions() or fetch.metadata.is_full:
            assert read == wanted, f"round {round_}"
        if rng.random() < 0.05:
            h.handle_error()  # the response was lost
            continue

        class Res:
            error = ErrorCode.none
            high_watermark = round_ // 10
            log_start_offset = 0
            records = b""
            diverging_epoch = None
            preferred_read_replica = -1

        resp = ctx.update_and_generate([(p, Res()) for p, _ in ctx.partitions()], round_)
        answered = {TopicPartition(p.topic, p.partition) for p, _ in resp.partitions}
        assert h.handle_response(resp.error, resp.session_id, answered) or resp.error
    # Lost responses force new sessions now and then, but most fetches are incremental.
    assert 1 <= fulls < 60
