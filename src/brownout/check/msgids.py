"""msg_id as int64: one shared, order-preserving code per distinct msg_id.

The writes and consumers checkers join, sort and deduplicate every send and every log
record by msg_id. On strings those joins dominated the memory of a large check (hash
tables and copies of millions of strings); on int64 codes a key costs 8 bytes.

The code of a msg_id is its rank among the distinct msg_ids of the history and the final
read together, sorted as Arrow sorts strings (byte-wise). So code order is string order:
every sort, min, tie-break and equality on codes gives what it gave on the strings, the
checkers' logic is unchanged, and only the few rows a report shows (examples, lost
writes) are decoded back. Codes are exact (a dictionary, not a hash): no collisions.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

# Columns that may hold msg_id codes (decode() turns the integer ones back into strings).
ID_COLUMNS = ("msg_id", "msg_at_offset", "prev_msg_id", "record_at_offset")


class MsgIds:
    """The sorted distinct msg_ids: code i stands for `values[i]`."""

    def __init__(self, values: pa.Array) -> None:
        self.values = values

    def __len__(self) -> int:
        return len(self.values)

    def decode(self, codes: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
        """Strings for codes (null stays null); a string column is returned as is."""
        if not pa.types.is_integer(codes.type):
            return codes
        return pc.take(self.values, codes)

    def decode_table(self, table: pa.Table) -> pa.Table:
        """The table with every integer ID_COLUMNS column decoded to strings."""
        for name in ID_COLUMNS:
            if name in table.column_names and pa.types.is_integer(table[name].type):
                i = table.column_names.index(name)
                table = table.set_column(i, name, self.decode(table[name]))
        return table

    def decode_value(self, code: int | None) -> str | None:
        return None if code is None else self.values[code].as_py()


def decoded(table: pa.Table, ids: MsgIds | None) -> pa.Table:
    """`ids.decode_table(table)`; the table as it is when msg_ids are strings (no ids)."""
    return table if ids is None else ids.decode_table(table)


def encode(columns: Sequence[pa.Array | pa.ChunkedArray]) -> tuple[MsgIds, list[pa.ChunkedArray]]:
    """Shared codes for several string columns: (the dictionary, one int64 column each).

    One hash pass over every chunk builds a single dictionary (dictionary_encode of a
    chunked array shares it across chunks); only the distinct values are then sorted, and
    each index is mapped to its rank.
    """
    chunked = [c if isinstance(c, pa.ChunkedArray) else pa.chunked_array([c]) for c in columns]
    string = (pa.large_string() if any(pa.types.is_large_string(c.type) for c in chunked)
              else pa.string())
    chunks = [chunk.cast(string) for c in chunked for chunk in c.chunks if len(chunk)]
    if not chunks:
        return MsgIds(pa.array([], string)), [pa.chunked_array([], pa.int64()) for _ in chunked]
    encoded = pc.dictionary_encode(pa.chunked_array(chunks, string))
    del chunks
    dictionary = encoded.chunk(0).dictionary
    order = pc.sort_indices(dictionary)
    rank = pc.cast(pc.sort_indices(order), pa.int64())  # the inverse permutation of order
    values = dictionary.take(order)
    del dictionary, order
    indices = pa.chunked_array([chunk.indices for chunk in encoded.chunks], pa.int32())
    del encoded
    out: list[pa.ChunkedArray] = []
    start = 0
    for c in chunked:  # the columns are consecutive runs of the encoded values
        part = indices.slice(start, len(c))
        out.append(pa.chunked_array([pc.take(rank, chunk) for chunk in part.chunks],
                                    pa.int64()))
        start += len(c)
    return MsgIds(values), out
