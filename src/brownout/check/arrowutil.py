"""Small Arrow helpers shared by the checkers (vectorised; no Python loop per row)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from brownout.check.msgids import MsgIds, decoded


def flat(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def codes(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """Integer codes for a (string) column, equal where values are equal (-1 for null):
    sorting and comparing these is much cheaper than sorting strings."""
    column = flat(column)
    if pa.types.is_integer(column.type):
        return pc.fill_null(column, -1)
    return pc.fill_null(pc.dictionary_encode(column).indices, -1)


def same_as_previous(table: pa.Table, keys: list[str]) -> pa.Array:
    """Boolean per row: every key equals the previous row's (False for the first row)."""
    n = len(table)
    if n == 0:
        return pa.array([], pa.bool_())
    mask: pa.Array | None = None
    for key in keys:
        col = flat(table[key])
        eq = pc.fill_null(pc.equal(col.slice(1), col.slice(0, n - 1)), False)
        if col.null_count:  # two nulls count as equal
            both = pc.and_(pc.is_null(col.slice(1)), pc.is_null(col.slice(0, n - 1)))
            eq = pc.or_(eq, both)
        mask = eq if mask is None else pc.and_(mask, eq)
    assert mask is not None
    return pa.concat_arrays([pa.array([False]), mask])


def count(table: pa.Table, mask: pa.Array | pa.ChunkedArray) -> int:
    return int(pc.sum(pc.cast(mask, pa.int64())).as_py() or 0)


def truthy(mask: Any) -> Any:
    return pc.fill_null(mask, False)


def examples(table: pa.Table, limit: int, sort_by: list[tuple[str, str]] | None = None,
             columns: list[str] | None = None, ids: MsgIds | None = None) -> list[dict[str, Any]]:
    """A few rows as dicts (deterministic order when sort_by is given); with `ids`, msg_id
    codes are decoded (after sorting: code order is string order)."""
    if len(table) == 0 or limit <= 0:
        return []
    if sort_by:
        if len(table) > limit:
            idx = pc.select_k_unstable(table, k=limit, sort_keys=sort_by)
            table = table.take(idx)
        table = table.sort_by(sort_by)
    table = table.slice(0, limit)
    if columns is not None:
        table = table.select([c for c in columns if c in table.column_names])
    return decoded(table, ids).to_pylist()


class Sorted:
    """A sorted float64 array with binary search (a few lookups, no conversion)."""

    def __init__(self, values: pa.Array | pa.ChunkedArray | list[float]) -> None:
        if not isinstance(values, pa.Array | pa.ChunkedArray):
            values = pa.array(values, pa.float64())
        values = flat(values)
        values = values.filter(pc.is_valid(values))
        self.values = pc.array_take(values, pc.array_sort_indices(values))
        self.n = len(self.values)

    def _get(self, i: int) -> float:
        return self.values[i].as_py()

    def bisect_right(self, x: float) -> int:
        """How many values are <= x."""
        lo, hi = 0, self.n
        while lo < hi:
            mid = (lo + hi) // 2
            if self._get(mid) <= x:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def bisect_left(self, x: float) -> int:
        """How many values are < x."""
        lo, hi = 0, self.n
        while lo < hi:
            mid = (lo + hi) // 2
            if self._get(mid) < x:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def first_after(self, x: float) -> float | None:
        i = self.bisect_right(x)
        return self._get(i) if i < self.n else None


def row_numbers(n: int) -> pa.Array:
    """0, 1, ..., n-1 as int64 (pa.arange is missing from older pyarrow)."""
    if n == 0:
        return pa.array([], pa.int64())
    return pc.subtract(pc.cumulative_sum(pa.repeat(pa.scalar(1, pa.int64()), n)), 1)


def join_rows(left: pa.Table, right: pa.Table, key: str, join_type: str) -> pa.Table:
    """Which rows `left.join(right, key, join_type)` pairs: columns `key`, `left` and
    `right` (row numbers; null where a side has no row).

    Acero's hash join copies every payload column, strings included, into its build and
    output tables; joining (key, row number) only and taking the payload columns that are
    needed afterwards, for the rows that are needed, holds 24 bytes a row instead.
    """
    lhs = pa.table({key: left[key], "left": row_numbers(len(left))})
    rhs = pa.table({key: right[key], "right": row_numbers(len(right))})
    return lhs.join(rhs, key, join_type=join_type)


def all_distinct(column: pa.ChunkedArray | pa.Array) -> bool:
    """No value repeats (nulls excluded). By sorting: pc.unique's hash table costs ~200
    bytes a row on millions of int64 msg_id codes; a sort, 16."""
    values = flat(column)
    values = values.filter(pc.is_valid(values)) if values.null_count else values
    if len(values) < 2:
        return True
    ordered = values.take(pc.array_sort_indices(values))
    return not pc.any(pc.equal(ordered.slice(1), ordered.slice(0, len(ordered) - 1))).as_py()
