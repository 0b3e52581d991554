"""`brownout metadata-quorum describe`: kafka-metadata-quorum.sh's --status and
--replication output."""

from __future__ import annotations

import uuid

from brownout.cluster.quorum import format_replication, format_status, format_table
from brownout.cluster.wire import QuorumInfo, QuorumReplica, endpoint_text, kafka_uuid_text

QUORUM = QuorumInfo(
    leader_id=2, leader_epoch=7, high_watermark=150, voters=(1, 2, 3), observers=(10,),
    voter_states=(QuorumReplica(1, 140, 1000, 900), QuorumReplica(2, 150, 1100, 1100),
                  QuorumReplica(3, 150, 1050, 1050)),
    observer_states=(QuorumReplica(10, 150, 1090, 1090),),
)


def test_status_measures_the_furthest_follower():
    assert format_status("abc", QUORUM) == [
        "ClusterId:              abc",
        "LeaderId:               2",
        "LeaderEpoch:            7",
        "HighWatermark:          150",
        "MaxFollowerLag:         10",
        "MaxFollowerLagTimeMs:   200",
        'CurrentVoters:          [{"id": 1}, {"id": 2}, {"id": 3}]',
        'CurrentObservers:       [{"id": 10}]',
    ]
    alone = QuorumInfo(1, 1, 5, (1,), (), (QuorumReplica(1, 5, -1, -1),))
    assert format_status("x", alone)[4:6] == ["MaxFollowerLag:         0",
                                               "MaxFollowerLagTimeMs:   0"]


def test_status_names_directory_ids_and_endpoints_when_describe_quorum_v2_has_them():
    voters = (QuorumReplica(1, 5, 1, 1, "MvDxzVmcRsaTz33bUuRU6A"), QuorumReplica(2, 5, 1, 1))
    q = QuorumInfo(1, 3, 5, (1, 2), (), voters, (),
                   ((1, ("CONTROLLER://127.0.0.1:9093", "SSL://[::1]:9094")),))
    assert format_status("c", q)[6] == (
        'CurrentVoters:          [{"id": 1, "directoryId": "MvDxzVmcRsaTz33bUuRU6A", '
        '"endpoints": ["CONTROLLER://127.0.0.1:9093", "SSL://[::1]:9094"]}, {"id": 2}]')
    assert format_replication(q)[1].split("\t")[1] == "MvDxzVmcRsaTz33bUuRU6A"
    assert endpoint_text("SSL", "::1", 9094) == "SSL://[::1]:9094"
    assert kafka_uuid_text(uuid.UUID("32f0f1cd-599c-46c6-93cf-7ddb52e454e8")) == (
        "MvDxzVmcRsaTz33bUuRU6A")
    assert kafka_uuid_text(None) == "AAAAAAAAAAAAAAAAAAAAAA"


def test_replication_rows_leader_first_and_padded_with_tabs():
    lines = format_replication(QUORUM)
    assert lines[0] == ("NodeId\tDirectoryId           \tLogEndOffset\tLag\t"
                        "LastFetchTimestamp\tLastCaughtUpTimestamp\tStatus  \t")
    assert [[*line.split("\t")[:4], line.split("\t")[6]] for line in lines[1:]] == [
        ["2     ", "AAAAAAAAAAAAAAAAAAAAAA", "150         ", "0  ", "Leader  "],
        ["1     ", "AAAAAAAAAAAAAAAAAAAAAA", "140         ", "10 ", "Follower"],
        ["3     ", "AAAAAAAAAAAAAAAAAAAAAA", "150         ", "0  ", "Follower"],
        ["10    ", "AAAAAAAAAAAAAAAAAAAAAA", "150         ", "0  ", "Observer"],
    ]
    human = format_replication(QUORUM, human_readable=True, now_ms=2000)
    assert human[2].split("\t")[4:6] == ["1000 ms ago       ", "1100 ms ago          "]
    never = QuorumInfo(1, 1, 5, (1,), (4,), (QuorumReplica(1, 5),), (QuorumReplica(4, 0),))
    assert format_replication(never)[2].split("\t")[3:6] == [
        "5  ", "-1                ", "-1                   "]
    assert format_table(["a", "bb"], [["ccc", "d"]]) == ["a  \tbb\t", "ccc\td \t"]
