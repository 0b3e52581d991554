"""msg_id codes: shared, exact, in string order; and the Arrow helpers behind them."""

import pyarrow as pa

from brownout.check import check_consumers, check_writes, load_inputs
from brownout.check.arrowutil import all_distinct, join_rows, row_numbers
from brownout.check.msgids import MsgIds, decoded, encode

from .hist import H, final


def test_codes_are_shared_exact_and_in_string_order():
    a = pa.chunked_array([["m2", None, "m10"], [], ["b", "m2"]])
    b = pa.array(["é", "m10", "a"])
    ids, (ca, cb) = encode([a, b])
    assert ids.values.to_pylist() == sorted({"m2", "m10", "b", "é", "a"})
    assert ids.decode(ca).to_pylist() == a.to_pylist()
    assert ids.decode(cb).to_pylist() == b.to_pylist()
    assert ca.to_pylist()[0] == ca.to_pylist()[4]  # same string, same code
    assert ca.to_pylist()[2] == cb.to_pylist()[1]  # across columns too
    # code order is string order (byte-wise, as Arrow sorts strings)
    pairs = [(c, v) for c, v in zip(ca.to_pylist() + cb.to_pylist(),
                                    a.to_pylist() + b.to_pylist(), strict=True) if v]
    assert sorted(pairs) == sorted(pairs, key=lambda p: p[1].encode())
    assert len({c for c, _ in pairs}) == len({v for _, v in pairs})  # exact: no collisions


def test_encode_empty_and_all_null_columns():
    ids, (c,) = encode([pa.chunked_array([], pa.string())])
    assert len(ids) == 0 and len(c) == 0
    ids, (c,) = encode([pa.array([None, None], pa.string())])
    assert c.to_pylist() == [None, None]


def test_decode_table_touches_only_coded_id_columns():
    ids = MsgIds(pa.array(["a", "b"]))
    t = pa.table({"msg_id": [1, None], "record_at_offset": [0, 1], "offset": [7, 8],
                  "prev_msg_id": ["x", "y"]})
    out = decoded(t, ids)
    assert out.to_pylist() == [
        {"msg_id": "b", "record_at_offset": "a", "offset": 7, "prev_msg_id": "x"},
        {"msg_id": None, "record_at_offset": "b", "offset": 8, "prev_msg_id": "y"}]
    assert decoded(t, None) is t


def test_load_inputs_codes_history_and_final_read_together():
    h = H().send("m1", 0.0, 0.1, offset=0).poll(1.0, "c1", 0, "m1").poll(1.1, "c1", 1, "gone")
    slices, fin = load_inputs(h.table(), final((0, 0, "m1"), (0, 1, "phantom")))
    ids = slices.msg_ids
    assert ids is not None and ids.values.to_pylist() == ["gone", "m1", "phantom"]
    assert ids.decode(slices.invokes["msg_id"]).to_pylist() == ["m1"]
    assert ids.decode(slices.polls["msg_id"]).to_pylist() == ["m1", "gone"]
    assert ids.decode(fin["msg_id"]).to_pylist() == ["m1", "phantom"]
    # coded inputs pass through; a coded history with a string final read is re-coded
    assert load_inputs(slices, fin)[1] is not None
    again, fin2 = load_inputs(slices, final((0, 0, "m1"), (0, 1, "new")))
    assert again.msg_ids.values.to_pylist() == ["gone", "m1", "new"]
    assert again.msg_ids.decode(fin2["msg_id"]).to_pylist() == ["m1", "new"]


def test_checkers_show_msg_ids_as_strings():
    h = (H().send("m1", 0.0, 0.1, offset=0).send("m2", 0.2, 0.3, offset=1)
         .poll(1.0, "c1", 0, "m1").poll(1.1, "c1", 5, "gone"))
    result, lost = check_writes(h.table(), final((0, 0, "m1"), (0, 1, "m1"), (0, 2, "ph")))
    assert lost["msg_id"].to_pylist() == ["m2"]
    assert lost["record_at_offset"].to_pylist() == ["m1"]
    assert result.anomalies["duplicate"].examples[0]["msg_id"] == "m1"
    assert result.anomalies["phantom-write"].examples[0]["msg_id"] == "ph"
    consumers = check_consumers(h.table(), final((0, 0, "m1")))
    assert consumers.anomalies["consumed-then-missing"].examples[0]["msg_id"] == "gone"


def test_all_distinct_ignores_nulls():
    assert all_distinct(pa.chunked_array([[3, None], [1, None, 2]]))
    assert not all_distinct(pa.chunked_array([[3, 1], [2, 3]]))
    assert all_distinct(pa.array([], pa.int64()))


def test_join_rows_pairs_row_numbers():
    assert row_numbers(3).to_pylist() == [0, 1, 2] and len(row_numbers(0)) == 0
    left = pa.table({"k": [10, 20, None], "x": ["a", "b", "c"]})
    right = pa.table({"k": [20, 30]})
    pairs = join_rows(left, right, "k", "full outer").sort_by([("k", "ascending")])
    assert {(r["k"], r["left"], r["right"]) for r in pairs.to_pylist()} == {
        (10, 0, None), (20, 1, 0), (30, None, 1), (None, 2, None)}
