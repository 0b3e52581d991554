"""The lines `brownout console-producer` reads, as records: the rules of the line reader
of Apache Kafka's kafka-console-producer (its default `LineMessageReader`), pure.

Each line is one record. With parse.headers=true a line starts with its headers and
headers.delimiter; with parse.key=true the key and key.separator come next; the rest is
the value:

    h1:v1,h2:v2<headers.delimiter>key<key.separator>value

Headers are split on headers.separator, which Kafka reads as a regular expression (here
Python's, the same for plain separators), and each header on its first
headers.key.separator. A key, value, header value or the whole headers part equal to
null.marker is null. A line without a separator it needs is an error naming the line,
unless ignore.error=true: then the part is absent (no headers; a null key and the whole
rest as the value).
"""

from __future__ import annotations

import dataclasses
import io
import re
from collections.abc import Callable, Iterator, Mapping
from typing import BinaryIO

# Kafka's defaults for the reader's properties.
DEFAULT_KEY_SEPARATOR = "\t"
DEFAULT_HEADERS_DELIMITER = "\t"
DEFAULT_HEADERS_SEPARATOR = ","
DEFAULT_HEADERS_KEY_SEPARATOR = ":"


class LineError(ValueError):
    """A line the reader cannot take apart (the message names the line)."""


def is_true(value: str | None) -> bool:
    """A boolean property as Kafka's tools read it: "true" in any case, blanks around."""
    return value is not None and value.strip().lower() == "true"


@dataclasses.dataclass(frozen=True)
class ReaderSettings:
    parse_key: bool = False
    key_separator: str = DEFAULT_KEY_SEPARATOR
    parse_headers: bool = False
    headers_delimiter: str = DEFAULT_HEADERS_DELIMITER
    headers_separator: str = DEFAULT_HEADERS_SEPARATOR
    headers_key_separator: str = DEFAULT_HEADERS_KEY_SEPARATOR
    ignore_error: bool = False
    null_marker: str | None = None

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> ReaderSettings:
        """The settings the --property (--reader-property) pairs give; other keys are
        ignored, as a reader ignores what it does not know. ValueError for the
        separators Kafka refuses: two of the header separators alike, or one of the
        separators equal to null.marker."""
        settings = cls(
            parse_key=is_true(props.get("parse.key")),
            key_separator=props.get("key.separator", DEFAULT_KEY_SEPARATOR),
            parse_headers=is_true(props.get("parse.headers")),
            headers_delimiter=props.get("headers.delimiter", DEFAULT_HEADERS_DELIMITER),
            headers_separator=props.get("headers.separator", DEFAULT_HEADERS_SEPARATOR),
            headers_key_separator=props.get("headers.key.separator",
                                            DEFAULT_HEADERS_KEY_SEPARATOR),
            ignore_error=is_true(props.get("ignore.error")),
            null_marker=props.get("null.marker"),
        )
        settings.check()
        return settings

    def check(self) -> None:
        pairs = [
            ("headers.delimiter", self.headers_delimiter, "headers.separator",
             self.headers_separator),
            ("headers.delimiter", self.headers_delimiter, "headers.key.separator",
             self.headers_key_separator),
            ("headers.separator", self.headers_separator, "headers.key.separator",
             self.headers_key_separator),
            ("null.marker", self.null_marker, "key.separator", self.key_separator),
            ("null.marker", self.null_marker, "headers.separator", self.headers_separator),
            ("null.marker", self.null_marker, "headers.delimiter", self.headers_delimiter),
            ("null.marker", self.null_marker, "headers.key.separator",
             self.headers_key_separator),
        ]
        for name, value, other, other_value in pairs:
            if value is not None and value == other_value:
                raise ValueError(f"{name} and {other} may not be equal (both {value!r})")
        try:
            re.compile(self.headers_separator)
        except re.error as e:
            raise ValueError(f"headers.separator {self.headers_separator!r} is not a "
                             f"regular expression: {e}") from None


@dataclasses.dataclass(frozen=True)
class LineRecord:
    """One line's record; None is null."""

    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


def split_like_java(pattern: str, text: str) -> list[str]:
    """`text` split around the matches of `pattern` as Java's String.split(regex) splits:
    no empty leading part for a zero-width match at the start, trailing empty parts
    dropped; "" is [""]."""
    if not text:
        return [text]
    parts = []
    start = 0
    for match in re.finditer(pattern, text):
        if match.end() == 0:
            continue
        parts.append(text[start:match.start()])
        start = match.end()
    parts.append(text[start:])
    while parts and not parts[-1]:
        parts.pop()
    return parts


def _part_before(line: str, start: int, separator: str, what: str, number: int,
                 settings: ReaderSettings) -> str | None:
    """The text from `start` to the next `separator`; None when the separator is missing
    and errors are ignored."""
    end = line.find(separator, start)
    if end < 0:
        if settings.ignore_error:
            return None
        raise LineError(f"No {what} found on line number {number}: '{line}'")
    return line[start:end]


def _encoded(text: str | None, null_marker: str | None) -> bytes | None:
    return None if text is None or text == null_marker else text.encode("utf-8")


def _headers(text: str, number: int, settings: ReaderSettings
             ) -> tuple[tuple[str, bytes | None], ...]:
    headers: list[tuple[str, bytes | None]] = []
    for pair in split_like_java(settings.headers_separator, text):
        at = pair.find(settings.headers_key_separator)
        if at < 0:
            if settings.ignore_error:
                headers.append((pair, None))
                continue
            raise LineError(f"No header key separator found in pair '{pair}' on line "
                            f"number {number}")
        key = pair[:at]
        if key == settings.null_marker:
            raise LineError(f"Header keys should not be equal to the null marker "
                            f"'{settings.null_marker}' as they can't be null (line number "
                            f"{number})")
        value = pair[at + len(settings.headers_key_separator):]
        headers.append((key, _encoded(value, settings.null_marker)))
    return tuple(headers)


def parse_line(line: str, number: int, settings: ReaderSettings) -> LineRecord:
    """Line `number` (1 for the first) without its line terminator, as a record.
    LineError when a separator it needs is missing and errors are not ignored."""
    offset = 0
    headers_text = None
    if settings.parse_headers:
        headers_text = _part_before(line, 0, settings.headers_delimiter,
                                    "headers delimiter", number, settings)
        if headers_text is not None:
            offset = len(headers_text) + len(settings.headers_delimiter)
    key = None
    if settings.parse_key:
        key = _part_before(line, offset, settings.key_separator, "key separator", number,
                           settings)
        if key is not None:
            offset += len(key) + len(settings.key_separator)
    headers: tuple[tuple[str, bytes | None], ...] = ()
    if headers_text is not None and headers_text != settings.null_marker:
        headers = _headers(headers_text, number, settings)
    return LineRecord(_encoded(key, settings.null_marker),
                      _encoded(line[offset:], settings.null_marker), headers)


def text_lines(stream: BinaryIO, before_each: Callable[[], None] | None = None
               ) -> Iterator[str]:
    """The lines of `stream` as UTF-8 text (undecodable bytes replaced), without their
    terminators: \n, \r\n or \r, each ends a line, as for Java's readLine.
    `before_each` runs before each line is read (the producer's prompt)."""
    text = io.TextIOWrapper(stream, encoding="utf-8", errors="replace", newline=None)
    try:
        while True:
            if before_each is not None:
                before_each()
            line = text.readline()
            if not line:
                return
            yield line.removesuffix("\n")
    finally:
        if not stream.closed:
            text.detach()  # the stream stays open: it is the caller's
