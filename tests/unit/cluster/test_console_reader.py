"""How `brownout console-producer` takes lines apart: the rules of kafka-console-producer's
line reader (keys, headers, separators, null.marker, ignore.error)."""

import io

import pytest

from brownout.cluster.console_reader import (
    LineError,
    LineRecord,
    ReaderSettings,
    parse_line,
    split_like_java,
    text_lines,
)

KEYED = ReaderSettings.from_properties({"parse.key": "true"})
ALL = ReaderSettings.from_properties({"parse.key": "true", "parse.headers": "true",
                                      "null.marker": "NULL"})


def test_without_properties_the_whole_line_is_the_value():
    record = parse_line("a\tb:c,d", 1, ReaderSettings.from_properties({}))
    assert record == LineRecord(key=None, value=b"a\tb:c,d", headers=())


def test_a_key_ends_at_the_first_separator_and_the_value_keeps_the_rest():
    assert parse_line("k\tv\tw", 1, KEYED) == LineRecord(b"k", b"v\tw")
    assert parse_line("\t", 1, KEYED) == LineRecord(b"", b"")


def test_headers_key_and_value_in_that_order():
    record = parse_line("h1:v1,h2:a:b\tk\tv", 1, ALL)
    assert record == LineRecord(b"k", b"v", (("h1", b"v1"), ("h2", b"a:b")))


def test_the_null_marker_makes_key_value_header_values_or_all_headers_null():
    assert parse_line("h:NULL,g:x\tNULL\tNULL", 1, ALL) == LineRecord(
        None, None, (("h", None), ("g", b"x")))
    assert parse_line("NULL\tk\tv", 1, ALL) == LineRecord(b"k", b"v", ())
    # Only a whole field equal to the marker is null.
    assert parse_line("h:NULLx\tNULLx\txNULL", 1, ALL) == LineRecord(
        b"NULLx", b"xNULL", (("h", b"NULLx"),))


def test_without_a_null_marker_nothing_is_null():
    assert parse_line("null\tnull", 1, KEYED) == LineRecord(b"null", b"null")


def test_a_line_without_the_key_separator_is_an_error_naming_it():
    with pytest.raises(LineError, match=r"^No key separator found on line number 3: 'abc'$"):
        parse_line("abc", 3, KEYED)
    with pytest.raises(LineError, match="No key separator found on line number 1: ''"):
        parse_line("", 1, KEYED)


def test_a_missing_headers_delimiter_or_header_key_separator_is_an_error():
    with pytest.raises(LineError, match="No headers delimiter found on line number 2"):
        parse_line("h:1", 2, ALL)
    with pytest.raises(LineError, match="No header key separator found in pair 'h' on "
                                        "line number 4"):
        parse_line("g:1,h\tk\tv", 4, ALL)
    # An empty headers part is one empty pair, without its separator.
    with pytest.raises(LineError, match="in pair '' on line number 1"):
        parse_line("\tk\tv", 1, ALL)


def test_the_key_separator_is_looked_for_after_the_headers():
    # The headers end at the first delimiter; the key separator is searched after it.
    with pytest.raises(LineError, match="No key separator"):
        parse_line("h:1\tkv", 1, ALL)


def test_ignore_error_takes_a_line_as_it_is():
    settings = ReaderSettings.from_properties({"parse.key": "true", "parse.headers": "true",
                                               "ignore.error": "true"})
    # No delimiter at all: no headers, no key, the whole line is the value.
    assert parse_line("abc", 1, settings) == LineRecord(None, b"abc", ())
    # Headers found, key separator missing: a null key and the rest as the value.
    assert parse_line("h:1\tabc", 1, settings) == LineRecord(None, b"abc", (("h", b"1"),))
    # A header without its key separator is a header with a null value.
    assert parse_line("h,g:2\tk\tv", 1, settings) == LineRecord(
        b"k", b"v", (("h", None), ("g", b"2")))


def test_a_header_key_equal_to_the_null_marker_is_an_error_even_ignoring_errors():
    settings = ReaderSettings.from_properties({"parse.headers": "true", "null.marker": "N",
                                               "ignore.error": "true"})
    with pytest.raises(LineError, match="Header keys should not be equal to the null "
                                        "marker 'N'"):
        parse_line("N:1\tv", 1, settings)


def test_separators_of_several_characters():
    settings = ReaderSettings.from_properties({
        "parse.key": "true", "parse.headers": "true", "key.separator": "::",
        "headers.delimiter": "||", "headers.separator": ";", "headers.key.separator": "="})
    assert parse_line("a=1;b=2||k::v::w", 1, settings) == LineRecord(
        b"k", b"v::w", (("a", b"1"), ("b", b"2")))


def test_headers_are_split_like_javas_string_split():
    # Empty pairs inside are kept (and fail), trailing ones are dropped.
    assert split_like_java(",", "a:1,,b:2") == ["a:1", "", "b:2"]
    assert split_like_java(",", "a:1,b:2,,") == ["a:1", "b:2"]
    assert split_like_java(",", ",a") == ["", "a"]
    assert split_like_java(",", ",,") == []
    assert split_like_java(",", "") == [""]
    # The separator is a regular expression; a zero-width match at the start adds no
    # empty first part.
    assert split_like_java(r"\s*,\s*", "a:1 , b:2") == ["a:1", "b:2"]
    assert split_like_java("(?=b)", "ab") == ["a", "b"]
    assert split_like_java("(?=a)", "ab") == ["ab"]


def test_trailing_commas_add_no_header():
    assert parse_line("h:1,\tk\tv", 1, ALL).headers == (("h", b"1"),)


def test_text_is_utf8():
    assert parse_line("clé\tvaleur ✓", 1, KEYED) == LineRecord(
        "clé".encode(), "valeur ✓".encode())


@pytest.mark.parametrize("value", ["true", "TRUE", " True "])
def test_booleans_are_true_in_any_case(value):
    assert ReaderSettings.from_properties({"parse.key": value}).parse_key


@pytest.mark.parametrize("value", ["", "yes", "1", "false"])
def test_anything_else_is_false(value):
    assert not ReaderSettings.from_properties({"parse.key": value}).parse_key


@pytest.mark.parametrize(("props", "message"), [
    ({"headers.delimiter": ","}, "headers.delimiter and headers.separator"),
    ({"headers.key.separator": "\t"}, "headers.delimiter and headers.key.separator"),
    ({"headers.separator": ":"}, "headers.separator and headers.key.separator"),
    ({"null.marker": "\t"}, "null.marker and key.separator"),
    ({"null.marker": ",", "key.separator": "|"}, "null.marker and headers.separator"),
    ({"null.marker": ":", "key.separator": "|", "headers.delimiter": "|"},
     "null.marker and headers.key.separator"),
    ({"headers.separator": "("}, "not a regular expression"),
])
def test_separators_that_cannot_be_told_apart_are_refused(props, message):
    with pytest.raises(ValueError, match=message):
        ReaderSettings.from_properties(props)


def test_lines_end_at_newline_carriage_return_or_both():
    stream = io.BytesIO(b"a\r\nb\rc\n\nd")
    assert list(text_lines(stream)) == ["a", "b", "c", "", "d"]


def test_lines_are_utf8_with_bad_bytes_replaced():
    assert list(text_lines(io.BytesIO("é\n".encode() + b"\xff\n"))) == ["é", "\ufffd"]


def test_something_runs_before_each_line_is_read_and_at_the_end():
    prompts = []
    lines = text_lines(io.BytesIO(b"x\ny\n"), lambda: prompts.append(">"))
    assert list(lines) == ["x", "y"] and prompts == [">"] * 3


def test_the_stream_is_left_open():
    stream = io.BytesIO(b"x\ny\n")
    lines = text_lines(stream)
    assert next(lines) == "x"
    lines.close()
    assert not stream.closed


def test_a_stream_closed_under_the_reader_is_no_error():
    stream = io.BytesIO(b"x\ny\n")
    lines = text_lines(stream)
    assert next(lines) == "x"
    stream.close()
    lines.close()
