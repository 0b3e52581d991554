"""`brownout producer-perf-test` and `consumer-perf-test` refuse what Kafka's tools
refuse, and what they cannot do, before they reach a cluster: exit 2 with one line.
Nothing listens at the bootstrap address given: no record is ever sent."""

from __future__ import annotations

import pytest
from _cli import invoke

NOWHERE = ("--bootstrap-server", "127.0.0.1:1")
PRODUCER = ["producer-perf-test", "--topic", "t", "--throughput", "-1", *NOWHERE]
CONSUMER = ["consumer-perf-test", "--topic", "t", *NOWHERE]


@pytest.mark.parametrize(("args", "message"), [
    ([*PRODUCER, "--num-records", "0", "--record-size", "1"],
     "--num-records should be greater than zero."),
    ([*PRODUCER, "--num-records", "5"], "exactly one of --record-size, --payload-file"),
    ([*PRODUCER, "--num-records", "5", "--record-size", "1", "--command-property",
      "acks=all", "linger"], "Invalid property: linger"),
    ([*PRODUCER, "--num-records", "5", "--record-size", "1", "stray"],
     "unrecognized arguments: 'stray'"),
    ([*PRODUCER, "--num-records", "5", "--record-size", "1", "--producer-props", "a=1",
      "--command-property", "b=2"],
     "--command-property and --producer-props cannot be specified together."),
    ([*PRODUCER, "--num-records", "5", "--record-size", "1", "--producer.config", "a",
      "--command-config", "b"],
     "--command-config and --producer.config cannot be specified together."),
    ([*PRODUCER, "--num-records", "5", "--record-size", "1", "--print-metrics"],
     "--print-metrics is not supported"),
    ([*PRODUCER, "--num-records", "5", "--record-size", "1", "--command-property",
      "max.block.ms=10"], "max.block.ms is a config of Kafka's Java client"),
    ([*PRODUCER, "--num-records", "5", "--record-size", "1", "--command-property",
      "no.such.config=1"], 'No such configuration property: "no.such.config"'),
    ([*CONSUMER], "Exactly one of --num-records or --messages"),
    ([*CONSUMER, "--num-records", "1", "--messages", "1"], "Exactly one of"),
    ([*CONSUMER, "--num-records", "1", "--consumer.config", "a", "--command-config", "b"],
     "can't be used with option"),
    ([*CONSUMER, "--num-records", "1", "--reporting-interval", "0"],
     "Reporting interval must be greater than 0."),
    ([*CONSUMER, "--num-records", "1", "--date-format", "yyyy-qq"],
     "Illegal pattern character 'q'"),
    ([*CONSUMER, "--num-records", "1", "--print-metrics"], "--print-metrics is not"),
])
def test_bad_options_exit_2(args, message):
    result = invoke(args)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("Error: ") and message in result.stderr
    assert result.stderr.count("\n") == 1


def test_several_properties_follow_one_option_as_in_kafkas_tool():
    # The second property is read as one: its error names it, not the parser.
    result = invoke([*PRODUCER, "--num-records", "5", "--record-size", "1",
                     "--command-property", "linger.ms=1", "max.block.ms=1"])
    assert result.exit_code == 2 and "max.block.ms" in result.stderr


def test_a_missing_payload_file_is_kafkas_error(tmp_path):
    result = invoke([*PRODUCER, "--num-records", "5", "--payload-file",
                     str(tmp_path / "none.txt")])
    assert result.exit_code == 1
    assert result.stdout == f"Reading payloads from: {tmp_path / 'none.txt'}\n"
    assert result.stderr == "Error: File does not exist or empty file provided.\n"
