"""Counts over a finished run, and the high watermarks its final read reached.

The counts are bookkeeping, not verdicts: deciding what is lost or duplicated is the
checkers' job (check/run_dir.py, which reads the watermarks from here).
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from ..common.rundir import HISTORY_FILE
from .final_read import WATERMARKS_FILE, load_final_read
from .history import read_history


def watermarks(run_dir: Path) -> dict[tuple[str, int], int]:
    """{(topic, partition): high watermark} from high-watermarks.json (partitions whose
    watermark could not be read are left out)."""
    data = json.loads((run_dir / WATERMARKS_FILE).read_text())
    out = {}
    for topic, parts in data.get("topics", {}).items():
        for partition, p in parts.items():
            if int(partition) >= 0 and p.get("high_watermark") is not None:
                out[(topic, int(partition))] = int(p["high_watermark"])
    return out


def unread_partitions(run_dir: Path) -> list[tuple[str, int]]:
    """Partitions the final read did not read to their high watermark (high-watermarks.json
    "complete": false): what is missing there is unknown, not lost."""
    data = json.loads((run_dir / WATERMARKS_FILE).read_text())
    return [(topic, int(partition))
            for topic, parts in data.get("topics", {}).items()
            for partition, p in parts.items()
            if int(partition) >= 0 and not p.get("complete", True)]


def _count(table: pa.Table, **equal: str) -> int:
    mask = None
    for column, value in equal.items():
        m = pc.equal(table[column], value)
        mask = m if mask is None else pc.and_(mask, m)
    return int(pc.sum(pc.fill_null(mask, False).cast(pa.int64())).as_py() or 0)


def counts(run_dir: Path) -> dict[str, int]:
    """sent / acked / failed / info / unresolved sends, polled records, commits, and the
    final read's size, from history.parquet and final-read.parquet."""
    history = read_history(run_dir / HISTORY_FILE,
                           columns=["type", "f", "acks", "msg_id"])
    sent = _count(history, f="send", type="invoke")
    acked = _count(history, f="send", type="ok")
    failed = _count(history, f="send", type="fail")
    info = _count(history, f="send", type="info")
    out = {
        "sent": sent,
        "acked": acked,
        "acked_acks0": _count(history, f="send", type="ok", acks="0"),  # "sent" only
        "failed": failed,
        "info": info,
        # an invoke with no completion: the writer stopped before its delivery report
        "unresolved": max(0, sent - acked - info - failed),
        "polled": _count(history, f="poll", type="ok"),
        "commits_ok": _count(history, f="commit", type="ok"),
        "events": history.num_rows,
    }
    final = load_final_read(run_dir)
    if final is not None:
        table, _ = final
        out["in_log"] = table.num_rows
        out["in_log_with_msg_id"] = table.num_rows - table["msg_id"].null_count
    return out

