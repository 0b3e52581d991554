"""What `brownout consumer-groups` and `brownout leader-election` print: the columns,
widths and messages of kafka-consumer-groups.sh and kafka-leader-election.sh."""

import pytest

from brownout.cluster.admin import AdminError
from brownout.cluster.groups import (
    GroupSummary,
    Member,
    OffsetRow,
    clamp_offset,
    csv_field,
    duration_ago,
    format_election,
    format_members,
    format_offsets,
    format_reset,
    format_reset_csv,
    format_state,
    parse_iso_duration,
    parse_reset_datetime,
    parse_reset_plan,
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
    lines = format_reset({"g": {("t", 1): 5, ("t", 0): 0}})
    # Kafka 4.x: group and topic as wide as their longest value, 15 at least; the
    # partitions in the order of Java's HashMap<TopicPartition, ...> (t-1 before t-0)
    assert lines == ["",
                     "GROUP           TOPIC           PARTITION  NEW-OFFSET",
                     "g               t               1          5",
                     "g               t               0          0"]
    wide = format_reset({"a-group-with-a-long-name": {("a-topic-with-a-longer-name", 0): 7}})
    assert wide[2] == "a-group-with-a-long-name a-topic-with-a-longer-name 0          7"
    # A group asked about with nothing to reset: Kafka still prints the header.
    assert format_reset({"g": {}}) == [
        "", "GROUP           TOPIC           PARTITION  NEW-OFFSET"]
    assert format_reset({}) == []
    assert clamp_offset(3, 0, 10) == (3, None)
    assert clamp_offset(12, 0, 10) == (
        10, "New offset (12) is higher than latest offset. Value will be set to 10")
    assert clamp_offset(-4, 2, 10)[0] == 2


def test_reset_of_several_groups_in_kafkas_order_with_shared_widths():
    # Java: a HashMap of "b", "a", "a-group-left-alone" iterates a, b, a-group-left-alone;
    # the group left alone (active, so not reset) still widens the group column.
    plans = {"b": {("orders", 0): 1}, "a": {("payments", 3): 4, ("payments", 0): 2},
             "a-group-left-alone": {}}
    assert format_reset(plans) == [
        "",
        "GROUP              TOPIC           PARTITION  NEW-OFFSET",
        "a                  payments        3          4",
        "a                  payments        0          2",
        "b                  orders          0          1"]


def test_export_writes_kafkas_csv():
    one = {"g": {("payments", 0): 2, ("payments", 3): 4}}
    assert format_reset_csv(one, with_group=False) == ["payments,3,4", "payments,0,2", ""]
    assert format_reset_csv(one, with_group=True) == ["g,payments,3,4", "g,payments,0,2", ""]
    assert format_reset_csv({"g": {}}, with_group=True) == [""]


@pytest.mark.parametrize(("text", "field"), [
    # As Jackson's CSV writer (2.21, Kafka 4.4's) wrote these group ids.
    ("plain", "plain"), ("-dash", "-dash"), ("a;b", "a;b"), ("é", "é"), ("~", "~"),
    ("", ""), ("a b", '"a b"'), (" lead", '" lead"'), ("a,b", '"a,b"'),
    ('a"b', '"a""b"'), ("#hash", '"#hash"'), ("x!", '"x!"'), ("+", '"+"'),
    ("a'b", '"a\'b"'), ("a\\b", '"a\\b"'), ("a\nb", '"a\nb"'),
])
def test_csv_fields_are_quoted_as_jackson_quotes_them(text, field):
    assert csv_field(text) == field


def test_from_file_reads_what_export_writes():
    plans = {"g,1": {("payments", 0): 2, ("payments", 3): 4}, "h": {("orders", 1): 0}}
    text = "\n".join(format_reset_csv(plans, with_group=True)) + "\n"
    assert parse_reset_plan(text, None) == plans
    assert parse_reset_plan(text, "g,1") == plans  # four fields: the groups are named
    three = "\n".join(format_reset_csv({"g": plans["g,1"]}, with_group=False))
    assert parse_reset_plan(three, "g") == {"g": plans["g,1"]}
    assert parse_reset_plan("", "g") == {}


@pytest.mark.parametrize(("text", "group", "message"), [
    ("t,0,5\n", None, r"^line 1: expected group,topic,partition,offset, got 3 field\(s\) "
     r"\(three fields only go with exactly one --group\)$"),
    ("t,0,5\ng,t,1,5\n", "g", r"^line 2: expected topic,partition,offset, got 4"),
    ("g,t,x,5\n", None, r"^line 1: the partition and offset must be whole numbers, got "
     r"'x' and '5'$"),
    ("\ng,t,0,\n", None, r"^line 2: the partition and offset"),
])
def test_from_file_names_the_line_that_does_not_fit(text, group, message):
    with pytest.raises(ValueError, match=message):
        parse_reset_plan(text, group)


@pytest.mark.parametrize(("text", "nanos"), [
    # Java's Duration.parse(text).toNanos()
    ("PT15M", 900_000_000_000), ("P1DT12H", 129_600_000_000_000), ("PT0.5S", 500_000_000),
    ("-PT6H3M", -21_780_000_000_000), ("PT-6H3M", -21_420_000_000_000),
    ("PT-0.5S", -500_000_000), ("P2D", 172_800_000_000_000), ("pt1m", 60_000_000_000),
    ("PT1,5S", 1_500_000_000), ("P-1DT1H", -82_800_000_000_000), ("PT0.000000001S", 1),
    ("-PT-1S", 1_000_000_000),
])
def test_by_duration_reads_javas_durations(text, nanos):
    assert parse_iso_duration(text) == nanos


@pytest.mark.parametrize("text", ["P", "PT", "15M", "P1H", "PT1.5", "1D",
                                  "PT1.1234567891S", " PT1S"])
def test_by_duration_refuses_what_java_refuses(text):
    with pytest.raises(ValueError, match=r"cannot read .* as a duration"):
        parse_iso_duration(text)


def test_by_duration_rounds_toward_the_past_as_instant_does():
    now = 1_700_000_000_123_456_789  # ns
    assert duration_ago(now, parse_iso_duration("PT0.0005S")) == 1_700_000_000_122
    assert duration_ago(now, parse_iso_duration("PT-0.0005S")) == 1_700_000_000_123
    assert duration_ago(now, parse_iso_duration("PT1M")) == 1_699_999_940_123


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
