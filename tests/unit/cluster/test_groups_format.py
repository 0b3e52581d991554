"""What `brownout consumer-groups` and `brownout leader-election` print: the columns,
widths and messages of kafka-consumer-groups.sh and kafka-leader-election.sh."""

import pytest

from brownout.cluster.admin import AdminError
from brownout.cluster.groups import (
    Member,
    OffsetRow,
    clamp_offset,
    format_election,
    format_members,
    format_offsets,
    format_reset,
    parse_reset_datetime,
    shifted_offsets,
)


def test_offsets_columns_widen_to_the_longest_value():
    rows = [
        OffsetRow("g", "orders", 0, 3, 10, "consumer-1-abc", "/127.0.0.1", "consumer-1"),
        OffsetRow("g", "a-much-longer-topic-name", 1, None, 4),
    ]
    lines = format_offsets(rows)
    assert lines[0] == ""
    assert lines[1] == (
        "GROUP           TOPIC                    PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  "
        "LAG             CONSUMER-ID     HOST            CLIENT-ID")
    assert lines[2] == (
        "g               orders                   0          3               10              "
        "7               consumer-1-abc  /127.0.0.1      consumer-1")
    # No committed offset: no lag; nobody owns it: dashes.
    assert lines[3] == (
        "g               a-much-longer-topic-name 1          -               4               "
        "-               -               -               -")


def test_members_show_instance_ids_only_for_static_groups():
    members = [Member("g", "m-1", None, "/127.0.0.1", "c1", (("t", 1), ("t", 0), ("u", 2))),
               Member("g", "m-2", None, "/127.0.0.1", "c2", ())]
    lines = format_members(members, verbose=True)
    assert lines[1] == ("GROUP           CONSUMER-ID     HOST            CLIENT-ID       "
                        "#PARTITIONS     ASSIGNMENT")
    assert lines[2] == ("g               m-1             /127.0.0.1      c1              "
                        "3               t(0,1), u(2)")
    assert lines[3].endswith("0               -")
    static = format_members([Member("g", "m-1", "i-1", "h", "c", ())], verbose=False)
    assert static[1].split() == ["GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST",
                                 "CLIENT-ID", "#PARTITIONS"]


def test_reset_lines_and_clamping():
    lines = format_reset("g", {("t", 1): 5, ("t", 0): 0})
    # Kafka 4.x: group and topic as wide as their longest value, 15 at least
    assert lines == ["",
                     "GROUP           TOPIC           PARTITION  NEW-OFFSET",
                     "g               t               0          0",
                     "g               t               1          5"]
    wide = format_reset("a-group-with-a-long-name", {("a-topic-with-a-longer-name", 0): 7})
    assert wide[2] == "a-group-with-a-long-name a-topic-with-a-longer-name 0          7"
    assert format_reset("g", {}) == []
    assert clamp_offset(3, 0, 10) == (3, None)
    assert clamp_offset(12, 0, 10) == (
        10, "New offset (12) is higher than latest offset. Value will be set to 10")
    assert clamp_offset(-4, 2, 10)[0] == 2


def test_shift_by_moves_committed_offsets_and_needs_one():
    t0, t1 = ("t", 0), ("t", 1)
    assert shifted_offsets([t0, t1], {t0: 5, t1: 2}, -3) == {t0: 2, t1: -1}
    with pytest.raises(AdminError, match=r"^Cannot shift offset for partition t-1 since "
                       r"there is no current committed offset$"):
        shifted_offsets([t0, t1], {t0: 5}, 1)


@pytest.mark.parametrize(("text", "millis"), [
    ("2021-06-15T11:01:01.999", 1623754861999),        # no zone: UTC, as Kafka reads it
    ("2021-06-15T11:01:01.999Z", 1623754861999),
    ("2021-06-15T11:01:01.999+08:00", 1623726061999),
    ("2021-06-15T11:01:01.999+0800", 1623726061999),
    ("2021-06-15T11:01:01.999+08", 1623726061999),
    ("2021-06-15T11:01:01.999-01:30", 1623760261999),
    ("1970-01-01T00:00:00.000", 0),
])
def test_to_datetime_reads_kafkas_formats(text, millis):
    assert parse_reset_datetime(text) == millis


@pytest.mark.parametrize("text", ["2021-06-15", "2021-06-15T11:01:01", "2021-02-30T00:00:00.000",
                                  "2021-06-15T11:01:01.999 UTC", "yesterday"])
def test_to_datetime_refuses_what_kafka_refuses(text):
    with pytest.raises(ValueError, match="cannot read"):
        parse_reset_datetime(text)


def test_election_lines():
    lines, failed = format_election("PREFERRED", {
        ("t", 1): None, ("t", 0): None,
        ("u", 0): "ELECTION_NOT_NEEDED: Broker: Leader election not needed",
        ("v", 0): "PREFERRED_LEADER_NOT_AVAILABLE: Broker: Preferred leader not available",
    })
    assert lines == [
        "Successfully completed leader election (PREFERRED) for partitions t-0, t-1",
        "Valid replica already elected for partitions u-0",
        "Error completing leader election (PREFERRED) for partition: v-0: "
        "PREFERRED_LEADER_NOT_AVAILABLE: Broker: Preferred leader not available",
    ]
    assert failed == 1
