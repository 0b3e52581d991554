"""How the pipeline tells a query whose source's Python process did not connect back
(started again) from one that started or failed for a reason of its own."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("pyspark")

from brownout.spark.pipeline import _wait_source_started


class FakeQuery:
    """The StreamingQuery attributes the wait reads, moving through `statuses`."""

    def __init__(self, statuses: list[str], active: bool = True,
                 error: str | None = None) -> None:
        self.statuses = statuses
        self.active = active
        self.error = error

    @property
    def status(self) -> dict[str, Any]:
        message = self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]
        return {"message": message}

    @property
    def isActive(self) -> bool:
        return self.active or len(self.statuses) > 1

    def exception(self) -> Any:
        return None if self.error is None else RuntimeError(self.error)


def test_waits_through_both_initializing_states():
    q = FakeQuery(["Initializing StreamExecution", "Initializing sources",
                   "Getting offsets from x"])
    assert _wait_source_started(q, timeout=5) is True
    assert q.statuses == ["Getting offsets from x"]


def test_a_source_that_did_not_connect_back_is_told_apart():
    q = FakeQuery(["Initializing sources", "Terminated with exception"], active=False,
                  error="org.apache.spark.SparkException: Python worker failed to connect "
                        "back.")
    assert _wait_source_started(q, timeout=5) is False


def test_any_other_failure_is_the_querys_own():
    q = FakeQuery(["Initializing sources", "Terminated with exception"], active=False,
                  error="brownout-kafka: possible data loss: ...")
    assert _wait_source_started(q, timeout=5) is True


def test_a_query_whose_worker_did_not_connect_back_is_restarted_a_few_times():
    from brownout.spark.pipeline import queries_to_restart

    back = RuntimeError("org.apache.spark.SparkException: Python worker failed to connect "
                        "back.")
    loss = RuntimeError("brownout-kafka: possible data loss: ...")
    failed = [("t.ledger", back), ("t.pages", loss), ("t.sessions", back)]
    assert queries_to_restart(failed, {}) == ["t.ledger", "t.sessions"]
    assert queries_to_restart(failed, {"t.ledger": 5}, limit=5) == ["t.sessions"]
    assert queries_to_restart([("t.pages", loss)], {}) == []
