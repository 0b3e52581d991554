"""What `brownout consumer-groups` and `brownout leader-election` print: the columns,
widths and messages of kafka-consumer-groups.sh and kafka-leader-election.sh."""

from brownout.cluster.groups import (
    Member,
    OffsetRow,
    clamp_offset,
    format_election,
    format_members,
    format_offsets,
    format_reset,
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
    assert lines[1].rstrip() == "GROUP                          TOPIC                          " \
        "PARTITION  NEW-OFFSET"
    assert [line.split() for line in lines[2:]] == [["g", "t", "0", "0"], ["g", "t", "1", "5"]]
    assert format_reset("g", {}) == []
    assert clamp_offset(3, 0, 10) == (3, None)
    assert clamp_offset(12, 0, 10) == (
        10, "New offset (12) is higher than latest offset. Value will be set to 10")
    assert clamp_offset(-4, 2, 10)[0] == 2


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
