"""What `brownout consumer-groups` and `brownout leader-election` print: the columns,
widths and messages of kafka-consumer-groups.sh and kafka-leader-election.sh."""

import pytest

from brownout.cluster.admin import AdminError
from brownout.cluster.groups import (
    GroupSummary,
    Member,
    OffsetRow,
    clamp_offset,
    format_election,
    format_members,
    format_offsets,
    format_reset,
    format_state,
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
    # --verbose (Kafka 4.x): the committed offset's leader epoch after the partition.
    verbose = format_offsets([OffsetRow("g", "t", 0, 3, 10, leader_epoch=4),
                              OffsetRow("g", "t", 1, 3, 10)], verbose=True)
    assert verbose[1].split() == ["GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH",
                                  "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID",
                                  "HOST", "CLIENT-ID"]
    assert verbose[2] == ("g               t               0          4               3     "
                          "          10              7               -               -     "
                          "          -")
    assert verbose[3].split()[3] == "-"


def test_members_show_instance_ids_only_for_static_groups():
    members = [Member("g", "m-1", None, "/127.0.0.1", "c1", (("t", 1), ("t", 0), ("u", 2))),
               Member("g", "m-2", None, "/127.0.0.1", "c2", ())]
    lines = format_members(members, verbose=False)
    assert lines[1] == ("GROUP           CONSUMER-ID     HOST            CLIENT-ID       "
                        "#PARTITIONS     ")
    assert lines[2] == ("g               m-1             /127.0.0.1      c1              "
                        "3               ")
    static = format_members([Member("g", "m-1", "i-1", "h", "c", ())], verbose=False)
    assert static[1].split() == ["GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST",
                                 "CLIENT-ID", "#PARTITIONS"]


def test_verbose_members_show_kafka_4s_epoch_and_assignment_columns():
    members = [Member("g", "m-1", None, "/127.0.0.1", "c1",
                      (("t", 10), ("t", 2), ("a-topic-with-a-long-name", 0))),
               Member("g", "m-2", None, "/127.0.0.1", "c2", (), (("t", 0),))]
    lines = format_members(members, verbose=True)
    prefix = format_members(members, verbose=False)
    # Each verbose line is the plain one with the four columns after it; partitions in
    # numeric order, topics sorted, ';' between them, at least 20 wide.
    assert [line[:len(p)] for line, p in zip(lines, prefix, strict=True)] == prefix
    current = "a-topic-with-a-long-name:0;t:2,10"  # 33 characters: the column's width
    assert lines[1][len(prefix[1]):] == (
        f"CURRENT-EPOCH   {'CURRENT-ASSIGNMENT':<33} TARGET-EPOCH    TARGET-ASSIGNMENT   ")
    assert lines[2][len(prefix[2]):] == (
        f"-               {current} -               -                   ")
    assert lines[3][len(prefix[3]):] == (
        f"-               {'-':<33} -               t:0                 ")


def test_state_line_pads_the_coordinator_to_25_and_dashes_a_missing_assignor():
    summary = GroupSummary("g", "127.0.0.1", 9092, 3, "range", "Stable", 1)
    assert format_state(summary) == [
        "",
        "GROUP           COORDINATOR (ID)          ASSIGNMENT-STRATEGY  STATE                "
        "#MEMBERS",
        "g               127.0.0.1:9092  (3)       range                Stable               1"]
    empty = GroupSummary("a-group-with-a-long-name", "a-long-broker-host-name", 19092, 1003,
                         "", "Empty", 0)
    coordinator = "a-long-broker-host-name:19092  (1003)"  # 37 characters
    assert format_state(empty, verbose=True) == [
        "",
        f"GROUP                    {'COORDINATOR (ID)':<37} ASSIGNMENT-STRATEGY  "
        "STATE                GROUP-EPOCH     TARGET-ASSIGNMENT-EPOCH   #MEMBERS",
        f"a-group-with-a-long-name {coordinator} -                    "
        "Empty                -               -                         0"]


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
