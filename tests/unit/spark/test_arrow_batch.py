"""arrow_batch: consumed messages -> one Arrow batch with the Kafka source's columns."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import pytest

pytest.importorskip("pyarrow")

from brownout.spark.source import SCHEMA, _arrow_schema, arrow_batch


@dataclass
class Msg:  # confluent-kafka's Message accessors, nothing else
    _offset: int
    _value: bytes | None = b"v"
    _key: bytes | None = None
    _ts: tuple[int, int] = (1, 1_700_000_000_123)
    _headers: list[tuple[str, bytes | None]] | None = field(default=None)

    def key(self) -> bytes | None:
        return self._key

    def value(self) -> bytes | None:
        return self._value

    def topic(self) -> str:
        return "payments"

    def partition(self) -> int:
        return 3

    def offset(self) -> int:
        return self._offset

    def timestamp(self) -> tuple[int, int]:
        return self._ts

    def headers(self) -> Any:
        return self._headers


def test_columns_match_the_spark_schema_and_the_messages():
    msgs = [Msg(10, b"a", b"k", _headers=[("msg-id", b"m-10"), ("x", None)]),
            Msg(11, None, None, _headers=None),
            Msg(12, b"c", _headers=[("msg-id", b"m-12")])]
    batch = arrow_batch(msgs, _arrow_schema())
    assert batch.schema.names == [f.name for f in SCHEMA.fields]
    rows = batch.to_pylist()
    assert [r["offset"] for r in rows] == [10, 11, 12]
    assert [r["value"] for r in rows] == [b"a", None, b"c"]
    assert [r["key"] for r in rows] == [b"k", None, None]
    assert {r["topic"] for r in rows} == {"payments"} and {r["partition"] for r in rows} == {3}
    assert rows[0]["timestamp"] == dt.datetime(2023, 11, 14, 22, 13, 20, 123000,
                                               tzinfo=dt.UTC)
    assert [r["timestampType"] for r in rows] == [0, 0, 0]  # create time
    assert rows[0]["headers"] == [{"key": "msg-id", "value": b"m-10"},
                                  {"key": "x", "value": None}]
    # No headers: null, as Spark's own Kafka source gives (not an empty list).
    assert rows[1]["headers"] is None
    assert rows[2]["headers"] == [{"key": "msg-id", "value": b"m-12"}]


def test_mixed_and_missing_timestamps():
    msgs = [Msg(0, _ts=(1, 5)), Msg(1, _ts=(2, 7)), Msg(2, _ts=(0, -1))]
    rows = arrow_batch(msgs, _arrow_schema()).to_pylist()
    assert [r["timestampType"] for r in rows] == [0, 1, -1]  # create, log append, none
    assert rows[2]["timestamp"] is None
    assert rows[1]["timestamp"] == dt.datetime(1970, 1, 1, 0, 0, 0, 7000,
                                               tzinfo=dt.UTC)


def test_no_messages_give_an_empty_batch():
    assert arrow_batch([], _arrow_schema()).num_rows == 0
