"""The event-loop stall tracker: what is a stall, which is the worst recent one."""

from __future__ import annotations

import asyncio

from brownout.broker.loop_monitor import (
    CpuTimes,
    StallTracker,
    run_loop_monitor,
    thread_cpu_times,
)
from brownout.common.stalls import Stall


def test_a_lag_at_or_below_the_threshold_is_not_a_stall() -> None:
    tracker = StallTracker(threshold_ms=100)
    assert tracker.observe(0.0, at=10.0) is None
    assert tracker.observe(100.0, at=11.0) is None
    assert tracker.worst(now=11.0) is None


def test_a_lag_above_the_threshold_is_a_stall_that_began_lag_earlier() -> None:
    tracker = StallTracker(threshold_ms=100)
    stall = tracker.observe(1500.0, at=20.0)
    assert stall == Stall(at=20.0, lag_ms=1500.0)
    assert stall.began == 18.5


def test_the_worst_recent_stall_forgets_stalls_older_than_the_window() -> None:
    tracker = StallTracker(threshold_ms=100, window_s=60)
    tracker.observe(2000.0, at=0.0)
    tracker.observe(300.0, at=50.0)
    assert tracker.worst(now=55.0) == Stall(0.0, 2000.0)
    # 61 s after the 2 s stall only the 300 ms one is recent
    assert tracker.worst(now=61.0) == Stall(50.0, 300.0)
    assert tracker.worst(now=200.0) is None


def test_old_stalls_are_dropped_so_memory_stays_bounded() -> None:
    tracker = StallTracker(threshold_ms=1, window_s=10)
    for i in range(1000):
        tracker.observe(5.0, at=float(i))
    assert len(tracker._recent) <= 11


def test_cpu_times_parse_schedstat_nanoseconds() -> None:
    # /proc/<pid>/task/<tid>/schedstat: ns on a CPU, ns waiting on a runqueue, slices
    before = CpuTimes.parse("1500000000 250000000 1200\n")
    after = CpuTimes.parse("1540000000 1120000000 1260\n")
    assert before == CpuTimes(1500.0, 250.0)
    assert after.since(before) == CpuTimes(40.0, 870.0)


def test_this_threads_cpu_times_count_the_cpu_it_burns() -> None:
    import time

    before = thread_cpu_times()
    assert before is not None, "no /proc/thread-self/schedstat on this Linux"
    start = time.thread_time()
    while time.thread_time() - start < 0.05:
        pass
    after = thread_cpu_times()
    assert after is not None and after.since(before).ran_ms >= 40


def test_a_stall_says_how_long_the_loop_thread_ran_and_waited_for_a_cpu() -> None:
    # A starved loop: the thread was ready to run but got a CPU for only 30 ms of it.
    now = [CpuTimes(1000.0, 500.0)]

    async def scenario() -> list[Stall]:
        found: list[Stall] = []
        task = asyncio.create_task(run_loop_monitor(
            StallTracker(threshold_ms=100), 0.01, lambda s, _st: found.append(s),
            sample=False, cpu_times=lambda: now[0]))
        await asyncio.sleep(0.05)
        now[0] = CpuTimes(1030.0, 1270.0)  # what the thread's counters say after the stall
        _block_the_loop_for(0.3)
        await asyncio.sleep(0.05)
        task.cancel()
        return found

    found = asyncio.run(scenario())
    # A busy machine may stall the loop at other moments too (the test's own sleeps run
    # late); the counters moved only across the block, so only its stall shows CPU time.
    spent = [(s.ran_ms, s.runqueue_ms) for s in found if s.ran_ms or s.runqueue_ms]
    assert spent == [(30.0, 770.0)], found


def _block_the_loop_for(seconds: float) -> None:
    import time

    time.sleep(seconds)


BLOCK_S = 0.4
MONITOR_INTERVAL_S = 0.01


def test_the_monitor_reports_a_loop_blocked_by_synchronous_work_and_where() -> None:
    import time

    async def scenario() -> tuple[list[tuple[Stall, list[tuple[str, int]]]], float, float, float]:
        found: list[tuple[Stall, list[tuple[str, int]]]] = []
        created = time.monotonic()
        task = asyncio.create_task(run_loop_monitor(
            StallTracker(threshold_ms=100), MONITOR_INTERVAL_S,
            lambda s, st: found.append((s, st)), clock=time.monotonic))
        await asyncio.sleep(0.05)
        blocked_from = time.monotonic()
        _block_the_loop_for(BLOCK_S)  # nothing runs on the loop meanwhile
        blocked_until = time.monotonic()
        await asyncio.sleep(0.05)
        task.cancel()
        return found, created, blocked_from, blocked_until

    found, created, start, end = asyncio.run(scenario())
    # A busy machine may stall the loop at other moments too: the block is the one stall
    # that covers it (it began at most one check interval after the block did).
    covering = [(s, st) for s, st in found
                if s.began <= start + MONITOR_INTERVAL_S + 0.001 and s.at >= end]
    assert len(covering) == 1, found
    stall, stacks = covering[0]
    assert stall.lag_ms >= (end - start - MONITOR_INTERVAL_S) * 1000
    # ... and its length is the block, not some multiple: it began after the monitor did
    assert stall.began >= created, (stall, created)
    # The sampler looked while the loop was stuck and saw the blocking call.
    assert stacks, f"no stack sampled during a {BLOCK_S * 1000:.0f} ms stall"
    stack, samples = stacks[0]
    assert stack.endswith(f"{__name__}._block_the_loop_for:{_BLOCK_LINE}")
    assert samples >= 5


_BLOCK_LINE = _block_the_loop_for.__code__.co_firstlineno + 3
