"""What `brownout console-consumer` prints for a record: kafka-console-consumer's default
formatter, byte for byte."""

import pytest

from brownout.cluster.console_formatter import (
    CREATE_TIME,
    LOG_APPEND_TIME,
    ConsumedRecord,
    FormatterSettings,
    format_record,
)

RECORD = ConsumedRecord(partition=2, offset=41, timestamp_type=CREATE_TIME,
                        timestamp=1_700_000_000_123, key=b"k1", value=b"value one",
                        headers=(("h1", b"v1"), ("h2", None)))
EVERYTHING = {name: "true" for name in (
    "print.timestamp", "print.partition", "print.offset", "print.headers", "print.key")}


def formatted(record: ConsumedRecord = RECORD, **props: str) -> bytes:
    return format_record(record, FormatterSettings.from_properties(
        {k.replace("_", "."): v for k, v in props.items()}))


def test_by_default_only_the_value_and_a_newline():
    assert formatted() == b"value one\n"


def test_every_field_in_kafkas_order():
    settings = FormatterSettings.from_properties(EVERYTHING)
    assert format_record(RECORD, settings) == (
        b"CreateTime:1700000000123\tPartition:2\tOffset:41\th1:v1,h2:null\tk1\tvalue one\n")


def test_delivery_and_epoch_are_never_present_in_the_console_consumer():
    assert formatted(print_delivery="true", print_epoch="true", print_offset="true") == (
        b"Offset:41\tDelivery:NOT_PRESENT\tEpoch:NOT_PRESENT\tvalue one\n")


def test_null_key_and_value_print_the_null_literal():
    record = ConsumedRecord(0, 0, CREATE_TIME, 1, key=None, value=None)
    assert formatted(record, print_key="true") == b"null\tnull\n"
    assert formatted(record, print_key="true", null_literal="<nil>") == b"<nil>\t<nil>\n"


def test_a_record_without_headers_prints_no_headers():
    record = ConsumedRecord(0, 0, CREATE_TIME, 1, key=b"k", value=b"v")
    assert formatted(record, print_headers="true") == b"NO_HEADERS\tv\n"


def test_timestamp_types():
    append = ConsumedRecord(0, 0, LOG_APPEND_TIME, 5, None, b"v")
    assert formatted(append, print_timestamp="true") == b"LogAppendTime:5\tv\n"
    none = ConsumedRecord(0, 0, None, -1, None, b"v")
    assert formatted(none, print_timestamp="true") == b"NO_TIMESTAMP\tv\n"


def test_the_last_printed_field_ends_the_line():
    # Without the value the key is last: the line separator comes after it.
    assert formatted(print_key="true", print_value="false") == b"k1\n"
    assert formatted(print_partition="true", print_value="false") == b"Partition:2\n"
    assert formatted(print_value="false") == b""


def test_separators_are_the_given_text():
    text = formatted(print_key="true", print_headers="true", key_separator=" | ",
                     line_separator="\r\n--\r\n", headers_separator=";")
    assert text == b"h1:v1;h2:null | k1 | value one\r\n--\r\n"


def test_bytes_are_printed_as_they_are():
    record = ConsumedRecord(0, 0, CREATE_TIME, 1, key="clé".encode(), value=b"\xff\x00",
                            headers=(("ключ", "é".encode()),))
    assert formatted(record, print_key="true", print_headers="true") == (
        "ключ:é\tclé\t".encode() + b"\xff\x00\n")


def test_properties_given_keep_their_value_and_unknown_ones_are_ignored():
    settings = FormatterSettings.from_properties({"print.value": " FALSE ",
                                                  "print.key": "TRUE", "colour": "red"})
    assert (settings.print_key, settings.print_value) == (True, False)
    assert FormatterSettings.from_properties({"key.separator": ""}).key_separator == b""


@pytest.mark.parametrize("name", ["key.deserializer", "value.deserializer",
                                  "headers.deserializer"])
def test_a_java_deserializer_is_refused(name):
    with pytest.raises(ValueError, match=f"^{name}=x.Y: .*no Java deserializer"):
        FormatterSettings.from_properties({name: "x.Y"})
