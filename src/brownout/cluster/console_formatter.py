"""The text `brownout console-consumer` prints for each record: the output of Apache
Kafka's kafka-console-consumer with its default formatter (`DefaultMessageFormatter`),
byte for byte, pure.

The fields come in this order, each printed only when its print.* property is true:

    CreateTime:1700000000000  Partition:0  Offset:5  Delivery:NOT_PRESENT
    Epoch:NOT_PRESENT  h1:v1,h2:v2  key  value

Fields are separated by key.separator (default a tab); after the last printed field
comes line.separator (default a newline) instead. Only print.value is on by default. A
record without headers prints NO_HEADERS; a null key, value or header value prints
null.literal (default "null"); a record without a timestamp prints NO_TIMESTAMP. Kafka's
console consumer hands its formatter records without a delivery count or leader epoch,
so print.delivery and print.epoch always print NOT_PRESENT there, and here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from .console_reader import is_true

# Kafka's names of the timestamp types, as its records print them.
CREATE_TIME = "CreateTime"
LOG_APPEND_TIME = "LogAppendTime"
NOT_PRESENT = "NOT_PRESENT"

# The properties that name a Java class to turn bytes into text: nothing to load here.
DESERIALIZER_PROPERTIES = ("key.deserializer", "value.deserializer", "headers.deserializer")


@dataclasses.dataclass(frozen=True)
class FormatterSettings:
    print_timestamp: bool = False
    print_key: bool = False
    print_value: bool = True
    print_partition: bool = False
    print_offset: bool = False
    print_delivery: bool = False
    print_epoch: bool = False
    print_headers: bool = False
    key_separator: bytes = b"\t"
    line_separator: bytes = b"\n"
    headers_separator: bytes = b","
    null_literal: bytes = b"null"

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> FormatterSettings:
        """The settings the --property (--formatter-property) pairs give; a property not
        given keeps its default, other keys are ignored. ValueError for a deserializer,
        which names a Java class."""
        for name in DESERIALIZER_PROPERTIES:
            if name in props:
                raise ValueError(f"{name}={props[name]}: the twin prints keys, values and "
                                 "headers as the bytes they are (Kafka's default); it "
                                 "loads no Java deserializer")
        defaults = cls()

        def flag(name: str, default: bool) -> bool:
            return is_true(props[name]) if name in props else default

        def text(name: str, default: bytes) -> bytes:
            return props[name].encode("utf-8") if name in props else default

        return cls(
            print_timestamp=flag("print.timestamp", defaults.print_timestamp),
            print_key=flag("print.key", defaults.print_key),
            print_value=flag("print.value", defaults.print_value),
            print_partition=flag("print.partition", defaults.print_partition),
            print_offset=flag("print.offset", defaults.print_offset),
            print_delivery=flag("print.delivery", defaults.print_delivery),
            print_epoch=flag("print.epoch", defaults.print_epoch),
            print_headers=flag("print.headers", defaults.print_headers),
            key_separator=text("key.separator", defaults.key_separator),
            line_separator=text("line.separator", defaults.line_separator),
            headers_separator=text("headers.separator", defaults.headers_separator),
            null_literal=text("null.literal", defaults.null_literal),
        )


@dataclasses.dataclass(frozen=True)
class ConsumedRecord:
    """A record as the consumer got it; None is null."""

    partition: int
    offset: int
    timestamp_type: str | None  # CREATE_TIME, LOG_APPEND_TIME, or None: no timestamp
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


def format_record(record: ConsumedRecord, settings: FormatterSettings) -> bytes:
    """What Kafka's console consumer writes for `record`, line separator included (nothing
    at all when every print.* property is false)."""
    s = settings

    def or_null(data: bytes | None) -> bytes:
        return s.null_literal if data is None else data

    fields: list[bytes] = []
    if s.print_timestamp:
        fields.append(b"NO_TIMESTAMP" if record.timestamp_type is None
                      else f"{record.timestamp_type}:{record.timestamp}".encode())
    if s.print_partition:
        fields.append(f"Partition:{record.partition}".encode())
    if s.print_offset:
        fields.append(f"Offset:{record.offset}".encode())
    if s.print_delivery:
        fields.append(f"Delivery:{NOT_PRESENT}".encode())
    if s.print_epoch:
        fields.append(f"Epoch:{NOT_PRESENT}".encode())
    if s.print_headers:
        fields.append(s.headers_separator.join(
            key.encode("utf-8") + b":" + or_null(value) for key, value in record.headers)
            if record.headers else b"NO_HEADERS")
    if s.print_key:
        fields.append(or_null(record.key))
    if s.print_value:
        fields.append(or_null(record.value))
    if not fields:
        return b""
    return s.key_separator.join(fields) + s.line_separator
