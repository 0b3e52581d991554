"""The first fault waits for the producers to keep up (schedule_stage.py), with a
stand-in nemesis that records when it was asked and a producer lag played by the test:
the mean wait of the sends in flight, and the oldest one's."""

from __future__ import annotations

import io
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from rich.console import Console

from brownout.scenarios import schedule_stage
from brownout.scenarios.progress import LineProgress
from brownout.scenarios.schedule_stage import ScheduleStage
from brownout.scenarios.schema import loads
from brownout.scenarios.verdict import RunRecord
from brownout.workload.history import HistoryWriter
from brownout.workload.run import ProducerLag

SCENARIO = """\
name: t
description: a test
cluster: {brokers: 3, controllers: 1, profile: fast}
topics: [{name: e, partitions: 1, replication_factor: 3}]
workloads: [{label: w, topic: e, acks: all, rate: 100}]
schedule:
  - {at: 0s, id: kill, kill: leader:e-0}
  - {after: previous, id: start, start: }
duration: 1s
"""


LIMIT = 1.0  # seconds a send may wait at the first fault (a third of a 3 s session)
CAUGHT_UP = ProducerLag(0.1, 0.2)


class Nemesis:
    """Records each fault with the producers' lag when it was invoked."""

    def __init__(self, lag: Any) -> None:
        self.lag = lag
        self.invoked: list[tuple[str, float]] = []

    def invoke(self, fault: Any, target_wait: float = 0.0) -> Any:
        self.invoked.append((fault.action, self.lag()))
        return SimpleNamespace(outcome="ok")


def run_schedule(tmp_path: Path, lag: Any) -> tuple[RunRecord, Nemesis, str]:
    out = io.StringIO()  # wide: a line is never wrapped
    nemesis = Nemesis(lag)
    record = RunRecord(seed=1)
    stage = ScheduleStage(loads(SCENARIO), nemesis, "127.0.0.1:9092",  # type: ignore[arg-type]
                          HistoryWriter(tmp_path / "history.jsonl"), record,
                          LineProgress(Console(file=out, width=200)), producer_lag=lag,
                          send_wait_limit=LIMIT)
    stage.start(time.monotonic())
    assert stage.join(30)
    assert stage.error is None
    return record, nemesis, out.getvalue()


def test_the_first_fault_waits_until_the_producers_keep_up(tmp_path: Path) -> None:
    behind_until = time.monotonic() + 1.5

    def lag() -> ProducerLag:
        return ProducerLag(3.0, 3.5) if time.monotonic() < behind_until else CAUGHT_UP

    record, nemesis, said = run_schedule(tmp_path, lag)
    # kill only once caught up; the undo that follows is never held back
    assert nemesis.invoked == [("kill", CAUGHT_UP), ("start", CAUGHT_UP)]
    assert record.warm_up is not None and record.warm_up["kept_up"] is True
    assert record.warm_up["waited_seconds"] >= 1.0
    assert "waited" in said and "for the producers to keep up" in said


def test_producers_that_keep_up_hold_nothing_back(tmp_path: Path) -> None:
    record, nemesis, said = run_schedule(tmp_path, ProducerLag)
    assert [a for a, _ in nemesis.invoked] == ["kill", "start"]
    assert record.warm_up is not None and record.warm_up["kept_up"] is True
    assert record.warm_up["waited_seconds"] < 0.5
    assert "waited" not in said


def test_producers_that_never_catch_up_meet_the_fault_after_the_limit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schedule_stage, "WARM_UP_LIMIT", 1.0)
    record, nemesis, said = run_schedule(tmp_path, lambda: ProducerLag(5.0, 5.0))
    assert [a for a, _ in nemesis.invoked] == ["kill", "start"]
    assert record.warm_up is not None and record.warm_up["kept_up"] is False
    assert "still behind after 1s" in said


def test_one_send_stuck_longer_than_the_verdict_allows_holds_the_fault_back(
        tmp_path: Path) -> None:
    # Two partitions of eight stuck behind a stalled replica: little in flight on
    # average, but one send has waited 1.9 s, more than the verdict allows at a fault
    # (check/overload.py would judge the run unknown).
    stuck_until = time.monotonic() + 1.5

    def lag() -> ProducerLag:
        return ProducerLag(0.3, 1.9) if time.monotonic() < stuck_until else CAUGHT_UP

    record, nemesis, _ = run_schedule(tmp_path, lag)
    assert nemesis.invoked == [("kill", CAUGHT_UP), ("start", CAUGHT_UP)]
    assert record.warm_up is not None and record.warm_up["waited_seconds"] >= 1.0


@pytest.mark.parametrize(("lag", "kept_up"), [
    (ProducerLag(0.49, 1.0), True), (ProducerLag(0.5, 0.0), False),
    (ProducerLag(0.0, 1.01), False)])
def test_keeping_up_is_a_small_mean_and_no_send_past_the_limit(lag, kept_up) -> None:
    assert schedule_stage.keeps_up(lag, LIMIT) is kept_up
