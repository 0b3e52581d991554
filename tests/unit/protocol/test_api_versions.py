"""The version ranges a broker advertises: Kafka 3.9's, or Kafka 4.0.0's (KIP-896)."""

from __future__ import annotations

import pytest

from brownout.protocol.apis import BROKER_APIS, ApiKey, advertised_versions


def test_3_9_is_the_table_as_it_is():
    assert advertised_versions(BROKER_APIS, "3.9") == BROKER_APIS


def test_4_0_drops_old_offset_commit_and_join_group_versions_only():
    v40 = advertised_versions(BROKER_APIS, "4.0")
    assert v40[ApiKey.OFFSET_COMMIT] == (2, BROKER_APIS[ApiKey.OFFSET_COMMIT][1])
    assert v40[ApiKey.JOIN_GROUP] == (2, BROKER_APIS[ApiKey.JOIN_GROUP][1])
    changed = {k for k in BROKER_APIS if v40[k] != BROKER_APIS[k]}
    assert changed == {ApiKey.OFFSET_COMMIT, ApiKey.JOIN_GROUP}


@pytest.mark.parametrize(("key", "low"), [
    (ApiKey.PRODUCE, 3), (ApiKey.FETCH, 4), (ApiKey.LIST_OFFSETS, 1), (ApiKey.METADATA, 0),
    (ApiKey.OFFSET_FETCH, 1), (ApiKey.CREATE_TOPICS, 2), (ApiKey.DELETE_TOPICS, 1),
    (ApiKey.OFFSET_FOR_LEADER_EPOCH, 2), (ApiKey.DESCRIBE_CONFIGS, 1),
    (ApiKey.DESCRIBE_LOG_DIRS, 1), (ApiKey.FIND_COORDINATOR, 0), (ApiKey.HEARTBEAT, 0),
])
def test_4_0_low_ends(key, low):
    assert advertised_versions(BROKER_APIS, "4.0")[key][0] == low


def test_a_range_4_0_empties_is_not_advertised():
    assert advertised_versions({ApiKey.OFFSET_COMMIT: (0, 1)}, "4.0") == {}


def test_an_unknown_set_is_refused():
    with pytest.raises(ValueError, match=r"expected 3\.9 or 4\.0"):
        advertised_versions(BROKER_APIS, "3.8")
