"""`brownout console-producer` and `console-consumer` refuse what Kafka's tools refuse
before they reach a cluster: bad options exit 2, an unreadable line exits 1 naming it.
Nothing listens at the bootstrap address given: no record is ever sent."""

from __future__ import annotations

import pytest
from _cli import invoke

NOWHERE = ("--bootstrap-server", "127.0.0.1:1")


def test_a_line_without_the_key_separator_stops_the_producer_naming_the_line():
    result = invoke(["console-producer", "--topic", "t", *NOWHERE, "--property",
                     "parse.key=true"], input="nosep\n")
    assert result.exit_code == 1, result.output
    assert result.stderr == "Error: No key separator found on line number 1: 'nosep'\n"
    # The deprecated --property is noted on stdout, as Kafka's tool notes it.
    assert result.stdout == ("Warning: --property is deprecated and will be removed in a "
                             "future version. Use --reader-property instead.\n")


@pytest.mark.parametrize(("args", "message"), [
    (["console-producer", "--topic", "t", "--property", "a=1", "--reader-property", "b=2"],
     "--property and --reader-property"),
    (["console-producer", "--topic", "t", "--property", "null.marker=:"],
     "null.marker and headers.key.separator may not be equal"),
    (["console-consumer", "--topic", "t", "--offset", "3"], "--offset needs --partition"),
    (["console-consumer", "--topic", "t", "--partition", "0", "--offset", "-3"],
     "--offset '-3'"),
    (["console-consumer", "--topic", "t", "--partition", "0", "--group", "g"],
     "--group or --partition"),
    (["console-consumer", "--topic", "t", "--property", "value.deserializer=x.Y"],
     "no Java deserializer"),
    (["console-consumer", "--topic", "t", "--consumer-property", "a=1",
      "--command-property", "a=1"], "--consumer-property and --command-property"),
])
def test_bad_options_exit_2(args, message):
    result = invoke([*args, *NOWHERE])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("Error: ") and message in result.stderr
    assert result.stdout == ""  # no deprecation notice before the refusal


def test_no_records_at_all_is_a_consumer_that_stops_at_once():
    result = invoke(["console-consumer", "--topic", "t", *NOWHERE, "--max-messages", "0"])
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert result.stderr == "Processed a total of 0 messages\n"
