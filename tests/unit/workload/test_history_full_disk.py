"""A history that cannot be written (a full disk) stops its run with one clear error
instead of crashing the client threads that record into it. /dev/full answers every
write with ENOSPC, as a full disk does."""

from __future__ import annotations

from pathlib import Path

import pytest

from brownout.workload.history import INFO, HistoryWriter
from brownout.workload.run import HistoryIncomplete, RunError, check_history


def test_a_failed_write_is_kept_not_raised_and_check_history_names_it() -> None:
    history = HistoryWriter(Path("/dev/full"))
    try:
        for i in range(3):
            event = history.record(INFO, "client-error", "producer-1", value=str(i))
            assert event.index == i  # the recording thread goes on
        assert history.unwritten == 3
        assert history.write_error is not None
        with pytest.raises(HistoryIncomplete, match=r"/dev/full: 3 event\(s\) could not be "
                           r"written \(No space left on device\)") as raised:
            check_history(history)
        assert isinstance(raised.value, RunError)  # the CLI's one-line errors
    finally:
        history.close()


def test_a_history_written_in_full_passes_the_check(tmp_path: Path) -> None:
    history = HistoryWriter(tmp_path / "history.jsonl")
    try:
        history.record(INFO, "client-error", "producer-1", value="x")
        assert history.write_error is None and history.unwritten == 0
        check_history(history)
    finally:
        history.close()
    assert (tmp_path / "history.jsonl").read_text().count("\n") == 1
